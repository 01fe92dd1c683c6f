// profile.cpp: the run: parse options, load and attach, wait, read the maps, symbolize,
// write the report.
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "base/error.h"
#include "cli/options.h"
#include "cli/run_summary.h"
#include "cli/session.h"
#include "cli/window_cutter.h"
#include "push/push.h"
#include "report/delivery.h"
#include "report/output_file.h"
#include "report/window.h"
#include "sampler/map_memory.h"
#include "sampler/sampler.h"
#include "sampler/targets.h"
#include "syms/cgroup.h"
#include "syms/debuginfod.h"
#include "base/fd.h"

namespace {

// True once nobody can read what goes to stdout: `profile | head` after head is gone.
bool stdout_closed()
{
	pollfd out{STDOUT_FILENO, 0, 0};
	return poll(&out, 1, 0) == 1 && (out.revents & (POLLERR | POLLHUP));
}

std::string host_name()
{
	char name[256] = "";
	if (gethostname(name, sizeof(name) - 1) != 0)
		return "localhost";
	return name;
}

enum class End { Duration, Signal, ReaderGone, TargetsExited };

// Blocks until the duration has passed, SIGINT/SIGTERM arrives (both were blocked
// before attaching, so a signal sent at any moment is seen here), every process or
// thread of -p or -L has exited, or, with watch_stdout, the reader of stdout goes away;
// calling `tick` about every tick_ns meanwhile (false from it ends the wait too: a
// window's report found stdout's reader gone).
template <typename Tick>
End wait_for_end(const Options &options, const sigset_t &stop_signals, bool watch_stdout, TargetWatch &targets,
		 int64_t start, int64_t tick_ns, Tick tick)
{
	while (true) {
		int64_t left = INT64_MAX;
		if (options.duration_s) {
			left = int64_t(*options.duration_s) * 1000000000 - (clocks::monotonic_ns() - start);
			if (left <= 0)
				return End::Duration;
		}
		int64_t slice = std::min<int64_t>(left, tick_ns);
		timespec timeout{time_t(slice / 1000000000), long(slice % 1000000000)};
		if (sigtimedwait(&stop_signals, nullptr, &timeout) > 0)
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

// MemAvailable, in bytes; 0 when unknown.
uint64_t available_memory()
{
	std::string meminfo;
	if (!read_whole_file("/proc/meminfo", meminfo))
		return 0;
	const size_t at = meminfo.find("MemAvailable:");
	return at == std::string::npos ? 0 : std::strtoull(meminfo.c_str() + at + 13, nullptr, 10) * 1024;
}

// What the pusher is told of the run.
PushConfig push_config(const Options &options)
{
	PushConfig config;
	config.url = options.push_url;
	config.format = options.push_format;
	config.app = options.app;
	config.host = host_name();
	config.queue_windows = options.push_queue;
	config.queue_bytes = options.push_queue_bytes;
	config.headers = options.push_headers;
	config.headers.insert(config.headers.end(), options.push_auth_headers.begin(), options.push_auth_headers.end());
	config.ca_file = options.push_ca;
	config.cert_file = options.push_cert;
	config.key_file = options.push_key;
	config.frequency = options.frequency;
	config.period_ns = options.frequency ? 0 : options.period;
	return config;
}

// Values the parser cannot judge alone: they depend on this machine. Ok, or what is wrong;
// notes gets what stderr should say before the run (a thread id -p made its process).
Status check_against_machine(Options &options, const MapPlan &plan, std::vector<std::string> &notes)
{
	if (Status pids = resolve_pids(options.pids, notes); !pids.ok())
		return pids;
	for (uint32_t tid : options.tids)
		if (access(("/proc/" + std::to_string(tid)).c_str(), F_OK) != 0)
			return Error("no thread with TID " + std::to_string(tid));
	if (Status cgroups = resolve_cgroups(options.cgroups); !cgroups.ok())
		return cgroups;
	if (options.cpu >= 0) {
		std::vector<int> online = online_cpus();
		if (std::find(online.begin(), online.end(), options.cpu) == online.end())
			return Error("CPU " + std::to_string(options.cpu) +
				     " is not online (see /sys/devices/system/cpu/online)");
	}
	// With --interval, -o's strftime fields name each window's file: checked as now's.
	if (!options.output_path.empty())
		if (Status output = check_output_file(options.interval_s ? expand_time_fields(options.output_path,
											    clocks::realtime_ns())
								 : options.output_path);
		    !output.ok())
			return output;
	// --push: the URL says, or --push-format, which server it is; settled here for run().
	if (!options.push_url.empty()) {
		PushConfig push = push_config(options);
		if (Status target = resolve_push_target(push); !target.ok())
			return target;
		// The auth file is read once, here, before anything loads.
		push.headers.clear();
		if (Status files = load_push_files(push, options.push_auth_file); !files.ok())
			return files;
		options.push_auth_headers = push.headers;
		if (!push.headers.empty() && push.url.starts_with("http://"))
			notes.push_back("--push-auth-file: its credentials go to " + url_for_humans(push.url) +
					" unencrypted: an https:// URL keeps them from the network");
		if (url_for_humans(push.url) != push.url && push.url.find('@') != std::string::npos)
			notes.push_back("--push: the URL's password is on the command line, which every user of "
					"this machine can read (ps, /proc/PID/cmdline): put it in --push-auth-file");
		options.push_url = push.url;
		options.push_format = push.format;
		options.app = push.app;
	}
	// A map size that takes gigabytes of kernel memory costs seconds to create and free, and
	// one beyond what the machine has fails, or reclaims its page cache first.
	MapMemoryVerdict map_cost = judge_map_memory(plan.sizes, available_memory());
	if (!map_cost.status.ok())
		return map_cost.status;
	if (!map_cost.warning.empty())
		notes.push_back(map_cost.warning);
	if (options.frequency) {
		std::string text;
		uint64_t max_rate = 0;
		if (read_whole_file("/proc/sys/kernel/perf_event_max_sample_rate", text))
			max_rate = std::strtoull(text.c_str(), nullptr, 10);
		if (max_rate && options.frequency > max_rate)
			return Error("-f " + std::to_string(options.frequency) + " is above the kernel's limit of " +
				     std::to_string(max_rate) + " Hz (kernel.perf_event_max_sample_rate)");
	}
	return {};
}

// Blocks SIGINT and SIGTERM, which wait_for_end then takes: a signal sent at any moment
// from here on is seen there. A closed stdout shows up as a failed write, handled there too.
sigset_t block_stop_signals()
{
	sigset_t stop_signals;
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
	signal(SIGPIPE, SIG_IGN);
	return stop_signals;
}

int run(const Options &options, const MapPlan &plan)
{
	RunSummary summary(options);
	check_privileges();
	check_kernel_support();
	const sigset_t stop_signals = block_stop_signals();
	// Set before any thread starts: libdebuginfod reads its settings from the environment.
	if (options.debuginfod && debuginfod_configured() && !getenv("DEBUGINFOD_CACHE_PATH"))
		if (std::string cache = debuginfod_cache_dir(); !cache.empty()) {
			mkdir(cache.substr(0, cache.rfind('/')).c_str(), 0700);
			setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
		}

	Session session(options, plan, summary.startup());
	const std::string host = host_name();
	Reports reports(delivery(options), host);
	// Windows go to the server from a thread of the pusher's own: a slow or dead server
	// never holds up sampling or the cuts.
	std::optional<Pusher> pusher;
	if (!options.push_url.empty()) {
		pusher.emplace(push_config(options));
		reports.set_push([&](std::string pprof_gz, int64_t start_ns, int64_t end_ns, uint64_t samples) {
			pusher->push(PushWindow{std::move(pprof_gz), start_ns, end_ns, samples});
		});
	}
	WindowCutter windows(options, reports, session, host);
	if (options.interval_s && !session.sampler().can_cut())
		throw RunError("--interval cannot cut the maps while sampling on this kernel "
			       "(it has no membarrier MEMBARRIER_CMD_GLOBAL, as with nohz_full)");

	windows.start();
	session.attach();
	summary.startup().mark("attach");
	const bool to_stdout = options.output_path.empty() && options.push_url.empty();
	if (options.format == ReportFormat::Stacks && to_stdout)
		std::cout << header_line(options) << std::endl;
	else
		diagnostics::line(header_line(options));
	// The table unwinder waits for user space to send a new process's mappings and its
	// objects' tables: the sooner, the fewer of its samples take frame-pointer steps. Below
	// 50 Hz (an agent's 19) a process meets few samples in 20 ms, and waking 50 times a
	// second was a good part of the profiler's own CPU: every 100 ms there.
	const int64_t tick_ns =
		!session.unwinding() || (options.frequency && options.frequency < 50) ? 100000000 : 20000000;
	auto follow = [&] {
		session.follow(windows);
		return !reports.reader_gone();
	};
	if (wait_for_end(options, stop_signals, to_stdout, session.targets(), windows.start_mono(), tick_ns, follow) ==
	    End::TargetsExited)
		diagnostics::say("every %s sampled has exited", session.targets().threads() ? "thread" : "process");

	session.detach();
	const int64_t end = clocks::monotonic_ns(), end_real = clocks::realtime_ns();
	session.stop_tables();
	summary.sampling_ended();
	windows.add(session.read_rest());
	summary.phase("read");
	session.kernel_symbols_ready();
	summary.phase("kernel symbols wait");
	summary.last_window(windows);
	windows.close(end, end_real);
	summary.phase("symbolize");

	summary.unwinding(session, windows);
	const int status = options.interval_s ? reports.status() : reports.single(windows.last());
	// What is still queued gets a last chance, bounded: a service manager's stop timeout
	// (30 s in the unit) must not run out first.
	if (pusher)
		pusher->finish(10);
	summary.print(session, windows, pusher ? &*pusher : nullptr);
	return status;
}

} // namespace

int main(int argc, char **argv)
{
	std::ios::sync_with_stdio(false);
	Result<Options> parsed = parse_options(argc, argv);
	if (!parsed.ok()) {
		diagnostics::say("%s (see profile --help)", parsed.error().c_str());
		return 2;
	}
	Options &options = *parsed;
	if (options.help) {
		std::cout << help_text();
		return 0;
	}
	if (options.version) {
		std::cout << "profile " << PROFILE_VERSION << '\n';
		return 0;
	}
	// The maps' sizes, decided once: judged here for their memory, made so by the sampler.
	const MapPlan plan = plan_maps(options);
	std::vector<std::string> notes;
	if (Status machine = check_against_machine(options, plan, notes); !machine.ok()) {
		diagnostics::say("%s", machine.error().c_str());
		return 2;
	}
	for (const std::string &note : notes)
		diagnostics::say("%s", note.c_str());
	int status;
	try {
		status = run(options, plan);
	} catch (const RunError &e) {
		diagnostics::say("%s", e.what());
		status = 1;
	}
	// A fetch given up at --debuginfod-timeout may still be inside libcurl: no exit
	// handler of its libraries runs beneath it.
	if (debuginfod_fetches_running()) {
		std::cout.flush();
		fflush(nullptr);
		_exit(status);
	}
	return status;
}
