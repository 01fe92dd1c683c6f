#!/usr/bin/env bash
# scripts/bench-python-cost.sh: what the Python walk costs in the kernel, per sample: profile
# with Python frames and profile --no-python attached at once to one CPython process
# (tests/workloads/python/split.py), in both attach orders, ROUNDS times; each pair's ns per
# sample and the geometric mean of the two orders' ratios (with / without). Both runs sample
# the same stacks in the same minute, so the ratio holds on a busy machine where separate
# runs' ns do not. The issue's target: at most 1.5x.
# Needs root and ./profile.
# Usage: scripts/bench-python-cost.sh [ROUNDS] [PYTHON]   (default 3, python3)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
ROUNDS=${1:-3}
PYTHON=${2:-python3}

if [ "$(id -u)" != 0 ]; then
	echo "bench-python-cost: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
. "$ROOT/scripts/bpf-stats.sh"

stats_session bench-python-cost


"$PYTHON" "$ROOT/tests/workloads/python/split.py" $((ROUNDS * 30 + 30)) "$TMP/truth" > /dev/null &
TARGET=$!
PIDS+=("$TARGET")
sleep 0.5

# Two profile runs on the target, the first attached first: "ns-first ns-second".
pair() {
	local a b pa pb a0 b0 a1 b1
	# shellcheck disable=SC2086
	"$PROFILE" -f 997 -U --unwind auto -p "$TARGET" $1 > /dev/null 2>&1 &
	a=$!
	pa=$(prog_of "$a")
	# shellcheck disable=SC2086
	"$PROFILE" -f 997 -U --unwind auto -p "$TARGET" $2 > /dev/null 2>&1 &
	b=$!
	pb=$(prog_of "$b")
	sleep 2
	a0=$(prog_stats "$pa"); b0=$(prog_stats "$pb")
	sleep 6
	a1=$(prog_stats "$pa"); b1=$(prog_stats "$pb")
	kill -INT "$a" "$b" 2>/dev/null || true
	wait "$a" "$b" 2>/dev/null || true
	echo "$(per_sample "$a0" "$a1") $(per_sample "$b0" "$b1")"
}

echo "$("$PYTHON" -c 'import sys; print("CPython %d.%d.%d" % sys.version_info[:3])') ($PYTHON), split.py, -f 997 -U --unwind auto"
echo
echo "| round | python first: python | native | native first: python | native | geometric mean ratio |"
echo "|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
	read -r p1 n1 < <(pair "" --no-python)
	read -r n2 p2 < <(pair --no-python "")
	echo "| $round | $p1 | $n1 | $p2 | $n2 | $(awk -v p1="$p1" -v n1="$n1" -v p2="$p2" -v n2="$n2" \
		'BEGIN { printf "%.2fx", (n1 > 0 && n2 > 0) ? sqrt((p1 / n1) * (p2 / n2)) : 0 }') |"
done
