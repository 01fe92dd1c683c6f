// profile.cpp: the run: parse options, load and attach, wait, read the maps, symbolize,
// write the report.
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "cli/options.h"
#include "push/push.h"
#include "report/delivery.h"
#include "report/output_file.h"
#include "report/report.h"
#include "report/window.h"
#include "sampler/account.h"
#include "sampler/collected.h"
#include "sampler/map_memory.h"
#include "sampler/sampler.h"
#include "sampler/side_band.h"
#include "sampler/targets.h"
#include "unwind/unwinder.h"
#include "syms/cgroup.h"
#include "syms/debuginfod.h"
#include "syms/fd.h"
#include "syms/process_history.h"
#include "syms/symbolizer.h"

namespace {

int64_t clock_ns(clockid_t clock)
{
	timespec ts;
	clock_gettime(clock, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// True once nobody can read what goes to stdout: `profile | head` after head is gone.
bool stdout_closed()
{
	pollfd out{STDOUT_FILENO, 0, 0};
	return poll(&out, 1, 0) == 1 && (out.revents & (POLLERR | POLLHUP));
}

// Where the time after sampling goes, wall clock and this thread's CPU, for PROFILE_DEBUG.
class PhaseClock {
public:
	PhaseClock() { mark(""); }
	void mark(const char *name)
	{
		marks_.push_back({name, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_THREAD_CPUTIME_ID)});
	}
	// "read 8.8 ms (CPU 3.0), symbolize ..." : each phase since the mark before it.
	std::string summary() const
	{
		std::string text;
		for (size_t i = 1; i < marks_.size(); i++) {
			char phase[128];
			std::snprintf(phase, sizeof(phase), "%s%s %.1f ms (CPU %.1f)", i > 1 ? ", " : "", marks_[i].name,
				      (marks_[i].wall - marks_[i - 1].wall) / 1e6, (marks_[i].cpu - marks_[i - 1].cpu) / 1e6);
			text += phase;
		}
		return text;
	}

private:
	struct Mark {
		const char *name;
		int64_t wall, cpu;
	};
	std::vector<Mark> marks_;
};

// The samples of one window of --interval (without it, of the whole run), from its start
// to the cut that ends it.
struct Window {
	explicit Window(ReportDetail detail) : collected(detail) {}
	Collected collected; // what the report does not show is merged as it comes
	RawProfile account;  // its batches' accounts added up (no entries)
	int64_t start_real = 0, start_mono = 0;
};

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
			left = int64_t(*options.duration_s) * 1000000000 - (clock_ns(CLOCK_MONOTONIC) - start);
			if (left <= 0)
				return End::Duration;
		}
		int64_t slice = std::min<int64_t>(left, tick_ns);
		timespec timeout{time_t(slice / 1000000000), long(slice % 1000000000)};
		if (sigtimedwait(&stop_signals, nullptr, &timeout) > 0)
			return End::Signal;
		// At the end, the end comes first: no window is cut just before it.
		if (options.duration_s && clock_ns(CLOCK_MONOTONIC) - start >= int64_t(*options.duration_s) * 1000000000)
			return End::Duration;
		if (!tick())
			return End::ReaderGone;
		if (targets.all_exited())
			return End::TargetsExited;
		if (watch_stdout && stdout_closed())
			return End::ReaderGone;
	}
}

