#!/usr/bin/env bash
# scripts/bench-limits.sh: issue 40's targets. Rates the machine cannot carry, on the whole
# machine with every CPU busy: profile -f 1000000, -f 100000 and -c 10, and --off-cpu --wakers
# on a storm of context switches (build/workloads/pingpong), each for DURATION seconds,
# beside a probe that sleeps 10 ms in a loop; and, as the peer, perf record -g at -F 100000
# and -c 10 on the same load. For each: how long past its duration the run took to end (the
# target: under 5 s), the probe's worst lateness (under 100 ms), the rate profile settled on,
# and what it dropped over its CPU budget. Then the ordinary rates, -f 49 and -f 999, which
# must drop nothing and lower nothing. ROUNDS rounds, in turns. Needs root, perf, python3.
# Usage: [PROFILE=./profile] scripts/bench-limits.sh [ROUNDS]   (default 2; DURATION=2)
set -u

cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
WORKLOADS=${WORKLOADS:-$ROOT/build/workloads}
ROUNDS=${1:-${ROUNDS:-2}}
DURATION=${DURATION:-2}
KILL_S=60 # a run still going this long after its duration is killed, and says so

die() { echo "bench-limits: $*" >&2; exit 1; }

case $ROUNDS in '' | *[!0-9]* | 0) die "ROUNDS must be a positive number (got '$ROUNDS')" ;; esac
case $DURATION in '' | *[!0-9]* | 0) die "DURATION must be a positive number of seconds (got '$DURATION')" ;; esac
[ "$(id -u)" = 0 ] || die "needs root to load BPF programs (try: sudo $0)"
for tool in perf python3 timeout "$PROFILE" "$WORKLOADS/split" "$WORKLOADS/pingpong"; do
	command -v "$tool" >/dev/null || die "$tool is missing (make workloads; Debian: apt-get install linux-perf python3)"
done

TMP=$(mktemp -d /tmp/profile-limits.XXXXXX)
LOAD=()
stop_load() {
	[ ${#LOAD[@]} -gt 0 ] && kill "${LOAD[@]}" 2>/dev/null
	wait "${LOAD[@]}" 2>/dev/null
	LOAD=()
}
trap 'stop_load; rm -rf "$TMP"' EXIT

# Every CPU busy with split, or (storm) two pipe ping-pongs.
start_load() {
	local cpus i
	if [ "$1" = storm ]; then
		"$WORKLOADS/pingpong" 3600 &
		LOAD+=($!)
	else
		cpus=$(nproc)
		for ((i = 0; i < cpus; i++)); do
			taskset -c "$i" "$WORKLOADS/split" 3600 >/dev/null &
			LOAD+=($!)
		done
	fi
	sleep 0.5
}

# The probe: sleeps 10 ms in a loop for $1 seconds, prints its worst lateness in ms.
PROBE='import sys, time
end = time.monotonic() + float(sys.argv[1]); worst = 0.0
while time.monotonic() < end:
    t = time.monotonic(); time.sleep(0.01); worst = max(worst, time.monotonic() - t - 0.01)
print("%.1f" % (worst * 1000))'

# One condition: name, load, then the command. Prints a row.
measure() {
	local name=$1 load=$2 start end over late rate lost
	shift 2
	start_load "$load"
	python3 -c "$PROBE" $((DURATION + 8)) >"$TMP/probe" &
	local probe=$!
	start=$(date +%s.%N)
	timeout -k 3 $((DURATION + KILL_S)) "$@" >/dev/null 2>"$TMP/err"
	local status=$?
	end=$(date +%s.%N)
	wait "$probe"
	stop_load
	over=$(awk -v s="$start" -v e="$end" -v d="$DURATION" 'BEGIN { printf "%.1f", e - s - d }')
	late=$(cat "$TMP/probe")
	rate=$(grep -o 'lowered to [0-9]* Hz\|lowered to one sample every [0-9]* ns\|Sampling at [0-9]* Hertz\|Sampling at every [0-9]* events' \
		"$TMP/err" | tail -1)
	lost=$(grep -o '[0-9]* over the CPU budget' "$TMP/err" | tail -1)
	echo "| $name | $status | $over s | $late ms | ${rate:--} | ${lost:-0 over the CPU budget} |"
}

echo "bench-limits: $(date -u +%FT%TZ), $(git describe --always --dirty 2>/dev/null), $(nproc) CPUs," \
	"$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), Linux $(uname -r);" \
	"perf_event_max_sample_rate $(cat /proc/sys/kernel/perf_event_max_sample_rate)," \
	"perf_cpu_time_max_percent $(cat /proc/sys/kernel/perf_cpu_time_max_percent)"
echo
echo "| condition | exit | past its ${DURATION} s | probe's worst wake-up late | rate settled | dropped |"
echo "|---|---|---|---|---|---|"
for ((round = 1; round <= ROUNDS; round++)); do
	measure "profile -f 1000000" busy "$PROFILE" -f 1000000 --folded "$DURATION"
	measure "perf record -g -F 100000 -a" busy perf record -q -o "$TMP/perf.data" -g -F 100000 -a sleep "$DURATION"
	measure "profile -f 100000" busy "$PROFILE" -f 100000 --folded "$DURATION"
	measure "profile -c 10" busy "$PROFILE" -c 10 --folded "$DURATION"
	measure "perf record -g -c 10 -e cpu-clock -a" busy perf record -q -o "$TMP/perf.data" -g -e cpu-clock -c 10 -a sleep "$DURATION"
	measure "profile --off-cpu --wakers, pipe storm" storm "$PROFILE" --off-cpu --wakers --folded "$DURATION"
	measure "profile -f 999" busy "$PROFILE" -f 999 --folded "$DURATION"
	measure "profile -f 49" busy "$PROFILE" -f 49 --folded "$DURATION"
done
