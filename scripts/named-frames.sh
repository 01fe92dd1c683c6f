#!/usr/bin/env bash
# scripts/named-frames.sh: how many user frames profile names, against perf, over a real
# C++ build: a fresh copy of this repository built with `make -j2` while profile and
# `perf record -g -a` both sample the whole machine at the same rate. Prints both
# fractions (frames named / user frames of the build's processes, each frame weighted by
# its samples), then the end-of-run symbolization time of profile with 40 live processes
# (PROFILE_DEBUG=1 phases). KEEP=DIR keeps the raw outputs there.
# Needs root, ./profile and build/workloads/ (make; make workloads). Takes a few minutes.
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
WORKLOADS=${WORKLOADS:-$ROOT/build/workloads}
HZ=${HZ:-99}
LIVE=${LIVE:-40}
SOURCE=${SOURCE:-$ROOT} # the git repository whose HEAD is built

if [ "$(id -u)" != 0 ]; then
	echo "named-frames: needs root to load BPF programs and to run perf -a (try: sudo $0)" >&2
	exit 1
fi
for tool in perf git make; do
	command -v "$tool" >/dev/null || { echo "named-frames: $tool is missing" >&2; exit 1; }
done
for program in "$PROFILE" "$WORKLOADS/stacks"; do
	[ -x "$program" ] || { echo "named-frames: $program is not built (run: make && make workloads)" >&2; exit 1; }
done

. "$ROOT/scripts/work-dir.sh"
work_dir named-frames
log() { echo "named-frames: $*" >&2; }

# The build: the committed tree of this repository, in a folder of its own.
mkdir "$TMP/src"
git -C "$SOURCE" archive HEAD | tar -x -C "$TMP/src"

log "building a fresh copy with make -j2 under profile and perf record -g -a at $HZ Hz"
"$PROFILE" -f "$HZ" --folded -a -d -E >"$TMP/profile.folded" 2>"$TMP/profile.err" &
PROFILE_PID=$!
BACKGROUND+=("$PROFILE_PID")
# --no-bpf-event: BPF programs are no user frames, and perf 6.1's script may stop at a BPF
# record of a newer kernel ("failed to process type: 17", when another tool loads a program
# meanwhile): then both counts cover the processes forked before it, perf's samples up to it.
perf record -q -g -a -F "$HZ" --no-bpf-event -o "$TMP/perf.data" >/dev/null 2>"$TMP/perf.err" &
PERF_PID=$!
BACKGROUND+=("$PERF_PID")
sleep 2 # both are sampling well before the first compiler starts
start=$(date +%s)
make -C "$TMP/src" -j2 >"$TMP/build.log" 2>&1 &
MAKE_PID=$!
wait "$MAKE_PID" || { log "the build failed:"; tail "$TMP/build.log" >&2; exit 1; }
log "built in $(($(date +%s) - start)) s"
kill -INT "$PROFILE_PID" "$PERF_PID"
wait "$PROFILE_PID" "$PERF_PID" || true
BACKGROUND=()

# The build's processes: make and every process forked under it, from perf's fork records
# (in time order, so a parent is known before its children). Other work on the machine
# does not count.
perf script -i "$TMP/perf.data" --show-task-events -F pid 2>"$TMP/perf-script.err" | awk -v root="$MAKE_PID" '
	BEGIN { build[root] = 1; print root }
	match($0, /PERF_RECORD_FORK\([0-9]+:[0-9]+\):\([0-9]+:/) {
		split(substr($0, RSTART + 17, RLENGTH - 18), ids, /[():]+/)
		if (ids[1] == ids[2] && (ids[3] in build) && !(ids[1] in build)) {
			build[ids[1]] = 1
			print ids[1]
		}
	}' >"$TMP/build.pids"
log "$(wc -l <"$TMP/build.pids") processes in the build"

# profile, folded with -a -d -E: "comm-PID;user frames;-;kernel frames_[k] COUNT". A user
# frame is unnamed when it reads [unknown] or [file+0xoffset].
ours=$(awk '
	FNR == NR { build[$1] = 1; next }
	{
		count = $NF
		line = substr($0, 1, length($0) - length(count) - 1)
		n = split(line, frames, ";")
		pid = frames[1]
		sub(/.*-/, "", pid)
		if (!(pid in build))
			next
		for (i = 2; i <= n; i++) {
			if (frames[i] == "-" || frames[i] ~ /_\[k\]$/)
				break
			total += count
			if (frames[i] !~ /^\[/)
				named += count
		}
	}
	END { printf "%d %d\n", named, total }' "$TMP/build.pids" "$TMP/profile.folded")

# perf script: a "comm PID/TID" line per sample, then a "\tIP SYM (DSO)" line per frame; it
# prints user addresses relative to their file, kernel ones whole (ffff...).
perf script -i "$TMP/perf.data" -F comm,pid,tid,ip,sym,dso 2>>"$TMP/perf-script.err" >"$TMP/perf.txt" ||
	log "perf script stopped early (status $?: $(tail -1 "$TMP/perf-script.err")): perf's count is partial"
theirs=$(awk '
	FNR == NR { build[$1] = 1; next }
	/^[^\t]/ {
		in_build = 0
		if (match($0, /[0-9]+\/[0-9]+/))
			in_build = substr($0, RSTART, index(substr($0, RSTART), "/") - 1) in build
		next
	}
	/^\t/ {
		if (!in_build || (length($1) == 16 && $1 ~ /^ffff/))
			next
		total++
		if ($2 != "[unknown]")
			named++
	}
	END { printf "%d %d\n", named, total }' "$TMP/build.pids" "$TMP/perf.txt")
if [ -n "${KEEP:-}" ]; then
	mkdir -p "$KEEP"
	cp "$TMP/profile.folded" "$TMP/perf.txt" "$TMP/build.pids" "$KEEP/"
fi

fraction() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.1f%%", t ? 100 * n / t : 0 }'; }
set -- $ours
echo "profile: $(fraction "$1" "$2") of user frames named ($1 of $2 frame samples)"
set -- $theirs
echo "perf:    $(fraction "$1" "$2") of user frames named ($1 of $2 frame samples)"

# End-of-run symbolization with LIVE processes alive and sampled: each runs its own stack
# (stacks.c INDEX), busy 2.5% of the time.
log "symbolization time with $LIVE live processes"
for i in $(seq 1 "$LIVE"); do
	"$WORKLOADS/stacks" "$i" 30 25 &
	BACKGROUND+=("$!")
done
sleep 0.5
for flags in "" "-v"; do
	PROFILE_DEBUG=1 "$PROFILE" -f "$HZ" $flags 3 >/dev/null 2>"$TMP/debug.err"
	line=$(grep 'after sampling' "$TMP/debug.err" || true)
	symbolize=$(echo "$line" | sed -n 's/.*symbolize \([0-9.]*\) ms.*/\1/p')
	keys=$(echo "$line" | sed -n 's/.*; \([0-9]*\) keys.*/\1/p')
	echo "profile ${flags:-   } with $LIVE live processes: symbolize ${symbolize:-?} ms (${keys:-?} keys)"
done
