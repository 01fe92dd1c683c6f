#!/usr/bin/env bash
# scripts/offcpu-roots.sh: how much of the off-CPU time each tool sees comes with a whole
# user stack, one that reaches the thread's root frame (issue 29's target: >= 95 % of ours,
# where the frame-pointer tools are cut short on code built without frame pointers). The
# tools: `profile --off-cpu -p PID --folded`; a bpftrace script that sums the µs a thread
# of the process spends off the CPU per the user stack it left with (ustack at
# tracepoint:sched:sched_switch, its tracefs mounted by this script when it is not); and
# BCC's offcputime (`offcputime-bpfcc -f -p PID`) where it is installed and runs, else a
# note with its error line. The workloads, none of them ours but the last, all built
# without frame pointers: Debian's xz fed in bursts (`head -c 20000 /dev/urandom; sleep
# 0.01` in a loop into `xz -1 -T1`, as offcpu-flamegraph.sh feeds it), Debian's xz with two
# compressing threads (`xz -1 -T2` fed a file of XZ_INPUT_MB MiB of base64 over and over),
# Debian's python3 (/usr/bin/python3, the runtime linked into the binary) running a script
# that sleeps in two functions and blocks reading a pipe in a thread, and
# build/workloads/offcpu (tests/workloads/offcpu.c). Each workload is started afresh for
# each tool, the tools one at a time, each attached for SECONDS; prints the date, commit,
# kernel and versions, then a markdown table: per workload and tool, µs off the CPU, the
# share of it whose user stack reaches a root frame, which roots, and where the others end.
# Needs root, ./profile and build/workloads/offcpu (make -j2 build/workloads/offcpu), xz,
# /usr/bin/python3, bpftrace; offcputime-bpfcc for BCC's rows (Debian: apt-get install
# bpfcc-tools), else a note. Takes about a minute at the default SECONDS.
# Usage: [PROFILE=./profile] scripts/offcpu-roots.sh [SECONDS]   (default 5)
# Knobs (environment): SETTLE_S (1) seconds a workload runs before a tool is started on it;
# XZ_INPUT_MB (16) MiB of random bytes, base64-encoded, that xz -T2 compresses in a loop.
set -u

cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
RUN_S=${1:-5}
SETTLE_S=${SETTLE_S:-1}
XZ_INPUT_MB=${XZ_INPUT_MB:-16}
OFFCPU=$ROOT/build/workloads/offcpu
PYTHON=/usr/bin/python3

die() { echo "offcpu-roots: $*" >&2; exit 1; }

case $RUN_S in '' | *[!0-9]* | 0) die "SECONDS must be a positive whole number (got '$RUN_S')" ;; esac
case $XZ_INPUT_MB in '' | *[!0-9]* | 0) die "XZ_INPUT_MB must be a positive whole number (got '$XZ_INPUT_MB')" ;; esac
[ "$(id -u)" = 0 ] || die "needs root to load BPF programs (try: sudo $0)"
[ -x "$PROFILE" ] || die "$PROFILE is missing (make -j2)"
[ -x "$OFFCPU" ] || die "$OFFCPU is missing (make -j2 build/workloads/offcpu)"
[ -x "$PYTHON" ] || die "$PYTHON is missing (Debian: apt-get install python3)"
for tool in xz bpftrace awk base64 pgrep mountpoint timeout readelf; do
	command -v "$tool" >/dev/null || die "$tool is missing (Debian: apt-get install xz-utils bpftrace procps binutils)"
done
BCC=$(command -v offcputime-bpfcc || true)

. "$ROOT/scripts/work-dir.sh"
work_dir profile-offcpu-roots
MOUNTED_TRACEFS=
cleanup() {
	stop_workload
	if [ -n "$MOUNTED_TRACEFS" ]; then umount /sys/kernel/tracing 2>/dev/null; fi
	work_dir_cleanup
}
trap cleanup EXIT
if ! mountpoint -q /sys/kernel/tracing; then
	mount -t tracefs tracefs /sys/kernel/tracing || die "cannot mount tracefs on /sys/kernel/tracing"
	MOUNTED_TRACEFS=yes
