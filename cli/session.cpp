// cli/session.cpp: the moving parts of one run: the session of the sampler and the
// processes it follows, the windows it is cut into, the account told on stderr at its end.
#include "cli/session.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "base/diagnostics.h"
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

// What windows keep of the names they read (SymbolizerOptions::kept_named_bytes).
constexpr size_t kKeptNamedBytes = size_t(4) << 20;

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
	// Windows drop their files (WindowCutter::close); the names they read stay.
	if (options.interval_s)
		symbolizer.kept_named_bytes = kKeptNamedBytes;
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
			diagnostics::progress(last ? "" : "profile: debuginfod: " + std::to_string(done) + " of " +
								  std::to_string(total) + " debug files fetched");
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
		} else if (Status added = symbolizer.add_debug_file(file.build_id, file.fd.get()); !added.ok()) {
			refused++;
			refused_why = added.error();
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
	diagnostics::say("debuginfod: %zu of %zu debug files not used, their frames stay unnamed: %s",
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
	auto has_samples = [&](uint32_t pid) { return this->has_samples(pid); };
	std::optional<RawProfile> batch = sampler_.tick();
	side_band_->poll(history_);
	history_.settle_labels(has_samples, uint64_t(clock_ns(CLOCK_MONOTONIC)));
	if (unwinder_)
		unwinder_->tick(history_);
	if (python_)
		python_->tick();
	if (batch) {
		finish_raw(*batch, false);
		windows.add(*batch);
	}
	bool drained = batch.has_value();
	if (const int64_t now = clock_ns(CLOCK_MONOTONIC); windows.due(now)) {
		const int64_t now_real = clock_ns(CLOCK_REALTIME);
		RawProfile last = sampler_.cut();
		side_band_->poll(history_);
		history_.settle_labels(has_samples, uint64_t(now));
		finish_raw(last, true);
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
	history_.settle_labels([&](uint32_t pid) { return has_samples(pid); },
			       uint64_t(clock_ns(CLOCK_MONOTONIC)));
	finish_raw(raw, true);
	return raw;
}

// The samples kept raw: their walks finished from the tables built since, and added to the
// batch as stored samples. One that meets a table still being built waits for the next
// batch, unless this one is the last of its window (`last`), or too many wait. Their
// processes' mappings are in the history (it keeps an exited one while the kernel's maps
// hold samples of it, or one waits here).
void Session::finish_raw(RawProfile &batch, bool last)
{
	std::vector<RawProfile::RawSample> samples = std::move(raw_waiting_);
	raw_waiting_.clear();
	for (RawProfile::RawSample &sample : batch.raw)
		samples.push_back(std::move(sample));
	batch.raw.clear();
	for (RawProfile::RawSample &sample : samples) {
		const size_t room = batch.depth_limit > sample.frames.size() ? batch.depth_limit - sample.frames.size() : 0;
		RawWalk walk = unwinder_ ? unwinder_->walk_raw(sample.key.pid, sample.time_ns, sample.stack, room, history_)
					 : RawWalk{{}, true, false};
		if (walk.waiting && !last && raw_waiting_.size() < 4 * RAW_SLOTS)
			raw_waiting_.push_back(std::move(sample));
		else
			batch.add_unwound(sample, walk.frames, walk.truncated);
	}
	if (unwinder_)
		unwinder_->drop_raw_rows();
}

bool Session::has_samples(uint32_t pid) const
{
	if (sampler_.has_samples(pid))
		return true;
	for (const RawProfile::RawSample &sample : raw_waiting_)
		if (sample.key.pid == pid)
			return true;
	return false;
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
	if (options_.duration_s)
		run_end_ = window_->start_mono + int64_t(*options_.duration_s) * 1000000000;
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
		diagnostics::say("push: %" PRIu64 " window%s sent to %s (%" PRIu64 " request%s, %" PRIu64
				" failed, %" PRIu64 " window%s dropped, %" PRIu64 " of them refused); a request took %.1f ms "
				"on average, %.1f ms at most",
			push.sent, push.sent == 1 ? "" : "s", url_for_humans(options_.push_url).c_str(), push.attempts,
			push.attempts == 1 ? "" : "s", push.failures, push.dropped, push.dropped == 1 ? "" : "s",
			push.refused, push.attempts ? push.total_ms / double(push.attempts) : 0.0, push.max_ms);
	}
	if (options_.interval_s)
		diagnostics::say("%" PRIu64 " window%s: %s", windows.closed(), windows.closed() == 1 ? "" : "s",
			window_account(account.taken, account.stored, lost_samples(account.totals)).c_str());
	if (getenv("PROFILE_DEBUG")) {
		after_.mark("report");
		diagnostics::say("before sampling: %s; kernel symbols' thread CPU %.1f ms%s",
			startup_.summary().c_str(), session.kernel_symbols_cpu_ms(),
			session.symbolizer().stats().kallsyms_reread ? " (the cache did not hold every address: read again)"
								     : "");
		diagnostics::say("after sampling: %s; %zu keys, %zu stacks, %zu objects, %" PRIu64 " drains, "
				"%zu processes followed; whole run's CPU %.1f ms",
			after_.summary().c_str(), entries_, stacks_, objects_,
			session.sampler().drains(), session.history().process_count(),
			clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e6);
		if (windows.fetches_debug_files())
			diagnostics::say("debuginfod: %zu debug files asked for, %zu used; fetched in %.1f ms",
				windows.fetched().asked, windows.fetched().used, windows.fetched().wall_ms);
		if (options_.interval_s) {
			diagnostics::say("windows: %" PRIu64 " closed, CPU to name and write one %.1f ms on average, "
					"%.1f ms at most",
				windows.closed(), windows.cpu_ms_sum() / double(std::max<uint64_t>(windows.closed(), 1)),
				windows.cpu_ms_max());
			const SymbolizerStats names = session.symbolizer().stats();
			diagnostics::say("named user addresses: %zu from what windows kept, %zu from their files; "
					"%zu kept (%.1f KiB of %.1f), %zu dropped for room; %zu files parsed",
				names.named_from_kept, names.named_from_file, names.named_kept, names.named_kept_bytes / 1024.0,
				kKeptNamedBytes / 1024.0, names.named_dropped, names.elf_files_parsed);
		}
		if (session.unwinding()) {
			const Unwinder::Stats &tables = session.tables();
			diagnostics::say("unwind tables: %u asked for, %u in the kernel (%u from the cache, %" PRIu64
					" rows of %u), %u without CFI, %u without room, %u unfinished; built in %.1f ms "
					"(CPU %.1f); mappings of %u processes sent, %u mappings left out",
				tables.objects, tables.ready, tables.from_cache, tables.rows, tables.row_capacity,
				tables.no_table, tables.no_room, tables.not_finished, tables.build_wall_ms,
				tables.build_cpu_ms, tables.processes, tables.dropped_mappings);
			diagnostics::say("walks that waited for tables: %llu for the process's mappings, %llu"
					" for a file's object, %llu for a table being built; %llu areas learned by walks",
				account.totals.waited_process, account.totals.waited_file, account.totals.waited_building,
				account.totals.areas_learned);
		}
		if (const PythonReader *python = session.python()) {
			const PythonReader::Stats py = python->stats();
			diagnostics::say("python: %u processes followed, %" PRIu64 " code objects named (%" PRIu64
					" not), naming CPU %.1f ms",
				py.processes, py.codes, py.unnamed, py.naming_ms);
		}
	}
	if (!options_.interval_s)
		explain_empty(windows.last(), account, options_, session.targets());
	report_losses(account, options_);
}
