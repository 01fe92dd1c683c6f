#!/usr/bin/env bash
# scripts/python-flamegraph.sh: makes doc/python-flamegraph.svg, the README's Python flame
# graph: profile's own SVG of tests/workloads/python/split.py (two Python functions, 3:1,
# the second calling zlib) run by Debian's /usr/bin/python3.11, user stacks at 499 Hz.
# Needs root, ./profile and /usr/bin/python3.11 (scripts/install-deps.sh --test).
# Usage: scripts/python-flamegraph.sh [SECONDS] [OUTPUT]   (default 5, doc/python-flamegraph.svg)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=/usr/bin/python3.11
. "$ROOT/scripts/work-dir.sh"
flamegraph_start python-flamegraph "$PYTHON" "$PYTHON (scripts/install-deps.sh --test)" "$@"

# Run from the workload's folder, so that the graph's file names are split.py's alone.
(cd "$ROOT/tests/workloads/python" && exec "$PYTHON" split.py $((SECONDS_RUN + 3)) "$TMP/truth" > "$TMP/ready") &
pid=$!
BACKGROUND+=("$pid")
while [ ! -s "$TMP/ready" ]; do sleep 0.1; done
"$PROFILE" -p "$pid" -U -f 499 -o "$OUTPUT" "$SECONDS_RUN"
wait "$pid"
read -r busy_s compressing_s < "$TMP/truth"
echo "python-flamegraph: $OUTPUT; the program's own split: busy ${busy_s} s, compressing ${compressing_s} s"