fi

# The root set: the outermost frame of a thread whose user stack was walked to its start.
# Threads made by pthread_create start in glibc's clone3 (clone on older glibc, or for a
# thread made by clone() itself), which calls start_thread; the main thread starts at
# _start, which calls __libc_start_main (__libc_start_main_impl in glibc's symbols), which
# calls __libc_start_call_main, which calls main. profile ends them `clone3;start_thread`
# and `_start;__libc_start_main_impl;__libc_start_call_main`. A frame-pointer walk ends
# them one or two frames short, where the rbp chain stops: bpftrace's ustack of a program
# built with frame pointers, on this Debian 12, ends `thr;start_thread` and
# `main;__libc_start_call_main` (clone3 and _start clear rbp; glibc's own frames keep no
# frame pointer). A stack whose outermost frame is any of these has the thread's function
# (or main) in, so it counts as reaching its root, for every tool alike. (Reaching it is not
# all: that same frame-pointer walk also skips the frames between glibc's leaf and the
# first frame with a frame pointer.)
# A stripped executable (Debian's xz) has no symbol for _start: profile shows it by file and
# offset (`[xz+0x3ac1]`), bpftrace as an address. A frame in the first 0x30 bytes after the
# executable's entry point is _start's (glibc's x86-64 _start is 0x22 bytes, its call to
# __libc_start_main returns to its last instruction, hlt; the next function starts 16-byte
# aligned): it is shown as `FRAME (_start)` and counts as a root.
ROOTS=(_start __libc_start_main __libc_start_main_impl __libc_start_call_main start_thread clone clone3)

# The Python workload: sleep_three 3 ms, sleep_one 1 ms, then a byte into the pipe the
# reader thread waits on.
cat > "$TMP/offcpu.py" <<'EOF'
import os
import threading
import time

r, w = os.pipe()


def reader():
    while True:
        os.read(r, 1)


def sleep_three():
    time.sleep(0.003)


def sleep_one():
    time.sleep(0.001)


threading.Thread(target=reader, daemon=True).start()
while True:
    sleep_three()
    sleep_one()
    os.write(w, b"x")
EOF
head -c $(( XZ_INPUT_MB * 1024 * 1024 )) /dev/urandom | base64 > "$TMP/xz-input" || die "cannot write $TMP/xz-input"

WORKLOADS=(xz-bursts xz-T2 python3 offcpu)
declare -A DESCRIBE=(
	[xz-bursts]="Debian's xz -1 -T1, fed 20000 random bytes every 10 ms"
	[xz-T2]="Debian's xz -1 -T2 (two compressing threads), fed $XZ_INPUT_MB MiB of base64 in a loop"
	[python3]="Debian's $PYTHON ($("$PYTHON" --version 2>&1)): sleeps 3 ms and 1 ms in two functions, a thread blocked reading a pipe"
	[offcpu]="build/workloads/offcpu (tests/workloads/offcpu.c, -O2 -fomit-frame-pointer): sleeper, pipe reader and writer, mutex waiter and holder"
)

# Starts workload $1: WPID is the process the tools watch, WJOB the background job to stop.
WPID='' WJOB=''
start_workload() {
	WPID='' WJOB=''
	case $1 in
	xz-bursts | xz-T2)
		if [ "$1" = xz-bursts ]; then
			# The feeder ends when xz does (a write into a closed pipe).
			(while :; do head -c 20000 /dev/urandom || exit 0; sleep 0.01; done | xz -1 -T1 > /dev/null) &
		else
			(while :; do cat "$TMP/xz-input" || exit 0; done | xz -1 -T2 > /dev/null) &
		fi
		WJOB=$!
		for _ in $(seq 50); do
			WPID=$(pgrep -n -x -P "$WJOB" xz)
			[ -n "$WPID" ] && break
			sleep 0.1
		done
		;;
	python3)
		"$PYTHON" "$TMP/offcpu.py" &
		WJOB=$! WPID=$!
		;;
	offcpu)
		"$OFFCPU" $(( RUN_S + 600 )) "$TMP/truth" > "$TMP/offcpu.ready" &
		WJOB=$! WPID=$!
		for _ in $(seq 50); do
			grep -qs ready "$TMP/offcpu.ready" && break
			sleep 0.1
		done
		;;
	esac
	BACKGROUND+=("$WJOB")
	if [ -z "$WPID" ] || ! kill -0 "$WPID" 2>/dev/null; then die "workload $1 did not start"; fi
	sleep "$SETTLE_S"
}

