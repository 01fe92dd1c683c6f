#!/usr/bin/env bash
# scripts/bench.sh: profile against its peers (bpftrace, perf), each pair measured in the
# same run on this machine. Prints a markdown table and writes it into doc/performance.md between
# <!-- bench:start --> and <!-- bench:end -->. Needs root, ./profile and build/workloads/
# (`make bench` builds them first). Not part of `make test`: it takes about six and a half minutes.
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
WORKLOADS=${WORKLOADS:-$ROOT/build/workloads}
DOC=${DOC:-$ROOT/doc/performance.md}
SAMPLE_S=${SAMPLE_S:-5}     # seconds both profilers sample the split workload for fidelity
CPU_RUN_S=${CPU_RUN_S:-10}  # length of the own-CPU runs
KCOST_S=${KCOST_S:-8}       # seconds the in-kernel cost is measured, per mode and order
KCOST_WARM_S=${KCOST_WARM_S:-2} # seconds both programs run before that
REPORT_SAMPLE_S=${REPORT_SAMPLE_S:-3} # seconds sampled before each SIGINT of the time-to-report runs
REPORT_REPS=${REPORT_REPS:-3}         # runs of profile and of perf per process count
BPFTRACE_LIMIT_S=${BPFTRACE_LIMIT_S:-10} # bpftrace may take minutes to print many stacks
DWARF_SAMPLE_S=${DWARF_SAMPLE_S:-5} # seconds python3 is sampled, per run, against perf --call-graph dwarf
DWARF_REPS=${DWARF_REPS:-3}         # runs of profile and of perf on python3
TABLES_P_S=${TABLES_P_S:-3}         # length of the table-building runs of -p python3 (999 Hz)
TABLES_ALL_S=${TABLES_ALL_S:-5}     # and of the system-wide ones (49 Hz)
MEMORY_RUN_S=${MEMORY_RUN_S:-8}     # length of the system-wide runs whose memory is measured
PYTHON=${PYTHON:-/usr/bin/python3}  # Debian's: no frame pointers in the interpreter or libc
PYTHON_LOOP=$'def f(n): return n if n<2 else f(n-1)+f(n-2)\nwhile True: f(25)'
# Where profile keeps unwind tables between runs; removed for a first run's measurement.
UNWIND_CACHE=/var/cache/profile/unwind

if [ "$(id -u)" != 0 ]; then
	echo "bench: needs root to load BPF programs and read their stats (try: sudo $0)" >&2
	exit 1
fi
for tool in bpftrace perf bpftool /usr/bin/time; do
	if ! command -v "$tool" >/dev/null; then
		echo "bench: $tool is missing (Debian: apt-get install bpftrace linux-perf bpftool time)" >&2
		exit 1
	fi
done
for program in "$PROFILE" "$WORKLOADS/split" "$WORKLOADS/syscalls" "$WORKLOADS/stacks" "$WORKLOADS/nofp"; do
	if [ ! -x "$program" ]; then
		echo "bench: $program is not built (run: make bench)" >&2
		exit 1
	fi
done
if [ ! -x "$PYTHON" ]; then
	echo "bench: $PYTHON is missing (Debian: apt-get install python3)" >&2
	exit 1
fi

TMP=$(mktemp -d /tmp/profile-bench.XXXXXX)
BACKGROUND=()
STATS_HOLDER= # the process that keeps BPF run-time stats on
WORKER_GROUPS=() # process groups (sessions) of workloads, stopped whole

# Everything started here is stopped here, whatever way the script ends.
cleanup() {
	local pid
	for pid in "${WORKER_GROUPS[@]}"; do
		kill -TERM -- -"$pid" 2>/dev/null || true
	done
	for pid in "${BACKGROUND[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	if [ -n "$STATS_HOLDER" ]; then
		kill "$STATS_HOLDER" 2>/dev/null || true
	fi
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ns() { date +%s%N; }
log() { echo "bench: $*" >&2; }

# Starts a command in the background, remembered for cleanup; its pid goes in $STARTED.
start() {
	"$@" &
	STARTED=$!
	BACKGROUND+=("$STARTED")
}

# The pid of the one child of $1 (the program that /usr/bin/time runs), once it exists.
child_of() {
	local child i
	for i in $(seq 1 100); do
		child=$(pgrep -P "$1" || true)
		if [ -n "$child" ]; then
			echo "${child%% *}"
			return
		fi
		sleep 0.05
	done
	echo "bench: no child of $1" >&2
	return 1
}

. "$ROOT/scripts/bpf-stats.sh"

# CPU time (ns) the threads of process $1 have run so far, from schedstat.
cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ sum += $1 } END { printf "%d\n", sum }'
}

# Waits for the process $1 to exit (its status is ignored: an exit on SIGINT counts as done)
# and forgets it: once reaped, its pid may name someone else's process.
finish() {
	local pid kept=()
	wait "$1" 2>/dev/null || true
	for pid in "${BACKGROUND[@]}"; do
		if [ "$pid" != "$1" ]; then
			kept+=("$pid")
		fi
	done
	BACKGROUND=("${kept[@]}")
}

# Stops the busy workloads and every other leftover background process.
stop_all() {
	local pid
	for pid in "${BACKGROUND[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${BACKGROUND[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	BACKGROUND=()
}

# Sends SIGINT to $2, the program /usr/bin/time $1 runs (time ignores it) or $1 itself, and
# sets $ELAPSED_MS to the time until that program exited. A program still busy after $3
# seconds is killed and $ELAPSED_MS is left empty.
interrupt() {
	local t0 t1 limit_ns
	limit_ns=$(( ${3:-600} * 1000000000 ))
	t0=$(now_ns)
	kill -INT "$2"
	ELAPSED_MS=
	while kill -0 "$2" 2>/dev/null; do
		if [ $(( $(now_ns) - t0 )) -gt "$limit_ns" ]; then
			kill -KILL "$2" 2>/dev/null || true
			finish "$1"
			return
		fi
		sleep 0.01
	done
	finish "$1"
	t1=$(now_ns)
	ELAPSED_MS=$(( (t1 - t0) / 1000000 ))
}

