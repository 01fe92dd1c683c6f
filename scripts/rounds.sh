# scripts/rounds.sh: sourced by the benchmark scripts that run conditions in turns, rounds
# of them (bench-overhead.sh, bench-offcpu.sh, bench-redis.sh): starting a profiler and
# stopping it, the one workload they share, and the numbers of the rounds.

# ROUNDS rounds of the N conditions in turns, round r starting at condition r, QUIET_S
# seconds (default 1) before each: runs `$1 CONDITION` for each turn, then prints the
# load and the time it all took.
run_rounds() {
	local round k c t0
	t0=$(date +%s)
	for round in $(seq "$ROUNDS"); do
		echo "round $round/$ROUNDS: load average $(cat /proc/loadavg)"
		for k in $(seq 0 $(( N - 1 ))); do
			c=$(( (k + round - 1) % N ))
			sleep "${QUIET_S:-1}"
			"$1" "$c"
		done
	done
	echo "end: load average $(cat /proc/loadavg); $(( $(date +%s) - t0 )) s"
}

# The peers' conditions, through the script's add LABEL COMMAND: perf record -g, and bpftrace
# with both stacks when it is installed (else a note in SKIPPED). Both at 49 Hz, the whole
# machine, as `profile -f 49`.
add_peers() {
	add "perf record -g -F 49 -a" "perf record -g -F 49 -a -o \$TMP/perf.data"
	if command -v bpftrace >/dev/null; then
		add "bpftrace profile:hz:49 { @[kstack, ustack] = count(); }" \
			"bpftrace -e 'profile:hz:49 { @[kstack, ustack] = count(); }'"
	else
		SKIPPED+=("bpftrace: not installed (Debian: apt-get install bpftrace): its row is left out")
	fi
}

# Whether process $1 holds a perf event open.
has_perf_events() {
	local fd
	for fd in /proc/"$1"/fd/*; do
		[ "$(readlink "$fd" 2>/dev/null)" = 'anon_inode:[perf_event]' ] && return 0
	done
	return 1
}

# Starts the profiler command $2 (its words quoted for eval) under `timeout`, which bounds it
# to $3 seconds should the script be killed (SIGINT sent to it is passed on); $1 names it in
# notes. CHILD is the `timeout`, PROGRAM the profiler. Non-zero, with a note, when it did not
# come to sample: its perf events open, then SETTLE_S seconds, still running. Needs note()
# and TMP.
start_profiler() {
	local label=$1 bound=$3 program=''
	eval "set -- $2"
	timeout -s INT -k 30 "$bound" "$@" > /dev/null 2> "$TMP/condition.err" &
	CHILD=$!
	for _ in $(seq 300); do # up to 30 s
		program=$(pgrep -P "$CHILD" 2>/dev/null | head -1)
		if [ -n "$program" ] && has_perf_events "$program"; then break; fi
		kill -0 "$CHILD" 2>/dev/null || break
		program=
		sleep 0.1
	done
	if [ -z "$program" ]; then
		note "$label: did not open its perf events: $(tail -2 "$TMP/condition.err" | tr '\n' ' ')"
		stop_condition
		return 1
	fi
	sleep "$SETTLE_S"
	if ! kill -0 "$program" 2>/dev/null; then
		note "$label: exited while it settled: $(tail -2 "$TMP/condition.err" | tr '\n' ' ')"
		stop_condition
		return 1
	fi
	PROGRAM=$program
}

# Stops the condition running, CHILD (SIGINT, then SIGKILL after STOP_S seconds, it and the
# program it runs), and waits for it. Needs note().
stop_condition() {
	[ -n "$CHILD" ] || return 0
	kill -INT "$CHILD" 2>/dev/null
	for _ in $(seq $(( STOP_S * 10 ))); do
		kill -0 "$CHILD" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$CHILD" 2>/dev/null; then
		note "still running $STOP_S s after SIGINT: killed"
		kill -KILL $(pgrep -P "$CHILD" 2>/dev/null) "$CHILD" 2>/dev/null
	fi
	wait "$CHILD" 2>/dev/null
	CHILD=
}

# µs a round trip of `perf bench sched pipe -l $1`, on CPUs $2 (empty: anywhere); empty when
# it failed.
sched_pipe_us() {
	local pin=()
	if [ -n "${2:-}" ]; then pin=(taskset -c "$2"); fi
	"${pin[@]}" perf bench sched pipe -l "$1" 2>/dev/null |
		awk '/usecs\/op/ { us = $1 } /ops\/sec/ && !us && $1 > 0 { us = 1e6 / $1 }
			END { if (us) printf "%.3f\n", us }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
spread() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print NR ? lo "-" hi : "-" }'; }
# VALUES["condition metric"]: the values of the rounds, a line each.
declare -A VALUES
keep() { # $1 condition, $2 metric, $3 value (empty: none)
	[ -n "$3" ] || return 0
	VALUES["$1 $2"]+="$3"$'\n'
}
med() { printf %s "${VALUES["$1 $2"]:-}" | median; }
ratio() { # $1 value, $2 nothing's: "1.23x"
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print ""; else printf "%.2fx", a / b }'
}
