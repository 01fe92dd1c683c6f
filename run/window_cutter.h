// run/window_cutter.h: the run cut into windows, each named and its report delivered.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cli/options.h"
#include "cli/run_plan.h"
#include "run/session.h"
#include "report/delivery.h"
#include "syms/collected.h"
#include "syms/debuginfod.h"

// The samples of one window of --interval (without it, of the whole run), from its start
// to the cut that ends it; each closed window is named and its report sent on, and the
// next starts where it ended.
class WindowCutter {
public:
	WindowCutter(const Options &options, const RunPlan &plan, Reports &reports, Session &session);

	// The first window starts now; with --interval the first cut is due one interval on.
	void start();
	int64_t start_mono() const { return window_->start_mono; }
	// Every tick while sampling: takes what the session drained, and cuts the window when
	// it is due. The session knows nothing of windows.
	void tick();
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
	// Of that, rendering its reports.
	const Reports::RenderTime &render_time() const { return reports_.render_time(); }
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
	const RunPlan &plan_;
	Reports &reports_;
	Session &session_;
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
