# scripts/bpf-stats.sh: sourced by the benchmark scripts: which BPF program a process
# loaded, and its run-time stats (kernel.bpf_stats_enabled, or BPF_ENABLE_STATS, on).

# The id of the perf_event BPF program process $1 samples with: with run-time stats on,
# once it has run (a process may hold one it loaded and does not attach: profile verifies
# its sampling program in an object of its own while the first one's maps are filled).
prog_of() {
	local id i
	for i in $(seq 1 300); do
		for id in $(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -un); do
			if bpftool prog show id "$id" 2>/dev/null | grep -q perf_event &&
				{ [ "$(cat /proc/sys/kernel/bpf_stats_enabled)" != 1 ] ||
					[ "$(prog_stats "$id" | awk '{ n = $1 } END { print n + 0 }')" -gt 0 ]; }; then
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

# ns per run between two prog_stats readings.
per_sample() {
	echo "$1 $2" | awk '{ printf "%.0f", ($3 > $1 ? ($4 - $2) / ($3 - $1) : 0) }'
}

# For a benchmark that reads run-time stats: TMP, a fresh folder named for $1, and PIDS,
# the processes it starts; stats on until the script exits, then as they were, PIDS
# killed and TMP removed.
stats_session() {
	TMP=$(mktemp -d "/tmp/profile-$1.XXXXXX")
	STATS_WAS=$(cat /proc/sys/kernel/bpf_stats_enabled)
	PIDS=()
	trap stats_session_end EXIT
	echo 1 > /proc/sys/kernel/bpf_stats_enabled
}

stats_session_end() {
	echo "$STATS_WAS" > /proc/sys/kernel/bpf_stats_enabled
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}

# Two runs of $PROFILE on process $1 (-f 997 -U --unwind auto), the first with options $2
# attached first, the second with $3: "ns-first ns-second", each one's sampling program's
# ns per run over 6 s after 2 s of warm-up.
stats_pair() {
	local a b pa pb a0 b0 a1 b1
	# shellcheck disable=SC2086
	"$PROFILE" -f 997 -U --unwind auto -p "$1" $2 > /dev/null 2>&1 &
	a=$!
	pa=$(prog_of "$a")
	# shellcheck disable=SC2086
	"$PROFILE" -f 997 -U --unwind auto -p "$1" $3 > /dev/null 2>&1 &
	b=$!
	pb=$(prog_of "$b")
	sleep 2
	a0=$(prog_stats "$pa"); b0=$(prog_stats "$pb")
	sleep 6
	a1=$(prog_stats "$pa"); b1=$(prog_stats "$pb")
	kill -INT "$a" "$b" 2>/dev/null || true
	wait "$a" "$b" 2>/dev/null || true
	echo "$(per_sample "$a0" "$a1") $(per_sample "$b0" "$b1")"
}
