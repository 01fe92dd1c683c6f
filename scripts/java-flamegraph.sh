#!/usr/bin/env bash
# scripts/java-flamegraph.sh: makes doc/java-flamegraph.svg, the README's Java flame graph:
# profile's own SVG of a real Java program, Debian OpenJDK 17's javac compiling the JDK's
# own java.util (344 files, scripts/javac-tree.sh: fetched from openjdk-17-source on first
# use), no flag in the JVM and no agent, user stacks at 49 Hz, SECONDS from 2 s after the
# JVM starts (its threads and first compiled code there). Before it, the same compile
# sampled with --folded -a gives the issue's target for a real program: of the main
# thread's samples (comm javac), those whose leaf is a Java method or [java], and of those
# the share named by a method (the rest [java]); the leaves in a stub of the code cache
# and [unknown] ones; the share rooted (reaching clone3 or _start); inlined frames.
# scripts/bench-javac.sh sets the same compile beside perf and a perf map.
# Needs root, ./profile and the JDK 17 of scripts/javac-tree.sh.
# Usage: scripts/java-flamegraph.sh [SECONDS] [OUTPUT]   (default 5, doc/java-flamegraph.svg)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
. "$ROOT/scripts/work-dir.sh"
. "$ROOT/scripts/javac-tree.sh"
flamegraph_start java-flamegraph "$JAVAC" "$JAVAC (openjdk-17-jdk-headless)" "$@"
javac_tree

# One compile, sampled by profile with $@ from 2 s on.
sample_compile() {
	javac_start "$TMP/classes"
	sleep 2
	"$PROFILE" -p "$JAVAC_PID" -U "$@" "$SECONDS_RUN" 2> "$TMP/stderr" || { cat "$TMP/stderr" >&2; exit 1; }
	wait "$JAVAC_PID" || { echo "java-flamegraph: javac failed:" >&2; tail -5 "$TMP/classes.log" >&2; exit 1; }
}

sample_compile --folded -a -f 499 > "$TMP/folded"
profile_stats "$TMP/folded" | awk '{
	java = $3 + $4
	printf "java-flamegraph: javac, main thread: %d samples; leaf in Java code: %d (%.1f %% named by a method, %d [java]),", $1, java, java ? 100 * $3 / java : 0, $4
	printf " in a stub: %d, [unknown]: %d; rooted: %.1f %%; %.1f Java frames a sample, %.1f of them inlined; %d methods\n", $5, $6, $1 ? 100 * $2 / $1 : 0, $1 ? $9 / $1 : 0, $1 ? $10 / $1 : 0, $12
}'
# The picture at 49 Hz: the same shape in fewer distinct stacks, a file the README can hold.
sample_compile -o "$OUTPUT" -f 49
echo "java-flamegraph: $OUTPUT"
