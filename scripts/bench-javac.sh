#!/usr/bin/env bash
# scripts/bench-javac.sh: the Java issue's target for a real program, side by side with
# perf: Debian OpenJDK 17's javac compiling java.util (scripts/javac-tree.sh), run twice a
# round, in turns (perf first in odd rounds, profile first in even ones):
#   perf: javac under -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions
#         -XX:+DumpPerfMapAtExit (the JVM writes /tmp/perf-PID.map as it exits; no agent),
#         `perf record -e cpu-clock -F 499 -g -p PID`, then `perf script` once the JVM has
#         exited and written its map (the map is removed after);
#   profile: javac as it is, `profile -p PID -U -a --folded -f 499`.
# Each attaches WARM (2) seconds after javac starts, when the JVM's threads and its code
# cache are there (perf -p attached at the start sees none of the threads and code-cache
# mappings made after it: most of its leaves then read [unknown]), and samples SECONDS.
# Both read javac's main thread only (comm javac; perf sees the compiler threads too, but
# their code is the JVM's own, with symbols). The table, for each tool (the fields are
# those of profile_stats and perf_stats in javac-tree.sh, which say what each one counts):
#   - the main thread's samples whose leaf is in the code cache (a Java method, an
#     interpreted one, a stub, or [unknown]): named at all; named by a Java method (perf
#     names an interpreted leaf only "Interpreter", profile by its method); the rest;
#   - frames a sample, and of them named (not [unknown], [truncated], [java], Interpreter);
#     Java method frames a sample, and of them inlined ones (profile's _[i]: a perf map
#     names a compiled method's code as the method compiled, never what it inlined);
#   - the share rooted (the stack reaching the thread's start), distinct Java methods met.
# A perf map written at exit holds only the code alive then: a method compiled again, or
# freed, before the end has its earlier code unnamed (perf: [unknown]).
# Needs root, ./profile, perf (linux-perf) and the JDK 17 of scripts/javac-tree.sh.
# KEEP=DIR keeps each round's profile.N.folded and perf.N.txt there.
# Not part of `make test`. Usage: scripts/bench-javac.sh [SECONDS] [ROUNDS]   (default 5, 2)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
SECONDS_RUN=${1:-5}
ROUNDS=${2:-2}
WARM=2
PERF=$(command -v perf || true)
. "$ROOT/scripts/work-dir.sh"
. "$ROOT/scripts/javac-tree.sh"

if [ "$(id -u)" != 0 ]; then
	echo "bench-javac: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
if [ -z "$PERF" ] || [ ! -x "$JAVAC" ] || [ ! -x "$PROFILE" ]; then
	echo "bench-javac: needs perf (linux-perf), $JAVAC (openjdk-17-jdk-headless) and $PROFILE (make)" >&2
	exit 1
fi
work_dir bench-javac
javac_tree

# The compile's end: its exit status, 0 unless javac failed (its log says why).
javac_wait() {
	wait "$JAVAC_PID" || { echo "bench-javac: javac failed:" >&2; tail -5 "$TMP/classes.log" >&2; exit 1; }
}

run_perf() {
	javac_start "$TMP/classes" -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit
	sleep "$WARM"
	"$PERF" record -q -e cpu-clock -F 499 -g -p "$JAVAC_PID" -o "$TMP/perf.data" -- sleep "$SECONDS_RUN" 2> "$TMP/perf.err" ||
		{ cat "$TMP/perf.err" >&2; exit 1; }
	javac_wait
	[ -s "/tmp/perf-$JAVAC_PID.map" ] || { echo "bench-javac: the JVM wrote no /tmp/perf-$JAVAC_PID.map" >&2; exit 1; }
	"$PERF" script -i "$TMP/perf.data" > "$TMP/perf.txt" 2> /dev/null
	rm -f "/tmp/perf-$JAVAC_PID.map"
	perf_stats "$TMP/perf.txt" > "$TMP/perf.stats"
}

run_profile() {
	javac_start "$TMP/classes"
	sleep "$WARM"
	"$PROFILE" -p "$JAVAC_PID" -U -a --folded -f 499 "$SECONDS_RUN" > "$TMP/profile.folded" 2> "$TMP/profile.err" ||
		{ cat "$TMP/profile.err" >&2; exit 1; }
	javac_wait
	profile_stats "$TMP/profile.folded" > "$TMP/profile.stats"
}

echo "bench-javac: $(date -u +%Y-%m-%dT%H:%MZ), commit $(tree_commit "$ROOT"), $("$JDK17/bin/java" -version 2>&1 | head -1)," \
	"javac on $(wc -l < "$TREE/files") files, ${SECONDS_RUN} s from ${WARM} s on, 499 Hz, $ROUNDS rounds, load $(cut -d' ' -f1 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
	if [ $((round % 2)) = 1 ]; then run_perf; run_profile; else run_profile; run_perf; fi
	echo "== round $round"
	awk 'function pct(a, b) { return b ? sprintf("%.1f %%", 100 * a / b) : "-" }
	function per(a, b) { return b ? sprintf("%.1f", a / b) : "-" }
	function row(name, p, q) { printf "  %-46s %16s %16s\n", name, p, q }
	FNR == 1 { t++ } { for (i = 1; i <= NF; i++) v[t, i] = $i }
	END {
		row("", "perf + map", "profile")
		for (t = 1; t <= 2; t++) { code[t] = v[t,3] + v[t,4] + v[t,5] + v[t,6] }
		row("main-thread samples", v[1,1], v[2,1])
		row("leaf in the code cache", code[1], code[2])
		row("  named (any symbol)", pct(code[1] - v[1,6], code[1]), pct(code[2] - v[2,4] - v[2,6], code[2]))
		row("  named by a Java method", pct(v[1,3], code[1]), pct(v[2,3], code[2]))
		row("  Interpreter (perf) / [java] (profile)", pct(v[1,4], code[1]), pct(v[2,4], code[2]))
		row("  a stub (named by its blob)", pct(v[1,5], code[1]), pct(v[2,5], code[2]))
		row("  [unknown]", pct(v[1,6], code[1]), pct(v[2,6], code[2]))
		row("frames a sample / of them named", per(v[1,7], v[1,1]) " / " per(v[1,8], v[1,1]), per(v[2,7], v[2,1]) " / " per(v[2,8], v[2,1]))
		row("Java method frames a sample / inlined", per(v[1,9], v[1,1]) " / " per(v[1,10], v[1,1]), per(v[2,9], v[2,1]) " / " per(v[2,10], v[2,1]))
		row("Interpreter frames a sample", per(v[1,11], v[1,1]), "-")
		row("rooted (reaching the thread start)", pct(v[1,2], v[1,1]), pct(v[2,2], v[2,1]))
		row("distinct Java methods", v[1,12], v[2,12])
	}' "$TMP/perf.stats" "$TMP/profile.stats"
	if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$TMP/profile.folded" "$KEEP/profile.$round.folded" && cp "$TMP/perf.txt" "$KEEP/perf.$round.txt"; fi
done
