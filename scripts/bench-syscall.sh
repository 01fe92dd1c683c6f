#!/usr/bin/env bash
# scripts/bench-syscall.sh: what a running profile adds to every syscall of the machine.
# Its table unwinder hooks the raw sys_exit tracepoint (to follow mmap and mprotect), and
# every syscall passes through it. `perf bench syscall basic` (getppid in a loop) is timed
# without profile, then while `profile -f 49` samples the whole machine, in turns, ROUNDS
# times each (default 3); prints the medians in ns a call and their ratio.
# Needs root, ./profile and perf. Takes about half a minute.
# Usage: scripts/bench-syscall.sh [ROUNDS]
set -eu

cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-$(pwd)/profile}
ROUNDS=${1:-3}
if [ "$(id -u)" != 0 ]; then
	echo "bench-syscall: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
for tool in perf "$PROFILE"; do
	command -v "$tool" >/dev/null || { echo "bench-syscall: $tool is missing" >&2; exit 1; }
done

# ns a call, one run of perf's benchmark.
one() { perf bench syscall basic 2>/dev/null | awk '/usecs\/op/ { printf "%.1f\n", $1 * 1000 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

without=() with=()
for _ in $(seq "$ROUNDS"); do
	without+=("$(one)")
	"$PROFILE" -f 49 60 >/dev/null 2>&1 &
	profile=$!
	sleep 3 # loaded and attached
	with+=("$(one)")
	kill -INT "$profile"
	wait "$profile" || true
done
a=$(printf '%s\n' "${without[@]}" | median)
b=$(printf '%s\n' "${with[@]}" | median)
echo "getppid without profile: ${without[*]} ns (median $a)"
echo "getppid with profile -f 49 running: ${with[*]} ns (median $b)"
awk -v a="$a" -v b="$b" 'BEGIN { printf "profile adds %.1f ns a syscall: %.2fx\n", b - a, b / a }'
