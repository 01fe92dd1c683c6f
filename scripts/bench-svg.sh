#!/bin/sh
# scripts/bench-svg.sh: times the SVG flame graph of 50,000 unique stacks against its targets.
#
# The measurement is the doctest case "svg: 50,000 unique stacks make a file under 5 MB"
# with BENCH_SVG=1 (three renders, the best one timed), on build/run-tests, whose report
# writers are built optimized. Targets: under 1 s and under 5 MB.
# Exit status 1 when either is missed. BENCH_SVG_OUT=FILE keeps the SVG for a look.
set -eu
cd "$(dirname "$0")/.."

make -s build/run-tests >&2
output=$(BENCH_SVG=1 build/run-tests -tc='svg: 50?000 unique stacks*' 2>&1) || true
line=$(printf '%s\n' "$output" | grep '^bench-svg:' || true)
if [ -z "$line" ]; then
	printf '%s\n' "$output" >&2
	echo "bench-svg: the benchmark printed no result (see above)" >&2
	exit 1
fi

printf '%s\n' "$line" | awk '
function grouped(n,   s, out) {
	s = sprintf("%d", n)
	out = ""
	while (length(s) > 3) {
		out = "," substr(s, length(s) - 2) out
		s = substr(s, 1, length(s) - 3)
	}
	return s out
}
{
	for (i = 2; i <= NF; i++) {
		split($i, kv, "=")
		v[kv[1]] = kv[2]
	}
	time_ratio = v["seconds"] / 1.0
	size_ratio = v["bytes"] / 5000000
	printf "svg of %s unique stacks (%s boxes drawn):\n", grouped(v["stacks"]), grouped(v["boxes"])
	printf "  time  %.3f s  = %.2f x the 1 s target\n", v["seconds"], time_ratio
	printf "  size  %.2f MB = %.2f x the 5 MB target (%s bytes)\n", v["bytes"] / 1e6, size_ratio, grouped(v["bytes"])
	printf "same profile as pprof: %s bytes = %.3f x the folded text (%s bytes)\n",
		grouped(v["pprof_bytes"]), v["pprof_bytes"] / v["folded_bytes"], grouped(v["folded_bytes"])
	exit (time_ratio < 1 && size_ratio < 1) ? 0 : 1
}'
