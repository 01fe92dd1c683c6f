// sampler/config.h: what the sampler is told of a run: what to sample, how often, how user
// stacks are walked, how large its maps are. The command line's Options hold it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// --unwind: how user stacks are walked.
enum class UnwindMode {
	Auto,          // unwind tables where an object has one, frame pointers elsewhere
	FramePointers, // bpf_get_stackid, as BCC does
	Tables,        // unwind tables only
};

struct SamplerConfig {
	uint64_t frequency = 49;     // samples per second per CPU; 0 in period mode
	uint64_t period = 0;         // -c: one sample every N events
	std::vector<uint32_t> pids;  // -p
	std::vector<uint32_t> tids;  // -L
	std::vector<std::string> cgroups; // --cgroup: only tasks under these cgroup v2 groups
	int cpu = -1;                // -C, -1 for every online CPU
	bool include_idle = false;   // -I
	// Counts keyed by thread too (stack_key.tid): for a report that names each sample's
	// thread (OTLP's thread.id); otherwise a process's threads of one comm share keys.
	bool key_threads = false;
	bool user_stacks = true;     // false with -K
	bool kernel_stacks = true;   // false with -U
	uint32_t stack_storage_size = 16384;
	uint32_t hash_storage_size = 40960;
	uint32_t max_stack_depth = 127;
	UnwindMode unwind = UnwindMode::Auto;
	uint32_t unwind_table_size = 8388608; // rows, at most, over every table loaded
	// Language runtimes whose frames the walk does not show (--no-NAME), RUNTIME_BIT of each
	// one's tag (runtime/runtime.h).
	uint32_t runtimes_off = 0;
	// --off-cpu: time off the CPU per stack (ns), from context switches, instead of samples.
	bool off_cpu = false;
	bool wakers = false;                // --wakers: each blocked time joined with its waker's stacks
	uint64_t min_block_us = 0;          // --min-block
	uint64_t max_block_us = UINT64_MAX; // --max-block
	std::optional<uint64_t> duration_s; // none: until SIGINT/SIGTERM
	// The share of each CPU, in percent, the kernel side may take (sampler/rate.h): over it,
	// what comes is dropped and counted (sample_stats.lost_budget).
	uint32_t budget_percent = 25;
	// What a sample's interrupt costs a CPU here before the program runs (sampler/rate.h's
	// measure_interrupt_cost; 0: not measured, at low rates).
	double interrupt_cost_ns = 0;

	bool operator==(const SamplerConfig &) const = default;
};
