// run/session.h: the sampler loaded and the processes it samples followed, from before the
// first sample to the last read of its maps.
#pragma once

#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "cli/options.h"
#include "run/phase_clock.h"
#include "cli/run_plan.h"
#include "sampler/sampler.h"
#include "sampler/side_band.h"
#include "sampler/targets.h"
#include "proc/process_history.h"
#include "runtimes/runtimes.h"
#include "syms/symbolizer.h"
#include "unwind/unwinder.h"

// What windows keep of the names they read (SymbolizerOptions::kept_named_bytes), and of
// the compressed DWARF they read them from, decompressed (kept_decompressed_bytes): libc's
// debug file takes 10 MiB so.
constexpr size_t kKeptNamedBytes = size_t(4) << 20;
constexpr size_t kKeptDecompressedBytes = size_t(32) << 20;
// Windows a name is kept that none of them named (SymbolizerOptions::kept_named_windows): a
// minute of the agent's 15 s windows.
constexpr size_t kKeptNamedWindows = 4;

// The sampler and what names its samples: loaded and following every process from the
// constructor on, sampling from attach() to detach().
class Session {
public:
	// Loads the sampler, its maps as the plan says; starts indexing kernel symbols on a
	// thread of its own (not with -U, which never needs them); follows every process from
	// before the first sample, so that those which exit before the end can still be
	// named; asks for the unwind tables of what -p names. Throws RunError.
	Session(const Options &options, const RunPlan &plan, PhaseClock &startup);
	~Session();
	Session(const Session &) = delete;
	Session &operator=(const Session &) = delete;

	void attach() { sampler_.attach(); }
	// Every tick while sampling: follows the processes' mappings and exits and the tables
	// they need, and returns what the sampler drained (the maps filling), located.
	std::optional<RawProfile> poll();
	// The maps cut at `now` (a window's end): what they held, located.
	RawProfile cut(int64_t now);
	// After a tick: forgets the exited processes no sample still needs (drained: the maps
	// were read in it).
	void settle(bool drained);
	// Sampling ends: the perf events close; then the table builders stop.
	void detach() { sampler_.detach(); }
	void stop_tables();
	// After detach(): what the maps still hold, its processes located.
	RawProfile read_rest();
	// Waits for the kernel symbols' index; the first window's naming needs it.
	void kernel_symbols_ready();

	Sampler &sampler() { return sampler_; }
	Symbolizer &symbolizer() { return symbolizer_; }
	TargetWatch &targets() { return *targets_; }
	const ProcessHistory &history() const { return history_; }
	bool unwinding() const { return unwinder_.has_value(); }
	const Unwinder::Stats &tables() const { return tables_; }
	// The readers of the language runtimes whose frames are walked; nullptr when none is.
	const Runtimes *runtimes() const { return runtimes_ ? &*runtimes_ : nullptr; }
	Runtimes *runtimes() { return runtimes_ ? &*runtimes_ : nullptr; }
	double kernel_symbols_cpu_ms() const { return kernel_symbols_cpu_ms_; }

private:
	// What the side band told of the processes' mappings and exits since the last call;
	// the labels of those that exited settled as of `now` (by default, the time after
	// the side band was read).
	void follow_processes(std::optional<int64_t> now = std::nullopt);
	void finish_raw(RawProfile &batch, bool last);
	// The sampler's maps may hold samples of the process, or a sample kept raw waits here.
	bool has_samples(uint32_t pid) const;

	Sampler sampler_;
	Symbolizer symbolizer_;
	double kernel_symbols_cpu_ms_ = 0;
	int64_t last_cut_ns_ = 0; // the time of the last window cut (cut)
	ProcessHistory history_;
	std::optional<SideBand> side_band_;
	// The table unwinder's user half: mappings of sampled processes, tables of objects.
	std::optional<Unwinder> unwinder_;
	Unwinder::Stats tables_;
	std::optional<Runtimes> runtimes_;
	// Samples kept raw whose walk meets a table still being built: finished with a later batch.
	std::vector<RawProfile::RawSample> raw_waiting_;
	// What -p or -L names, from just before sampling: its CPU time, and whether it runs.
	std::optional<TargetWatch> targets_;
	// Indexes the kernel symbols; last, so that it is joined first on destruction, also
	// when the constructor throws after starting it.
	std::jthread kernel_symbols_;
};
