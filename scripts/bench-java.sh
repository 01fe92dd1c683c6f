#!/usr/bin/env bash
# scripts/bench-java.sh: issue 39's targets for Java, on each JDK of this machine
# (Debian's OpenJDK 17, Temurin 25): tests/workloads/java/holdout/Split.java runs its two
# methods on the main thread and measures their split with the thread's CPU clock; two
# profiles attach to it at once, one as it is and one with --no-java, for SECONDS. Prints,
# per JDK: hotA's share in the profile against the program's own, the main thread's samples
# under a named method, those with main above them and the thread's root at the top, the
# source file and line on the frame, the time to read the JVM's tables; then the sampling program's
# ns per run (kernel.bpf_stats_enabled) with Java frames and with --no-java, both attached
# at once at 997 Hz (-U), in turns (each attached first once). --no-java stops at the first
# compiled frame (no frame pointer there); so the same pair runs again on a JVM started with
# -XX:+PreserveFramePointer, whose whole stack --no-java walks too: what naming Java frames
# costs beyond walking them.
# Needs root, ./profile and bpftool. Not part of `make test`. Usage: scripts/bench-java.sh [SECONDS] (default 10)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
DURATION=${1:-10}

if [ "$(id -u)" != 0 ]; then
	echo "bench-java: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
[ -x "$PROFILE" ] || { echo "bench-java: $PROFILE is missing (make)" >&2; exit 1; }
# shellcheck source=scripts/bpf-stats.sh
. "$ROOT/scripts/bpf-stats.sh"
stats_session java
WORK=$TMP

# The JVM's truth file, rewritten every round: read until two reads agree.
settled() {
	local a b
	while :; do
		a=$(cat "$1" 2>/dev/null || true); b=$(cat "$1" 2>/dev/null || true)
		if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "$a"; return; fi
		sleep 0.01
	done
}

echo "bench-java: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $DURATION s a JDK"
for java in /usr/lib/jvm/java-17-openjdk-amd64/bin/java /usr/lib/jvm/temurin-25-jdk-amd64/bin/java; do
	[ -x "$java" ] || { echo "bench-java: $java is missing: skipped"; continue; }
	if [ ! -f "$WORK/classes/holdout/Split.class" ]; then
		"$(dirname "$java")/javac" --release 11 -g -d "$WORK/classes" tests/workloads/java/holdout/Split.java
	fi
	rm -f "$WORK/ready" "$WORK/truth"
	"$java" -cp "$WORK/classes" holdout.Split $((DURATION + 45)) "$WORK/truth" >"$WORK/ready" &
	jvm=$!
	PIDS+=("$jvm")
	while [ ! -s "$WORK/ready" ] || [ ! -s "$WORK/truth" ]; do sleep 0.1; done
	sleep 1
	before=$(settled "$WORK/truth")
	PROFILE_DEBUG=1 "$PROFILE" -p "$jvm" -f 499 --folded "$DURATION" >"$WORK/on.folded" 2>"$WORK/on.err"
	after=$(settled "$WORK/truth")
	read -r j1 n1 < <(cost_pair "$jvm" "" --no-java)
	read -r n2 j2 < <(cost_pair "$jvm" --no-java "")
	kill "$jvm" 2>/dev/null || true
	wait "$jvm" 2>/dev/null || true
	rm -f "$WORK/ready" "$WORK/fp-truth"
	"$java" -XX:+PreserveFramePointer -cp "$WORK/classes" holdout.Split 45 "$WORK/fp-truth" >"$WORK/ready" &
	jvm=$!
	PIDS+=("$jvm")
	while [ ! -s "$WORK/ready" ] || [ ! -s "$WORK/fp-truth" ]; do sleep 0.1; done
	sleep 1
	read -r fj1 fn1 < <(cost_pair "$jvm" "" --no-java)
	read -r fn2 fj2 < <(cost_pair "$jvm" --no-java "")
	kill "$jvm" 2>/dev/null || true
	wait "$jvm" 2>/dev/null || true
	echo "== $("$java" -version 2>&1 | head -1)"
	# A folded line is "frame;frame;...;frame COUNT": the count becomes a field of its own.
	sed 's/ \([0-9]*\)$/;\1/' "$WORK/on.folded" >"$WORK/on.fields"
	awk -v before="$before" -v after="$after" '
		BEGIN { split(before, b, " "); split(after, a, " ")
			da = a[1] - b[1]; db = a[2] - b[2]; truth = da / (da + db) }
		$1 == "java" {
			n = $NF; total += n
			named = 0; main = 0; A = 0; B = 0; file = 0; lined = 0
			for (i = 1; i <= NF; i++) {
				if ($i ~ /\.java(:[0-9]+)?\)/) named = 1
				if ($i ~ /^holdout\.Split\.main \(Split\.java/) main = 1
				if ($i ~ /holdout\.Split\.hotA \(Split\.java/) { A = 1; file = 1 }
				if ($i ~ /holdout\.Split\.hotB \(Split\.java/) { B = 1; file = 1 }
				if ($i ~ /holdout\.Split\.hot[AB] \(Split\.java:[0-9]+\)/) lined = 1
			}
			if (named) { n_named += n; if (main && $2 == "clone3") n_whole += n }
			n_a += A * n; n_b += B * n; n_file += file * n; n_lined += lined * n
		}
		END {
			share = (n_a + n_b) ? n_a / (n_a + n_b) : 0
			printf "hotA share: %.1f %% in the profile, %.1f %% measured (%d samples of the two; target: within 3 points)\n",
				100 * share, 100 * truth, n_a + n_b
			printf "main thread under a named method: %.1f %% of %d (target >= 85 %%)\n", total ? 100 * n_named / total : 0, total
			printf "of those, main above and the root at the top: %.1f %% (target >= 95 %%)\n", n_named ? 100 * n_whole / n_named : 0
			printf "hotA/hotB with their source file: %d of %d, with its line: %d\n", n_file, n_a + n_b, n_lined
		}' FS=';' "$WORK/on.fields" | sed 's/^/  /'
	grep -h "^profile: java:" "$WORK/on.err" | sed 's/^profile: /  /'
	echo "  ns per sample: Java frames $j1, --no-java $n1 (Java attached first); Java $j2, --no-java $n2 (--no-java first);" \
		"$(awk -v j1="$j1" -v n1="$n1" -v j2="$j2" -v n2="$n2" \
			'BEGIN { printf "%.2fx", (n1 > 0 && n2 > 0) ? sqrt((j1 / n1) * (j2 / n2)) : 0 }') (target: <= 1.5x)"
	echo "  with -XX:+PreserveFramePointer (--no-java walks the whole stack too): Java $fj1, --no-java $fn1 (Java first);" \
		"Java $fj2, --no-java $fn2 (--no-java first);" \
		"$(awk -v j1="$fj1" -v n1="$fn1" -v j2="$fj2" -v n2="$fn2" \
			'BEGIN { printf "%.2fx", (n1 > 0 && n2 > 0) ? sqrt((j1 / n1) * (j2 / n2)) : 0 }')"
done
