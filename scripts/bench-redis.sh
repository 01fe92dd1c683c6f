#!/usr/bin/env bash
# scripts/bench-redis.sh: what a running profiler costs a local redis-server's throughput,
# measured finely enough to see a loss of a percent or two on a machine whose own noise
# moves redis-benchmark's figures by 10 to 20 % from one run to the next (issue 27).
# redis-benchmark runs all along (GET and SET in a loop, 50 clients, REQUESTS requests a
# test, each test's requests a second stamped with the time it ended), while each profiler
# is started and stopped in turn: PHASE_S seconds with nothing running, then PHASE_S seconds
# with the profiler sampling (from SETTLE_S seconds after its perf events are open), for
# each condition, CYCLES times over. So every profiled phase has a phase with nothing on
# either side, seconds away, and the slow spells of the machine fall on both alike.
# A phase's figure, per test (GET, SET), is the mean of the middle half of the tests that ran
# within it. Per condition and test: the median of its profiled phases against the median of
# the phases with nothing (all of them), and each cycle's own ratio (its profiled phase against
# the unprofiled phases just before and after it), their median and range; and what the
# profiler took directly over its phases, in % of one CPU: its process's CPU, and its BPF
# programs' run time (the kernel's run-time stats, on for the run), which the sampled tasks
# pay and its process's CPU does not hold. Then each phase's figures.
# The conditions: `profile -f 49` (the card's command), the agent's defaults (-f 19,
# --interval 15, each window written to a file), `perf record -g -F 49 -a`, and bpftrace
# `profile:hz:49 { @[kstack, ustack] = count(); }` when installed.
# Needs root, redis-server, redis-benchmark, redis-cli, perf. About 8 minutes at the defaults.
# Usage: [PROFILE=./profile] [CYCLES=5] [PHASE_S=10] [SETTLE_S=2] [REQUESTS=40000] scripts/bench-redis.sh
set -u

cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
CYCLES=${CYCLES:-5}
PHASE_S=${PHASE_S:-10}
SETTLE_S=${SETTLE_S:-2}
REQUESTS=${REQUESTS:-40000}
STOP_S=60

die() { echo "bench-redis: $*" >&2; exit 1; }
note() { echo "bench-redis: $*" >&2; }

for knob in CYCLES PHASE_S SETTLE_S REQUESTS; do
	case ${!knob} in '' | *[!0-9]* | 0) die "$knob must be a positive number (got '${!knob}')" ;; esac
done
[ "$(id -u)" = 0 ] || die "needs root to load BPF programs (try: sudo $0)"
for tool in perf bpftool stdbuf awk "$PROFILE"; do
	command -v "$tool" >/dev/null || die "$tool is missing (make; Debian: apt-get install linux-perf)"
done

. "$ROOT/scripts/work-dir.sh"
. "$ROOT/scripts/bpf-stats.sh"
. "$ROOT/scripts/rounds.sh"
. "$ROOT/scripts/redis.sh"
work_dir profile-bench-redis
SKIPPED=()
redis_check
[ -n "$REDIS" ] || die "${SKIPPED[0]}"
CHILD=
LOOP=
STATS_WERE=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
cleanup() {
	echo "$STATS_WERE" > /proc/sys/kernel/bpf_stats_enabled 2>/dev/null
	stop_condition
	if [ -n "$LOOP" ]; then kill -TERM "$LOOP" 2>/dev/null; fi
	stop_redis
	work_dir_cleanup
}
trap cleanup EXIT

