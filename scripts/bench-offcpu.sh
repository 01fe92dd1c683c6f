#!/usr/bin/env bash
# scripts/bench-offcpu.sh: what --off-cpu costs the work it watches (issue 29). Its program
# runs at every context switch of the machine, so the workload is `perf bench sched pipe`:
# µs a round trip between two processes, each message a switch. Twice: both processes on
# CPU 0 (each message a switch from one to the other) and anywhere (a switch to and from
# the idle task on each side). And a real server: redis-benchmark (GET and SET, 50
# clients) against a redis-server this script starts on loopback, requests a second.
# The conditions, in turns: nothing; `profile --off-cpu` and `profile --off-cpu --wakers`
# (the whole machine, folded to /dev/null); and, as the peer, bpftrace's off-CPU time at
# sched_switch with kernel and user stacks (frame pointers), its tracefs mounted by this
# script when it is not. Each condition is started, given SETTLE_S seconds once attached,
# the workloads run, then it is stopped (SIGINT). ROUNDS rounds; prints the date, commit,
# CPU and kernel, every measurement, then the medians with each one's ratio against
# nothing and the spread; and, with run-time stats on for one more run, the ns profile's
# sched_switch program takes a switch.
# Needs root, perf; bpftrace for the peer's row, redis-server and redis-benchmark for the
# server's columns (else skipped, with a note).
# Usage: [PROFILE=./profile] scripts/bench-offcpu.sh [ROUNDS]   (default 5)
# Knobs (environment): SETTLE_S (2); PIPE_LOOPS (100000) round trips; STOP_S (60) seconds a
# condition may take to exit after SIGINT before it is killed; REDIS_REQUESTS (100000) and
# REDIS_CLIENTS (50).
set -u

cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
ROUNDS=${1:-${ROUNDS:-5}}
SETTLE_S=${SETTLE_S:-2}
PIPE_LOOPS=${PIPE_LOOPS:-100000}
STOP_S=${STOP_S:-60}

die() { echo "bench-offcpu: $*" >&2; exit 1; }
note() { echo "bench-offcpu: $*" >&2; }

case $ROUNDS in '' | *[!0-9]* | 0) die "ROUNDS must be a positive number (got '$ROUNDS')" ;; esac
[ "$(id -u)" = 0 ] || die "needs root to load BPF programs (try: sudo $0)"
for tool in perf taskset awk bpftool "$PROFILE"; do
	command -v "$tool" >/dev/null || die "$tool is missing (make; Debian: apt-get install linux-perf bpftool)"
done

. "$ROOT/scripts/work-dir.sh"
. "$ROOT/scripts/bpf-stats.sh"
. "$ROOT/scripts/rounds.sh"
. "$ROOT/scripts/redis.sh"
work_dir profile-bench-offcpu
MOUNTED_TRACEFS=
CHILD=
cleanup() {
	if [ -n "$CHILD" ]; then
		kill -INT "$CHILD" 2>/dev/null
		sleep 1
		kill -KILL "$CHILD" 2>/dev/null
	fi
	stop_redis
	if [ -n "$MOUNTED_TRACEFS" ]; then umount /sys/kernel/tracing 2>/dev/null; fi
	echo "${STATS_WAS:-0}" > /proc/sys/kernel/bpf_stats_enabled
	work_dir_cleanup
}
trap cleanup EXIT
STATS_WAS=$(cat /proc/sys/kernel/bpf_stats_enabled)

# The peer: time off the CPU per (kernel stack, user stack, comm), from the stacks a thread
# left with, as BCC's offcputime sums it.
BPFTRACE_OFFCPU='tracepoint:sched:sched_switch {
	if (args->prev_pid) { @start[args->prev_pid] = nsecs; @k[args->prev_pid] = kstack; @u[args->prev_pid] = ustack; }
	$s = @start[args->next_pid];
	if ($s) { @us[@k[args->next_pid], @u[args->next_pid], args->next_comm] = sum((nsecs - $s) / 1000); delete(@start[args->next_pid]); }
}'

LABELS=() COMMANDS=() READY=()
add() { LABELS+=("$1"); COMMANDS+=("$2"); READY+=("$3"); }
add "nothing" "" ""
add "profile --off-cpu (the whole machine)" "$(printf %q "$PROFILE") --off-cpu --folded 3600" "Tracing off-CPU"
add "profile --off-cpu --wakers (the whole machine)" "$(printf %q "$PROFILE") --off-cpu --wakers --folded 3600" "Tracing off-CPU"
SKIPPED=()
redis_check
if command -v bpftrace >/dev/null; then
	if ! mountpoint -q /sys/kernel/tracing; then
		mount -t tracefs tracefs /sys/kernel/tracing || die "cannot mount tracefs on /sys/kernel/tracing"
		MOUNTED_TRACEFS=yes
	fi
	add "bpftrace sched_switch, kstack + ustack" "bpftrace -e $(printf %q "$BPFTRACE_OFFCPU")" "Attaching"
else
	SKIPPED+=("bpftrace: not installed (Debian: apt-get install bpftrace): its row is left out")
