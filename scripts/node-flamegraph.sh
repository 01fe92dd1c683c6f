#!/usr/bin/env bash
# scripts/node-flamegraph.sh: makes doc/node-flamegraph.svg, the README's JavaScript flame
# graph: profile's own SVG of a real Node.js program, the TypeScript compiler (npm's
# typescript, installed into build/npm-ts on first use) type-checking its own typescript.d.ts,
# run by the image's /usr/bin/node, user stacks at 49 Hz, no flag in the process. Before
# it, the same compile sampled with --folded gives the issue's target for a real program:
# the share of the main thread's samples whose leaf is JIT code, and of those, the share
# named by a JS function (the rest read [v8 JIT] or a builtin's name).
# Needs root, ./profile, /usr/bin/node and npm (or build/npm-ts already there).
# Usage: scripts/node-flamegraph.sh [SECONDS] [OUTPUT]   (default 5, doc/node-flamegraph.svg)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
NODE=/usr/bin/node
TYPESCRIPT=typescript@5.9.3
TSC=$ROOT/build/npm-ts/node_modules/typescript/lib/tsc.js
. "$ROOT/scripts/work-dir.sh"
flamegraph_start node-flamegraph "$NODE" "$NODE (Node.js)" "$@"

if [ ! -f "$TSC" ]; then
	mkdir -p "$ROOT/build/npm-ts"
	(cd "$ROOT/build/npm-ts" && npm install --no-save --no-audit --no-fund --loglevel=error "$TYPESCRIPT" >/dev/null) ||
		{ echo "node-flamegraph: npm could not install $TYPESCRIPT" >&2; exit 1; }
fi
cp "$ROOT/build/npm-ts/node_modules/typescript/lib/typescript.d.ts" "$TMP/"

# One compile in $TMP (V8 writes its logs where it runs), sampled by profile with $@.
sample_compile() {
	(cd "$TMP" && exec "$NODE" "$TSC" --noEmit --target es2022 --lib es2022,dom typescript.d.ts > /dev/null) &
	local pid=$!
	BACKGROUND+=("$pid")
	"$PROFILE" -p "$pid" -U "$@" "$SECONDS_RUN" 2> "$TMP/stderr" || { cat "$TMP/stderr" >&2; exit 1; }
	wait "$pid" || true
}

sample_compile --folded -f 499 > "$TMP/folded"
# The main thread's stacks start at _start; a leaf in JIT code is a JS frame (its name and
# file:line), [v8 JIT], or V8's embedded builtins (Builtins_*), which have no tables either.
awk '/^node;_start;/ {
	n = $NF; main += n; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, f, ";")
	if (f[k] ~ / \([^()]*(:[0-9]+)?\)$/ && f[k] !~ /^\[/) { js += n } else if (f[k] == "[v8 JIT]") { unnamed += n }
	else if (f[k] ~ /^Builtins_/) { builtin += n }
} END {
	jit = js + unnamed
	printf "node-flamegraph: tsc, main thread: %d samples; leaf in JS code: %d (%.1f %% named), in builtins: %d\n", main, jit, jit ? 100 * js / jit : 0, builtin
}' "$TMP/folded"
# The picture at 49 Hz: the same shape in fewer distinct stacks, a file the README can hold.
sample_compile -o "$OUTPUT" -f 49
echo "node-flamegraph: $OUTPUT"
