// run/run.cpp: a run as a pipeline: the sampler loaded and attached, the maps drained
// while it waits, windows located, cut and named, each report delivered, and the account
// of what was lost said last.
#include "run/run.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "base/error.h"
#include "push/push.h"
#include "report/delivery.h"
#include "report/window.h"
#include "run/run_summary.h"
#include "run/session.h"
#include "run/stop_signals.h"
#include "run/window_cutter.h"
#include "sampler/sampler.h"
#include "sampler/targets.h"
#include "syms/debuginfod.h"

namespace {

// True once nobody can read what goes to stdout: `profile | head` after head is gone.
bool stdout_closed()
{
	pollfd out{STDOUT_FILENO, 0, 0};
	return poll(&out, 1, 0) == 1 && (out.revents & (POLLERR | POLLHUP));
}

enum class End { Duration, Signal, ReaderGone, TargetsExited };

// Blocks until the duration has passed, a stop signal comes (StopSignals: SIGINT, SIGTERM,
// SIGHUP, also one that came before), every process or thread of -p or -L has exited,
// or, with watch_stdout, the reader of stdout goes away; calling `tick` about every
// tick_ns meanwhile (false from it ends the wait too: a window's report found stdout's
// reader gone).
template <typename Tick>
End wait_for_end(const Options &options, StopSignals &stop, bool watch_stdout, TargetWatch &targets, int64_t start,
		 int64_t tick_ns, Tick tick)
{
	while (true) {
		int64_t left = INT64_MAX;
		if (options.duration_s) {
			left = int64_t(*options.duration_s) * 1000000000 - (clocks::monotonic_ns() - start);
			if (left <= 0)
				return End::Duration;
		}
		if (stop.wait_for(std::min<int64_t>(left, tick_ns)))
			return End::Signal;
		// At the end, the end comes first: no window is cut just before it.
		if (options.duration_s && clocks::monotonic_ns() - start >= int64_t(*options.duration_s) * 1000000000)
			return End::Duration;
		if (!tick())
			return End::ReaderGone;
		if (targets.all_exited())
			return End::TargetsExited;
		if (watch_stdout && stdout_closed())
			return End::ReaderGone;
	}
}

// What a second stop signal would leave undone once sampling has begun, for its line
// ("SIGINT again while naming the stacks: ending now, without writing out.svg").
// last_windows: the pusher's last wait, where every window still queued is lost.
std::string undone(const Options &options, bool last_windows = false)
{
	if (!options.push_url.empty())
		return last_windows ? "without sending the last windows" : "without sending the last window";
	if (options.interval_s)
		return options.output_path.empty() ? "without printing the last window" : "without writing the last window";
	return options.output_path.empty() ? "without printing the report" : "without writing " + options.output_path;
}

} // namespace

int run(const Options &options, const RunPlan &plan)
{
	RunSummary summary(options, plan);
	check_privileges();
	check_kernel_support();
	// From here on, SIGINT, SIGTERM and SIGHUP end sampling (one sent during the start ends
	// it as soon as it begins), and a second one ends the run at once.
	StopSignals stop;
	// A closed stdout shows up as a failed write, which the reports handle.
	signal(SIGPIPE, SIG_IGN);
	// Set before any thread starts: libdebuginfod reads its settings from the environment.
	if (options.debuginfod && debuginfod_configured() && !getenv("DEBUGINFOD_CACHE_PATH"))
		if (std::string cache = debuginfod_cache_dir(); !cache.empty()) {
			mkdir(cache.substr(0, cache.rfind('/')).c_str(), 0700);
			setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
		}

	Session session(options, plan, summary.startup());
	Reports reports(delivery(options), plan.host);
	// Windows go to the server from a thread of the pusher's own: a slow or dead server
	// never holds up sampling or the cuts.
	std::optional<Pusher> pusher;
	if (plan.push) {
		pusher.emplace(*plan.push);
		reports.set_push(
			[&](RenderedProfile profile, int64_t start_ns, int64_t end_ns, uint64_t samples) {
				pusher->push(PushWindow{std::move(profile), start_ns, end_ns, samples});
			},
			push_backend(plan.push->format)->takes, plan.push_report);
	}
	WindowCutter windows(options, plan, reports, session);
	if (options.interval_s && !session.sampler().can_cut())
		throw RunError("--interval cannot cut the maps while sampling on this kernel "
			       "(it has no membarrier MEMBARRIER_CMD_GLOBAL, as with nohz_full)");

	windows.start();
	session.attach();
	summary.startup().mark("attach");
	stop.doing("sampling", undone(options));
	const bool to_stdout = options.output_path.empty() && options.push_url.empty();
	if (options.format == ReportFormat::Stacks && to_stdout)
		std::cout << plan.header_line << std::endl;
	else
		diagnostics::line(plan.header_line);
	// The table unwinder waits for user space to send a new process's mappings and its
	// objects' tables: the sooner, the fewer of its samples take frame-pointer steps. Below
	// 50 Hz (an agent's 19) a process meets few samples in 20 ms, and waking 50 times a
	// second was a good part of the profiler's own CPU: every 100 ms there.
	const int64_t tick_ns =
		!session.unwinding() || (options.frequency && options.frequency < 50) ? 100000000 : 20000000;
	auto follow = [&] {
		windows.tick();
		return !reports.reader_gone();
	};
	const End ended =
		wait_for_end(options, stop, to_stdout, session.targets(), windows.start_mono(), tick_ns, follow);
	if (ended == End::TargetsExited)
		diagnostics::say("every %s sampled has exited", session.targets().threads() ? "thread" : "process");
	stop.doing("reading the maps", undone(options));

	session.detach();
	const int64_t end = clocks::monotonic_ns(), end_real = clocks::realtime_ns();
	session.stop_tables();
	summary.sampling_ended();
	windows.add(session.read_rest());
	summary.phase("read");
	session.kernel_symbols_ready();
	summary.phase("kernel symbols wait");
	summary.last_window(windows);
	stop.doing("naming the stacks", undone(options));
	windows.close(end, end_real);
	summary.phase("symbolize");

	summary.unwinding(session, windows);
	stop.doing("writing the report", undone(options));
	int status = options.interval_s ? reports.status() : reports.single(windows.last());
	// What is still queued gets a last chance, bounded: a service manager's stop timeout
	// (30 s in the unit) must not run out first.
	if (pusher) {
		stop.doing("sending the last windows", undone(options, true));
		pusher->finish(10);
	}
	stop.doing("saying what was lost", "with the report written");
	summary.print(session, windows, pusher ? &*pusher : nullptr);
	// Windows the server never got: the run lost data, and its exit status says so
	// (doc/options.md), as the line above counts them.
	if (pusher && pusher->stats().dropped && status == 0)
		status = kExitWindowsDropped;
	return status;
}