# BPF programs' run_time_ns and run_cnt count while a process holds the fd of
# bpf(BPF_ENABLE_STATS): a count the kernel keeps, so that the runs of others who write
# kernel.bpf_stats_enabled (a bench in another worktree, restoring its 0) neither stop ours
# nor are changed by it. Sets STATS_HOLDER.
stats_on() {
	mkfifo "$TMP/stats"
	"$PYTHON" -c '
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(128)  # enable_stats.type = BPF_STATS_RUN_TIME (0)
fd = libc.syscall(321, 32, attr, 128)    # bpf(BPF_ENABLE_STATS, ...) on x86-64
if fd < 0:
    sys.exit("bench: bpf(BPF_ENABLE_STATS): " + os.strerror(ctypes.get_errno()))
print("on", flush=True)
signal.pause()' > "$TMP/stats" &
	STATS_HOLDER=$!
	if [ "$(head -1 "$TMP/stats")" != on ]; then
		exit 1
	fi
}
stats_off() {
	kill "$STATS_HOLDER" 2>/dev/null || true
	wait "$STATS_HOLDER" 2>/dev/null || true
	STATS_HOLDER=
	rm -f "$TMP/stats"
}

calc() { awk "BEGIN { printf \"$1\", $2 }"; }

TABLE=$TMP/table.md
row() { echo "| $1 | $2 | $3 | $4 |" >> "$TABLE"; }

{
	echo "Measured by \`make bench\` (scripts/bench.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'):"
	echo "kernel $(uname -r), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)," \
		"$(nproc) CPUs; perf $(perf --version | awk '{ print $3 }'), $(bpftrace --version)."
	echo "Other processes on the machine ran as they pleased; every pair below was measured at the same time"
	echo "or back to back, on the same workload."
	echo
	echo "| metric | profile | peer | ratio |"
	echo "|---|---|---|---|"
} > "$TABLE"

# ---- In-kernel cost per sample, both attached at once on a busy machine. ----
# Ours at 997 Hz against bpftrace's 999 Hz: the cost of a sample does not depend on the rate,
# but at equal rates the two timers keep one phase for the whole run, and the program that
# runs second in a shared interrupt finds the caches warm. Two copies of profile's own
# program attached at 999 Hz each measured between 0.7 and 1.6 times the other; at 999 and
# 997 Hz, whose phases sweep past each other twice a second, within 4 % of each other.
# Which one is attached first still counts, so each pair is measured in both orders.

# Waits until the BPF program $1 has run: its perf events are attached.
wait_runs() {
	local i cnt ns
	for i in $(seq 1 500); do
		read -r cnt ns < <(prog_stats "$1") || true
		if [ "${cnt:-0}" -gt 0 ]; then
			return
		fi
		sleep 0.02
	done
	echo "bench: BPF program $1 never ran" >&2
	return 1
}

# Starts profile with options "$@" and waits for its program to run: sets KC_OURS (pid)
# and KC_OURS_PROG. Its stderr goes to $TMP/kcost.err.
kcost_start_ours() {
	start "$PROFILE" "$@" > /dev/null 2> "$TMP/kcost.err"
	KC_OURS=$STARTED
	KC_OURS_PROG=$(prog_of "$KC_OURS")
	wait_runs "$KC_OURS_PROG"
}

# Starts the bpftrace program $1 and waits for it to run: sets KC_PEER and KC_PEER_PROG.
kcost_start_peer() {
	start bpftrace -e "$1" > /dev/null 2>&1
	KC_PEER=$STARTED
	KC_PEER_PROG=$(prog_of "$KC_PEER")
	wait_runs "$KC_PEER_PROG"
}

# One measurement: profile (options after the first two) against the bpftrace program $1,
# the one $2 names (profile | bpftrace) attached first, the other once the first has run.
# Sets OURS_NS and PEER_NS (per sample) and OURS_WALKED (profile's account of how user
# stacks were walked, when it walked tables: the shares from tables and by frame pointers
# while tables were built).
kernel_cost() {
	local program=$1 first=$2 ours_cnt0 ours_ns0 peer_cnt0 peer_ns0 ours_cnt1 ours_ns1 peer_cnt1 peer_ns1
	shift 2
	if [ "$first" = profile ]; then
		kcost_start_ours "$@"
		kcost_start_peer "$program"
	else
		kcost_start_peer "$program"
		kcost_start_ours "$@"
	fi
	sleep "$KCOST_WARM_S" # past both programs' first inserts, and our first tables
	read -r ours_cnt0 ours_ns0 < <(prog_stats "$KC_OURS_PROG")
	read -r peer_cnt0 peer_ns0 < <(prog_stats "$KC_PEER_PROG")
	sleep "$KCOST_S"
	read -r ours_cnt1 ours_ns1 < <(prog_stats "$KC_OURS_PROG")
	read -r peer_cnt1 peer_ns1 < <(prog_stats "$KC_PEER_PROG")
	# Only bpftrace's stats matter: nobody waits for its map. (bash's own "Killed" notice
	# goes to the block's stderr.) Ours ends on SIGINT, for its account of the walk.
	{
		kill -KILL "$KC_PEER"
		finish "$KC_PEER"
	} 2>/dev/null
	interrupt "$KC_OURS" "$KC_OURS" 60
	if [ "$ours_cnt1" -le "$ours_cnt0" ] || [ "$peer_cnt1" -le "$peer_cnt0" ]; then
		echo "bench: a BPF program did not run while measured" >&2
		exit 1
	fi
	OURS_NS=$(calc "%.0f" "($ours_ns1 - $ours_ns0) / ($ours_cnt1 - $ours_cnt0)")
	PEER_NS=$(calc "%.0f" "($peer_ns1 - $peer_ns0) / ($peer_cnt1 - $peer_cnt0)")
	OURS_WALKED=$(sed -n 's/^profile: user stacks: \([0-9.]* % from unwind tables\)\(, [0-9.]* % cut short while tables were built\)\{0,1\}.*/\1\2/p' "$TMP/kcost.err")
	log "  $first attached first: profile $OURS_NS ns, bpftrace $PEER_NS ns$(sed -n 's/^profile: user stacks: /; /p' "$TMP/kcost.err")"
}

