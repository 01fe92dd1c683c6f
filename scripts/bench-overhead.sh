#!/usr/bin/env bash
# scripts/bench-overhead.sh: what a running profiler costs the work it watches (issue 27).
# Three workloads are timed while nothing else runs, and while each profiler samples the
# whole machine:
#   - `perf bench syscall basic` (getppid in a loop): ns a syscall, which any program on the
#     syscall path raises (profile's tp_btf/sys_exit did, before 3aca4cc);
#   - redis-benchmark (GET and SET, 50 clients, -q) against a redis-server this script starts
#     on a free loopback port (--save '' --appendonly no) and stops: requests a second;
#   - `perf bench sched pipe`: µs a round trip between two processes, both on CPU 0 (so
#     that each message is a context switch, not a wakeup of an idle CPU), context switches.
# The conditions: nothing; `profile -f 49 DURATION` (the card's command, output to
# /dev/null); the agent's defaults (`--agent` is -f 19 and --interval 15; here each window
# is written to a file, pprof, as the agent pushes it); `profile --unwind fp -f 49`;
# `perf record -g -F 49 -a`; bpftrace `profile:hz:49 { @[kstack, ustack] = count(); }`.
# With PROFILE_OLD=path/to/another/profile (an older build), its three rows are added
# ("old profile ..."): before and after in the same run. A peer that is not installed is
# skipped, with a note. Each condition is started, given SETTLE_S seconds once its perf
# events are open, the three workloads are run, then it is stopped (SIGINT) and waited
# for. The conditions run in turns (each round starts one condition later), ROUNDS
# rounds; prints the date, commit, CPU, kernel and each round's load average, every
# measurement, then a markdown table of the medians with each one's ratio (or loss)
# against nothing, and the spread (min-max).
# Needs root, perf; redis-server and redis-benchmark (else those columns are skipped).
# About 4 minutes at the defaults (6 conditions, 3 rounds); 9 conditions about 6.
# Usage: [PROFILE=./profile] [PROFILE_OLD=old/profile] [ROUNDS=3] scripts/bench-overhead.sh [ROUNDS]
# Other knobs (environment): SETTLE_S (3) seconds a profiler samples before the workloads;
# SYSCALL_LOOPS (10000000) getppid calls; REDIS_REQUESTS (100000) and REDIS_CLIENTS (50);
# PIPE_LOOPS (200000) round trips, PIPE_CPUS (0) where they run (empty: anywhere); RUN_S (600) the duration each profiler is given, a bound
# (it is stopped as soon as the workloads are done); STOP_S (60) seconds a profiler may take
# to exit after SIGINT before it is killed; ONLY, a regular expression: the conditions whose
# label matches it, and nothing.
set -u

cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
PROFILE_OLD=${PROFILE_OLD:-}
ROUNDS=${1:-${ROUNDS:-3}}
SETTLE_S=${SETTLE_S:-3}
SYSCALL_LOOPS=${SYSCALL_LOOPS:-10000000}
PIPE_LOOPS=${PIPE_LOOPS:-200000}
PIPE_CPUS=${PIPE_CPUS-0}
RUN_S=${RUN_S:-600}
STOP_S=${STOP_S:-60}
QUIET_S=1 # pause before each condition, so that none starts in the tail of another's exit

die() { echo "bench-overhead: $*" >&2; exit 1; }
note() { echo "bench-overhead: $*" >&2; }

case $ROUNDS in '' | *[!0-9]* | 0) die "ROUNDS must be a positive number (got '$ROUNDS')" ;; esac
if [ "$(id -u)" != 0 ]; then
	die "needs root to load BPF programs (try: sudo $0)"
fi
for tool in perf timeout taskset awk "$PROFILE"; do
	command -v "$tool" >/dev/null || die "$tool is missing (make; Debian: apt-get install linux-perf)"
done
if [ -n "$PROFILE_OLD" ]; then
	command -v "$PROFILE_OLD" >/dev/null || die "PROFILE_OLD=$PROFILE_OLD is not a program"
fi

