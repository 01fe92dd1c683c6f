#!/usr/bin/env bash
# scripts/bench-node-cost.sh: what the JavaScript walk costs in the kernel, per sample:
# profile with JS frames and profile --no-js attached at once to one Node process
# (tests/workloads/node/split.js), in both attach orders, ROUNDS times; each pair's ns per
# sample and the geometric mean of the two orders' ratios (with / without). Both runs sample
# the same stacks in the same seconds, so the ratio holds on a busy machine where separate
# runs' ns do not. The issue's target: at most 1.5x.
# Then what the uprobes that count V8's GCs cost a process that collects its young
# generation hundreds of times a second (tests/workloads/node/garbage.js): its own rounds per
# second under profile -f 49 with JS frames (the uprobes attached) and with --no-js (none), in
# turns, ROUNDS times each; and the GCs that ran (node --trace-gc).
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
(cd "$TMP" && exec "$NODE" "$ROOT/tests/workloads/node/split.js" $((ROUNDS * 60 + 30)) "$TMP/truth" > /dev/null) &
TARGET=$!
PIDS+=("$TARGET")
sleep 0.5

echo "Node $("$NODE" --version) ($NODE), split.js, -f 997 -U --unwind auto"
echo
cost_rounds "$TARGET" --no-js "$ROUNDS" js
kill "$TARGET" 2>/dev/null || true

echo
echo "garbage.js's throughput (rounds/s, its own count, 8 s each) under profile -f 49, in turns:"
echo
echo "| round | with JS frames: rounds/s | GCs | --no-js: rounds/s | GCs | ratio |"
echo "|---|---|---|---|---|---|"
garbage_run() {
	local out=$TMP/garbage.out pid line
	(cd "$TMP" && exec "$NODE" --trace-gc "$ROOT/tests/workloads/node/garbage.js" 8 > "$out") &
	pid=$!
	PIDS+=("$pid")
	until grep -q ready "$out" 2>/dev/null; do sleep 0.05; done
	# shellcheck disable=SC2086
	"$PROFILE" -f 49 -p "$pid" $1 8 > /dev/null 2>&1 || true
	wait "$pid" || true
	line=$(grep -v "ms: \|ready" "$out" | tail -1)
	echo "$line $(grep -c 'ms: ' "$out")"
}
for round in $(seq 1 "$ROUNDS"); do
	read -r with with_gcs < <(garbage_run "")
	read -r without without_gcs < <(garbage_run --no-js)
	echo "| $round | $with | $with_gcs | $without | $without_gcs | $(awk -v a="$with" -v b="$without" \
		'BEGIN { printf "%.3f", (b > 0) ? a / b : 0 }') |"
done