stop_workload() {
	[ -n "$WJOB" ] || return 0
	[ -n "$WPID" ] && kill "$WPID" 2>/dev/null
	kill "$WJOB" 2>/dev/null
	wait "$WJOB" 2>/dev/null
	BACKGROUND=()
	WPID='' WJOB=''
}

# The peer: µs off the CPU per user stack, for the threads of process $1 ($1 is the tgid:
# at sched_switch the task running is prev, so `pid` is the tgid of the thread leaving),
# added when the thread runs again, as BCC's offcputime adds it. Stops after $2 seconds.
# shellcheck disable=SC2016 # bpftrace's $1, $2 and $s, not the shell's
BPFTRACE_OFFCPU='tracepoint:sched:sched_switch {
	if (pid == $1) { @start[args->prev_pid] = nsecs; @stack[args->prev_pid] = ustack; }
	$s = @start[args->next_pid];
	if ($s) {
		@us[@stack[args->next_pid]] = sum((nsecs - $s) / 1000);
		delete(@start[args->next_pid]); delete(@stack[args->next_pid]);
	}
}
interval:s:$2 { exit(); }
END { clear(@start); clear(@stack); }'

# "NAME ENTRY BASE" of process $1's executable: its file name, its entry point and where
# the kernel loaded it (0 for a position-dependent one), in decimal; empty if unknown.
exe_layout() {
	local exe header entry base
	exe=$(readlink "/proc/$1/exe") || return 0
	header=$(readelf -h "$exe" 2>/dev/null) || return 0
	entry=$(awk '/Entry point address:/ { print $4 }' <<< "$header")
	base=0
	if grep -q 'Type:.*DYN' <<< "$header"; then
		base=0x$(awk -v exe="$exe" '$6 == exe && $3 == "00000000" { split($1, r, "-"); print r[1]; exit }' "/proc/$1/maps")
	fi
	[ -n "$entry" ] && [ "$base" != 0x ] && echo "${exe##*/} $(( entry )) $(( base ))"
}

# The awk function that names the outermost frame: start(frame) is the frame, or
# "FRAME (_start)" when it lies in the first 0x30 bytes after the entry point of the
# executable (-v name, entry, base from exe_layout): `[NAME+0xOFF]` (profile) or an
# absolute 0xADDRESS (bpftrace).
START_AWK='
function hex(s,   i, n) {
	n = 0; s = tolower(s)
	for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return n
}
function start(f,   off) {
	if (name == "") return f
	if (index(f, "[" name "+0x") == 1 && f ~ /\]$/) off = hex(substr(f, length(name) + 5, length(f) - length(name) - 5))
	else if (f ~ /^0x[0-9a-fA-F]+$/) off = hex(substr(f, 3)) - base
	else return f
	return (off > entry && off < entry + 48) ? f " (_start)" : f
}'

# Each tool's output, turned into "OUTERMOST-FRAME<tab>µs" lines in $TMP/W.TOOL.roots;
# $1 is exe_layout's line. profile's folded lines: comm;[blocked]|[runnable];user frames
# root first;kernel frames µs. The user stack's outermost frame is the third; a stack cut
# short has [truncated] there.
roots_profile() {
	read -r name entry base <<< "$1"
	awk -v name="${name:-}" -v entry="${entry:-0}" -v base="${base:-0}" "$START_AWK"'
	{ n = $NF; sub(/ [0-9]+$/, ""); split($0, f, ";"); print (3 in f ? start(f[3]) : "(no user stack)") "\t" n }'
}
# bpftrace's map: "@us[", the frames innermost first, each symbol+offset or a hex address,
# then "]: µs". The outermost frame is the last before "]:". An empty stack ("@us[]: µs")
# is one bpftrace could not read back (it says "failed to look up stack id").
roots_bpftrace() {
	read -r name entry base <<< "$1"
	awk -v name="${name:-}" -v entry="${entry:-0}" -v base="${base:-0}" "$START_AWK"'
	/^@us\[.*\]: [0-9]+$/ { print "(no user stack)\t" $NF; next }
	/^@us\[$/ { inside = 1; last = "(no user stack)"; next }
	inside && /^\]: [0-9]+$/ { print start(last) "\t" $2; inside = 0; next }
	inside { f = $0; gsub(/^[ \t]+|[ \t]+$/, "", f); sub(/\+[0-9]+$/, "", f); last = f }'
}
# offcputime -f: comm;user frames root first;kernel frames µs. Its unknown frames carry no
# address ([unknown]).
roots_bcc() {
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); split($0, f, ";"); print (2 in f ? f[2] : "(no user stack)") "\t" n }'
}

