// cli/session.h: one run between the command line and its reports: the sampler loaded and
// the processes it samples followed (Session), the run cut into windows, each named and
// delivered (WindowCutter), and what stderr says of the run at its end (RunSummary).
#pragma once

#include <time.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/options.h"
#include "push/push.h"
#include "report/delivery.h"
#include "sampler/collected.h"
#include "sampler/sampler.h"
#include "sampler/side_band.h"
#include "sampler/targets.h"
#include "syms/process_history.h"
#include "syms/symbolizer.h"
#include "python/reader.h"
#include "unwind/unwinder.h"

int64_t clock_ns(clockid_t clock);

// Where a stretch of the run's time goes, wall clock and this thread's CPU, phase by
// phase, for PROFILE_DEBUG.
class PhaseClock {
public:
	PhaseClock() { mark(""); }
	void mark(const char *name);
	// "read 8.8 ms (CPU 3.0), symbolize ..." : each phase since the mark before it.
	std::string summary() const;

private:
	struct Mark {
		const char *name;
		int64_t wall, cpu;
	};
	std::vector<Mark> marks_;
};

class WindowCutter;

// What fetching debug files from debuginfod servers cost, for PROFILE_DEBUG and the
// benchmark.
struct DebuginfodAccount {
	size_t asked = 0, used = 0;
	double wall_ms = 0;
	bool told = false; // the one line of a run's failures is printed
};

// The sampler and what names its samples: loaded and following every process from the
// constructor on, sampling from attach() to detach().
class Session {
public:
	// Loads the sampler, its maps as the plan says; starts indexing kernel symbols on a
	// thread of its own (not with -U, which never needs them); follows every process from
	// before the first sample, so that those which exit before the end can still be
	// named; asks for the unwind tables of what -p names. Throws RunError.
	Session(const Options &options, const MapPlan &plan, PhaseClock &startup);
	~Session();
	Session(const Session &) = delete;
	Session &operator=(const Session &) = delete;

	void attach() { sampler_.attach(); }
	// Every tick while sampling: hands what the sampler drained to the window, follows
	// the processes' mappings and exits, and cuts the window when it is due.
	void follow(WindowCutter &windows);
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
	// The Python walk's reader, when CPython frames are walked; its code objects' names.
	const PythonReader *python() const { return python_ ? &*python_ : nullptr; }
	const PythonNames *python_names() const { return python_ ? &python_->names() : nullptr; }
	double kernel_symbols_cpu_ms() const { return kernel_symbols_cpu_ms_; }

private:
	void finish_raw(RawProfile &batch, bool last);
	// The sampler's maps may hold samples of the process, or a sample kept raw waits here.
	bool has_samples(uint32_t pid) const;

	Sampler sampler_;
	Symbolizer symbolizer_;
	double kernel_symbols_cpu_ms_ = 0;
	int64_t last_cut_ns_ = 0; // the time of the last window cut (follow)
	ProcessHistory history_;
	std::optional<SideBand> side_band_;
	// The table unwinder's user half: mappings of sampled processes, tables of objects.
	std::optional<Unwinder> unwinder_;
	Unwinder::Stats tables_;
	std::optional<PythonReader> python_;
	// Samples kept raw whose walk meets a table still being built: finished with a later batch.
	std::vector<RawProfile::RawSample> raw_waiting_;
	// What -p or -L names, from just before sampling: its CPU time, and whether it runs.
	std::optional<TargetWatch> targets_;
	// Indexes the kernel symbols; last, so that it is joined first on destruction, also
	// when the constructor throws after starting it.
	std::jthread kernel_symbols_;
};

// The samples of one window of --interval (without it, of the whole run), from its start
// to the cut that ends it; each closed window is named and its report sent on, and the
// next starts where it ended.
class WindowCutter {
public:
	WindowCutter(const Options &options, Reports &reports, Session &session, std::string host);

	// The first window starts now; with --interval the first cut is due one interval on.
	void start();
	int64_t start_mono() const { return window_->start_mono; }
	void add(const RawProfile &batch);
	// A cut at or past the run's end is not due: the end closes that window (else a check
	// of the clock a microsecond later than wait_for_end's made one more, nearly empty).
	bool due(int64_t now_mono) const { return now_mono >= next_cut_ && next_cut_ < run_end_; }
	// Ends the window: names its samples, sends its report (with --interval), starts the
	// next.
	void close(int64_t end_mono, int64_t end_real);

	// The profile of the last window closed (the whole run's without --interval).
	const Profile &last() const { return profile_; }
	// The account of every window closed, added up.
	const RawProfile &account() const { return run_account_; }
	uint64_t closed() const { return closed_; }
	// The window being collected: its distinct keys and stacks.
	size_t entry_count() const { return window_->collected.entry_count(); }
	size_t stack_count() const { return window_->collected.stack_count(); }
	// The objects its user addresses were located in.
	size_t object_count() const;
	// What closing a window cost this thread (naming, writing, handing to the pusher).
	double cpu_ms_sum() const { return cpu_ms_sum_; }
	double cpu_ms_max() const { return cpu_ms_max_; }
	// Debug files fetched before windows were named (with DEBUGINFOD_URLS set).
	bool fetches_debug_files() const { return debuginfod_; }
	const DebuginfodAccount &fetched() const { return fetched_; }

private:
	struct Window {
		explicit Window(ReportDetail detail) : collected(detail) {}
		Collected collected; // what the report does not show is merged as it comes
		RawProfile account;  // its batches' accounts added up (no entries)
		int64_t start_real = 0, start_mono = 0;
	};
	const Options &options_;
	Reports &reports_;
	Session &session_;
	const std::string host_;
	std::unique_ptr<Window> window_;
	const bool debuginfod_;
	DebuginfodAccount fetched_;
	RawProfile run_account_;
	Profile profile_;
	uint64_t closed_ = 0;
	int64_t next_cut_ = INT64_MAX;
	int64_t run_end_ = INT64_MAX; // with a duration: start_mono + the duration
	double cpu_ms_sum_ = 0, cpu_ms_max_ = 0;
};

// What stderr says of the run once its report is out: pushes, windows, where the time
// went (PROFILE_DEBUG), why nothing was sampled, and last, what was lost.
class RunSummary {
public:
	explicit RunSummary(const Options &options) : options_(options) {}

	// Phases from the start to the first sample.
	PhaseClock &startup() { return startup_; }
	// Phases after sampling: the first starts at this call.
	void sampling_ended() { after_ = PhaseClock(); }
	void phase(const char *name) { after_.mark(name); }
	// The last window before it is named: its size, for PROFILE_DEBUG.
	void last_window(const WindowCutter &windows);

	// How user stacks were walked, before the report.
	void unwinding(const Session &session, const WindowCutter &windows);
	// Everything else, after the report (and the pusher's last deliveries).
	void print(Session &session, const WindowCutter &windows, const Pusher *pusher);

private:
	const Options &options_;
	PhaseClock startup_, after_;
	size_t entries_ = 0, stacks_ = 0, objects_ = 0;
};
