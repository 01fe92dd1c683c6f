// sampler/sampler.cpp: loads profile.bpf.c through its skeleton, as the map plan says, and
// attaches it to the perf events and hooks; the maps are read back in drain.cpp.
#include "sampler/sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "base/fd.h"
#include "sampler/loaded.h"
#include "sampler/targets.h"
#include "proc/kallsyms.h"

namespace {

int libbpf_print(enum libbpf_print_level level, const char *format, va_list args)
{
	static const bool debug = getenv("PROFILE_DEBUG") != nullptr;
	if (!debug && level != LIBBPF_WARN)
		return 0;
	if (!debug)
		return 0; // errors are reported by the caller, in one line
	// One call can carry the verifier's whole log, whose end says why a program was refused.
	va_list again;
	va_copy(again, args);
	const int n = vsnprintf(nullptr, 0, format, args);
	std::string line(n > 0 ? size_t(n) + 1 : 1, '\0');
	vsnprintf(line.data(), line.size(), format, again);
	va_end(again);
	line.resize(n > 0 ? size_t(n) : 0);
	while (!line.empty() && line.back() == '\n')
		line.pop_back();
	diagnostics::line(line);
	return n;
}

std::string errno_text(int err)
{
	return std::strerror(err < 0 ? -err : err);
}

// The machine's dynamic loader: the one this program runs under (AT_BASE is where it is
// mapped, and dl_iterate_phdr names it as the program's PT_INTERP does). "" when none.
std::string own_loader()
{
	struct Found {
		uintptr_t base;
		std::string path;
	} found{getauxval(AT_BASE), ""};
	dl_iterate_phdr(
		[](dl_phdr_info *info, size_t, void *data) {
			Found &f = *static_cast<Found *>(data);
			if (info->dlpi_addr == f.base && info->dlpi_name && info->dlpi_name[0] == '/')
				f.path = info->dlpi_name;
			return 0;
		},
		&found);
	return found.path;
}

// The programs through which the kernel keeps processes' mappings for the table walk.
std::vector<bpf_program *> hooks(const profile_bpf &skel)
{
	return {skel.progs.on_exec, skel.progs.on_fork, skel.progs.on_exit};
}

// The runtimes' uprobes, which their readers attach to the files they find
// (Sampler::attach_uprobe): the programs in this section.
constexpr std::string_view kRuntimeUprobes = "uprobe/runtime";

std::vector<bpf_program *> runtime_uprobes(const profile_bpf &skel)
{
	std::vector<bpf_program *> found;
	bpf_program *program;
	bpf_object__for_each_program(program, skel.obj) if (bpf_program__section_name(program) == kRuntimeUprobes)
		found.push_back(program);
	return found;
}

// Where --off-cpu's programs find the scheduler's functions and try_to_wake_up in a kernel
// stack, from /proc/kallsyms, read once (zeros where it hides addresses: the stacks then
// keep the tracepoint's own frames).
struct OffCpuKernelText {
	KernelTextRange sched, sched_end, wake_up;
};

const OffCpuKernelText &off_cpu_kernel_text()
{
	static const OffCpuKernelText text = [] {
		OffCpuKernelText found;
		std::string kallsyms;
		if (!read_whole_file("/proc/kallsyms", kallsyms))
			return found;
		static constexpr std::string_view names[] = {"__sched_text_start", "__sched_text_end", "try_to_wake_up"};
		const std::vector<KernelTextRange> ranges = kernel_text_ranges(kallsyms, names);
		found.sched = ranges[0];
		found.sched_end = ranges[1];
		found.wake_up = ranges[2];
		return found;
	}();
	return text;
}

// Opens the skeleton and sets what the options and the plan's sizes decide, ready to load.
// Hash maps marked BPF_F_NO_PREALLOC in profile.bpf.c allocate an entry when a key first
// appears instead of all of them at load (a few ms of the run's CPU and megabytes of
// kernel memory); `lazy_maps` false makes them preallocated again, for kernels that want
// that. With one generation (nothing can be drained) the second set of maps is left as
// small as the kernel allows: it is never used. `sampling` false leaves the sampling
// program out (load_sampling_program loads it on its own).
Skeleton open_configured(const SamplerConfig &options, const MapSizes &sizes, bool lazy_maps, bool follow,
			 bool sampling = true)
{
	Skeleton skel(profile_bpf__open());
	if (!skel)
		throw RunError("cannot open the BPF program: " + errno_text(errno));

	const bool unwinding = sizes.unwinding;
	const uint32_t depth = sizes.depth;
	// Stacks go to the STACK_TRACE maps (fp) or to the stores kept by content (unwinding):
	// the other kind is left as small as the kernel allows.
	for (bpf_map *stacks : {skel->maps.stacks0, skel->maps.stacks1}) {
		bpf_map__set_value_size(stacks, depth * sizeof(uint64_t));
		bpf_map__set_max_entries(stacks, unwinding ? 1 : sizes.stack_entries);
	}
	for (bpf_map *store : {skel->maps.store0, skel->maps.store1}) {
		bpf_map__set_value_size(store, STORED_STACK_SIZE(depth));
		bpf_map__set_max_entries(store, unwinding ? sizes.stack_entries : 1);
	}
	for (bpf_map *counts : {skel->maps.counts0, skel->maps.counts1})
		bpf_map__set_max_entries(counts, sizes.count_entries);
	if (sizes.generations < 2) {
		bpf_map__set_max_entries(skel->maps.stacks1, 1);
		bpf_map__set_max_entries(skel->maps.store1, 1);
		bpf_map__set_max_entries(skel->maps.counts1, 1);
	}
	if (!unwinding || !options.user_stacks)
		for (bpf_map *map : {skel->maps.unwind_processes, skel->maps.unwind_objects, skel->maps.unwind_files,
				     skel->maps.unwind_tables,
				     skel->maps.wanted_processes, skel->maps.wanted_files, skel->maps.raw_samples})
			bpf_map__set_max_entries(map, 1);
	// --off-cpu's programs stand in for the sampling program: nothing of them is loaded
	// without it.
	bpf_program__set_autoload(skel->progs.do_sample, sampling && !unwinding && !options.off_cpu);
	bpf_program__set_autoload(skel->progs.do_sample_unwind, sampling && unwinding && !options.off_cpu);
	for (bpf_program *off_cpu : {skel->progs.on_switch, skel->progs.off_cpu_end})
		bpf_program__set_autoload(off_cpu, sampling && unwinding && options.off_cpu);
	bpf_program__set_autoload(skel->progs.on_waking, sampling && unwinding && options.off_cpu && options.wakers);
	for (bpf_program *hook : hooks(*skel))
		bpf_program__set_autoload(hook, unwinding && follow);
	bpf_program__set_autoload(skel->progs.on_libraries_changed, unwinding && follow);
	// With the maps (not in the sampling program's object of its own), where the walk reads
	// user stacks.
	for (bpf_program *uprobe : runtime_uprobes(*skel))
		bpf_program__set_autoload(uprobe, unwinding && options.user_stacks);
	bpf_map__set_max_entries(skel->maps.sampled_pids, sizes.count_entries);
	if (!options.pids.empty())
		bpf_map__set_max_entries(skel->maps.pids, options.pids.size());
	if (!options.tids.empty())
		bpf_map__set_max_entries(skel->maps.tids, options.tids.size());
	if (!options.cgroups.empty())
		bpf_map__set_max_entries(skel->maps.cgroups, options.cgroups.size());
	if (!lazy_maps) {
		bpf_map *map;
		bpf_object__for_each_map(map, skel->obj)
			if (bpf_map__type(map) == BPF_MAP_TYPE_HASH)
				bpf_map__set_map_flags(map, bpf_map__map_flags(map) & ~BPF_F_NO_PREALLOC);
	}

	skel->rodata->kernel_stacks = options.kernel_stacks;
	skel->rodata->user_stacks = options.user_stacks;
	skel->rodata->include_idle = options.include_idle;
	skel->rodata->key_threads = options.key_threads;
	skel->rodata->filter_pids = !options.pids.empty();
	skel->rodata->filter_tids = !options.tids.empty();
	skel->rodata->filter_cgroups = !options.cgroups.empty();
	skel->rodata->pid_namespace = own_pid_namespace();
	skel->rodata->unwind_mode = !unwinding ? UNWIND_FP
				    : options.unwind == UnwindMode::Tables ? UNWIND_DWARF
									     : UNWIND_AUTO;
	skel->rodata->max_depth = depth;
	skel->rodata->runtimes_on = unwinding ? ~options.runtimes_off : 0;
	skel->rodata->min_block_ns = options.min_block_us * 1000;
	skel->rodata->max_block_ns = options.max_block_us > UINT64_MAX / 1000 ? UINT64_MAX : options.max_block_us * 1000;
	skel->rodata->only_cpu = options.cpu;
	skel->rodata->wakers = options.wakers;
	// Each CPU's budget, in windows of 10 ms: a window a little over two of a 250 Hz
	// kernel's ticks, short enough that a CPU over it stalls its tasks no longer than a
	// busy interrupt handler would, long enough that a sample's few µs never fill it.
	skel->rodata->budget_window_ns = 10000000;
	const bool budget = options.off_cpu || SampleRate{options.frequency, options.period}.per_second() > kBudgetAbove;
	skel->rodata->budget_ns = budget ? 10000000 / 100 * std::min<uint32_t>(options.budget_percent, 100) : 0;
	if (options.off_cpu) {
		const OffCpuKernelText &text = off_cpu_kernel_text();
		skel->rodata->sched_text_start = text.sched.start;
		skel->rodata->sched_text_end = text.sched_end.start;
		skel->rodata->wake_up_start = text.wake_up.start;
		skel->rodata->wake_up_end = text.wake_up.end;
	}
	return skel;
}

// The line of a load that failed with err, and what may mend it.
RunError load_failed(int err)
{
	if (err == -EPERM || err == -EACCES)
		check_privileges();
	return RunError("cannot load the BPF program: " + errno_text(err) +
			(err == -E2BIG || err == -ENOMEM
				 ? " (a map may be too large: lower --stack-storage-size or --hash-storage-size)"
				 : " (run with PROFILE_DEBUG=1 for libbpf's log)"));
}

// --off-cpu's programs walk user stacks from tables, with no fall back to frame pointers.
RunError off_cpu_refused(int err)
{
	if (err == -EPERM || err == -EACCES)
		check_privileges();
	return RunError("--off-cpu: the kernel refused its programs: " + errno_text(err) +
			" (run with PROFILE_DEBUG=1 for libbpf's log)");
}

// The verifier refused the table walk (err; an older kernel's limits): the run falls back to
// frame pointers, says so, and loads what --unwind fp loads, its STACK_TRACE maps never
// sized to the run. `sizes` become those of the object returned; a load that fails throws.
Skeleton load_frame_pointers(const SamplerConfig &options, MapSizes &sizes, int err)
{
	diagnostics::say("unwinding by frame pointers (as --unwind fp): the kernel refused the "
			 "table unwinder (%s; PROFILE_DEBUG=1 shows why)",
			 errno_text(err).c_str());
	sizes.unwinding = false;
	sizes.stack_entries = options.stack_storage_size;
	Skeleton skel = open_configured(options, sizes, true, false);
	err = profile_bpf__load(skel.get());
	if (err == -EINVAL) { // before 6.1: preallocated hash maps only (see the constructor)
		skel = open_configured(options, sizes, false, false);
		err = profile_bpf__load(skel.get());
	}
	if (err)
		throw load_failed(err);
	return skel;
}

// Writes -p's, -L's and --cgroup's filters into the maps of a loaded object.
void set_filters(const profile_bpf &skel, const SamplerConfig &options)
{
	uint8_t one = 1;
	for (uint32_t pid : options.pids)
		if (bpf_map__update_elem(skel.maps.pids, &pid, sizeof(pid), &one, 1, BPF_ANY))
			throw RunError("cannot set the PID filter: " + errno_text(errno));
	for (uint32_t tid : options.tids)
		if (bpf_map__update_elem(skel.maps.tids, &tid, sizeof(tid), &one, 1, BPF_ANY))
			throw RunError("cannot set the TID filter: " + errno_text(errno));
	// The map holds each group by an fd of its directory (check_against_machine made
	// them real cgroup v2 directories); the fd may close once it is in.
	for (uint32_t slot = 0; slot < options.cgroups.size(); slot++) {
		const std::string &path = options.cgroups[slot];
		UniqueFd dir(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
		const int fd = dir.get();
		if (!dir || bpf_map__update_elem(skel.maps.cgroups, &slot, sizeof(slot), &fd, sizeof(fd), BPF_ANY))
			throw RunError("cannot set the cgroup filter to " + path + ": " + errno_text(errno));
	}
}

// The table walk's sampling program alone, in an object of its own over the maps of
// `loaded` (an object whose load left it out): most of the start's verifier time, spent on
// a thread while the run reads /proc and loads tables. Returns the object, or the load's
// error.
std::pair<Skeleton, int> load_sampling_program(const SamplerConfig &options, const MapSizes &sizes,
					       const profile_bpf &loaded)
{
	Skeleton skel = open_configured(options, sizes, true, false);
	for (bpf_program *uprobe : runtime_uprobes(*skel)) // the maps' object has them
		bpf_program__set_autoload(uprobe, false);
	bpf_map *map;
	bpf_object__for_each_map(map, skel->obj) {
		const bpf_map *same = bpf_object__find_map_by_name(loaded.obj, bpf_map__name(map));
		if (!same || bpf_map__reuse_fd(map, bpf_map__fd(same)) != 0)
			return {nullptr, same ? -errno : -ENOENT};
	}
	// PROFILE_DEBUG: the verifier's own count of its work on each program (log level 4).
	static const bool debug = getenv("PROFILE_DEBUG") != nullptr;
	std::vector<std::pair<bpf_program *, std::string>> logs;
	bpf_program *program;
	if (debug)
		bpf_object__for_each_program(program, skel->obj) if (bpf_program__autoload(program))
			logs.emplace_back(program, std::string(65536, '\0'));
	for (auto &[loaded_program, log] : logs) {
		bpf_program__set_log_level(loaded_program, 4);
		bpf_program__set_log_buf(loaded_program, log.data(), log.size());
	}
	const int err = profile_bpf__load(skel.get());
	for (const auto &[loaded_program, log] : logs) {
		const size_t at = log.find("processed ");
		if (!err && at != std::string::npos)
			diagnostics::say("%s verified: %s", bpf_program__name(loaded_program),
					 log.substr(at, log.find('\n', at) - at).c_str());
	}
	if (err)
		return {nullptr, err};
	return {std::move(skel), 0};
}

} // namespace

Sampler::Sampler(const SamplerConfig &options, const MapPlan &plan) : impl_(std::make_unique<Impl>())
{
	impl_->options = options;
	libbpf_set_print(libbpf_print);

	if (!plan.status.ok())
		throw RunError(plan.status.error());
	for (const std::string &warning : plan.warnings)
		diagnostics::say("%s", warning.c_str());
	MapSizes sizes = plan.sizes;
	// The kernel keeps the mappings of new processes where it can hook exec, fork and exit;
	// elsewhere user space sends them, later. -p and -L sample processes running now, whose
	// mappings user space sends and follows: no hook runs for the machine's other processes.
	bool follow = sizes.unwinding && options.user_stacks && options.pids.empty() && options.tids.empty() &&
		      !getenv("PROFILE_NO_KERNEL_MAPPINGS");
	// The maps and the hooks first; the walk's sampling program is verified on a thread
	// (finish_load). Where the hooks load, this kernel takes maps allocated as keys arrive;
	// before 6.1 a perf_event program may refuse them though the hooks took them: there,
	// and without the hooks, everything loads at once.
	bool split = follow && !sizes.preallocated_hashes;
	Skeleton skel = open_configured(options, sizes, true, follow, !split);
	int err = profile_bpf__load(skel.get());
	if (err && follow) {
		follow = split = false;
		skel = open_configured(options, sizes, true, follow);
		err = profile_bpf__load(skel.get());
	}
	if (err == -EINVAL) {
		// Before 6.1 perf_event programs may only use preallocated hash maps: pay
		// for the preallocation there.
		skel = open_configured(options, sizes, false, follow);
		err = profile_bpf__load(skel.get());
	}
	if (err && options.off_cpu)
		throw off_cpu_refused(err);
	if (err && sizes.unwinding && options.unwind == UnwindMode::Auto) {
		follow = false;
		skel = load_frame_pointers(options, sizes, err); // sizes.unwinding goes false
		err = 0;
	}
	if (err)
		throw load_failed(err);

	set_filters(*skel, options);
	// Attached now, before user space reads /proc: a process that starts from here on is
	// followed by the kernel, one that ran before is in what user space reads.
	if (follow)
		for (bpf_program *hook : hooks(*skel)) {
			// Every one or none: a process followed in part would be walked with a list
			// that lacks the libraries it mapped.
			Link link(bpf_program__attach(hook));
			if (!link) {
				impl_->hooks.clear();
				if (getenv("PROFILE_DEBUG"))
					diagnostics::say("the kernel does not follow new processes' mappings (%s did not "
							 "attach: %s): user space sends them",
							 bpf_program__name(hook), errno_text(errno).c_str());
				break;
			}
			impl_->hooks.push_back(std::move(link));
		}
	// Where the kernel follows processes, ld.so tells it when libraries come and go; without
	// the uprobe the walk learns each library at its first sample.
	if (!impl_->hooks.empty()) {
		const std::string loader = own_loader();
		LIBBPF_OPTS(bpf_uprobe_opts, at_debug_state, .func_name = "_dl_debug_state");
		Link link(loader.empty() ? nullptr
					 : bpf_program__attach_uprobe_opts(skel->progs.on_libraries_changed, -1,
									   loader.c_str(), 0, &at_debug_state));
		if (link)
			impl_->hooks.push_back(std::move(link));
		else if (getenv("PROFILE_DEBUG"))
			diagnostics::say("ld.so does not tell the kernel of new libraries (no uprobe on %s: %s): walks "
					 "learn them", loader.empty() ? "the dynamic loader" : loader.c_str(),
					 errno_text(errno).c_str());
	}
	impl_->sizes = sizes;
	if (split)
		impl_->verifying = std::async(std::launch::async, load_sampling_program, options, sizes,
					      std::cref(*skel));
	impl_->skel = std::move(skel);
}

bool Sampler::finish_load()
{
	Impl &d = *impl_;
	if (!d.verifying.valid())
		return true;
	auto [sampling, err] = d.verifying.get();
	if (!err) {
		d.sampling = std::move(sampling);
		return true;
	}
	if (d.options.off_cpu)
		throw off_cpu_refused(err);
	if (d.options.unwind != UnwindMode::Auto)
		throw load_failed(err);
	// As the constructor falls back; the maps already handed out stay, unused.
	MapSizes sizes = d.sizes;
	Skeleton skel = load_frame_pointers(d.options, sizes, err);
	set_filters(*skel, d.options);
	d.hooks.clear();
	d.runtime_uprobes.clear();
	d.sizes = sizes; // no longer unwinding, the stack maps of --unwind fp
	d.retired = std::exchange(d.skel, std::move(skel));
	return false;
}

Sampler::~Sampler() = default;

void Sampler::attach()
{
	if (impl_->verifying.valid()) // the caller did not wait for it: waited for here
		finish_load();
	std::vector<int> online = online_cpus();
	if (online.empty())
		throw RunError("cannot read the online CPUs from /sys/devices/system/cpu/online");
	const SamplerConfig &options = impl_->options;
	if (options.cpu >= 0) {
		if (std::find(online.begin(), online.end(), options.cpu) == online.end())
			throw RunError("CPU " + std::to_string(options.cpu) + " is not online (see /sys/devices/system/cpu/online)");
		online = {options.cpu};
	}
	if (options.off_cpu) {
		// One program on every context switch; -C is its filter.
		bpf_program *program = (impl_->sampling ? *impl_->sampling : *impl_->skel).progs.on_switch;
		Link link(bpf_program__attach(program));
		if (!link)
			throw RunError(std::string("cannot attach --off-cpu's program to the sched_switch tracepoint: ") +
				       errno_text(errno));
		impl_->links.push_back(std::move(link));
		if (options.wakers) {
			Link waking(bpf_program__attach((impl_->sampling ? *impl_->sampling : *impl_->skel).progs.on_waking));
			if (!waking)
				throw RunError(std::string("cannot attach --wakers' program to the sched_waking tracepoint: ") +
					       errno_text(errno));
			impl_->links.push_back(std::move(waking));
		}
		cpus_ = online;
		return;
	}

	// By period, -f's too: the kernel turns a cpu-clock event's frequency into a fixed period
	// (NSEC_PER_SEC / freq) anyway, and a period is what PERF_EVENT_IOC_PERIOD then takes
	// when fit_rate lowers it.
	perf_event_attr attr{};
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	impl_->rate = {options.frequency, options.period};
	attr.sample_period = impl_->rate.period_ns();

	for (int cpu : online) {
		UniqueFd event(int(syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC)));
		if (!event) {
			int err = errno;
			if (err == ENODEV) // went offline since we read the list
				continue;
			std::string why = "cannot open the cpu-clock perf event on CPU " + std::to_string(cpu) + ": " + errno_text(err);
			if (err == EACCES || err == EPERM)
				why += " (needs root or CAP_PERFMON)";
			else if (err == EMFILE)
				why += " (too many open files: raise ulimit -n)";
			throw RunError(why);
		}
		bpf_program *program = impl_->sampling    ? impl_->sampling->progs.do_sample_unwind
				       : impl_->unwinding() ? impl_->skel->progs.do_sample_unwind
							  : impl_->skel->progs.do_sample;
		Link link(bpf_program__attach_perf_event(program, event.get()));
		if (!link)
			throw RunError("cannot attach the BPF program to CPU " + std::to_string(cpu) + ": " + errno_text(errno));
		impl_->events.push_back(event.release()); // the link closes it
		impl_->links.push_back(std::move(link));
		cpus_.push_back(cpu);
	}
	if (impl_->links.empty())
		throw RunError("no online CPU could be sampled");
}