. "$ROOT/scripts/work-dir.sh"
. "$ROOT/scripts/rounds.sh"
. "$ROOT/scripts/redis.sh"
work_dir profile-bench-overhead
CHILD= # the condition running now: the `timeout` that wraps it
cleanup() {
	if [ -n "$CHILD" ]; then
		kill -INT "$CHILD" 2>/dev/null
		sleep 1
		kill -KILL -- -"$CHILD" 2>/dev/null
	fi
	if [ -n "$REDIS_PID" ]; then kill -TERM "$REDIS_PID" 2>/dev/null; fi
	work_dir_cleanup
}
trap cleanup EXIT

SKIPPED=()
redis_check

# The conditions: a label each, and its command (words quoted for eval; empty: nothing).
LABELS=() COMMANDS=()
add() { LABELS+=("$1"); COMMANDS+=("$2"); }
add "nothing" ""
profile_rows() { # $1: label prefix, $2: the binary
	local p
	p=$(printf %q "$2")
	add "${1}profile -f 49 $RUN_S (the card's command)" "$p -f 49 $RUN_S"
	add "${1}profile -f 19 --interval 15 -o …/w.pb.gz (the agent's defaults)" \
		"$p -f 19 --interval 15 -o \$TMP/w.pb.gz $RUN_S"
	add "${1}profile --unwind fp -f 49 $RUN_S" "$p --unwind fp -f 49 $RUN_S"
}
profile_rows "" "$PROFILE"
if [ -n "$PROFILE_OLD" ]; then profile_rows "old " "$PROFILE_OLD"; fi
add_peers
# ONLY: an extended regular expression; only the conditions whose label matches it run
# ("nothing" always does).
if [ -n "${ONLY:-}" ]; then
	[[ "" =~ $ONLY ]]
	[ $? != 2 ] || die "ONLY='$ONLY' is not a regular expression"
	kept_labels=() kept_commands=()
	for i in "${!LABELS[@]}"; do
		if [ "$i" = 0 ] || [[ ${LABELS[$i]} =~ $ONLY ]]; then
			kept_labels+=("${LABELS[$i]}")
			kept_commands+=("${COMMANDS[$i]}")
		fi
	done
	LABELS=("${kept_labels[@]}") COMMANDS=("${kept_commands[@]}")