LABELS=() COMMANDS=()
add() { LABELS+=("$1"); COMMANDS+=("$2"); }
p=$(printf %q "$PROFILE")
add "profile -f 49 (the card's command)" "$p -f 49 600"
add "profile -f 19 --interval 15 -o …/w.pb.gz (the agent's defaults)" "$p -f 19 --interval 15 -o \$TMP/w.pb.gz 600"
add_peers
N=${#LABELS[@]}

now() { date +%s.%N; }
# Nanoseconds the BPF programs process $1 holds have run so far (0 without any).
bpf_ns() {
	local id total=0 ns
	for id in $(awk '$1 == "prog_id:" { print $2 }' /proc/"$1"/fdinfo/* 2>/dev/null | sort -un); do
		ns=$(prog_stats "$id" | awk '{ print $2 }')
		total=$(( total + ${ns:-0} ))
	done
	echo "$total"
}
# CPU seconds (user + system) of process $1 so far; empty when it is gone.
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.3f\n", ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null
}

echo 1 > /proc/sys/kernel/bpf_stats_enabled || die "cannot turn on the kernel's BPF run-time stats"
start_redis
# Each test's result as it ends: "time TEST rps" (csv lines: "SET","92250.92",...).
stdbuf -oL redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -t set,get -c 50 -n "$REQUESTS" -l --csv 2>/dev/null |
	while IFS=, read -r test rps _; do
		printf '%s %s %s\n' "$(now)" "${test//\"/}" "${rps//\"/}"
	done > "$TMP/rps" &
LOOP=$!
BACKGROUND+=("$LOOP")
sleep 2
[ -s "$TMP/rps" ] || die "redis-benchmark printed nothing: $(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>&1)"

echo "# A local redis-server's throughput beside each profiler, toggled"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); commit: $(tree_commit "$ROOT")"
echo "- CPU: $(lscpu 2>/dev/null | awk -F': *' '/^Model name/ { print $2; exit }') ($(nproc) CPUs); kernel $(uname -r)"
echo "- profile: $PROFILE ($("$PROFILE" --version 2>/dev/null | head -1)); peers: $(perf --version 2>/dev/null)$(command -v bpftrace >/dev/null && echo ", $(bpftrace --version 2>/dev/null)")"
echo "- workload: \`redis-benchmark -t set,get -c 50 -n $REQUESTS -l --csv\` all along, against $(redis-server --version | awk '{ print $1, $3 }') on 127.0.0.1 (--save '' --appendonly no)"
echo "- $CYCLES cycles; in each, for each condition: $PHASE_S s with nothing, then $PHASE_S s with it sampling (from $SETTLE_S s after its perf events open)"
for s in "${SKIPPED[@]}"; do echo "- skipped: $s"; done
echo

: > "$TMP/phases" # "condition start end cpu_s bpf_s" (condition -1: nothing)
t0=$(date +%s)
for cycle in $(seq "$CYCLES"); do
	echo "cycle $cycle/$CYCLES: load average $(cat /proc/loadavg)"
	for c in $(seq 0 $(( N - 1 ))); do
		start=$(now); sleep "$PHASE_S"; echo "-1 $start $(now) 0 0" >> "$TMP/phases"
		start_profiler "${LABELS[$c]}" "${COMMANDS[$c]}" 630 || continue
		cpu0=$(cpu_s "$PROGRAM"); bpf0=$(bpf_ns "$PROGRAM"); start=$(now)
		sleep "$PHASE_S"
		end=$(now); cpu1=$(cpu_s "$PROGRAM"); bpf1=$(bpf_ns "$PROGRAM")
		echo "$c $start $end $(awk -v a="${cpu0:-0}" -v b="${cpu1:-0}" 'BEGIN { print b - a }')" \
			"$(( (bpf1 - bpf0) / 1000 ))e-6" >> "$TMP/phases"
		stop_condition
	done
done
start=$(now); sleep "$PHASE_S"; echo "-1 $start $(now) 0 0" >> "$TMP/phases"
echo "end: load average $(cat /proc/loadavg); $(( $(date +%s) - t0 )) s"
echo

# A test's result counts in a phase when the test ran within it: it ended inside the phase,
# and at least its own duration after the phase began (REQUESTS / rps seconds).
printf '%s\n' "${LABELS[@]}" > "$TMP/labels"
awk -v requests="$REQUESTS" '
function sort(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
}
function median(a, n) { # sorts a[1..n] in place
	sort(a, n)
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function middle_mean(a, n,   lo, hi, k, s) { # of the middle half (all, below 4); sorts a
	sort(a, n)
	lo = n < 4 ? 1 : int(n / 4) + 1; hi = n < 4 ? n : n - int(n / 4)
	for (k = lo; k <= hi; k++) s += a[k]
	return s / (hi - lo + 1)
}
FILENAME == ARGV[1] { label[NR - 1] = $0; nlabels = NR; next }
FILENAME == ARGV[2] { np++; pc[np] = $1; ps[np] = $2; pe[np] = $3; pcpu[np] = $4; pbpf[np] = $5 + 0; next }
{
	t = $1; test = $2; rps = $3
	if (rps <= 0) next
	for (i = 1; i <= np; i++)
		if (t > ps[i] + requests / rps && t <= pe[i]) {
			k = ++cnt[i, test]; v[i, test, k] = rps; tests[test] = 1
			break
		}
}
END {
	# Each phase'"'"'s figure per test.
	for (i = 1; i <= np; i++) for (test in tests) {
		n = cnt[i, test]; if (!n) continue
		delete a; for (k = 1; k <= n; k++) a[k] = v[i, test, k]
		med[i, test] = middle_mean(a, n)
	}
	printf "| running beside redis | test | req/s, nothing (median of %s) | req/s, running (median) | change | change by cycle: median (min to max) | its process'"'"'s CPU | its BPF programs |\n", "phases"
	print "|---|---|---|---|---|---|---|---|"
	for (c = 0; c < nlabels; c++) for (test in tests) {
		n0 = n1 = nr = 0; cpu = bpf = span = 0
		delete off; delete on; delete r
		for (i = 1; i <= np; i++) {
			if (pc[i] == -1 && ((i, test) in med)) off[++n0] = med[i, test]
			if (pc[i] != c) continue
			cpu += pcpu[i]; bpf += pbpf[i]; span += pe[i] - ps[i]
			if (!((i, test) in med)) continue
			on[++n1] = med[i, test]
			# The phases with nothing just before and after this one.
			b = 0; for (j = i - 1; j >= 1 && !b; j--) if (pc[j] == -1 && ((j, test) in med)) b = med[j, test]
			f = 0; for (j = i + 1; j <= np && !f; j++) if (pc[j] == -1 && ((j, test) in med)) f = med[j, test]
			if (b && f) r[++nr] = med[i, test] / ((b + f) / 2)
		}
		if (!n1 || !n0) continue
		mo = median(off, n0); mn = median(on, n1)
		lo = hi = 0
		if (nr) { rm = median(r, nr); lo = r[1]; hi = r[nr] }
		printf "| %s | %s | %.0f | %.0f | %+.1f %% | %+.1f %% (%+.1f to %+.1f) | %.2f %% | %.2f %% |\n", label[c], test, mo,
			mn, (mn / mo - 1) * 100, nr ? (rm - 1) * 100 : 0, (lo - 1) * 100, (hi - 1) * 100,
			span ? cpu / span * 100 : 0, span ? bpf / span * 100 : 0
	}
	print ""
	print "Each phase, in order: what ran, and its figure per test."
	for (i = 1; i <= np; i++) {
		line = "    " (pc[i] == -1 ? "nothing" : label[pc[i]]) ":"
		for (test in tests) line = line sprintf(" %s %.0f", test, ((i, test) in med) ? med[i, test] : 0)
		print line
	}
}' "$TMP/labels" "$TMP/phases" "$TMP/rps"
echo
echo "Each phase's figure is the mean of the middle half of the tests that ran within it ($(awk 'END { print NR }' "$TMP/rps") tests in all)."