std::optional<std::string> Sampler::fit_rate()
{
	Impl &d = *impl_;
	const int64_t now = clocks::monotonic_ns();
	// Twice a second at most, once the samples' cost is known from enough of them.
	if (d.events.empty() || now - d.last_fit_ns < 500000000)
		return std::nullopt;
	d.last_fit_ns = now;
	const Budget spent = budget();
	if (spent.runs < 100)
		return std::nullopt;
	std::optional<RateDecision> lowered =
		fit_to_cost(d.rate, d.options.interrupt_cost_ns + double(spent.ns) / double(spent.runs),
			    d.options.budget_percent);
	if (!lowered)
		return std::nullopt;
	uint64_t period = lowered->rate.period_ns();
	for (int fd : d.events)
		if (ioctl(fd, PERF_EVENT_IOC_PERIOD, &period) != 0) {
			const std::string why = errno_text(errno);
			d.events.clear(); // said once: not tried again
			return "cannot lower the sampling rate: " + why +
			       " (samples over the CPU budget are dropped all the same)";
		}
	d.rate = lowered->rate;
	return lowered->note;
}

SampleRate Sampler::rate() const
{
	return impl_->rate;
}

Sampler::Budget Sampler::budget() const
{
	Budget sum;
	sum.kept = impl_->skel->rodata->budget_ns != 0;
	const int ncpus = libbpf_num_possible_cpus();
	const uint32_t zero = 0;
	std::vector<budget_state> per_cpu(ncpus > 0 ? ncpus : 1);
	if (bpf_map_lookup_elem(bpf_map__fd(impl_->skel->maps.budget), &zero, per_cpu.data()) == 0)
		for (const budget_state &b : per_cpu) {
			sum.ns += b.ns;
			sum.runs += b.runs;
			sum.exhausted += b.exhausted;
		}
	std::vector<sample_stats> wakers(per_cpu.size());
	if (impl_->options.wakers &&
	    bpf_map_lookup_elem(bpf_map__fd(impl_->skel->maps.waker_walks), &zero, wakers.data()) == 0)
		for (const sample_stats &s : wakers)
			sum.wakeups_dropped += s.lost_budget;
	return sum;
}

