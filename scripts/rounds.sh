# scripts/rounds.sh: sourced by the benchmark scripts that run conditions in turns, rounds
# of them (bench-overhead.sh, bench-offcpu.sh): stopping a condition, the one workload they
# share, and the numbers of the rounds.

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
