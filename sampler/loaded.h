// sampler/loaded.h: the loaded BPF object and what the sampler keeps beside it, shared by
// its loading (sampler.cpp) and its draining (drain.cpp). Private to sampler/.
#pragma once

#include <bpf/libbpf.h>

#include <future>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "profile.skel.h"
#include "sampler/sampler.h"

struct SkeletonDeleter {
	void operator()(profile_bpf *skel) const { profile_bpf__destroy(skel); }
};
struct LinkDeleter {
	void operator()(bpf_link *link) const { bpf_link__destroy(link); }
};
using Skeleton = std::unique_ptr<profile_bpf, SkeletonDeleter>;
using Link = std::unique_ptr<bpf_link, LinkDeleter>;

struct Sampler::Impl {
	Skeleton skel;
	// The table walk's sampling program, verified on a thread (load_sampling_program)
	// until finish_load() takes it: then the program attach() attaches.
	std::future<std::pair<Skeleton, int>> verifying;
	Skeleton sampling;
	// The object whose maps the Session was given, kept while a fallback to frame
	// pointers samples from another: its readers may still hold the fds.
	Skeleton retired;
	std::vector<Link> links;
	// The cpu-clock events the links hold open (attach; fit_rate gives up on them when the
	// kernel will not change their period), and the rate they sample at now.
	std::vector<int> events;
	SampleRate rate;
	int64_t last_fit_ns = 0;
	// The hooks through which the kernel keeps processes' mappings for the table walk.
	std::vector<Link> hooks;
	// The runtimes' uprobes their readers attached (attach_uprobe), until detach().
	std::vector<Link> runtime_uprobes;
	bool detached = false;
	SamplerConfig options;
	MapSizes sizes; // as loaded: what follows is read from them, never copied
	// The hooks being detached (Sampler::detach): joined first when the Impl goes, before
	// the programs they ran.
	std::vector<std::jthread> detaching;
	// Stacks walked from unwind tables and kept by content, rather than bpf_get_stackid's.
	bool unwinding() const { return sizes.unwinding; }
	// The table walk runs: stacks kept by content, and user stacks asked for (--off-cpu -K
	// keeps its kernel stacks by content and walks no user stack: no tables, no hooks).
	bool walks_user_stacks() const { return sizes.unwinding && options.user_stacks; }
	uint32_t depth() const { return sizes.depth; }
	// Draining while sampling needs to know when no program still uses the old maps:
	// membarrier(MEMBARRIER_CMD_GLOBAL) waits for an RCU grace period, and the program
	// runs inside rcu_read_lock(). Without it (nohz_full kernels) nothing is drained
	// before the end.
	bool can_drain() const { return sizes.generations > 1; }
	// Processes that count as sampled until the next drain: those of the last batch (a
	// sample the next generation took while the drain ran may have lost its pid in
	// sampled_pids to the drain), and those sampled_pids was found to hold since (asked
	// about again every 100 ms, they cost one lookup).
	mutable std::unordered_set<uint32_t> sampled_until_drain;
	int64_t last_drain_ns = 0;
	int64_t last_fill_check_ns = 0;
	// How long the raw slots' being full waits for a drain: a quarter of a second, twice as
	// long after each drain they asked for that found them full again (code whose table
	// never comes keeps them full: a drain a quarter of a second for nothing), up to 4 s.
	int64_t raw_wait_ns = 250000000;
	uint64_t drains = 0;

	// The tally of one generation, summed over CPUs; with `reset`, zeroed after reading
	// (only when no program can be writing it).
	sample_stats tally(uint32_t generation, bool reset = false) const;
	void wait_for_programs() const;
	RawProfile drain(uint32_t generation);
	template <typename BatchId>
	void read_raw(uint32_t generation, RawProfile &batch, BatchId &batch_id);
	RawProfile flip_and_drain();
	void end_off_cpu() const;
};
