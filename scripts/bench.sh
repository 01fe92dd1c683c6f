#!/usr/bin/env bash
# scripts/bench.sh: profile against its peers (bpftrace, perf), each pair measured in the
# same run on this machine. Prints a markdown table and writes it into README.md between
# <!-- bench:start --> and <!-- bench:end -->. Needs root, ./profile and build/workloads/
# (`make bench` builds them first). Not part of `make test`: it takes about four minutes.
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
WORKLOADS=${WORKLOADS:-$ROOT/build/workloads}
README=${README:-$ROOT/README.md}
SAMPLE_S=${SAMPLE_S:-5}     # seconds both profilers sample the split workload for fidelity
CPU_RUN_S=${CPU_RUN_S:-10}  # length of the own-CPU runs
KCOST_S=${KCOST_S:-8}       # seconds the in-kernel cost is measured, per mode
REPORT_SAMPLE_S=${REPORT_SAMPLE_S:-3} # seconds sampled before each SIGINT of the time-to-report runs
REPORT_REPS=${REPORT_REPS:-3}         # runs of profile and of perf per process count
BPFTRACE_LIMIT_S=${BPFTRACE_LIMIT_S:-10} # bpftrace may take minutes to print many stacks

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
for program in "$PROFILE" "$WORKLOADS/split" "$WORKLOADS/syscalls" "$WORKLOADS/stacks"; do
	if [ ! -x "$program" ]; then
		echo "bench: $program is not built (run: make bench)" >&2
		exit 1
	fi
done

TMP=$(mktemp -d /tmp/profile-bench.XXXXXX)
STATS_WAS=$(cat /proc/sys/kernel/bpf_stats_enabled)
BACKGROUND=()
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
	wait 2>/dev/null || true
	echo "$STATS_WAS" > /proc/sys/kernel/bpf_stats_enabled
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

# The id of the perf_event BPF program process $1 holds, once it has loaded one.
prog_of() {
	local id i
	for i in $(seq 1 300); do
		for id in $(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -un); do
			if bpftool prog show id "$id" 2>/dev/null | grep -q perf_event; then
				echo "$id"
				return
			fi
		done
		sleep 0.1
	done
	echo "bench: process $1 loaded no perf_event program" >&2
	return 1
}

# "run_cnt run_time_ns" of a BPF program.
prog_stats() {
	bpftool prog show id "$1" --json |
		sed -n 's/.*"run_time_ns":\([0-9]*\),"run_cnt":\([0-9]*\).*/\2 \1/p'
}

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
log "in-kernel cost per sample (3 x ~$((KCOST_S + 4)) s)"
echo 1 > /proc/sys/kernel/bpf_stats_enabled
start "$WORKLOADS/split" 600
start "$WORKLOADS/syscalls" 600
for mode in both user kernel; do
	case $mode in
	both) flags=() keys="kstack, ustack, comm, pid" what="kernel + user stacks" ;;
	user) flags=(-U) keys="ustack, comm, pid" what="user stacks (-U)" ;;
	kernel) flags=(-K) keys="kstack, comm, pid" what="kernel stacks (-K)" ;;
	esac
	start "$PROFILE" -f 997 "${flags[@]}" > /dev/null 2>&1
	ours=$STARTED
	start bpftrace -e "profile:hz:999 { @[$keys] = count(); }" > /dev/null 2>&1
	peer=$STARTED
	ours_prog=$(prog_of "$ours")
	peer_prog=$(prog_of "$peer")
	sleep 1 # past both programs' first inserts
	read -r ours_cnt0 ours_ns0 < <(prog_stats "$ours_prog")
	read -r peer_cnt0 peer_ns0 < <(prog_stats "$peer_prog")
	sleep "$KCOST_S"
	read -r ours_cnt1 ours_ns1 < <(prog_stats "$ours_prog")
	read -r peer_cnt1 peer_ns1 < <(prog_stats "$peer_prog")
	# Only the programs' stats matter here: nobody waits for the reports. (bash's own
	# "Killed" notices go to the block's stderr.)
	{
		kill -KILL "$ours" "$peer"
		finish "$ours"
		finish "$peer"
	} 2>/dev/null
	ours_cost=$(calc "%.0f" "($ours_ns1 - $ours_ns0) / ($ours_cnt1 - $ours_cnt0)")
	peer_cost=$(calc "%.0f" "($peer_ns1 - $peer_ns0) / ($peer_cnt1 - $peer_cnt0)")
	row "in-kernel ns per sample, $what (peer: bpftrace \`profile:hz:999 { @[$keys] = count(); }\`)" \
		"$ours_cost ns" "$peer_cost ns" "$(calc "%.2f" "$ours_cost / $peer_cost")x"
done
stop_all
echo "$STATS_WAS" > /proc/sys/kernel/bpf_stats_enabled

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
# Sends SIGINT to the program /usr/bin/time runs (time ignores it) and sets $ELAPSED_MS to
# the time until that program exited. A program still busy after $3 seconds is killed and
# $ELAPSED_MS is left empty.
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
	grep '^profile: after sampling' "$TMP/ours.err" | sed 's/^/bench:   /' >&2 || true
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
	echo "- In-kernel cost: \`run_time_ns / run_cnt\` of each BPF program (kernel.bpf_stats_enabled),"
	echo "  both attached at once for ${KCOST_S} s while build/workloads/split and syscalls keep the CPUs"
	echo "  busy; profile at 997 Hz so that its timer's phase sweeps past bpftrace's 999 Hz one (at equal"
	echo "  rates whichever program runs second in a shared interrupt finds the caches warm: two copies"
	echo "  of one program measured up to 1.6 times apart)."
	echo "- Own CPU: user + system time of the profiler's process (all threads) over a ${CPU_RUN_S} s"
	echo "  system-wide run on the same busy machine, from its start to its exit; and over the middle of"
	echo "  the run only, from /proc/PID/task/*/schedstat. The core kernel's symbols come from the"
	echo "  per-boot cache in /run/profile, as in every run but a boot's first, which reads"
	echo "  /proc/kallsyms itself (about 50 ms of CPU more)."
	echo "- Time to report: from SIGINT to the exit of the process that prints the report (for perf,"
	echo "  perf record's exit plus all of perf script, into files). Every CPU is sampled at 999 Hz for"
	echo "  ${REPORT_SAMPLE_S} s while N copies of build/workloads/stacks run in a session of their own (one"
	echo "  distinct stack each, about one CPU of load in all). Peak RSS: /usr/bin/time's maximum."
	echo "- Fidelity: build/workloads/split runs split_hot_three and split_hot_one at 3:1 by"
	echo "  instructions; both profilers sample it at 999 Hz (-p) for ${SAMPLE_S} s at once; the share"
	echo "  is among samples whose leaf is one of the two."
} >> "$TABLE"

cat "$TABLE"

# The README's section, replaced whole; everything outside the markers stays as it was.
if grep -q '^<!-- bench:start -->$' "$README" && grep -q '^<!-- bench:end -->$' "$README"; then
	awk -v table="$TABLE" '
		/^<!-- bench:end -->$/ { skipping = 0 }
		!skipping { print }
		/^<!-- bench:start -->$/ { while ((getline line < table) > 0) print line; skipping = 1 }
	' "$README" > "$TMP/README.md"
	cat "$TMP/README.md" > "$README"
	log "wrote the table into $README"
else
	log "warning: $README has no <!-- bench:start --> / <!-- bench:end --> section to fill"
fi