# Both orders of one pair: sets FIRST_OURS/FIRST_PEER (profile attached first),
# SECOND_OURS/SECOND_PEER (bpftrace first), MEAN_OURS/MEAN_PEER and WALKED (both runs'
# accounts, when profile walked tables).
kernel_cost_both() {
	local program=$1
	shift
	kernel_cost "$program" profile "$@"
	FIRST_OURS=$OURS_NS FIRST_PEER=$PEER_NS WALKED=$OURS_WALKED
	kernel_cost "$program" bpftrace "$@"
	SECOND_OURS=$OURS_NS SECOND_PEER=$PEER_NS
	if [ -n "$WALKED" ]; then
		WALKED="user stacks $WALKED; then $OURS_WALKED"
	fi
	MEAN_OURS=$(calc "%.0f" "($FIRST_OURS + $SECOND_OURS) / 2")
	MEAN_PEER=$(calc "%.0f" "($FIRST_PEER + $SECOND_PEER) / 2")
}

KCOST_RUN_S=$((2 * (KCOST_S + KCOST_WARM_S + 3)))
log "in-kernel cost per sample, frame-pointer workloads (3 x ~$KCOST_RUN_S s)"
stats_on
start "$WORKLOADS/split" 600
start "$WORKLOADS/syscalls" 600
for mode in both user kernel; do
	case $mode in
	both) flags=() keys="kstack, ustack, comm, pid" what="kernel + user stacks" ;;
	user) flags=(-U) keys="ustack, comm, pid" what="user stacks (-U)" ;;
	kernel) flags=(-K) keys="kstack, comm, pid" what="kernel stacks (-K)" ;;
	esac
	log " $what"
	kernel_cost_both "profile:hz:999 { @[$keys] = count(); }" -f 997 "${flags[@]}"
	row "in-kernel ns per sample, $what, \`--unwind auto\` (the default), frame-pointer workloads, mean of both attach orders (peer: bpftrace \`profile:hz:999 { @[$keys] = count(); }\`)" \
		"$MEAN_OURS ns" "$MEAN_PEER ns" "$(calc "%.2f" "$MEAN_OURS / $MEAN_PEER")x"
done
stop_all

# The same where user stacks need unwinding: a program built without frame pointers, and
# Debian's python3 (no frame pointers in the interpreter nor in libc), beside split.
# Whole-machine runs also walk whatever else runs here (other people's compilers: deep
# stacks without frame pointers, and short-lived processes met before their tables), so
# table walking is measured once more on the three workloads alone: ours with -p, bpftrace
# with the same pids in a predicate; both programs still run, and return at once, for every
# other process's samples.
log "in-kernel cost per sample, code without frame pointers (3 x ~$KCOST_RUN_S s)"
start "$WORKLOADS/nofp" 600
workload_pids=$STARTED
start "$WORKLOADS/split" 600
workload_pids+=,$STARTED
start "$PYTHON" -c "$PYTHON_LOOP"
workload_pids+=,$STARTED
sleep 0.3
peer_program="profile:hz:999 { @[ustack, comm, pid] = count(); }"
predicate="/pid == ${workload_pids//,/ || pid == }/"
for run in auto fp auto-p; do
	case $run in
	auto) flags=(--unwind auto) program=$peer_program where="nofp + python3 + split busy, whole machine" ;;
	fp) flags=(--unwind fp) program=$peer_program where="nofp + python3 + split busy, whole machine" ;;
	auto-p) flags=(--unwind auto -p "$workload_pids") program="profile:hz:999 $predicate { @[ustack, comm, pid] = count(); }"
		where="nofp + python3 + split only (\`-p\`; bpftrace: \`$predicate\`)" ;;
	esac
	log " -U ${flags[*]}"
	kernel_cost_both "$program" -f 997 -U "${flags[@]}"
	what="user stacks (-U), \`${flags[*]:0:2}\`, $where"
	peer="bpftrace \`profile:hz:999 { @[ustack, comm, pid] = count(); }\`"
	row "in-kernel ns per sample, $what, profile attached first (peer: $peer${WALKED:+; $WALKED})" \
		"$FIRST_OURS ns" "$FIRST_PEER ns" "$(calc "%.2f" "$FIRST_OURS / $FIRST_PEER")x"
	row "in-kernel ns per sample, $what, bpftrace attached first" \
		"$SECOND_OURS ns" "$SECOND_PEER ns" "$(calc "%.2f" "$SECOND_OURS / $SECOND_PEER")x"
	row "in-kernel ns per sample, $what, mean of both orders" \
		"$MEAN_OURS ns" "$MEAN_PEER ns" "$(calc "%.2f" "$MEAN_OURS / $MEAN_PEER")x"
done
stop_all
stats_off

# ---- Own CPU over a whole system-wide run, and while sampling only. ----
log "own CPU (2 x ~$((CPU_RUN_S + 2)) s)"
for hz in 49 999; do
	start "$WORKLOADS/split" 60
	start "$WORKLOADS/syscalls" 60
	start /usr/bin/time -f "%e %U %S" -o "$TMP/ours.time" "$PROFILE" -f "$hz" "$CPU_RUN_S" > "$TMP/ours.out" 2> /dev/null
	ours_time=$STARTED
	start /usr/bin/time -f "%e %U %S" -o "$TMP/perf.time" \
		perf record -q -g -e cpu-clock -F "$hz" -a -o "$TMP/cpu.data" -- sleep "$CPU_RUN_S" > /dev/null 2>&1
	perf_time=$STARTED
	ours=$(child_of "$ours_time")
	perf_pid=$(child_of "$perf_time")
	sleep 2
	ours_w0=$(cpu_ns "$ours") perf_w0=$(cpu_ns "$perf_pid")
	sleep $((CPU_RUN_S - 3))
	ours_w1=$(cpu_ns "$ours") perf_w1=$(cpu_ns "$perf_pid")
	finish "$ours_time"
	finish "$perf_time"
	stop_all
	read -r _ u s < "$TMP/ours.time"
	ours_pct=$(calc "%.2f" "($u + $s) * 100 / $CPU_RUN_S")
	read -r _ u s < "$TMP/perf.time"
	perf_pct=$(calc "%.2f" "($u + $s) * 100 / $CPU_RUN_S")
	row "own CPU, whole ${CPU_RUN_S} s run at $hz Hz, % of one core (peer: \`perf record -g -a\`)" \
		"$ours_pct %" "$perf_pct %" "$(calc "%.2f" "$ours_pct / ($perf_pct > 0 ? $perf_pct : 0.01)")x"
	window=$((CPU_RUN_S - 3))
	ours_pct=$(calc "%.3f" "($ours_w1 - $ours_w0) / 1e9 * 100 / $window")
	perf_pct=$(calc "%.3f" "($perf_w1 - $perf_w0) / 1e9 * 100 / $window")
	row "own CPU while sampling only (${window} s window) at $hz Hz, % of one core" \
		"$ours_pct %" "$perf_pct %" "$(calc "%.2f" "$ours_pct / ($perf_pct > 0 ? $perf_pct : 0.001)")x"
