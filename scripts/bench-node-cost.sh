#!/usr/bin/env bash
# scripts/bench-node-cost.sh: what the JavaScript walk costs in the kernel, per sample:
# profile with JS frames and profile --no-js attached at once to one Node process
# (tests/workloads/node/split.js), in both attach orders, ROUNDS times; each pair's ns per
# sample and the geometric mean of the two orders' ratios (with / without). Both runs sample
# the same stacks in the same seconds, so the ratio holds on a busy machine where separate
# runs' ns do not. The issue's target: at most 1.5x.
# Needs root and ./profile.
# Usage: scripts/bench-node-cost.sh [ROUNDS] [NODE]   (default 3, /usr/bin/node)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
ROUNDS=${1:-3}
NODE=${2:-/usr/bin/node}

if [ "$(id -u)" != 0 ]; then
	echo "bench-node-cost: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
. "$ROOT/scripts/bpf-stats.sh"

stats_session bench-node-cost

# In the temporary folder: V8 writes its log files where it runs.
(cd "$TMP" && exec "$NODE" "$ROOT/tests/workloads/node/split.js" $((ROUNDS * 30 + 30)) "$TMP/truth" > /dev/null) &
TARGET=$!
PIDS+=("$TARGET")
sleep 0.5

echo "Node $("$NODE" --version) ($NODE), split.js, -f 997 -U --unwind auto"
echo
cost_rounds "$TARGET" --no-js "$ROUNDS" js
