#!/usr/bin/env bash
# scripts/offcpu-flamegraph.sh: makes doc/offcpu-flamegraph.svg, the README's off-CPU flame
# graph: profile's own SVG of where Debian's xz waits, and who wakes it. xz compresses a
# pipe fed in bursts (head, then a 10 ms sleep of the shell), so it is off the CPU most of
# the time: blocked in read() until head's write() wakes it. --off-cpu --wakers, kernel and
# user stacks, SECONDS long.
# Needs root, ./profile and xz (xz-utils).
# Usage: scripts/offcpu-flamegraph.sh [SECONDS] [OUTPUT]   (default 5, doc/offcpu-flamegraph.svg)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
XZ=$(command -v xz || true)
. "$ROOT/scripts/work-dir.sh"
flamegraph_start offcpu-flamegraph "$XZ" "xz (apt-get install xz-utils)" "$@"

# The feeder ends when xz does (a write into a closed pipe), xz when the run is over.
(while :; do head -c 20000 /dev/urandom || exit 0; sleep 0.01; done | "$XZ" -1 -T1 > /dev/null) &
pipeline=$!
BACKGROUND+=("$pipeline")
xz_pid=
while [ -z "$xz_pid" ]; do
	sleep 0.1
	xz_pid=$(pgrep -n -x -P "$pipeline" xz || true)
done
"$PROFILE" --off-cpu --wakers -p "$xz_pid" -o "$OUTPUT" "$SECONDS_RUN"
kill "$xz_pid" 2>/dev/null || true
echo "offcpu-flamegraph: $OUTPUT, of xz (PID $xz_pid) off the CPU for $SECONDS_RUN s"