done

# ---- From the end of sampling to a complete report, and peak memory, with N processes. ----
# One run of profile: sets RUN_MS (SIGINT to exit) and RUN_RSS (KiB).
report_ours() {
	local time_pid pid
	start /usr/bin/time -f "%M" -o "$TMP/ours.rss" env PROFILE_DEBUG=1 "$PROFILE" -f 999 \
		> "$TMP/ours.out" 2> "$TMP/ours.err"
	time_pid=$STARTED
	pid=$(child_of "$time_pid")
	prog_of "$pid" > /dev/null
	sleep "$REPORT_SAMPLE_S"
	interrupt "$time_pid" "$pid"
	RUN_MS=$ELAPSED_MS
	RUN_RSS=$(tail -1 "$TMP/ours.rss")
	if ! grep -q '^    stacks_leaf_' "$TMP/ours.out"; then
		log "warning: profile's report names no stacks_leaf_* frame"
	fi
	grep -E '^profile: (after sampling|unwind tables)' "$TMP/ours.err" | sed 's/^/bench:   /' >&2 || true
}

# One run of perf record + perf script: sets RUN_MS, RUN_RECORD_MS, RUN_SCRIPT_MS, RUN_RSS.
report_perf() {
	local time_pid pid t0 t1
	start /usr/bin/time -f "%M" -o "$TMP/record.rss" \
		perf record -q -g -e cpu-clock -F 999 -a -o "$TMP/report.data" > /dev/null 2>&1
	time_pid=$STARTED
	pid=$(child_of "$time_pid")
	sleep 1 # perf reads every process's maps before its first sample
	sleep "$REPORT_SAMPLE_S"
	interrupt "$time_pid" "$pid"
	RUN_RECORD_MS=$ELAPSED_MS
	t0=$(now_ns)
	/usr/bin/time -f "%M" -o "$TMP/script.rss" perf script -i "$TMP/report.data" > "$TMP/perf.out" 2> /dev/null
	t1=$(now_ns)
	RUN_SCRIPT_MS=$(( (t1 - t0) / 1000000 ))
	RUN_MS=$((RUN_RECORD_MS + RUN_SCRIPT_MS))
	RUN_RSS=$(tail -qn1 "$TMP/record.rss" "$TMP/script.rss" | sort -n | tail -1)
}

# The middle line of its input, by the first number.
median() { sort -n | awk '{ line[NR] = $0 } END { print line[int((NR + 1) / 2)] }'; }

for n in 10 40 200; do
	log "time to report with $n processes (~$((6 * REPORT_SAMPLE_S + BPFTRACE_LIMIT_S + 20)) s)"
	# About one CPU of load in all, each process its own stack, all in a session of their
	# own: the scheduler's autogroups then weigh the workload against the profiler as two
	# sessions, the way a profiler started from a terminal meets a service.
	busy=$(( 1000 / n ))
	start setsid bash -c 'for i in $(seq 0 $(($1 - 1))); do "$2" "$i" 600 "$3" & done; wait' \
		workers "$n" "$WORKLOADS/stacks" "$busy"
	workers=$STARTED
	WORKER_GROUPS+=("$workers")
	sleep 0.5

	# Ours and perf in turn, $REPORT_REPS times each; the median run of each counts.
	: > "$TMP/ours.runs"
	: > "$TMP/perf.runs"
	for rep in $(seq 1 "$REPORT_REPS"); do
		report_ours
		echo "$RUN_MS $RUN_RSS" >> "$TMP/ours.runs"
		report_perf
		echo "$RUN_MS $RUN_RECORD_MS $RUN_SCRIPT_MS $RUN_RSS" >> "$TMP/perf.runs"
	done
	read -r ours_ms _ < <(median < "$TMP/ours.runs")
	read -r perf_ms record_ms script_ms _ < <(median < "$TMP/perf.runs")
	ours_rss=$(awk '{ print $2 }' "$TMP/ours.runs" | sort -n | tail -1)
	perf_rss=$(awk '{ print $4 }' "$TMP/perf.runs" | sort -n | tail -1)
	log "  profile: $(awk '{ printf "%s ms ", $1 }' "$TMP/ours.runs")| perf: $(awk '{ printf "%s ms ", $1 }' "$TMP/perf.runs")"

	start /usr/bin/time -f "%M" -o "$TMP/bpftrace.rss" \
		bpftrace -e 'profile:hz:999 { @[kstack, ustack, comm, pid] = count(); }' > "$TMP/bpftrace.out" 2> /dev/null
	bt_time=$STARTED
	bt=$(child_of "$bt_time")
	prog_of "$bt" > /dev/null
	sleep "$REPORT_SAMPLE_S"
	interrupt "$bt_time" "$bt" "$BPFTRACE_LIMIT_S"
	bt_ms=$ELAPSED_MS
	bt_rss=$(tail -1 "$TMP/bpftrace.rss")

	kill -TERM -- -"$workers" 2>/dev/null || true
	WORKER_GROUPS=()
	stop_all

	row "end of sampling to report, $n processes (peer: \`perf record -g -a\` exit + \`perf script\`: ${record_ms} + ${script_ms} ms; median of $REPORT_REPS)" \
		"$ours_ms ms" "$perf_ms ms" "$(calc "%.2f" "$ours_ms / $perf_ms")x"
	if [ -n "$bt_ms" ]; then
		row "end of sampling to report, $n processes (peer: bpftrace, map printed)" \
			"$ours_ms ms" "$bt_ms ms" "$(calc "%.2f" "$ours_ms / $bt_ms")x"
	else
		row "end of sampling to report, $n processes (peer: bpftrace, map printed; stopped unfinished after ${BPFTRACE_LIMIT_S} s)" \
			"$ours_ms ms" "> $((BPFTRACE_LIMIT_S * 1000)) ms" "< $(calc "%.3f" "$ours_ms / ($BPFTRACE_LIMIT_S * 1000)")x"
	fi
	row "peak RSS, $n processes (peer: perf record / perf script, whichever is larger)" \
		"$(calc "%.1f" "$ours_rss / 1024") MiB" "$(calc "%.1f" "$perf_rss / 1024") MiB" \
		"$(calc "%.2f" "$ours_rss / $perf_rss")x"
	row "peak RSS, $n processes (peer: bpftrace$([ -n "$bt_ms" ] || echo ", until stopped"))" \
		"$(calc "%.1f" "$ours_rss / 1024") MiB" "$(calc "%.1f" "$bt_rss / 1024") MiB" \
		"$(calc "%.2f" "$ours_rss / $bt_rss")x"
