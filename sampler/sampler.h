// sampler/sampler.h: the user half of the BPF program: load it, attach it to one cpu-clock
// event per CPU, and read what it counted.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <linux/types.h>

#include "base/error.h"
#include "sampler/config.h"
#include "profile.h"
#include "sampler/kernel_checks.h"
#include "sampler/map_memory.h"
#include "sampler/map_plan.h"
#include "sampler/rate.h"
#include "unwind/maps.h"
#include "unwind/raw_walk.h"

// What one read of the maps moved out of the kernel (a drain while sampling, or the last
// read), before any symbol is looked up.
struct RawProfile {
	struct Entry {
		stack_key key;
		stack_count value;
	};
	std::vector<Entry> entries;
	// Frame addresses, leaf first, by the stack ids of entries (NO_STACK: none): ids of
	// this batch, not the kernel's.
	std::vector<std::vector<uint64_t>> stacks;

	uint32_t depth_limit = 0; // frames a stack could hold (a stack this long was likely cut)

	// A sample the kernel kept raw (struct raw_sample) because its user stack met code whose
	// table was still being built: its key (no stack ids), its kernel stack, its time, the
	// user frames walked in the kernel, and where that walk stopped. Not in entries until
	// its walk is finished in user space (add_unwound), in this batch or a later one.
	struct RawSample {
		stack_key key;
		std::vector<uint64_t> kernel;
		uint64_t time_ns = 0;
		std::vector<uint64_t> frames;
		RawUserStack stack;
	};
	std::vector<RawSample> raw;
	// Adds a raw sample as a stored one, its user stack now whole: the kernel's frames, then
	// `more` found in user space, then TRUNCATED_FRAME when the walk was still cut short.
	void add_unwound(const RawSample &sample, const std::vector<uint64_t> &more, bool truncated);

	// The account of this batch: the samples the kernel tallied in the generation drained,
	// which are exactly those whose counts the batch holds, so batches add up.
	sample_stats totals{};    // losses by cause, summed over CPUs
	uint64_t taken = 0;       // every sample that passed the filters, as the kernel counted them
	uint64_t stored = 0;      // sum of the counts read back
	uint64_t truncated = 0;   // samples whose stack filled every frame slot (likely cut)
	uint64_t raw_unwound = 0; // samples kept raw whose walk user space finished (add_unwound)
	uint64_t raw_cut = 0;     // of those, still cut short

	// Adds another batch's account (not its entries) to this one's.
	void add_account(const RawProfile &other);
};

class Sampler {
public:
	// Opens and loads the BPF program configured by the options, its maps as the plan
	// says. Throws RunError.
	Sampler(const SamplerConfig &options, const MapPlan &plan);
	~Sampler();
	Sampler(const Sampler &) = delete;
	Sampler &operator=(const Sampler &) = delete;

	// Waits for the table walk's sampling program, which the constructor left verifying on
	// a thread. False when the kernel refused it: the run falls back to frame pointers
	// (saying so), and the maps handed out by unwind_maps() and map_fd() are no longer
	// read by any program. Throws RunError.
	bool finish_load();
	// One cpu-clock perf event per online CPU (or the -C one), each running the program.
	void attach();
	// Closes every perf event; the maps stay readable.
	void detach();
	// Called every 20 to 100 ms while sampling: when the maps fill, or samples are being
	// lost to them, flips the program to the other set of maps and returns this one's
	// counts and stacks, emptying it. Nothing when it is not time yet.
	std::optional<RawProfile> tick();
	// Flips to the other set of maps now and returns this one's counts, stacks and
	// account, whatever their fill: the cut between two windows. Needs can_cut().
	RawProfile cut();
	bool can_cut() const;
	// After detach(): what the maps still hold, with its account.
	RawProfile read();
	// Times tick() drained the maps because they filled.
	uint64_t drains() const;
	// Lowers the rate of the attached events when the samples' measured cost would take
	// more of each CPU than the budget allows (sampler/rate.h's fit_to_cost), and returns
	// the line that says so; nothing while it fits. Called as the run waits.
	std::optional<std::string> fit_rate();
	// What the events sample at now: as configured, or as fit_rate lowered it.
	SampleRate rate() const;
	// What the kernel side's programs took of the CPUs (sampler/budget.bpf.h), summed over
	// them since load: the runs that did their work and their time, the windows whose
	// budget was spent, and the wake-ups (--wakers) whose waker was not taken for it.
	struct Budget {
		bool kept = false; // none at rates that cannot run out of it (kBudgetAbove)
		uint64_t ns = 0, runs = 0, exhausted = 0, wakeups_dropped = 0;
	};
	Budget budget() const;

	// True when the maps may hold samples of this process, which tick() or read() has
	// still to return.
	bool has_samples(uint32_t pid) const;

	// CPUs sampled, as attach() found them online.
	const std::vector<int> &cpus() const { return cpus_; }

	// The maps through which user space feeds the table unwinder; nothing (all -1) when
	// stacks are walked by frame pointers.
	UnwindMaps unwind_maps() const;
	// The language runtimes whose frames the walk shows, RUNTIME_BIT of each one's tag: none
	// without the table walk, none turned off by --no-NAME.
	uint32_t runtimes_walked() const;
	// One of the program's maps by name, -1 when it has none (a runtime's, runtime/room.h).
	int map_fd(const char *name) const;
	// Attaches a runtime's uprobe (its program's name; SEC("uprobe/runtime")) at `offset` in
	// the file at `path`, in every process that maps it (with -p, in those of the processes
	// sampled that do), until detach(); false (errno set) when it cannot be
	// (runtime/kernel_asks.h's AttachUprobe).
	bool attach_uprobe(const char *program, const std::string &path, uint64_t offset);

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
	std::vector<int> cpus_;
};

// Adds every field of s to sum: the CPUs' tallies, the batches' accounts.
void add_stats(sample_stats &sum, const sample_stats &s);

// Whether a generation whose tally since its last drain is t, in maps of these sizes (as
// loaded), should be drained now that since_drain_ns have passed since the last drain.
bool maps_filling(const sample_stats &t, const MapSizes &sizes, int64_t since_drain_ns);

// Samples the program could not store, every cause together.
inline uint64_t lost_samples(const sample_stats &s)
{
	return s.lost_counts_full + s.lost_stack_collision + s.lost_stack_full + s.lost_stack_other +
	       s.lost_thread_start + s.lost_budget;
}

