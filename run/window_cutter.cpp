// run/window_cutter.cpp: each window closed: its samples named, its report sent on, the
// next begun.
#include "run/window_cutter.h"

#include <malloc.h>

#include <algorithm>

#include "base/clock.h"
#include "report/window.h"
#include "run/collect_batch.h"

WindowCutter::WindowCutter(const Options &options, const RunPlan &plan, Reports &reports, Session &session)
	: options_(options), plan_(plan), reports_(reports), session_(session),
	  window_(std::make_unique<Window>(reports.detail())),
	  debuginfod_(options.debuginfod && debuginfod_configured())
{
}

void WindowCutter::start()
{
	window_->start_real = clocks::realtime_ns();
	window_->start_mono = clocks::monotonic_ns();
	if (options_.interval_s)
		next_cut_ = window_->start_mono + int64_t(options_.interval_s) * 1000000000;
	if (options_.duration_s)
		run_end_ = window_->start_mono + int64_t(*options_.duration_s) * 1000000000;
}

void WindowCutter::tick()
{
	std::optional<RawProfile> batch = session_.poll();
	if (batch)
		add(*batch);
	bool drained = batch.has_value();
	if (const int64_t now = clocks::monotonic_ns(); due(now)) {
		const int64_t now_real = clocks::realtime_ns();
		add(session_.cut(now));
		close(now, now_real);
		drained = true;
	}
	session_.settle(drained);
}

void WindowCutter::add(const RawProfile &batch)
{
	collect_batch(batch, session_.symbolizer(), window_->collected, session_.runtimes());
	window_->account.add_account(batch);
}

void WindowCutter::close(int64_t end_mono, int64_t end_real)
{
	session_.kernel_symbols_ready();
	const int64_t cpu_before = clocks::thread_cpu_ns();
	if (debuginfod_)
		fetch_missing_debug_files(session_.symbolizer(), options_.debuginfod_timeout_s, fetched_);
	Profile named = window_->collected.name(session_.symbolizer());
	session_.symbolizer().end_window();
	if (Runtimes *runtimes = session_.runtimes())
		runtimes->end_window();
	// How the run was made, as planned; then the window's own: the rate sampled at now
	// (which may be lower than -f asked, sampler/rate.h), its times, its one process.
	profile_ = plan_.header;
	profile_.frames = std::move(named.frames);
	profile_.samples = std::move(named.samples);
	const SampleRate rate = session_.sampler().rate();
	profile_.frequency = rate.frequency;
	profile_.period = rate.period;
	profile_.period_ns = rate.period_ns();
	profile_.duration_s = double(end_mono - window_->start_mono) / 1e9;
	profile_.start_time_ns = window_->start_real;
	profile_.single_pid = session_.targets().single_process();
	if (options_.interval_s)
		reports_.window(profile_,
				{window_->account.taken, window_->account.stored, lost_samples(window_->account.totals)},
				end_real);
	run_account_.add_account(window_->account);
	closed_++;
	const double cpu_ms = double(clocks::thread_cpu_ns() - cpu_before) / 1e6;
	cpu_ms_sum_ += cpu_ms;
	cpu_ms_max_ = std::max(cpu_ms_max_, cpu_ms);
	auto next = std::make_unique<Window>(reports_.detail());
	next->start_mono = end_mono;
	next->start_real = end_real;
	window_ = std::move(next);
	// What the window freed goes back to the system: an agent's heap should not keep the
	// high-water mark of its busiest window.
	if (options_.interval_s)
		malloc_trim(0);
	while (next_cut_ <= end_mono)
		next_cut_ += int64_t(options_.interval_s) * 1000000000;
}

size_t WindowCutter::object_count() const
{
	return session_.symbolizer().object_count();
}