void Sampler::detach()
{
	impl_->links.clear();
	impl_->events.clear();
	// A hook's detach may wait for the kernel's grace periods (ld.so's uprobe: about 110 ms,
	// RCU tasks trace): each on a thread of its own, while the run reads the maps and names
	// what they hold. What a hook does meanwhile (a process's mappings noted) nobody reads.
	for (Link &hook : impl_->hooks)
		impl_->detaching.emplace_back([link = std::move(hook)]() mutable { link.reset(); });
	impl_->hooks.clear();
	// The runtimes' uprobes, three or more per file of a runtime: one after the other, on
	// one thread. None is attached after this (a reader still names what the maps hold).
	impl_->detaching.emplace_back([links = std::move(impl_->runtime_uprobes)]() mutable { links.clear(); });
	impl_->runtime_uprobes.clear();
	impl_->detached = true;
}

uint32_t Sampler::runtimes_walked() const
{
	return impl_->walks_user_stacks() ? ~impl_->options.runtimes_off : 0;
}

int Sampler::map_fd(const char *name) const
{
	return bpf_object__find_map_fd_by_name(impl_->skel->obj, name);
}

bool Sampler::attach_uprobe(const char *name, const std::string &path, uint64_t offset)
{
	if (impl_->detached) {
		errno = ESHUTDOWN;
		return false;
	}
	bpf_program *program = bpf_object__find_program_by_name(impl_->skel->obj, name);
	if (!program || bpf_program__section_name(program) != kRuntimeUprobes || bpf_program__fd(program) < 0) {
		errno = ENOENT;
		return false;
	}
	// With -p, in the processes sampled alone: a uprobe given a pid stops only the tasks of
	// that process's memory, and the others that run the file never meet it. A process
	// gone meanwhile (ESRCH) is none to attach in.
	const std::vector<uint32_t> &pids = impl_->options.pids;
	const std::vector<int> where = pids.empty() ? std::vector<int>{-1} : std::vector<int>(pids.begin(), pids.end());
	bool attached = false;
	int failed = 0;
	for (int pid : where) {
		Link link(bpf_program__attach_uprobe(program, false, pid, path.c_str(), offset));
		if (link) {
			impl_->runtime_uprobes.push_back(std::move(link));
			attached = true;
		} else if (errno != ESRCH) {
			failed = errno;
		}
	}
	if (!attached && !failed)
		failed = ESRCH;
	if (failed)
		errno = failed;
	return !failed;
}

UnwindMaps Sampler::unwind_maps() const
{
	UnwindMaps maps;
	if (!impl_->walks_user_stacks())
		return maps;
	const profile_bpf &skel = *impl_->skel;
	maps.processes = bpf_map__fd(skel.maps.unwind_processes);
	maps.objects = bpf_map__fd(skel.maps.unwind_objects);
	maps.tables = bpf_map__fd(skel.maps.unwind_tables);
	maps.wanted_processes = bpf_map__fd(skel.maps.wanted_processes);
	maps.files = bpf_map__fd(skel.maps.unwind_files);
	maps.wanted_files = bpf_map__fd(skel.maps.wanted_files);
	maps.kernel_follows = !impl_->hooks.empty();
	maps.frame_pointers = impl_->options.unwind != UnwindMode::Tables;
	maps.depth = impl_->depth();
	maps.row_capacity = impl_->options.unwind_table_size;
	maps.object_capacity = bpf_map__max_entries(skel.maps.unwind_objects);
	maps.process_capacity = bpf_map__max_entries(skel.maps.unwind_processes);
	return maps;
}
