// run/session.cpp: the sampler loaded, the processes it samples followed, and what it
// drained handed on to the window being collected.
#include "run/session.h"

#include <unistd.h>

#include <cstdlib>

#include "base/clock.h"
#include "base/diagnostics.h"

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
	// Windows let the DWARF they read go (Symbolizer::end_window), and keep the names they
	// read, and compressed DWARF decompressed.
	if (options.interval_s) {
		symbolizer.kept_named_bytes = kKeptNamedBytes;
		symbolizer.kept_named_windows = kKeptNamedWindows;
		symbolizer.kept_decompressed_bytes = kKeptDecompressedBytes;
	}
	return symbolizer;
}

// Where unwind tables are kept between runs, across boots: systemd's CacheDirectory= for
// the agent's unit ($CACHE_DIRECTORY), else /var/cache/profile.
std::string unwind_cache_dir()
{
	const char *dir = getenv("CACHE_DIRECTORY");
	return std::string(dir && *dir == '/' ? dir : "/var/cache/profile") + "/unwind";
}

} // namespace

Session::Session(const Options &options, const RunPlan &plan, PhaseClock &startup)
	: sampler_(plan.sampler, plan.maps), symbolizer_(symbolizer_options(options, startup))
{
	// Kernel symbols do not depend on what is sampled: index them while sampling runs.
	// Reading /proc/kallsyms is most of a run's own CPU, so -U, which never needs it,
	// skips it.
	if (options.kernel_stacks)
		kernel_symbols_ = std::jthread([this] {
			symbolizer_.load_kernel_symbols();
			kernel_symbols_cpu_ms_ = clocks::thread_cpu_ms();
		});
	// Follow every process from before the first sample, so that those which exit before
	// the end can still be named: the side band first, then the snapshot, so nothing
	// falls between them.
	side_band_.emplace(online_cpus());
	startup.mark("side band");
	snapshot_processes(history_, uint64_t(clocks::monotonic_ns()));
	startup.mark("snapshot");
	// User addresses are located in the history, which knows processes that are gone too.
	symbolizer_.set_process_history(&history_);
	if (UnwindMaps maps = sampler_.unwind_maps(); maps.processes >= 0) {
		// Root's, or the one systemd made for the agent's own user (CacheDirectory=).
		const bool cache = (geteuid() == 0 || getenv("CACHE_DIRECTORY")) && !getenv("PROFILE_NO_UNWIND_CACHE") &&
				   options.unwind_cache_size > 0;
		unwinder_.emplace(maps, cache ? unwind_cache_dir() : "", options.unwind_cache_size);
		unwinder_->prepare(history_, plan.sampler.pids);
		startup.mark("unwind tables asked");
	}
	// The language runtimes' user halves: which processes run them, and what names their
	// frames, read while they live.
	if (const uint32_t walked = sampler_.runtimes_walked()) {
		runtimes_.emplace(walked,
				  RuntimeKernel{[this](const char *name) { return sampler_.map_fd(name); },
						[this](const char *program, const std::string &path, uint64_t offset) {
							return sampler_.attach_uprobe(program, path, offset);
						}},
				  options.inline_frames);
		if (runtimes_->empty()) {
			runtimes_.reset();
		} else {
			runtimes_->prepare(plan.sampler.pids.empty() ? history_.live_pids() : plan.sampler.pids);
			startup.mark("runtime processes");
		}
	}
	if (!sampler_.finish_load()) {
		unwinder_.reset();
		runtimes_.reset();
	}
	startup.mark("sampling program");
	targets_.emplace(!plan.sampler.pids.empty() ? plan.sampler.pids : options.tids, plan.sampler.pids.empty());
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
// samples ran in.
std::optional<RawProfile> Session::poll()
{
	if (std::optional<std::string> lowered = sampler_.fit_rate())
		diagnostics::say("%s", lowered->c_str());
	std::optional<RawProfile> batch = sampler_.tick();
	follow_processes();
	if (unwinder_)
		unwinder_->tick(history_);
	if (runtimes_)
		runtimes_->tick();
	if (batch)
		finish_raw(*batch, false);
	return batch;
}

RawProfile Session::cut(int64_t now)
{
	RawProfile last = sampler_.cut();
	follow_processes(now);
	finish_raw(last, true);
	// The samples still to come were taken after the last cut: a program unloaded before it
	// names none of them.
	if (last_cut_ns_)
		history_.forget_kernel_symbols(uint64_t(last_cut_ns_));
	last_cut_ns_ = now;
	return last;
}

// An exited process is needed only while the maps may still hold samples of it: one kept
// for its samples in the kernel is asked about again once they have been drained.
void Session::settle(bool drained)
{
	history_.forget_exited([&](uint32_t pid) { return has_samples(pid); }, drained);
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
	// What the runtimes' walks met last (code objects), named before the stacks that hold
	// them are.
	if (runtimes_)
		runtimes_->tick();
	RawProfile raw = sampler_.read();
	follow_processes();
	finish_raw(raw, true);
	return raw;
}

void Session::follow_processes(std::optional<int64_t> now)
{
	side_band_->poll(history_);
	history_.settle_labels([&](uint32_t pid) { return has_samples(pid); },
			       uint64_t(now ? *now : clocks::monotonic_ns()));
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