# The line of a failed tool's output ($1 stdout, $2 stderr: BCC's libbcc prints "Unable to
# find kernel headers" on stdout) that says why: its first line that reads as an error
# (else its first line that is not a traceback's), and its last if that is another.
error_line() {
	awk 'NF && !/^(Traceback|[ \t])/ && !/RLIMIT_MEMLOCK/ {
		if (any == "") any = $0
		if (first == "" && /Unable|[Ee]rror|[Ff]ail|[Cc]annot|denied|not supported/) first = $0
		last = $0
	}
	END { if (first == "") first = any; print first (last != first ? " ... " last : "") }' "$1" "$2" | cut -c1-300
}

# Runs tool $2 on workload $1's process for RUN_S seconds; on success leaves
# $TMP/W.TOOL.roots, else says why in FAILED[W.TOOL].
declare -A FAILED=()
run_tool() {
	local w=$1 tool=$2 out=$TMP/$1.$2 rc
	case $tool in
	profile)
		timeout $(( RUN_S + 120 )) "$PROFILE" --off-cpu -p "$WPID" --folded "$RUN_S" > "$out.out" 2> "$out.err"
		rc=$?
		;;
	bpftrace)
		timeout $(( RUN_S + 120 )) bpftrace -e "$BPFTRACE_OFFCPU" "$WPID" "$RUN_S" > "$out.out" 2> "$out.err"
		rc=$?
		;;
	bcc)
		timeout $(( RUN_S + 120 )) "$BCC" -f -p "$WPID" "$RUN_S" > "$out.out" 2> "$out.err"
		rc=$?
		;;
	esac
	if ! kill -0 "$WPID" 2>/dev/null; then
		FAILED[$w.$tool]="the workload ended before $tool did (its stacks could not be named)"
	elif [ "$rc" != 0 ]; then
		FAILED[$w.$tool]="exit $rc: $(error_line "$out.out" "$out.err")"
	else
		"roots_$tool" "$(exe_layout "$WPID")" < "$out.out" > "$out.roots"
		# What the tool said on stderr besides its banner (bpftrace: stacks it lost).
		grep -v -e RLIMIT_MEMLOCK -e '^Attaching' -e '^Tracing off-CPU' -e '^profile: user stacks:' "$out.err" |
			sort | uniq -c | sort -rn | head -3 | sed 's/^ *\([0-9]*\) /\1 x /' > "$out.said"
	fi
}

# A row: µs, the share whose outermost frame is a root, the roots reached and the frames
# the others end in (each with its share of the µs, the 3 largest).
summary() {
	awk -F'\t' -v roots="${ROOTS[*]}" '
	function top(a, total,   k, best, out, i, n) {
		out = ""
		for (i = 0; i < 3; i++) {
			best = ""
			for (k in a) if (best == "" || a[k] > a[best]) best = k
			if (best == "") break
			out = out (out == "" ? "" : ", ") "`" best "` " sprintf("%.1f %%", 100 * a[best] / total)
			delete a[best]
		}
		for (k in a) n++
		return (out == "" ? "-" : out (n ? sprintf(", %d more", n) : ""))
	}
	BEGIN { split(roots, r, " "); for (i in r) isroot[r[i]] = 1 }
	{ total += $2; if ($1 in isroot || $1 ~ / \(_start\)$/) { whole += $2; reached[$1] += $2 } else cut[$1] += $2 }
	END {
		if (total == 0) { print "0 | - | - | -"; exit }
		printf "%d | %.1f %% | %s | %s\n", total, 100 * whole / total, top(reached, total), top(cut, total)
	}'
}

