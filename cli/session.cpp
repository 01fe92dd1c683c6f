// cli/session.cpp: the moving parts of one run: the session of the sampler and the
// processes it follows, the windows it is cut into, the account told on stderr at its end.
#include "cli/session.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "report/window.h"
#include "cli/account.h"
#include "syms/debuginfod.h"

int64_t clock_ns(clockid_t clock)
{
	timespec ts;
	clock_gettime(clock, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void PhaseClock::mark(const char *name)
{
	marks_.push_back({name, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_THREAD_CPUTIME_ID)});
}

std::string PhaseClock::summary() const
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

namespace {

// The symbolizer's options; made once the sampler is loaded, which `startup` marks.
SymbolizerOptions symbolizer_options(const Options &options, PhaseClock &startup)
{
	startup.mark("load");
	SymbolizerOptions symbolizer;
	symbolizer.want_lines = options.report.verbose;
	// For the tests: debug files from a debuginfod server alone, none from this machine's.
	if (const char *root = getenv("PROFILE_DEBUG_ROOT"))
		symbolizer.debug_root = root;
	symbolizer.want_inlined = options.inline_frames;
	if (geteuid() == 0 && !getenv("PROFILE_NO_KALLSYMS_CACHE"))
		symbolizer.kernel_cache_dir = "/run/profile";
	return symbolizer;
}

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

// Where unwind tables are kept between runs, across boots: systemd's CacheDirectory= for
// the agent's unit ($CACHE_DIRECTORY), else /var/cache/profile.
std::string unwind_cache_dir()
{
	const char *dir = getenv("CACHE_DIRECTORY");
	return std::string(dir && *dir == '/' ? dir : "/var/cache/profile") + "/unwind";
}

} // namespace

Session::Session(const Options &options, const MapPlan &plan, PhaseClock &startup)
	: sampler_(options, plan), symbolizer_(symbolizer_options(options, startup))
{
	// Kernel symbols do not depend on what is sampled: index them while sampling runs.
	// Reading /proc/kallsyms is most of a run's own CPU, so -U, which never needs it,
	// skips it.
	if (options.kernel_stacks)
		kernel_symbols_ = std::jthread([this] {
			symbolizer_.load_kernel_symbols();
			kernel_symbols_cpu_ms_ = clock_ns(CLOCK_THREAD_CPUTIME_ID) / 1e6;
		});
	// Follow every process from before the first sample, so that those which exit before
	// the end can still be named: the side band first, then the snapshot, so nothing
	// falls between them.
	side_band_.emplace(online_cpus());
	startup.mark("side band");
	snapshot_processes(history_, uint64_t(clock_ns(CLOCK_MONOTONIC)));
	startup.mark("snapshot");
	// User addresses are located in the history, which knows processes that are gone too.
	symbolizer_.set_process_history(&history_);
	if (UnwindMaps maps = sampler_.unwind_maps(); maps.processes >= 0) {
		// Root's, or the one systemd made for the agent's own user (CacheDirectory=).
		const bool cache = (geteuid() == 0 || getenv("CACHE_DIRECTORY")) && !getenv("PROFILE_NO_UNWIND_CACHE") &&
				   options.unwind_cache_size > 0;
		unwinder_.emplace(maps, cache ? unwind_cache_dir() : "", options.unwind_cache_size);
		unwinder_->prepare(history_, options.pids);
		startup.mark("unwind tables asked");
	}
	// The Python walk's user half: which processes are CPython, and their code objects'
	// names, read while they live.
	if (PythonMaps maps = sampler_.python_maps(); maps.processes >= 0) {
		python_.emplace(maps);
		python_->prepare(options.pids.empty() ? history_.live_pids() : options.pids);
		startup.mark("python processes");
	}
	if (!sampler_.finish_load()) {
		unwinder_.reset();
		python_.reset();
	}
	startup.mark("sampling program");
	targets_.emplace(!options.pids.empty() ? options.pids : options.tids, options.pids.empty());
}

Session::~Session()
{
	kernel_symbols_ready();
}

void Session::kernel_symbols_ready()
{
	if (kernel_symbols_.joinable())
		kernel_symbols_.join();
}

// A batch the sampler drained is located once the side band has told every mapping its
// samples ran in; after that, an exited process is needed only while the maps may still
// hold samples of it. At each --interval the maps are cut: the window's report holds
// exactly the samples taken in it.
void Session::follow(WindowCutter &windows)
{
	auto has_samples = [&](uint32_t pid) { return sampler_.has_samples(pid); };
	std::optional<RawProfile> batch = sampler_.tick();
	side_band_->poll(history_);
	history_.settle_labels(has_samples, uint64_t(clock_ns(CLOCK_MONOTONIC)));
	if (unwinder_)
		unwinder_->tick(history_);
	if (python_)
		python_->tick();
	if (batch)
		windows.add(*batch);
	bool drained = batch.has_value();
	if (const int64_t now = clock_ns(CLOCK_MONOTONIC); windows.due(now)) {
		const int64_t now_real = clock_ns(CLOCK_REALTIME);
		RawProfile last = sampler_.cut();
		side_band_->poll(history_);
		history_.settle_labels(has_samples, uint64_t(now));
		windows.add(last);
		windows.close(now, now_real);
		// The samples still to come were taken after the last cut: a program unloaded
		// before it names none of them.
		if (last_cut_ns_)
			history_.forget_kernel_symbols(uint64_t(last_cut_ns_));
		last_cut_ns_ = now;
		drained = true;
	}
	// A process kept for its samples in the kernel is asked about again once they have
	// been drained.
	history_.forget_exited(has_samples, drained);
}

void Session::stop_tables()
{
	if (unwinder_) {
		unwinder_->stop();
		tables_ = unwinder_->stats();
	}
}

RawProfile Session::read_rest()
{
	// The code objects met last, named before the stacks that hold them are.
	if (python_)
		python_->tick();
	RawProfile raw = sampler_.read();
	side_band_->poll(history_);
	history_.settle_labels([&](uint32_t pid) { return sampler_.has_samples(pid); },
			       uint64_t(clock_ns(CLOCK_MONOTONIC)));
	return raw;
}

WindowCutter::WindowCutter(const Options &options, Reports &reports, Session &session, std::string host)
	: options_(options), reports_(reports), session_(session), host_(std::move(host)),
	  window_(std::make_unique<Window>(reports.detail())),
	  debuginfod_(options.debuginfod && debuginfod_configured())
{
}

void WindowCutter::start()
{
	window_->start_real = clock_ns(CLOCK_REALTIME);
	window_->start_mono = clock_ns(CLOCK_MONOTONIC);
	if (options_.interval_s)
		next_cut_ = window_->start_mono + int64_t(options_.interval_s) * 1000000000;
}

void WindowCutter::add(const RawProfile &batch)
{
	window_->collected.add(batch, session_.symbolizer(), session_.python_names());
	window_->account.add_account(batch);
}

void WindowCutter::close(int64_t end_mono, int64_t end_real)
{
	session_.kernel_symbols_ready();
	const int64_t cpu_before = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (debuginfod_)
		fetch_missing_debug_files(session_.symbolizer(), options_, fetched_);
	profile_ = window_->collected.name(session_.symbolizer());
	session_.symbolizer().forget_objects();
	profile_.command = options_.command_line;
	profile_.frequency = options_.frequency;
	profile_.period = options_.period;
	profile_.period_ns = options_.frequency ? 1000000000 / options_.frequency : options_.period;
	profile_.duration_s = double(end_mono - window_->start_mono) / 1e9;
	profile_.start_time_ns = window_->start_real;
	profile_.kernel_stacks = options_.kernel_stacks;
	profile_.user_stacks = options_.user_stacks;
	profile_.single_pid = session_.targets().single_process();
	profile_.host = host_;
	if (options_.interval_s)
		reports_.window(profile_,
				{window_->account.taken, window_->account.stored, lost_samples(window_->account.totals)},
				end_real);
	run_account_.add_account(window_->account);
	closed_++;
	const double cpu_ms = double(clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_before) / 1e6;
	cpu_ms_sum_ += cpu_ms;
	cpu_ms_max_ = std::max(cpu_ms_max_, cpu_ms);
	auto next = std::make_unique<Window>(reports_.detail());
	next->start_mono = end_mono;
	next->start_real = end_real;
	window_ = std::move(next);
	// What the window freed goes back to the system: an agent's heap should not keep the
	// high-water mark of its busiest window.
	if (options_.interval_s) {
		session_.symbolizer().drop_files();
		malloc_trim(0);
	}
	while (next_cut_ <= end_mono)
		next_cut_ += int64_t(options_.interval_s) * 1000000000;
}

size_t WindowCutter::object_count() const
{
	return session_.symbolizer().object_count();
}

void RunSummary::last_window(const WindowCutter &windows)
{
	entries_ = windows.entry_count();
	stacks_ = windows.stack_count();
	objects_ = windows.object_count();
}

void RunSummary::unwinding(const Session &session, const WindowCutter &windows)
{
	if (session.unwinding())
		report_unwinding(windows.account(), session.tables());
}

void RunSummary::print(Session &session, const WindowCutter &windows, const Pusher *pusher)
{
	const RawProfile &account = windows.account();
	if (pusher) {
		const Pusher::Stats push = pusher->stats();
		fprintf(stderr, "profile: push: %" PRIu64 " window%s sent to %s (%" PRIu64 " request%s, %" PRIu64
				" failed, %" PRIu64 " window%s dropped, %" PRIu64 " of them refused); a request took %.1f ms "
				"on average, %.1f ms at most\n",
			push.sent, push.sent == 1 ? "" : "s", url_for_humans(options_.push_url).c_str(), push.attempts,
			push.attempts == 1 ? "" : "s", push.failures, push.dropped, push.dropped == 1 ? "" : "s",
			push.refused, push.attempts ? push.total_ms / double(push.attempts) : 0.0, push.max_ms);
	}
	if (options_.interval_s)
		fprintf(stderr, "profile: %" PRIu64 " window%s: %s\n", windows.closed(), windows.closed() == 1 ? "" : "s",
			window_account(account.taken, account.stored, lost_samples(account.totals)).c_str());
	if (getenv("PROFILE_DEBUG")) {
		after_.mark("report");
		fprintf(stderr, "profile: before sampling: %s; kernel symbols' thread CPU %.1f ms%s\n",
			startup_.summary().c_str(), session.kernel_symbols_cpu_ms(),
			session.symbolizer().stats().kallsyms_reread ? " (the cache did not hold every address: read again)"
								     : "");
		fprintf(stderr, "profile: after sampling: %s; %zu keys, %zu stacks, %zu objects, %" PRIu64 " drains, "
				"%zu processes followed; whole run's CPU %.1f ms\n",
			after_.summary().c_str(), entries_, stacks_, objects_,
			session.sampler().drains(), session.history().process_count(),
			clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e6);
		if (windows.fetches_debug_files())
			fprintf(stderr, "profile: debuginfod: %zu debug files asked for, %zu used; fetched in %.1f ms\n",
				windows.fetched().asked, windows.fetched().used, windows.fetched().wall_ms);
		if (options_.interval_s)
			fprintf(stderr, "profile: windows: %" PRIu64 " closed, CPU to name and write one %.1f ms on average, "
					"%.1f ms at most\n",
				windows.closed(), windows.cpu_ms_sum() / double(std::max<uint64_t>(windows.closed(), 1)),
				windows.cpu_ms_max());
		if (session.unwinding()) {
			const Unwinder::Stats &tables = session.tables();
			fprintf(stderr, "profile: unwind tables: %u asked for, %u in the kernel (%u from the cache, %" PRIu64
					" rows of %u), %u without CFI, %u without room, %u unfinished; built in %.1f ms "
					"(CPU %.1f); mappings of %u processes sent, %u mappings left out\n",
				tables.objects, tables.ready, tables.from_cache, tables.rows, tables.row_capacity,
				tables.no_table, tables.no_room, tables.not_finished, tables.build_wall_ms,
				tables.build_cpu_ms, tables.processes, tables.dropped_mappings);
		}
		if (const PythonReader *python = session.python()) {
			const PythonReader::Stats py = python->stats();
			fprintf(stderr, "profile: python: %u processes followed, %" PRIu64 " code objects named (%" PRIu64
					" not), naming CPU %.1f ms\n",
				py.processes, py.codes, py.unnamed, py.naming_ms);
		}
	}
	if (!options_.interval_s)
		explain_empty(windows.last(), account, options_, session.targets());
	report_losses(account, options_);
}