done

# ---- Against perf's DWARF unwinding, on python3: cost, time to report, whole stacks. ----
# Samples whose stack reaches the process's root, _start: the root is the first frame after
# the command in profile's folded lines, the last frame of each sample in perf script's.
roots_folded() {
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); split($0, f, ";"); all += n; if (f[2] == "_start") rooted += n }
		END { print all + 0, rooted + 0 }' "$1"
}
roots_perf_script() {
	awk 'function done() { if (sample) { all++; if (last == "_start") rooted++ } sample = 0 }
		/^[^ \t]/ { done(); sample = 1; last = ""; next }
		NF >= 2 && sample { last = $2; sub(/\+0x[0-9a-f]+$/, "", last) }
		END { done(); print all + 0, rooted + 0 }' "$1"
}

log "profile against perf --call-graph dwarf on python3 ($DWARF_REPS x ~$((2 * DWARF_SAMPLE_S + 8)) s)"
start "$PYTHON" -c "$PYTHON_LOOP"
python=$STARTED
sleep 0.5
: > "$TMP/dwarf-ours.runs"
: > "$TMP/dwarf-perf.runs"
for rep in $(seq 1 "$DWARF_REPS"); do
	# Ours, until SIGINT; its sampling starts with the header line on stderr.
	start /usr/bin/time -f "%U %S" -o "$TMP/dwarf-ours.time" env PROFILE_DEBUG=1 \
		"$PROFILE" -f 999 -p "$python" --folded > "$TMP/dwarf.folded" 2> "$TMP/dwarf-ours.err"
	time_pid=$STARTED
	pid=$(child_of "$time_pid")
	for i in $(seq 1 300); do
		! grep -q '^Sampling at' "$TMP/dwarf-ours.err" || break
		sleep 0.02
	done
	sleep "$DWARF_SAMPLE_S"
	interrupt "$time_pid" "$pid" 60
	ours_ms=$ELAPSED_MS
	read -r u s < "$TMP/dwarf-ours.time"
	read -r all rooted < <(roots_folded "$TMP/dwarf.folded")
	echo "$ours_ms $(calc "%.0f" "($u + $s) * 1000") $all $rooted" >> "$TMP/dwarf-ours.runs"
	grep -E '^profile: (unwind tables|user stacks|[0-9]+ samples taken)' "$TMP/dwarf-ours.err" | sed 's/^/bench:   /' >&2 || true

	# perf record until SIGINT, then perf script, into a file.
	start /usr/bin/time -f "%U %S" -o "$TMP/dwarf-record.time" \
		perf record -q -e cpu-clock --call-graph dwarf -F 999 -p "$python" -o "$TMP/dwarf.data" > /dev/null 2>&1
	time_pid=$STARTED
	pid=$(child_of "$time_pid")
	sleep 0.3 # perf reads the process's maps before its first sample
	sleep "$DWARF_SAMPLE_S"
	interrupt "$time_pid" "$pid" 120
	record_ms=$ELAPSED_MS
	t0=$(now_ns)
	/usr/bin/time -f "%U %S" -o "$TMP/dwarf-script.time" perf script -i "$TMP/dwarf.data" > "$TMP/dwarf.script" 2> /dev/null
	t1=$(now_ns)
	script_ms=$(( (t1 - t0) / 1000000 ))
	read -r u s < "$TMP/dwarf-record.time"
	read -r u2 s2 < "$TMP/dwarf-script.time"
	read -r all rooted < <(roots_perf_script "$TMP/dwarf.script")
	echo "$((record_ms + script_ms)) $record_ms $script_ms $(calc "%.0f" "($u + $s + $u2 + $s2) * 1000") $all $rooted" >> "$TMP/dwarf-perf.runs"
done
stop_all
log "  profile (ms to report, CPU ms, samples, rooted): $(paste -sd '|' "$TMP/dwarf-ours.runs")"
log "  perf (ms to report, record, script, CPU ms, samples, rooted): $(paste -sd '|' "$TMP/dwarf-perf.runs")"
read -r ours_ms _ < <(median < "$TMP/dwarf-ours.runs")
read -r perf_ms record_ms script_ms _ < <(median < "$TMP/dwarf-perf.runs")
ours_cpu=$(awk '{ print $2 }' "$TMP/dwarf-ours.runs" | median)
perf_cpu=$(awk '{ print $4 }' "$TMP/dwarf-perf.runs" | median)
read -r ours_all ours_rooted < <(awk '{ a += $3; r += $4 } END { print a + 0, r + 0 }' "$TMP/dwarf-ours.runs")
read -r perf_all perf_rooted < <(awk '{ a += $5; r += $6 } END { print a + 0, r + 0 }' "$TMP/dwarf-perf.runs")
ours_share=$(calc "%.1f" "$ours_rooted * 100 / ($ours_all > 0 ? $ours_all : 1)")
perf_share=$(calc "%.1f" "$perf_rooted * 100 / ($perf_all > 0 ? $perf_all : 1)")
peer="\`perf record -e cpu-clock --call-graph dwarf -F 999 -p\` + \`perf script\`"
row "own CPU, whole run, python3 sampled ${DWARF_SAMPLE_S} s at 999 Hz (peer: $peer; median of $DWARF_REPS)" \
	"$ours_cpu ms" "$perf_cpu ms" "$(calc "%.3f" "$ours_cpu / ($perf_cpu > 0 ? $perf_cpu : 1)")x"
