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
