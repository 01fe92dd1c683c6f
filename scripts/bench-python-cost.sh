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


echo "$("$PYTHON" -c 'import sys; print("CPython %d.%d.%d" % sys.version_info[:3])') ($PYTHON), split.py, -f 997 -U --unwind auto"
echo
echo "| round | python first: python | native | native first: python | native | geometric mean ratio |"
echo "|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
	read -r p1 n1 < <(stats_pair "$TARGET" "" --no-python)
	read -r n2 p2 < <(stats_pair "$TARGET" --no-python "")
	echo "| $round | $p1 | $n1 | $p2 | $n2 | $(awk -v p1="$p1" -v n1="$n1" -v p2="$p2" -v n2="$n2" \
		'BEGIN { printf "%.2fx", (n1 > 0 && n2 > 0) ? sqrt((p1 / n1) * (p2 / n2)) : 0 }') |"
done