row "end of sampling to report, python3 (peer: $peer: ${record_ms} + ${script_ms} ms; median of $DWARF_REPS)" \
	"$ours_ms ms" "$perf_ms ms" "$(calc "%.3f" "$ours_ms / ($perf_ms > 0 ? $perf_ms : 1)")x"
row "python3's samples whose stack reaches \`_start\` (peer: $peer; ${ours_all} and ${perf_all} samples in all)" \
	"$ours_share %" "$perf_share %" "$(calc "%+.1f" "$ours_share - $perf_share") pt"

# ---- Unwind tables: a first run (cache removed) and the next, from the cache. ----
# "asked in-kernel cache rows wall_ms cpu_ms" from a PROFILE_DEBUG=1 run's stderr, then the
# whole run's CPU (ms).
tables_of() {
	sed -n 's/^profile: unwind tables: \([0-9]*\) asked for, \([0-9]*\) in the kernel (\([0-9]*\) from the cache, \([0-9]*\) rows of [0-9]*).*built in \([0-9.]*\) ms (CPU \([0-9.]*\)).*/\1 \2 \3 \4 \5 \6/p' "$1"
	sed -n "s/^profile: after sampling: .*whole run's CPU \([0-9.]*\) ms$/\1/p" "$1"
}

# One run of profile with options "$@" and PROFILE_DEBUG=1: sets T_TABLES (what it built
# and found, in words), T_READY (tables in the kernel), T_CACHED (of them, from the cache),
# T_ROWS, T_WALL and T_CPU (the table builder's, ms), T_WHOLE (the whole run's CPU, ms)
# and T_RSS (KiB).
tables_run() {
	local asked
	/usr/bin/time -f "%M" -o "$TMP/tables.rss" env PROFILE_DEBUG=1 "$PROFILE" "$@" > /dev/null 2> "$TMP/tables.err"
	{
		read -r asked T_READY T_CACHED T_ROWS T_WALL T_CPU
		read -r T_WHOLE
	} < <(tables_of "$TMP/tables.err")
	T_TABLES="$T_READY tables of $asked asked for ($T_CACHED from the cache), $T_ROWS rows"
	T_RSS=$(tail -1 "$TMP/tables.rss")
	log "  $T_TABLES; built in $T_WALL ms (CPU $T_CPU); whole run's CPU $T_WHOLE ms; peak RSS $T_RSS KiB"
}

# Runs profile with options "$@", first with the cache removed, then again: one row per
# quantity, named by $1. Sets FIRST_RSS and CACHED_RSS (KiB).
tables_first_and_cached() {
	local what=$1 try first_tables first_wall first_cpu first_whole first_cached
	shift
	# The cache is the machine's: anyone's run (other worktrees' builds of profile too) may
	# store a table between the removal and our run's asking for it, or remove the cache
	# before our second run. Such a run is run again, up to three times in all.
	for try in 1 2 3; do
		rm -rf --one-file-system "$UNWIND_CACHE"
		tables_run "$@"
		if [ "$try" = 1 ] || [ "$T_CACHED" -lt "$first_cached" ]; then
			first_tables=$T_TABLES first_wall=$T_WALL first_cpu=$T_CPU first_whole=$T_WHOLE
			first_cached=$T_CACHED FIRST_RSS=$T_RSS
		fi
		if [ "$first_cached" = 0 ]; then
			break
		fi
		log "  $T_CACHED tables came from the cache, stored since it was removed: again"
	done
	for try in 1 2 3; do
		tables_run "$@"
		# A system-wide run may meet an object the first did not: one such is allowed.
		if [ $((T_READY - T_CACHED)) -le 1 ]; then
			break
		fi
		log "  $((T_READY - T_CACHED)) tables were built, not found in the cache: again"
	done
	CACHED_RSS=$T_RSS
	row "unwind tables, $what: from the first asked for to the last built (profile: first run, cache removed: $first_tables; peer: the next run: $T_TABLES)" \
		"$first_wall ms" "$T_WALL ms" "$(calc "%.2f" "$first_wall / ($T_WALL > 0 ? $T_WALL : 0.1)")x"
	row "unwind tables, $what: the table builder's CPU (same runs)" \
		"$first_cpu ms" "$T_CPU ms" "$(calc "%.2f" "$first_cpu / ($T_CPU > 0 ? $T_CPU : 0.1)")x"
	row "unwind tables, $what: the whole run's CPU (same runs)" \
		"$first_whole ms" "$T_WHOLE ms" "$(calc "%.2f" "$first_whole / $T_WHOLE")x"
}

log "unwind tables, first and cached runs (~$((2 * TABLES_P_S + 2 * TABLES_ALL_S + 10)) s)"
start "$PYTHON" -c "$PYTHON_LOOP"
python=$STARTED
sleep 0.5
log " -p python3"
tables_first_and_cached "\`-p\` python3, ${TABLES_P_S} s at 999 Hz" -f 999 -p "$python" "$TABLES_P_S"
stop_all
log " system-wide, none of ours running"
tables_first_and_cached "system-wide (\`-f 49 ${TABLES_ALL_S}\`), none of the workloads running" -f 49 "$TABLES_ALL_S"
row "peak RSS, system-wide (\`-f 49 ${TABLES_ALL_S}\`), none of the workloads running (profile: first run, cache removed; peer: the next run, from the cache)" \
	"$(calc "%.1f" "$FIRST_RSS / 1024") MiB" "$(calc "%.1f" "$CACHED_RSS / 1024") MiB" "$(calc "%.2f" "$FIRST_RSS / $CACHED_RSS")x"