fi
N=${#LABELS[@]}

# Starts condition $1 and waits for its word of being attached ($READY on its stderr or
# stdout), then SETTLE_S seconds. Non-zero, with a note, when it did not come to it.
start_condition() {
	local command=${COMMANDS[$1]} ready=${READY[$1]}
	CHILD=
	[ -n "$command" ] || return 0
	eval "set -- $command"
	"$@" > "$TMP/condition.out" 2> "$TMP/condition.err" &
	CHILD=$!
	for _ in $(seq 600); do # up to 60 s
		grep -qs "$ready" "$TMP/condition.err" "$TMP/condition.out" && break
		kill -0 "$CHILD" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -qs "$ready" "$TMP/condition.err" "$TMP/condition.out" || ! kill -0 "$CHILD" 2>/dev/null; then
		note "${LABELS[$1]}: did not attach: $(tail -2 "$TMP/condition.err" | tr '\n' ' ')"
		stop_condition
		return 1
	fi
	sleep "$SETTLE_S"
}
commit=$(tree_commit "$ROOT")
echo "# What --off-cpu costs the work it watches"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "- commit: $commit"
echo "- CPU: $(lscpu 2>/dev/null | awk -F': *' '/^Model name/ { print $2; exit }') ($(nproc) CPUs); kernel $(uname -r)"
start_redis
echo "- workloads: \`perf bench sched pipe -l $PIPE_LOOPS\`, on CPU 0 alone (\`taskset -c 0\`) and anywhere$([ -n "$REDIS" ] && echo "; $(redis_workload)")"
echo "- $ROUNDS round(s), the $N conditions in turns; each attached $SETTLE_S s before the workloads; figures are medians"
for s in "${SKIPPED[@]}"; do echo "- skipped: $s"; done
echo
# One condition's turn: the pipe on CPU 0, then anywhere.
turn() {
	local c=$1 one any
	start_condition "$c" || return 0
	one=$(sched_pipe_us "$PIPE_LOOPS" 0)
	any=$(sched_pipe_us "$PIPE_LOOPS" "")
	redis_rps
	stop_condition
	keep "$c" one "$one"
	keep "$c" any "$any"
	keep "$c" get "$GET"
	keep "$c" set "$SET"
	echo "  ${LABELS[$c]}: pipe on CPU 0 ${one:-?} µs, anywhere ${any:-?} µs$([ -n "$REDIS" ] && echo ", GET ${GET:-?}/s, SET ${SET:-?}/s")"
}
run_rounds turn
echo
one0=$(med 0 one) any0=$(med 0 any) get0=$(med 0 get) set0=$(med 0 set)
loss() { # $1 value, $2 nothing's: " (-12.8 %)"
	awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b != 0) printf " (%+.1f %%)", (a / b - 1) * 100 }'
}
echo "Medians of $ROUNDS round(s), µs a round trip$([ -n "$REDIS" ] && echo " and redis requests a second");" \
	"in brackets, against nothing running:"
echo
header="| running beside the work | sched pipe on CPU 0 | sched pipe anywhere |"
rule="|---|---|---|"
if [ -n "$REDIS" ]; then header+=" redis GET/s | redis SET/s |"; rule+="---|---|"; fi
echo "$header spread on CPU 0 | spread anywhere |$([ -n "$REDIS" ] && echo " spread GET/s | spread SET/s |")"
echo "$rule---|---|$([ -n "$REDIS" ] && echo "---|---|")"
for c in $(seq 0 $(( N - 1 ))); do
	one=$(med "$c" one) any=$(med "$c" any) get=$(med "$c" get) set=$(med "$c" set)
	r1='' r2='' r3='' r4=''
	if [ "$c" != 0 ]; then
		r1=" ($(ratio "$one" "$one0"))" r2=" ($(ratio "$any" "$any0"))"
		r3=$(loss "$get" "$get0") r4=$(loss "$set" "$set0")
	fi
	line="| ${LABELS[$c]} | ${one:--}$r1 | ${any:--}$r2 |"
	if [ -n "$REDIS" ]; then line+=" ${get:--}$r3 | ${set:--}$r4 |"; fi
	line+=" $(printf %s "${VALUES["$c one"]:-}" | spread) | $(printf %s "${VALUES["$c any"]:-}" | spread) |"
	if [ -n "$REDIS" ]; then
		line+=" $(printf %s "${VALUES["$c get"]:-}" | spread) | $(printf %s "${VALUES["$c set"]:-}" | spread) |"
	fi
	echo "$line"
done
echo

# One more run of profile with run-time stats on: its sched_switch program's ns a switch.
echo 1 > /proc/sys/kernel/bpf_stats_enabled
if start_condition 1; then
	prog=''
	for id in $(awk '$1 == "prog_id:" { print $2 }' /proc/"$CHILD"/fdinfo/* 2>/dev/null | sort -un); do
		bpftool prog show id "$id" 2>/dev/null | grep -q "name on_switch" && prog=$id
	done
	if [ -n "$prog" ]; then
		s0=$(prog_stats "$prog")
		sched_pipe_us "$PIPE_LOOPS" 0 > /dev/null
		s1=$(prog_stats "$prog")
		echo "profile --off-cpu's sched_switch program, run-time stats on, during the pipe on CPU 0:" \
			"$(per_sample "$s0" "$s1") ns a switch ($(echo "$s0 $s1" | awk '{ print $3 - $1 }') switches)"
	fi
	stop_condition
fi
echo "$STATS_WAS" > /proc/sys/kernel/bpf_stats_enabled