TOOLS=(profile bpftrace)
NOTES=()
if [ -n "$BCC" ]; then
	TOOLS+=(bcc)
else
	NOTES+=("BCC's offcputime: not installed (Debian: apt-get install bpfcc-tools): no rows")
fi
declare -A TOOL_NAME=([profile]="profile --off-cpu" [bpftrace]="bpftrace, ustack at sched_switch" [bcc]="BCC offcputime-bpfcc -f")

for w in "${WORKLOADS[@]}"; do
	for tool in "${TOOLS[@]}"; do
		# BCC fails the same way on every workload when it fails (no kprobes, no headers):
		# once is enough.
		if [ "$tool" = bcc ] && [ -n "${BCC_FAILED:-}" ]; then continue; fi
		echo "offcpu-roots: $w, $tool, $RUN_S s" >&2
		start_workload "$w"
		run_tool "$w" "$tool"
		stop_workload
		if [ "$tool" = bcc ] && [ -n "${FAILED[$w.bcc]:-}" ]; then BCC_FAILED=${FAILED[$w.bcc]}; fi
	done
done

commit=$(tree_commit "$ROOT")
echo "# Off-CPU stacks that reach their roots: profile, bpftrace, BCC"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "- commit: $commit"
echo "- kernel $(uname -r); $(nproc) CPUs"
echo "- profile: $("$PROFILE" --version 2>&1 | head -1); bpftrace: $(bpftrace --version 2>&1 | head -1);" \
	"BCC: $(if [ -n "$BCC" ]; then dpkg-query -W -f '${Version}' bpfcc-tools 2>/dev/null || echo "$BCC"; else echo "not installed"; fi);" \
	"xz: $(xz --version 2>&1 | head -1); python3: $("$PYTHON" --version 2>&1)"
echo "- each workload started afresh for each tool, the tools one at a time, each attached for $RUN_S s"
echo "- root frames (a user stack's outermost frame that makes it whole): $(printf '\x60%s\x60 ' "${ROOTS[@]}")"
for w in "${WORKLOADS[@]}"; do echo "- $w: ${DESCRIBE[$w]}"; done
echo
echo "| workload | tool | µs off-CPU | reaching a root | roots reached (share of µs) | where the others end (share of µs) |"
echo "|---|---|---|---|---|---|"
for w in "${WORKLOADS[@]}"; do
	for tool in "${TOOLS[@]}"; do
		if [ -f "$TMP/$w.$tool.roots" ]; then
			echo "| $w | ${TOOL_NAME[$tool]} | $(summary < "$TMP/$w.$tool.roots") |"
		elif [ "$tool" != bcc ] && [ -n "${FAILED[$w.$tool]:-}" ]; then
			NOTES+=("$w, ${TOOL_NAME[$tool]}: no row: ${FAILED[$w.$tool]}")
		fi
	done
done
if [ -n "${BCC_FAILED:-}" ]; then
	NOTES+=("BCC's offcputime ($BCC) did not run, so it has no rows: $BCC_FAILED$([ -e /sys/kernel/tracing/kprobe_events ] ||
		echo "; past that, its kprobe on finish_task_switch would find no kprobes (no kprobe_events in tracefs)")")
fi
echo
for w in "${WORKLOADS[@]}"; do
	for tool in "${TOOLS[@]}"; do
		while read -r said; do
			NOTES+=("$w, ${TOOL_NAME[$tool]} said: $said")
		done < <(cat "$TMP/$w.$tool.said" 2>/dev/null)
	done
	account=$(grep -hs 'user stacks:' "$TMP/$w.profile.err" | sed 's/^profile: //')
	[ -n "$account" ] && NOTES+=("$w, profile's account: $account")
done
for n in "${NOTES[@]}"; do echo "- $n"; done