# ---- Memory of a system-wide run: BPF maps and peak RSS, tables against frame pointers. ----
# "now at_capacity" (bytes): the memlock the kernel charges for the maps process $1 holds,
# each map once, and what it would be with every map full. Hash maps made with
# BPF_F_NO_PREALLOC are charged for the entries they hold; full, each entry takes its key
# and value (rounded up to 8 bytes), the kernel's 48-byte htab_elem and an 8-byte free-list
# node, besides 16 bytes a bucket (max_entries rounded up to a power of 2).
map_memory() {
	local f
	for f in /proc/"$1"/fdinfo/*; do
		awk '$1 == "map_type:" { type = $2 } $1 == "map_flags:" { flags = $2 }
			$1 == "key_size:" { key = $2 } $1 == "value_size:" { value = $2 }
			$1 == "max_entries:" { max = $2 } $1 == "memlock:" { memlock = $2 } $1 == "map_id:" { id = $2 }
			END { if (id != "") print id, type, flags, key, value, max, memlock }' "$f" 2>/dev/null
	done | sort -un -k1,1 | awk '
		function up8(n) { return int((n + 7) / 8) * 8 }
		{
			now += $7
			full = $7
			# BPF_MAP_TYPE_HASH (1) with BPF_F_NO_PREALLOC (0x1, the last hex digit odd)
			if ($2 == 1 && index("13579bdf", substr($3, length($3))) > 0) {
				buckets = 1
				while (buckets < $6)
					buckets *= 2
				estimate = buckets * 16 + $6 * (up8($4) + up8($5) + 48 + 8)
				if (estimate > full)
					full = estimate
			}
			at_capacity += full
		}
		END { printf "%.0f %.0f\n", now, at_capacity }'
}

# One system-wide run of profile with options "$@" at 999 Hz for $MEMORY_RUN_S s: sets
# MAP_NOW (the most its maps held while sampling), MAP_FULL and RUN_RSS (KiB).
memory_run() {
	local time_pid pid i now full
	start /usr/bin/time -f "%M" -o "$TMP/memory.rss" "$PROFILE" -f 999 "$@" "$MEMORY_RUN_S" > /dev/null 2> "$TMP/memory.err"
	time_pid=$STARTED
	pid=$(child_of "$time_pid")
	prog_of "$pid" > /dev/null
	MAP_NOW=0 MAP_FULL=0
	for i in $(seq 1 $((MEMORY_RUN_S * 2 - 2))); do
		sleep 0.5
		read -r now full < <(map_memory "$pid") || break
		if [ "$now" -gt "$MAP_NOW" ]; then
			MAP_NOW=$now
		fi
		if [ "$full" -gt "$MAP_FULL" ]; then
			MAP_FULL=$full
		fi
	done
	finish "$time_pid"
	if [ "$MAP_NOW" -eq 0 ]; then
		echo "bench: found no BPF maps in process $pid" >&2
		exit 1
	fi
	RUN_RSS=$(tail -1 "$TMP/memory.rss")
	grep -E '^profile: (user stacks|[0-9]+ samples taken)' "$TMP/memory.err" | sed 's/^/bench:   /' >&2 || true
}

log "memory of system-wide runs (2 x ~$((MEMORY_RUN_S + 2)) s)"
start "$WORKLOADS/nofp" 600
start "$WORKLOADS/split" 600
start "$PYTHON" -c "$PYTHON_LOOP"
sleep 0.3
memory_run
ours_now=$MAP_NOW ours_full=$MAP_FULL ours_rss=$RUN_RSS
memory_run --unwind fp
stop_all
log "  BPF maps, --unwind auto: $ours_now B now, $ours_full B full; --unwind fp: $MAP_NOW B now, $MAP_FULL B full"
what="system-wide at 999 Hz for ${MEMORY_RUN_S} s, nofp + python3 + split busy"
row "BPF map memory (memlock of the maps it holds, the most while sampling), $what, \`--unwind auto\` (peer: the same with \`--unwind fp\`)" \
	"$(calc "%.1f" "$ours_now / 1048576") MiB" "$(calc "%.1f" "$MAP_NOW / 1048576") MiB" "$(calc "%.2f" "$ours_now / $MAP_NOW")x"
row "BPF map memory with every map full (estimated from the same maps' sizes)" \
	"$(calc "%.1f" "$ours_full / 1048576") MiB" "$(calc "%.1f" "$MAP_FULL / 1048576") MiB" "$(calc "%.2f" "$ours_full / $MAP_FULL")x"
row "peak RSS, $what, \`--unwind auto\` (peer: the same with \`--unwind fp\`)" \
	"$(calc "%.1f" "$ours_rss / 1024") MiB" "$(calc "%.1f" "$RUN_RSS / 1024") MiB" "$(calc "%.2f" "$ours_rss / $RUN_RSS")x"

# ---- Fidelity: the known 3:1 split of build/workloads/split, from both profilers at once. ----
log "fidelity (~$((SAMPLE_S + 3)) s)"
start "$WORKLOADS/split" $((SAMPLE_S + 5))
split=$STARTED
sleep 0.3
start "$PROFILE" -f 999 -p "$split" --folded "$SAMPLE_S" > "$TMP/split.folded" 2> /dev/null
ours=$STARTED
perf record -q -g -e cpu-clock -F 999 -p "$split" -o "$TMP/split.data" -- sleep "$SAMPLE_S" > /dev/null 2>&1
finish "$ours"
stop_all
# Samples whose leaf is each function, from the folded lines (leaf = last frame).
read -r ours_three ours_one < <(awk '{
		n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
		if (f[k] == "split_hot_three") three += n; else if (f[k] == "split_hot_one") one += n
	} END { print three + 0, one + 0 }' "$TMP/split.folded")
read -r perf_three perf_one < <(perf report -i "$TMP/split.data" --stdio --no-children -g none --sort sym -q 2> /dev/null |
	awk '$3 == "split_hot_three" { three = $1 } $3 == "split_hot_one" { one = $1 }
		END { sub(/%/, "", three); sub(/%/, "", one); print three + 0, one + 0 }')
ours_share=$(calc "%.1f" "$ours_three * 100 / ($ours_three + $ours_one)")
perf_share=$(calc "%.1f" "$perf_three * 100 / ($perf_three + $perf_one)")
row "split_hot_three's share of the two hot functions (truth 75 %; peer: \`perf record -g -p\`)" \
	"$ours_share %" "$perf_share %" "$(calc "%+.1f" "$ours_share - $perf_share") pt"
row "split_hot_one's share (truth 25 %)" \
	"$(calc "%.1f" "100 - $ours_share") %" "$(calc "%.1f" "100 - $perf_share") %" \
	"$(calc "%+.1f" "$perf_share - $ours_share") pt"
row "distance from the truth, split_hot_three" \
	"$(calc "%.1f" "($ours_share > 75 ? $ours_share - 75 : 75 - $ours_share)") pt" \
	"$(calc "%.1f" "($perf_share > 75 ? $perf_share - 75 : 75 - $perf_share)") pt" "-"

{
	echo
	echo "Ratio: profile / peer; below 1 is better for profile."
	echo
	echo "- profile runs with its defaults, so user stacks are walked from unwind tables (\`--unwind auto\`)"
	echo "  but where a row says \`--unwind fp\` (bpf_get_stackid, as bpftrace and perf -g walk them)."
	echo "- In-kernel cost: \`run_time_ns / run_cnt\` of each BPF program (stats on by BPF_ENABLE_STATS),"
	echo "  both attached at once for ${KCOST_S} s (after ${KCOST_WARM_S} s), first while build/workloads/split and syscalls"
	echo "  (frame pointers throughout) keep the CPUs busy, then build/workloads/nofp (-O2"
	echo "  -fomit-frame-pointer), Debian's python3 running \`f(25)\` of a recursive Fibonacci in a loop,"
	echo "  and split. Profile at 997 Hz so that its timer's phase sweeps past bpftrace's 999 Hz one (at"
	echo "  equal rates whichever program runs second in a shared interrupt finds the caches warm: two"
	echo "  copies of one program measured up to 1.6 times apart); each pair is measured in both orders,"
	echo "  the second program started once the first has run. Whole-machine runs sample everything"
	echo "  else running here too (other people's builds and tests), whose stacks profile walks to"
	echo "  their roots and bpftrace's frame-pointer walk stops early in; the \`-p\` rows count the"
	echo "  three workloads' samples and the cheap early return of every other sample, in both programs."
	echo "  \"user stacks ...\": profile's own account of each run (profile first, then bpftrace first)."
	echo "- Own CPU: user + system time of the profiler's process (all threads) over a ${CPU_RUN_S} s"
	echo "  system-wide run on the same busy machine, from its start to its exit; and over the middle of"
	echo "  the run only, from /proc/PID/task/*/schedstat. The core kernel's symbols come from the"
	echo "  per-boot cache in /run/profile, as in every run but a boot's first, which reads"
	echo "  /proc/kallsyms itself (about 50 ms of CPU more)."
	echo "- Time to report: from SIGINT to the exit of the process that prints the report (for perf,"
	echo "  perf record's exit plus all of perf script, into files). Every CPU is sampled at 999 Hz for"
	echo "  ${REPORT_SAMPLE_S} s while N copies of build/workloads/stacks run in a session of their own (one"
	echo "  distinct stack each, about one CPU of load in all). Peak RSS: /usr/bin/time's maximum."
	echo "- Against perf's DWARF unwinding: Debian's python3 as above, sampled at 999 Hz (\`-p\`) for"
	echo "  ${DWARF_SAMPLE_S} s by profile (folded, kernel + user stacks), then by \`perf record -e cpu-clock"
	echo "  --call-graph dwarf\` (8 KiB of stack copied per sample) and \`perf script\`, ${DWARF_REPS} times in turn."
	echo "  Own CPU: user + system time of profile's process, of perf record's and of perf script's; it"
	echo "  leaves out the in-kernel work charged to the sampled process. Time to report: from SIGINT to"
	echo "  the exit of profile, or of perf record plus the whole of perf script. Reaching \`_start\`:"
	echo "  samples whose root (profile: the first frame after the command; perf script: the last frame"
	echo "  of the sample) is \`_start\`, over every run."
	echo "- Unwind tables: PROFILE_DEBUG=1's account, after removing $UNWIND_CACHE (a boot's first"
	echo "  run), then from the next run, which finds the tables there. Build time runs from the first"
	echo "  table asked for to the last built: a whole-machine run asks for tables as it meets processes,"
	echo "  so there it spans most of the run however fast each table comes. \`-p\` python3 is asked for"
	echo "  before sampling starts (profile waits for its tables up to 2 s); the system-wide runs met"
	echo "  what else was running here (the workloads stopped). Peak RSS: /usr/bin/time's maximum."
	echo "- BPF map memory: the \`memlock:\` of /proc/PID/fdinfo of every map profile holds, each map once,"
	echo "  polled every 0.5 s while sampling; the most it reached. Hash maps made with BPF_F_NO_PREALLOC"
	echo "  are charged for what they hold; \"every map full\" estimates them at max_entries (key and"
	echo "  value rounded up to 8 bytes, 56 bytes of the kernel's per entry, 16 a bucket). The unwind rows"
	echo "  are an array, allocated whole at load: 12-byte rows take 16 bytes each there."
	echo "- Fidelity: build/workloads/split runs split_hot_three and split_hot_one at 3:1 by"
	echo "  instructions; both profilers sample it at 999 Hz (-p) for ${SAMPLE_S} s at once; the share"
	echo "  is among samples whose leaf is one of the two."
} >> "$TABLE"

cat "$TABLE"

# doc/performance.md's section, replaced whole; everything outside the markers stays as it was.
if grep -q '^<!-- bench:start -->$' "$DOC" && grep -q '^<!-- bench:end -->$' "$DOC"; then
	awk -v table="$TABLE" '
		/^<!-- bench:end -->$/ { skipping = 0 }
		!skipping { print }
		/^<!-- bench:start -->$/ { while ((getline line < table) > 0) print line; skipping = 1 }
	' "$DOC" > "$TMP/performance.md"
	cat "$TMP/performance.md" > "$DOC"
	log "wrote the table into $DOC"
else
	log "warning: $DOC has no <!-- bench:start --> / <!-- bench:end --> section to fill"
fi