fi
N=${#LABELS[@]}

# --- the workloads, each printing one number (empty when it failed)
syscall_ns() {
	perf bench syscall basic -l "$SYSCALL_LOOPS" 2>/dev/null |
		awk '/usecs\/op/ { ns = $1 * 1000 } /ops\/sec/ && !ns && $1 > 0 { ns = 1e9 / $1 }
			END { if (ns) printf "%.1f\n", ns }'
}
pipe_us() { sched_pipe_us "$PIPE_LOOPS" "$PIPE_CPUS"; }
# --- a condition's profiler
# Starts condition $1 (CHILD, PROGRAM; nothing for "nothing"): scripts/rounds.sh.
start_condition() {
	CHILD=
	[ -n "${COMMANDS[$1]}" ] || return 0
	start_profiler "${LABELS[$1]}" "${COMMANDS[$1]}" $(( RUN_S + 30 ))
}
# --- the run
start_redis
commit=$(tree_commit "$ROOT")
cpu=$(lscpu 2>/dev/null | awk -F': *' '/^Model name/ { print $2; exit }')
echo "# What a running profiler costs the work it watches"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "- commit: $commit (\`git rev-parse --short HEAD\` in $ROOT)"
echo "- CPU: ${cpu:-unknown} ($(nproc) CPUs); kernel $(uname -r)"
echo "- profile: $PROFILE ($("$PROFILE" --version 2>/dev/null | head -1))"
if [ -n "$PROFILE_OLD" ]; then
	echo "- old profile: $PROFILE_OLD ($("$PROFILE_OLD" --version 2>/dev/null | head -1))"
fi
echo "- peers: $(perf --version 2>&1 | head -1)$(command -v bpftrace >/dev/null && echo ", $(bpftrace --version 2>&1 | head -1)")"
echo "- workloads: \`perf bench syscall basic -l $SYSCALL_LOOPS\`;" \
	"$([ -n "$REDIS" ] && echo "$(redis_workload);")" \
	"\`$([ -n "$PIPE_CPUS" ] && echo "taskset -c $PIPE_CPUS ")perf bench sched pipe -l $PIPE_LOOPS\`"
echo "- $ROUNDS round(s), the $N conditions in turns (round r starts at condition r); each profiler" \
	"samples $SETTLE_S s after its perf events are open before the workloads; figures are medians"
if [ -n "${ONLY:-}" ]; then echo "- only the conditions whose label matches ONLY='$ONLY', and nothing"; fi
for s in "${SKIPPED[@]}"; do echo "- skipped: $s"; done
echo
# One condition's turn: each workload beside it.
turn() {
	local c=$1 load ns us
	PROGRAM=
	if ! start_condition "$c"; then
		echo "  ${LABELS[$c]}: did not start, no figures this round"
		return 0
	fi
	load=$(cut -d' ' -f1 /proc/loadavg)
	ns=$(syscall_ns)
	redis_rps
	us=$(pipe_us)
	if [ -n "$PROGRAM" ] && ! kill -0 "$PROGRAM" 2>/dev/null; then
		echo "  ${LABELS[$c]}: exited during the workloads, no figures this round:" \
			"$(tail -2 "$TMP/condition.err" | tr '\n' ' ')"
		stop_condition
		return 0
	fi
	stop_condition
	keep "$c" ns "$ns"
	keep "$c" get "$GET"
	keep "$c" set "$SET"
	keep "$c" pipe "$us"
	echo "  ${LABELS[$c]}: getppid ${ns:-?} ns$([ -n "$REDIS" ] && echo ", GET ${GET:-?}/s, SET ${SET:-?}/s")," \
		"pipe ${us:-?} µs (load $load)"
}
run_rounds turn
stop_redis
echo

# --- the table
commas() { awk -v n="$1" 'BEGIN { s = sprintf("%.0f", n); out = ""
	while (length(s) > 3) { out = "," substr(s, length(s) - 2) out; s = substr(s, 1, length(s) - 3) }
	print s out }'; }
loss() { # $1 value, $2 nothing's: "-12.8 %"
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print ""; else printf "%+.1f %%", (a / b - 1) * 100 }'
}
cell() { # $1 shown value, $2 comparison (empty: none)
	if [ -z "$1" ]; then echo "-"; elif [ -z "$2" ]; then echo "$1"; else echo "$1 ($2)"; fi
}
ns0=$(med 0 ns) get0=$(med 0 get) set0=$(med 0 set) pipe0=$(med 0 pipe)
header="| running beside the work | ns per getppid |"
rule="|---|---|"
if [ -n "$REDIS" ]; then header+=" redis GET requests/s | redis SET requests/s |"; rule+="---|---|"; fi
header+=" sched pipe µs/op |"
rule+="---|"
echo "Medians of $ROUNDS round(s); in brackets, against nothing running (ratio for times, change for throughput):"
echo
echo "$header"
echo "$rule"
for c in $(seq 0 $(( N - 1 ))); do
	ns=$(med "$c" ns) get=$(med "$c" get) set=$(med "$c" set) pipe=$(med "$c" pipe)
	cmp_ns='' cmp_get='' cmp_set='' cmp_pipe=''
	if [ "$c" != 0 ]; then
		cmp_ns=$(ratio "$ns" "$ns0") cmp_get=$(loss "$get" "$get0") cmp_set=$(loss "$set" "$set0")
		cmp_pipe=$(ratio "$pipe" "$pipe0")
	fi
	line="| ${LABELS[$c]} | $(cell "$ns" "$cmp_ns") |"
	if [ -n "$REDIS" ]; then
		line+=" $(cell "$([ -n "$get" ] && commas "$get")" "$cmp_get") | $(cell "$([ -n "$set" ] && commas "$set")" "$cmp_set") |"
	fi
	line+=" $(cell "$pipe" "$cmp_pipe") |"
	echo "$line"
done
echo
echo "Spread (lowest-highest of the rounds):"
echo
echo "$header"
echo "$rule"
for c in $(seq 0 $(( N - 1 ))); do
	line="| ${LABELS[$c]} | $(printf %s "${VALUES["$c ns"]:-}" | spread) |"
	if [ -n "$REDIS" ]; then
		line+=" $(printf %s "${VALUES["$c get"]:-}" | spread) | $(printf %s "${VALUES["$c set"]:-}" | spread) |"
	fi
	line+=" $(printf %s "${VALUES["$c pipe"]:-}" | spread) |"
	echo "$line"
done