// The maps' sizes as the sampler will create them on this kernel (see Sampler::Sampler).
MapSizes map_sizes(const Options &options)
{
	MapSizes sizes;
	sizes.stack_entries = options.stack_storage_size;
	sizes.count_entries = options.hash_storage_size;
	utsname name{};
	int major = 0, minor = 0;
	if (uname(&name) == 0)
		std::sscanf(name.release, "%d.%d", &major, &minor);
	auto at_least = [&](int want_major, int want_minor) {
		return major > want_major || (major == want_major && minor >= want_minor);
	};
	// The sampler's own test of what the table unwinder needs: without it auto walks frame
	// pointers.
	sizes.unwinding = options.unwind != UnwindMode::FramePointers && options.user_stacks && unwinder_support().empty();
	// The kernel cuts stacks at kernel.perf_event_max_stack, the unwinder at its deepest walk.
	std::string text;
	sizes.depth = options.max_stack_depth;
	if (read_whole_file("/proc/sys/kernel/perf_event_max_stack", text) && std::atol(text.c_str()) > 0)
		sizes.depth = std::min<uint32_t>(sizes.depth, uint32_t(std::atol(text.c_str())));
	if (sizes.unwinding)
		sizes.depth = std::min<uint32_t>(sizes.depth, UNWIND_MAX_DEPTH);
	sizes.generations = getenv("PROFILE_NO_DRAIN") ? 1 : 2;
	// Before 6.1 the sampler's hash maps are preallocated.
	sizes.preallocated_hashes = !at_least(6, 1);
	return sizes;
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

// Where unwind tables are kept between runs, across boots: systemd's CacheDirectory= for
// the agent's unit ($CACHE_DIRECTORY), else /var/cache/profile.
std::string unwind_cache_dir()
{
	const char *dir = getenv("CACHE_DIRECTORY");
	return std::string(dir && *dir == '/' ? dir : "/var/cache/profile") + "/unwind";
}

// What fetching debug files cost, for PROFILE_DEBUG and the benchmark.
struct DebuginfodAccount {
	size_t asked = 0, used = 0;
	double wall_ms = 0;
	bool told = false; // the one line of a run's failures is printed
};

// The debug files of what a report is about to name that no file here has, from the
// debuginfod servers: fetched all at once, bounded by --debuginfod-timeout. What could not
// be used is said in one line, once a run; its frames stay [file+0x...].
void fetch_missing_debug_files(Symbolizer &symbolizer, const Options &options, DebuginfodAccount &account)
{
	const int64_t start = clock_ns(CLOCK_MONOTONIC);
	std::vector<std::string> wanted = symbolizer.wanted_debug_files();
	if (wanted.empty())
		return;
	DebuginfodSettings settings;
	settings.timeout_s = options.debuginfod_timeout_s;
	if (isatty(STDERR_FILENO))
		settings.progress = [](size_t done, size_t total, bool last) {
			if (last)
				fprintf(stderr, "\r\033[K");
			else
				fprintf(stderr, "\rprofile: debuginfod: %zu of %zu debug files fetched", done, total);
		};
	std::vector<FetchedDebugFile> files = fetch_debug_files(wanted, settings);
	size_t missing = 0, late = 0, refused = 0, failed = 0;
	std::string refused_why, failed_why;
	for (FetchedDebugFile &file : files) {
		if (file.error == ENOENT) {
			missing++;
		} else if (file.error == ETIME) {
			late++;
		} else if (file.error) {
			failed++;
			failed_why = strerror(file.error);
		} else if (std::string why = symbolizer.add_debug_file(file.build_id, file.fd.get()); !why.empty()) {
			refused++;
			refused_why = why;
			// Not what its build id names: kept in the cache, it would be served again.
			if (!file.path.empty())
				unlink(file.path.c_str());
		} else {
			account.used++;
		}
	}
	account.asked += files.size();
	account.wall_ms += double(clock_ns(CLOCK_MONOTONIC) - start) / 1e6;
	if (account.told || missing + late + refused + failed == 0)
		return;
	account.told = true;
	std::string why;
	auto add = [&](size_t n, const std::string &text) {
		if (n)
			why += (why.empty() ? "" : ", ") + std::to_string(n) + " " + text;
	};
	add(missing, "not on the servers");
	add(late, "not there within --debuginfod-timeout " + std::to_string(options.debuginfod_timeout_s) + " s");
	add(refused, "refused (" + refused_why + ")");
	add(failed, "failed (" + failed_why + ")");
	fprintf(stderr, "profile: debuginfod: %zu of %zu debug files not used, their frames stay unnamed: %s\n",
		missing + late + refused + failed, files.size(), why.c_str());
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

// Values the parser cannot judge alone: they depend on this machine. "" when all is well;
// notes gets what stderr should say before the run (a thread id -p made its process).
std::string check_against_machine(Options &options, std::vector<std::string> &notes)
{
	if (std::string wrong = resolve_pids(options.pids, notes); !wrong.empty())
		return wrong;
	for (uint32_t tid : options.tids)
		if (access(("/proc/" + std::to_string(tid)).c_str(), F_OK) != 0)
			return "no thread with TID " + std::to_string(tid);
	if (std::string wrong = resolve_cgroups(options.cgroups); !wrong.empty())
		return wrong;
	if (options.cpu >= 0) {
		std::vector<int> online = online_cpus();
		if (std::find(online.begin(), online.end(), options.cpu) == online.end())
			return "CPU " + std::to_string(options.cpu) + " is not online (see /sys/devices/system/cpu/online)";
	}
	// With --interval, -o's strftime fields name each window's file: checked as now's.
	if (!options.output_path.empty())
		if (std::string error = check_output_file(options.interval_s ? expand_time_fields(options.output_path,
												clock_ns(CLOCK_REALTIME))
								     : options.output_path);
		    !error.empty())
			return error;
	// --push: the URL says, or --push-format, which server it is; settled here for run().
	if (!options.push_url.empty()) {
		PushConfig push = push_config(options);
		if (std::string wrong = resolve_push_target(push); !wrong.empty())
			return wrong;
		// The auth file is read once, here, before anything loads.
		push.headers.clear();
		if (std::string wrong = load_push_files(push, options.push_auth_file); !wrong.empty())
			return wrong;
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
	MapMemoryVerdict map_cost = judge_map_memory(map_sizes(options), available_memory());
	if (!map_cost.error.empty())
		return map_cost.error;
	if (!map_cost.warning.empty())
		notes.push_back(map_cost.warning);
	if (options.frequency) {
		std::string text;
		uint64_t max_rate = 0;
		if (read_whole_file("/proc/sys/kernel/perf_event_max_sample_rate", text))
			max_rate = std::strtoull(text.c_str(), nullptr, 10);
		if (max_rate && options.frequency > max_rate)
			return "-f " + std::to_string(options.frequency) + " is above the kernel's limit of " +
			       std::to_string(max_rate) + " Hz (kernel.perf_event_max_sample_rate)";
	}
	return "";
}

int run(const Options &options)
{
	PhaseClock startup;
	check_privileges();
	check_kernel_support();

	// Set before any thread starts: libdebuginfod reads its settings from the environment.
	const bool debuginfod = options.debuginfod && debuginfod_configured();
	if (debuginfod && !getenv("DEBUGINFOD_CACHE_PATH"))
		if (std::string cache = debuginfod_cache_dir(); !cache.empty()) {
			mkdir(cache.substr(0, cache.rfind('/')).c_str(), 0700);
			setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
		}

	sigset_t stop_signals;
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
	signal(SIGPIPE, SIG_IGN); // a closed stdout shows up as a failed write, handled below

	Sampler sampler(options);
	startup.mark("load");
	SymbolizerOptions symbolizer_options;
	symbolizer_options.want_lines = options.report.verbose;
	// For the tests: debug files from a debuginfod server alone, none from this machine's.
	if (const char *root = getenv("PROFILE_DEBUG_ROOT"))
		symbolizer_options.debug_root = root;
	if (geteuid() == 0 && !getenv("PROFILE_NO_KALLSYMS_CACHE"))
		symbolizer_options.kernel_cache_dir = "/run/profile";
	Symbolizer symbolizer(symbolizer_options);

	// Kernel symbols do not depend on what is sampled: index them while sampling runs.
	// Reading /proc/kallsyms is most of a run's own CPU, so -U, which never needs it,
	// skips it.
	std::thread kernel_symbols;
	double kernel_symbols_cpu_ms = 0;
	if (options.kernel_stacks)
		kernel_symbols = std::thread([&] {
			symbolizer.load_kernel_symbols();
			kernel_symbols_cpu_ms = clock_ns(CLOCK_THREAD_CPUTIME_ID) / 1e6;
		});
	struct Joiner {
		std::thread &t;
		~Joiner()
		{
			if (t.joinable())
				t.join();
		}
	} joiner{kernel_symbols};

	// Follow every process from before the first sample, so that those which exit
	// before the end can still be named: the side band first, then the snapshot, so
	// nothing falls between them.
	ProcessHistory history;
	SideBand side_band(online_cpus());
	startup.mark("side band");
	snapshot_processes(history, uint64_t(clock_ns(CLOCK_MONOTONIC)));
	startup.mark("snapshot");
	// User addresses are located in the history, which knows processes that are gone too.
	symbolizer.set_process_history(&history);
	// The table unwinder's user half: mappings of sampled processes, tables of objects.
	std::optional<Unwinder> unwinder;
	if (UnwindMaps maps = sampler.unwind_maps(); maps.processes >= 0) {
		// Root's, or the one systemd made for the agent's own user (CacheDirectory=).
		const bool cache = (geteuid() == 0 || getenv("CACHE_DIRECTORY")) && !getenv("PROFILE_NO_UNWIND_CACHE") &&
				   options.unwind_cache_size > 0;
		unwinder.emplace(maps, cache ? unwind_cache_dir() : "", options.unwind_cache_size);
		unwinder->prepare(history, options.pids);
		startup.mark("unwind tables asked");
	}
	// What -p or -L names, from now on: its CPU time, and whether it still runs.
	TargetWatch targets(!options.pids.empty() ? options.pids : options.tids, options.pids.empty());
	const std::string host = host_name();
	Reports reports(options, host);
	// Windows go to the server from a thread of the pusher's own: a slow or dead server
	// never holds up sampling or the cuts.
	std::optional<Pusher> pusher;
	if (!options.push_url.empty()) {
		pusher.emplace(push_config(options));
		reports.set_push([&](std::string pprof_gz, int64_t start_ns, int64_t end_ns, uint64_t samples) {
			pusher->push(PushWindow{std::move(pprof_gz), start_ns, end_ns, samples});
		});
	}
	auto join_kernel_symbols = [&] {
		if (kernel_symbols.joinable())
			kernel_symbols.join();
	};
	// The window being collected, and the account of the windows before it.
	std::unique_ptr<Window> window = std::make_unique<Window>(reports.detail());
	RawProfile run_account;
	uint64_t windows = 0;
	// Names a window's samples and sends its report on; the next window starts where it
	// ended. The profile of the last window (the whole run without --interval) is kept.
	Profile profile;
	// What closing a window costs this thread (naming, writing, handing to the pusher).
	double window_cpu_ms_sum = 0, window_cpu_ms_max = 0;
	DebuginfodAccount fetched;
	auto close_window = [&](int64_t end_mono, int64_t end_real) {
		join_kernel_symbols();
		const int64_t cpu_before = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		if (debuginfod)
			fetch_missing_debug_files(symbolizer, options, fetched);
		profile = window->collected.name(symbolizer);
		profile.command = options.command_line;
		profile.frequency = options.frequency;
		profile.period = options.period;
		profile.period_ns = options.frequency ? 1000000000 / options.frequency : options.period;
		profile.duration_s = double(end_mono - window->start_mono) / 1e9;
		profile.start_time_ns = window->start_real;
		profile.kernel_stacks = options.kernel_stacks;
		profile.user_stacks = options.user_stacks;
		profile.single_pid = targets.single_process();
		profile.host = host;
		if (options.interval_s)
			reports.window(profile,
				       {window->account.taken, window->account.stored, lost_samples(window->account.totals)},
				       end_real);
		run_account.add_account(window->account);
		windows++;
		const double cpu_ms = double(clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_before) / 1e6;
		window_cpu_ms_sum += cpu_ms;
		window_cpu_ms_max = std::max(window_cpu_ms_max, cpu_ms);
		auto next = std::make_unique<Window>(reports.detail());
		next->start_mono = end_mono;
		next->start_real = end_real;
		window = std::move(next);
	};
	auto add_batch = [&](const RawProfile &batch) {
		window->collected.add(batch, symbolizer);
		window->account.add_account(batch);
	};
	const int64_t interval_ns = int64_t(options.interval_s) * 1000000000;
	int64_t next_cut = INT64_MAX;
	// A batch the sampler drained is located once the side band has told every mapping
	// its samples ran in; after that, an exited process is needed only while the maps
	// may still hold samples of it. At each --interval the maps are cut: the window's
	// report holds exactly the samples taken in it.
	auto has_samples = [&](uint32_t pid) { return sampler.has_samples(pid); };
	auto follow_processes = [&] {
		std::optional<RawProfile> batch = sampler.tick();
		side_band.poll(history);
		history.settle_labels(has_samples, uint64_t(clock_ns(CLOCK_MONOTONIC)));
		if (unwinder)
			unwinder->tick(history);
		if (batch)
			add_batch(*batch);
		bool drained = batch.has_value();
		if (const int64_t now = clock_ns(CLOCK_MONOTONIC); now >= next_cut) {
			const int64_t now_real = clock_ns(CLOCK_REALTIME);
			RawProfile last = sampler.cut();
			side_band.poll(history);
			history.settle_labels(has_samples, uint64_t(now));
			add_batch(last);
			close_window(now, now_real);
			drained = true;
			while (next_cut <= now)
				next_cut += interval_ns;
		}
		// A process kept for its samples in the kernel is asked about again once they
		// have been drained.
		history.forget_exited(has_samples, drained);
		return !reports.reader_gone();
	};

	if (options.interval_s && !sampler.can_cut())
		throw RunError("--interval cannot cut the maps while sampling on this kernel "
			       "(it has no membarrier MEMBARRIER_CMD_GLOBAL, as with nohz_full)");
	window->start_real = clock_ns(CLOCK_REALTIME);
	window->start_mono = clock_ns(CLOCK_MONOTONIC);
	if (options.interval_s)
		next_cut = window->start_mono + interval_ns;
	sampler.attach();
	startup.mark("attach");
	const bool to_stdout = options.output_path.empty() && options.push_url.empty();
	if (options.format == ReportFormat::Stacks && to_stdout)
		std::cout << header_line(options) << std::endl;
	else
		fprintf(stderr, "%s\n", header_line(options).c_str());
	// The table unwinder waits for user space to send a new process's mappings and its
	// objects' tables: the sooner, the fewer of its samples take frame-pointer steps. Below
	// 50 Hz (an agent's 19) a process meets few samples in 20 ms, and waking 50 times a
	// second was a good part of the profiler's own CPU: every 100 ms there.
	const int64_t tick_ns = !unwinder || (options.frequency && options.frequency < 50) ? 100000000 : 20000000;
	if (wait_for_end(options, stop_signals, to_stdout, targets, window->start_mono, tick_ns, follow_processes) ==
	    End::TargetsExited)
		fprintf(stderr, "profile: every %s sampled has exited\n", targets.threads() ? "thread" : "process");
	sampler.detach();
	const int64_t end = clock_ns(CLOCK_MONOTONIC), end_real = clock_ns(CLOCK_REALTIME);
	Unwinder::Stats tables;
	if (unwinder) {
		unwinder->stop();
		tables = unwinder->stats();
	}
	PhaseClock phases;

	RawProfile raw = sampler.read();
	side_band.poll(history);
	history.settle_labels(has_samples, uint64_t(clock_ns(CLOCK_MONOTONIC)));
	add_batch(raw);
	phases.mark("read");
	join_kernel_symbols();
	phases.mark("kernel symbols wait");
	const size_t entries = window->collected.entry_count(), stacks = window->collected.stack_count();
	close_window(end, end_real);
	phases.mark("symbolize");

	if (unwinder)
		report_unwinding(run_account, tables);
	int status = options.interval_s ? reports.status() : reports.single(profile);
	if (pusher) {
		// What is still queued gets a last chance, bounded: a service manager's stop
		// timeout (30 s in the unit) must not run out first.
		pusher->finish(10);
		const Pusher::Stats push = pusher->stats();
		fprintf(stderr, "profile: push: %" PRIu64 " window%s sent to %s (%" PRIu64 " request%s, %" PRIu64
				" failed, %" PRIu64 " window%s dropped, %" PRIu64 " of them refused); a request took %.1f ms "
				"on average, %.1f ms at most\n",
			push.sent, push.sent == 1 ? "" : "s", url_for_humans(options.push_url).c_str(), push.attempts,
			push.attempts == 1 ? "" : "s", push.failures, push.dropped, push.dropped == 1 ? "" : "s",
			push.refused, push.attempts ? push.total_ms / double(push.attempts) : 0.0, push.max_ms);
	}
	if (options.interval_s)
		fprintf(stderr, "profile: %" PRIu64 " window%s: %s\n", windows, windows == 1 ? "" : "s",
			window_account(run_account.taken, run_account.stored, lost_samples(run_account.totals)).c_str());
	if (getenv("PROFILE_DEBUG")) {
		phases.mark("report");
		fprintf(stderr, "profile: before sampling: %s; kernel symbols' thread CPU %.1f ms%s\n",
			startup.summary().c_str(), kernel_symbols_cpu_ms,
			symbolizer.stats().kallsyms_reread ? " (the cache did not hold every address: read again)" : "");
		fprintf(stderr, "profile: after sampling: %s; %zu keys, %zu stacks, %zu objects, %" PRIu64 " drains, "
				"%zu processes followed; whole run's CPU %.1f ms\n",
			phases.summary().c_str(), entries, stacks, symbolizer.object_count(), sampler.drains(),
			history.process_count(), clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e6);
		if (debuginfod)
			fprintf(stderr, "profile: debuginfod: %zu debug files asked for, %zu used; fetched in %.1f ms\n",
				fetched.asked, fetched.used, fetched.wall_ms);
		if (options.interval_s)
			fprintf(stderr, "profile: windows: %" PRIu64 " closed, CPU to name and write one %.1f ms on average, "
					"%.1f ms at most\n",
				windows, window_cpu_ms_sum / double(std::max<uint64_t>(windows, 1)), window_cpu_ms_max);
		if (unwinder)
			fprintf(stderr, "profile: unwind tables: %u asked for, %u in the kernel (%u from the cache, %" PRIu64
					" rows of %u), %u without CFI, %u without room, %u unfinished; built in %.1f ms "
					"(CPU %.1f); mappings of %u processes sent, %u mappings left out\n",
				tables.objects, tables.ready, tables.from_cache, tables.rows, tables.row_capacity,
				tables.no_table, tables.no_room, tables.not_finished, tables.build_wall_ms,
				tables.build_cpu_ms, tables.processes, tables.dropped_mappings);
	}
	if (!options.interval_s)
		explain_empty(profile, run_account, options, targets);
	report_losses(run_account, options);
	return status;
}

} // namespace

int main(int argc, char **argv)
{
	std::ios::sync_with_stdio(false);
	auto parsed = parse_options(argc, argv);
	if (auto *usage = std::get_if<UsageError>(&parsed)) {
		fprintf(stderr, "profile: %s (see profile --help)\n", usage->message.c_str());
		return 2;
	}
	Options &options = std::get<Options>(parsed);
	if (options.help) {
		std::cout << help_text();
		return 0;
	}
	if (options.version) {
		std::cout << "profile " << PROFILE_VERSION << '\n';
		return 0;
	}
	std::vector<std::string> notes;
	if (std::string wrong = check_against_machine(options, notes); !wrong.empty()) {
		fprintf(stderr, "profile: %s\n", wrong.c_str());
		return 2;
	}
	for (const std::string &note : notes)
		fprintf(stderr, "profile: %s\n", note.c_str());
	int status;
	try {
		status = run(options);
	} catch (const RunError &e) {
		fprintf(stderr, "profile: %s\n", e.what());
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
