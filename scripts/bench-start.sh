#!/usr/bin/env bash
# scripts/bench-start.sh: the wall time a run takes beyond its sampling (its start and its
# finish), profile against `perf record -g` + `perf script`, run in turn on this machine.
#   1. `profile -f 49 1`, whole machine, idle workload: RUNS times (default 5).
#   2. 40 live processes (build/workloads/stacks, one distinct stack each, about one CPU in
#      all, in a session of their own as in scripts/bench.sh): `profile -f 999 3` against
#      `perf record -g -a -F 999 -- sleep 3` then `perf script`; 3 runs of each in turn,
#      the median counts. Beyond = the whole wall time less the 3 s sampled (for perf:
#      perf record's less 3 s, plus all of perf script's).
# With BEFORE=path/to/another/profile (an older build), that one runs too, in turn with
# the others, in a column of its own. Every line carries the 1-minute load average read
# just before it, and each run of profile (with PROFILE_DEBUG=1) its start and its naming
# as it accounts them. Prints markdown.
# Needs root, ./profile, build/workloads/stacks (make workloads) and perf. About a minute.
# Usage: [BEFORE=old/profile] scripts/bench-start.sh [RUNS]
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
BEFORE=${BEFORE:-}
WORKLOADS=${WORKLOADS:-$ROOT/build/workloads}
RUNS=${1:-5}
PROCESSES=40
SAMPLE_S=3
REPS=3

if [ "$(id -u)" != 0 ]; then
	echo "bench-start: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
for tool in perf "$PROFILE" "$WORKLOADS/stacks"; do
	command -v "$tool" >/dev/null || { echo "bench-start: $tool is missing (make workloads; apt-get install linux-perf)" >&2; exit 1; }
done

. "$ROOT/scripts/work-dir.sh"
work_dir profile-bench-start

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
load() { cut -d' ' -f1 /proc/loadavg; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Sets BEYOND_MS: the wall time of profile (or of $3) for `-f $1 $2`, less $2 seconds; and
# PHASES: "start S, naming N", from PROFILE_DEBUG=1's account (S: its phases before
# sampling added up; N: its symbolize phase), in ms.
beyond_profile() {
	local t0 t1
	t0=$(now_ms)
	PROFILE_DEBUG=1 "${3:-$PROFILE}" -f "$1" "$2" > "$TMP/profile.out" 2> "$TMP/profile.err" ||
		{ echo "bench-start: profile failed: $(tail -1 "$TMP/profile.err")" >&2; exit 1; }
	t1=$(now_ms)
	BEYOND_MS=$(( t1 - t0 - $2 * 1000 ))
	PHASES=$(awk '/^profile: before sampling: / { sub(/; kernel symbols.*/, ""); n = split($0, f, / ms \(/)
			for (i = 1; i < n; i++) { k = split(f[i], w, " "); start += w[k] } }
		/^profile: after sampling: / { match($0, /symbolize [0-9.]+ ms/); naming = substr($0, RSTART + 10, RLENGTH - 13) }
		END { printf "start %.0f, naming %.0f", start, naming }' "$TMP/profile.err")
}

# Sets RECORD_MS (perf record -g's wall time at $1 Hz for $2 s, less $2 s), SCRIPT_MS
# (perf script's) and BEYOND_MS, their sum.
beyond_perf() {
	local t0 t1 t2
	t0=$(now_ms)
	perf record -q -g -e cpu-clock -F "$1" -a -o "$TMP/perf.data" -- sleep "$2" > /dev/null 2>&1
	t1=$(now_ms)
	perf script -i "$TMP/perf.data" > "$TMP/perf.out" 2> /dev/null
	t2=$(now_ms)
	RECORD_MS=$(( t1 - t0 - $2 * 1000 ))
	SCRIPT_MS=$(( t2 - t1 ))
	BEYOND_MS=$(( RECORD_MS + SCRIPT_MS ))
}

echo "Measured by \`scripts/bench-start.sh\` on $(date -u '+%Y-%m-%d %H:%M') UTC, $(uname -r), $(nproc) CPUs."
echo
echo "#### \`profile -f 49 1\`: wall time beyond its one second of sampling"
echo
# The column of BEFORE's runs, when there is one: sets OLD (its cell) after a run.
before_run() {
	OLD=
	if [ -n "$BEFORE" ]; then
		beyond_profile "$1" "$2" "$BEFORE"
		OLD=" $BEYOND_MS ms ($PHASES) |"
		echo "$BEYOND_MS" >> "$TMP/before.$3"
	fi
}
old_head=${BEFORE:+" before ($BEFORE) |"}
old_rule=${BEFORE:+"---|"}
: > "$TMP/before.1"
: > "$TMP/before.40"

echo "| run | load average | profile (its start, naming) |$old_head perf record -g -F 49 + perf script |"
echo "|---|---|---|$old_rule---|"
: > "$TMP/ours.1"
for i in $(seq 1 "$RUNS"); do
	before=$(load)
	beyond_profile 49 1
	ours=$BEYOND_MS
	phases=$PHASES
	echo "$ours" >> "$TMP/ours.1"
	before_run 49 1 1
	beyond_perf 49 1
	echo "| $i | $before | $ours ms ($phases) |$OLD $BEYOND_MS ms |"
done
echo
echo "Median: $(median < "$TMP/ours.1") ms${BEFORE:+ (before: $(median < "$TMP/before.1") ms)}."
echo
# 40 live processes.
busy=$(( 1000 / PROCESSES ))
setsid bash -c 'for i in $(seq 0 $(($1 - 1))); do "$2" "$i" 600 "$3" & done; wait' \
	workers "$PROCESSES" "$WORKLOADS/stacks" "$busy" &
workers=$!
BACKGROUND+=("$workers")
trap 'kill -TERM -- -"$workers" 2>/dev/null || true; work_dir_cleanup' EXIT
sleep 0.5
echo "#### Start and finish, $PROCESSES live processes: wall time beyond $SAMPLE_S s sampled at 999 Hz"
echo
echo "| run | load average | profile (its start, naming) |$old_head perf record -g | perf script | perf in all | ratio |"
echo "|---|---|---|$old_rule---|---|---|---|"
: > "$TMP/ours.40"
: > "$TMP/perf.40"
for i in $(seq 1 "$REPS"); do
	before=$(load)
	beyond_profile 999 "$SAMPLE_S"
	ours=$BEYOND_MS
	phases=$PHASES
	before_run 999 "$SAMPLE_S" 40
	beyond_perf 999 "$SAMPLE_S"
	echo "$ours" >> "$TMP/ours.40"
	echo "$BEYOND_MS" >> "$TMP/perf.40"
	echo "| $i | $before | $ours ms ($phases) |$OLD $RECORD_MS ms | $SCRIPT_MS ms | $BEYOND_MS ms |" \
		"$(awk -v a="$ours" -v b="$BEYOND_MS" 'BEGIN { printf "%.2fx", a / b }') |"
done
ours=$(median < "$TMP/ours.40")
perf=$(median < "$TMP/perf.40")
echo
echo "Medians: profile $ours ms${BEFORE:+ (before: $(median < "$TMP/before.40") ms)}, perf $perf ms:" \
	"$(awk -v a="$ours" -v b="$perf" 'BEGIN { printf "%.2fx", a / b }') (target: at most 0.25x)."
