// proc/process_history.h: what each process had mapped, image by image (exec, fork,
// snapshot), kept from perf side-band records so that addresses are normalized to files
// even after the process exits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "proc/cgroup.h"
#include "proc/maps.h"

// One program image of a process: what it had mapped executable from `since_ns` (an exec,
// a fork, or the snapshot taken at start) until the next image or its exit.
struct ProcessImage {
	uint64_t since_ns = 0; // CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns
	std::string comm;
	// Executable mappings sorted by start, never overlapping. Shared with the parent's
	// image after a fork until either side maps something (copy on write).
	std::shared_ptr<const std::vector<MapEntry>> maps;
	// Its cgroup v2 group and container, read when the process was first learned of and
	// again at its exec (runtimes move a container's first process into its group before
	// the exec); kept after it exits. Shared by the images that have the same. Null when
	// /proc/PID/cgroup could not be read.
	std::shared_ptr<const CgroupLabels> cgroup;

	const MapEntry *find(uint64_t address) const;
};

// A kernel symbol that came or went while sampling (a BPF program, a BPF or ftrace
// trampoline), from PERF_RECORD_KSYMBOL: /proc/kallsyms, read once, cannot hold them all.
struct KernelSymbolRecord {
	uint64_t start = 0, end = 0; // [start, end), exact where kallsyms has no sizes
	std::string name;            // as kallsyms names it: bpf_prog_TAG_NAME, bpf_trampoline_...
	bool bpf = false;            // a BPF program (kallsyms tags those [bpf])
	uint64_t since_ns = 0, until_ns = UINT64_MAX;
	uint64_t order = 0; // registration order: the higher, the newer
};

class ProcessHistory {
public:
	// Reads each process's cgroup from proc_root/PID/cgroup; "" reads none.
	explicit ProcessHistory(std::string proc_root = "/proc") : proc_root_(std::move(proc_root)) {}

	// The state of a process read from /proc at start, before any record about it.
	void add_snapshot(uint32_t pid, std::string comm, std::vector<MapEntry> maps, uint64_t now_ns);

	// Applies one perf record (header included) of a dummy event opened with
	// sample_type TID|TIME and sample_id_all. Returns false, changing nothing, for a
	// malformed record.
	bool apply(std::span<const uint8_t> record);

	// The image pid ran at time_ns: the last one begun at or before it, else the first.
	// Null for a process never seen.
	const ProcessImage *image_at(uint32_t pid, uint64_t time_ns) const;

	bool exited(uint32_t pid) const;
	// The processes known and not exited, in no order.
	std::vector<uint32_t> live_pids() const;

	// The kernel symbol that covered address at time_ns: JIT memory is reused, so one
	// address can name several programs in a run. Of those loaded at time_ns the newest;
	// when none was, the one loaded nearest in time. Null when none ever covered it.
	const KernelSymbolRecord *kernel_symbol(uint64_t address, uint64_t time_ns = UINT64_MAX) const;
	static constexpr size_t kMaxKernelSymbols = 65536;
	// Drops the kernel symbols unloaded before time_ns: no sample still to be located can
	// lie in them. What keeps a long run that meets programs without end from growing
	// up to kMaxKernelSymbols.
	void forget_kernel_symbols(uint64_t unloaded_before_ns);
	size_t kernel_symbol_count() const { return kernel_symbols_.size(); }
	size_t process_count() const { return processes_.size(); }
	uint64_t lost_records() const { return lost_; }
	// Executable mappings ignored because an image already held kMaxMappingsPerImage.
	uint64_t dropped_mappings() const { return dropped_mappings_; }
	static constexpr size_t kMaxMappingsPerImage = 4096;

	// Drops the processes that have exited and that `keep` does not want (those with
	// samples not yet normalized). Those it kept are asked about again only with
	// `ask_kept_again` (when the answer may have changed: after a drain); those exited
	// since the last call always. What bounds memory on a long run.
	void forget_exited(const std::function<bool(uint32_t pid)> &keep, bool ask_kept_again = true);

	// A process keeps the labels it had at exec until they are read here, as soon as
	// `sampled` says it has samples, or once it has run `after_ns` (a container runtime
	// moves its process into the container's group before the exec). Most processes a
	// busy machine runs are gone before either and are never read: a file read per exec
	// was the largest part of an agent's CPU. Call before a batch is added.
	void settle_labels(const std::function<bool(uint32_t pid)> &sampled, uint64_t now_ns,
			   uint64_t after_ns = 1000000000);

	// The time a record carries in its sample_id trailer; 0 if it has none.
	static uint64_t record_time(std::span<const uint8_t> record);
	// Dates the records of one ring, in the order written, that came without a time (on
	// 6.18 the kernel zeroes the sample_id of about half the KSYMBOL records once several
	// profilers run): from the dated records around them, after_ns (no record is older)
	// and now_ns (none is newer). A registration gets the earliest time it can have, an
	// unregistration the latest. Returns the newest time seen, the after_ns of the ring's
	// next batch.
	static uint64_t date_undated(std::span<const std::span<uint8_t>> records, uint64_t after_ns, uint64_t now_ns);

private:
	struct Process {
		std::vector<ProcessImage> images; // sorted by since_ns
		bool exited = false;
	};

	ProcessImage *image_for_update(uint32_t pid, uint64_t time_ns);
	ProcessImage &insert_image(uint32_t pid, ProcessImage image);
	void add_mapping(uint32_t pid, uint64_t time_ns, MapEntry entry);
	// pid's cgroup now; `before` when it cannot be read or is the same.
	std::shared_ptr<const CgroupLabels> cgroup_now(uint32_t pid, std::shared_ptr<const CgroupLabels> before) const;

	std::string proc_root_;
	std::unordered_map<uint32_t, Process> processes_;
	std::vector<KernelSymbolRecord> kernel_symbols_; // sorted by start, then order
	uint64_t kernel_symbol_order_ = 0;
	uint64_t longest_kernel_symbol_ = 0;
	std::vector<uint32_t> exited_unforgotten_;
	size_t exited_kept_ = 0; // the first ones of exited_unforgotten_, kept at the last call
	struct PendingLabels {
		uint32_t pid;
		uint64_t exec_ns;
	};
	std::vector<PendingLabels> labels_pending_;
	uint64_t lost_ = 0;
	uint64_t dropped_mappings_ = 0;
};

// Reads the executable mappings and comm of every process now in proc_root.
void snapshot_processes(ProcessHistory &history, uint64_t now_ns, const std::string &proc_root = "/proc");

