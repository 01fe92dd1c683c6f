// sampler/sampler.cpp: loads profile.bpf.c through its skeleton, opens the perf events,
// and reads the maps back in batches.
#include "sampler/sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/membarrier.h>
#include <linux/perf_event.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <thread>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "base/diagnostics.h"
#include "profile.skel.h"
#include "sampler/targets.h"
#include "base/fd.h"

namespace {

struct SkeletonDeleter {
	void operator()(profile_bpf *skel) const { profile_bpf__destroy(skel); }
};
struct LinkDeleter {
	void operator()(bpf_link *link) const { bpf_link__destroy(link); }
};
using Skeleton = std::unique_ptr<profile_bpf, SkeletonDeleter>;
using Link = std::unique_ptr<bpf_link, LinkDeleter>;

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

// Small /proc and /sys files, opened close-on-exec like every fd the profiler holds.
std::string read_file(const char *path)
{
	std::string text;
	read_whole_file(path, text);
	return text;
}

long read_sysctl(const char *path, long fallback)
{
	std::string text = read_file(path);
	return text.empty() ? fallback : std::strtol(text.c_str(), nullptr, 10);
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
	return {skel.progs.on_exec, skel.progs.on_fork, skel.progs.on_exit, skel.progs.python_on_exec,
		skel.progs.python_on_exit};
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
	if (!unwinding)
		for (bpf_map *map : {skel->maps.unwind_processes, skel->maps.unwind_objects, skel->maps.unwind_files,
				     skel->maps.unwind_tables,
				     skel->maps.wanted_processes, skel->maps.wanted_files, skel->maps.raw_samples})
			bpf_map__set_max_entries(map, 1);
	bpf_program__set_autoload(skel->progs.do_sample, sampling && !unwinding);
	bpf_program__set_autoload(skel->progs.do_sample_unwind, sampling && unwinding);
	for (bpf_program *hook : hooks(*skel))
		bpf_program__set_autoload(hook, unwinding && follow);
	bpf_program__set_autoload(skel->progs.on_libraries_changed, unwinding && follow);
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
	skel->rodata->filter_pids = !options.pids.empty();
	skel->rodata->filter_tids = !options.tids.empty();
	skel->rodata->filter_cgroups = !options.cgroups.empty();
	skel->rodata->pid_namespace = own_pid_namespace();
	skel->rodata->unwind_mode = !unwinding ? UNWIND_FP
				    : options.unwind == UnwindMode::Tables ? UNWIND_DWARF
									     : UNWIND_AUTO;
	skel->rodata->max_depth = depth;
	skel->rodata->python_frames = options.python && unwinding;
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
	bpf_map *map;
	bpf_object__for_each_map(map, skel->obj) {
		const bpf_map *same = bpf_object__find_map_by_name(loaded.obj, bpf_map__name(map));
		if (!same || bpf_map__reuse_fd(map, bpf_map__fd(same)) != 0)
			return {nullptr, same ? -errno : -ENOENT};
	}
	const int err = profile_bpf__load(skel.get());
	if (err)
		return {nullptr, err};
	return {std::move(skel), 0};
}

} // namespace

struct Sampler::Impl {
	Skeleton skel;
	// The table walk's sampling program, verified on a thread (load_sampling_program)
	// until finish_load() takes it: then the program attach() attaches.
	std::future<std::pair<Skeleton, int>> verifying;
	Skeleton sampling;
	// The object whose maps the Session was given, kept while a fallback to frame
	// pointers samples from another: its readers may still hold the fds.
	Skeleton retired;
	std::vector<Link> links;
	// The hooks through which the kernel keeps processes' mappings for the table walk.
	std::vector<Link> hooks;
	uint32_t depth = DEFAULT_STACK_DEPTH;
	SamplerConfig options;
	MapSizes sizes; // as loaded
	// Stacks walked from unwind tables and kept by content, rather than bpf_get_stackid's.
	bool unwinding = false;

	// Draining while sampling needs to know when no program still uses the old maps:
	// membarrier(MEMBARRIER_CMD_GLOBAL) waits for an RCU grace period, and the program
	// runs inside rcu_read_lock(). Without it (nohz_full kernels) nothing is drained
	// before the end.
	bool can_drain = false;
	// Processes that count as sampled until the next drain: those of the last batch (a
	// sample the next generation took while the drain ran may have lost its pid in
	// sampled_pids to the drain), and those sampled_pids was found to hold since (asked
	// about again every 100 ms, they cost one lookup).
	mutable std::unordered_set<uint32_t> sampled_until_drain;
	int64_t last_drain_ns = 0;
	int64_t last_fill_check_ns = 0;
	// How long the raw slots' being full waits for a drain: a quarter of a second, twice as
	// long after each drain they asked for that found them full again (code whose table
	// never comes keeps them full: a drain a quarter of a second for nothing), up to 4 s.
	int64_t raw_wait_ns = 250000000;
	uint64_t drains = 0;

	// The tally of one generation, summed over CPUs; with `reset`, zeroed after reading
	// (only when no program can be writing it).
	sample_stats tally(uint32_t generation, bool reset = false) const;
	void wait_for_programs() const;
	RawProfile drain(uint32_t generation);
	template <typename BatchId>
	void read_raw(uint32_t generation, RawProfile &batch, BatchId &batch_id);
	RawProfile flip_and_drain();
};

std::vector<int> parse_cpu_list(std::string_view text)
{
	std::vector<int> cpus;
	while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
		text.remove_suffix(1);
	while (!text.empty()) {
		size_t comma = text.find(',');
		std::string_view range = text.substr(0, comma);
		size_t dash = range.find('-');
		int first = 0, last = 0;
		auto number = [](std::string_view s, int &out) {
			if (s.empty() || s.size() > 6)
				return false;
			out = 0;
			for (char c : s) {
				if (c < '0' || c > '9')
					return false;
				out = out * 10 + (c - '0');
			}
			return true;
		};
		if (!number(range.substr(0, dash), first))
			return {};
		last = first;
		if (dash != std::string_view::npos && !number(range.substr(dash + 1), last))
			return {};
		if (last < first)
			return {};
		for (int cpu = first; cpu <= last; cpu++)
			cpus.push_back(cpu);
		if (comma == std::string_view::npos)
			break;
		text.remove_prefix(comma + 1);
	}
	return cpus;
}

uint64_t monotonic_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000 + uint64_t(ts.tv_nsec);
}

std::vector<int> online_cpus()
{
	return parse_cpu_list(read_file("/sys/devices/system/cpu/online"));
}

void check_privileges()
{
	// The effective capabilities, for root too: root under a reduced bounding set (a
	// systemd unit's CapabilityBoundingSet=) lacks what it would be refused. Before
	// Linux 5.8 there is no CAP_BPF or CAP_PERFMON: CAP_SYS_ADMIN stands for both.
	__user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
	__user_cap_data_struct data[2]{};
	if (syscall(SYS_capget, &header, data) != 0)
		return; // cannot tell: let the kernel say
	auto has = [&](int cap) { return data[cap / 32].effective & (1u << (cap % 32)); };
	if ((has(CAP_BPF) && has(CAP_PERFMON)) || has(CAP_SYS_ADMIN))
		return;
	throw RunError("needs root or CAP_BPF+CAP_PERFMON to load the BPF program (try: sudo ./profile)");
}

Status unwinder_support()
{
#if defined(__x86_64__)
	struct Need {
		bpf_func_id helper;
		const char *what;
	};
	for (Need need : {Need{BPF_FUNC_loop, "bpf_loop (Linux 5.17)"},
			  Need{BPF_FUNC_task_pt_regs, "bpf_task_pt_regs (Linux 5.15)"},
			  Need{BPF_FUNC_get_current_task_btf, "bpf_get_current_task_btf (Linux 5.11)"},
			  Need{BPF_FUNC_get_stack, "bpf_get_stack (Linux 4.18)"}})
		if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, need.helper, nullptr) != 1)
			return Error(std::string("the kernel has no ") + need.what + " for perf_event programs");
	return {};
#else
	return Error("unwinding from tables is written for x86-64 only");
#endif
}

void check_kernel_support(const char *btf_path)
{
	if (access(btf_path, R_OK) != 0)
		throw RunError(std::string("this kernel has no BTF (") + btf_path + " is missing): "
			       "it needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
	// bpf(2) with a bad command says ENOSYS only where BPF itself is missing.
	if (syscall(SYS_bpf, -1, nullptr, 0) < 0 && errno == ENOSYS)
		throw RunError("this kernel has no BPF support (CONFIG_BPF_SYSCALL is off)");
}

MapPlan plan_maps(const SamplerConfig &options)
{
	MapPlan plan;
	MapSizes &sizes = plan.sizes;
	sizes.stack_entries = options.stack_storage_size;
	sizes.count_entries = options.hash_storage_size;
	if (options.unwind != UnwindMode::FramePointers && options.user_stacks) {
		Status support = unwinder_support();
		if (support.ok())
			sizes.unwinding = true;
		else if (options.unwind == UnwindMode::Tables)
			plan.status = Error("--unwind dwarf cannot be used here: " + support.error());
		else
			plan.warnings.push_back("unwinding by frame pointers (as --unwind fp): " + support.error());
	}

	// The kernel cuts stacks at kernel.perf_event_max_stack whatever the map holds.
	long kernel_max = read_sysctl("/proc/sys/kernel/perf_event_max_stack", 127);
	sizes.depth = std::min<uint32_t>(options.max_stack_depth, uint32_t(std::max(1L, kernel_max)));
	if (options.max_stack_depth > sizes.depth)
		plan.warnings.push_back("warning: stacks are cut at " + std::to_string(sizes.depth) +
					" frames, the kernel's kernel.perf_event_max_stack (raise it with sysctl for "
					"deeper stacks)");
	if (sizes.unwinding && sizes.depth > UNWIND_MAX_DEPTH) {
		sizes.depth = UNWIND_MAX_DEPTH;
		plan.warnings.push_back("warning: stacks are cut at " + std::to_string(sizes.depth) +
					" frames, the deepest the unwinder walks (--unwind fp keeps up to "
					"--perf-max-stack-depth)");
	}

	// The stores of stacks kept by content are preallocated (see STORE in profile.bpf.c):
	// every entry's kilobyte is cleared at load, a few ms and megabytes per thousand. A run
	// of known length at a known rate never holds more than two new stacks a sample, so its
	// stores need no more (one second and 256 entries spare). Not the STACK_TRACE maps of
	// --unwind fp: a new stack is lost there when its bucket is taken, and fewer buckets
	// would lose more.
	if (sizes.unwinding && options.duration_s && options.frequency) {
		const uint64_t cpus = options.cpu >= 0 ? 1 : std::max<size_t>(1, online_cpus().size());
		const uint64_t most = 2 * options.frequency * cpus * (*options.duration_s + 1) + 256;
		sizes.stack_entries = uint32_t(std::min<uint64_t>(sizes.stack_entries, most));
	}

	const long membarrier = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	const bool can_drain =
		membarrier > 0 && (membarrier & MEMBARRIER_CMD_GLOBAL) && !getenv("PROFILE_NO_DRAIN");
	sizes.generations = can_drain ? 2 : 1;
	// Before 6.1 perf_event programs may only use preallocated hash maps.
	utsname name{};
	int major = 0, minor = 0;
	if (uname(&name) == 0)
		std::sscanf(name.release, "%d.%d", &major, &minor);
	sizes.preallocated_hashes = major < 6 || (major == 6 && minor < 1);
	return plan;
}

Sampler::Sampler(const SamplerConfig &options, const MapPlan &plan) : impl_(std::make_unique<Impl>())
{
	impl_->options = options;
	libbpf_set_print(libbpf_print);

	if (!plan.status.ok())
		throw RunError(plan.status.error());
	for (const std::string &warning : plan.warnings)
		diagnostics::say("%s", warning.c_str());
	MapSizes sizes = plan.sizes;
	impl_->unwinding = sizes.unwinding;
	impl_->depth = sizes.depth;
	impl_->can_drain = sizes.generations > 1;
	// The kernel keeps the mappings of new processes where it can hook exec, fork and exit;
	// elsewhere user space sends them, later. -p and -L sample processes running now, whose
	// mappings user space sends and follows: no hook runs for the machine's other processes.
	bool follow = impl_->unwinding && options.pids.empty() && options.tids.empty() &&
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
	if (err && impl_->unwinding && options.unwind == UnwindMode::Auto) {
		impl_->unwinding = follow = false;
		skel = load_frame_pointers(options, sizes, err);
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
	if (d.options.unwind != UnwindMode::Auto)
		throw load_failed(err);
	// As the constructor falls back; the maps already handed out stay, unused.
	MapSizes sizes = d.sizes;
	Skeleton skel = load_frame_pointers(d.options, sizes, err);
	set_filters(*skel, d.options);
	d.hooks.clear();
	d.unwinding = false;
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

	perf_event_attr attr{};
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	if (options.frequency) {
		attr.freq = 1;
		attr.sample_freq = options.frequency;
	} else {
		attr.sample_period = options.period;
	}

	for (int cpu : online) {
		UniqueFd event(int(syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC)));
		if (!event) {
			int err = errno;
			if (err == ENODEV) // went offline since we read the list
				continue;
			std::string why = "cannot open the cpu-clock perf event on CPU " + std::to_string(cpu) + ": " + errno_text(err);
			if (err == EINVAL && options.frequency)
				why += " (the frequency may be above kernel.perf_event_max_sample_rate, " +
				       std::to_string(read_sysctl("/proc/sys/kernel/perf_event_max_sample_rate", 0)) + " Hz)";
			else if (err == EACCES || err == EPERM)
				why += " (needs root or CAP_PERFMON)";
			else if (err == EMFILE)
				why += " (too many open files: raise ulimit -n)";
			throw RunError(why);
		}
		bpf_program *program = impl_->sampling    ? impl_->sampling->progs.do_sample_unwind
				       : impl_->unwinding ? impl_->skel->progs.do_sample_unwind
							  : impl_->skel->progs.do_sample;
		Link link(bpf_program__attach_perf_event(program, event.get()));
		if (!link)
			throw RunError("cannot attach the BPF program to CPU " + std::to_string(cpu) + ": " + errno_text(errno));
		event.release(); // the link closes it
		impl_->links.push_back(std::move(link));
		cpus_.push_back(cpu);
	}
	if (impl_->links.empty())
		throw RunError("no online CPU could be sampled");
}

void Sampler::detach()
{
	impl_->links.clear();
	// Each hook's detach waits for the kernel's grace periods, tens of milliseconds: side by
	// side, they wait about as long as one.
	std::vector<std::thread> detaching;
	for (Link &hook : impl_->hooks)
		detaching.emplace_back([link = std::move(hook)]() mutable { link.reset(); });
	for (std::thread &t : detaching)
		t.join();
	impl_->hooks.clear();
}

bool Sampler::has_samples(uint32_t pid) const
{
	if (impl_->sampled_until_drain.count(pid))
		return true;
	uint8_t value;
	if (bpf_map__lookup_elem(impl_->skel->maps.sampled_pids, &pid, sizeof(pid), &value, sizeof(value), 0) != 0)
		return false;
	impl_->sampled_until_drain.insert(pid);
	return true;
}

namespace {

// Reads every counts-map entry, in batches where the kernel allows it.
void read_counts(int fd, uint32_t max_entries, std::vector<RawProfile::Entry> &out)
{
	const uint32_t batch = std::min<uint32_t>(max_entries, 4096);
	std::vector<stack_key> keys(batch);
	std::vector<stack_count> values(batch);
	stack_key out_batch{};
	void *in = nullptr;
	bool batched = true;
	while (batched) {
		uint32_t count = batch;
		int err = bpf_map_lookup_batch(fd, in, &out_batch, keys.data(), values.data(), &count, nullptr);
		if (err && errno != ENOENT) {
			batched = false; // old kernel or odd map: fall back to key by key
			out.clear();
			break;
		}
		for (uint32_t i = 0; i < count; i++)
			out.push_back({keys[i], values[i]});
		if (err) // ENOENT: that was the last batch
			return;
		in = &out_batch;
	}

	stack_key key{}, next{};
	void *prev = nullptr;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		stack_count value{};
		if (bpf_map_lookup_elem(fd, &next, &value) == 0)
			out.push_back({next, value});
		key = next;
		prev = &key;
	}
}

// Every key of a map, read before any is deleted: a stack map's get_next_key starts over
// from the first bucket when the key it is given is gone.
template <typename Key>
std::vector<Key> all_keys(int fd)
{
	std::vector<Key> keys;
	Key key{}, next{};
	void *prev = nullptr;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		keys.push_back(next);
		key = next;
		prev = &key;
	}
	return keys;
}

} // namespace

void add_stats(sample_stats &sum, const sample_stats &s)
{
	sum.seen += s.seen;
	sum.lost_counts_full += s.lost_counts_full;
	sum.lost_stack_collision += s.lost_stack_collision;
	sum.lost_stack_full += s.lost_stack_full;
	sum.lost_stack_other += s.lost_stack_other;
	sum.new_keys += s.new_keys;
	sum.unwound_tables += s.unwound_tables;
	sum.unwound_pending += s.unwound_pending;
	sum.unwound_fp_no_table += s.unwound_fp_no_table;
	sum.unwound_cut += s.unwound_cut;
	sum.unwound_raw += s.unwound_raw;
	sum.waited_process += s.waited_process;
	sum.waited_file += s.waited_file;
	sum.waited_building += s.waited_building;
	sum.areas_learned += s.areas_learned;
}

sample_stats Sampler::Impl::tally(uint32_t generation, bool reset) const
{
	sample_stats sum{};
	int ncpus = libbpf_num_possible_cpus();
	std::vector<sample_stats> per_cpu(ncpus > 0 ? ncpus : 1);
	const uint32_t key = generation & 1;
	const int fd = bpf_map__fd(skel->maps.stats);
	if (bpf_map_lookup_elem(fd, &key, per_cpu.data()) == 0)
		for (const sample_stats &s : per_cpu)
			add_stats(sum, s);
	if (reset) {
		std::fill(per_cpu.begin(), per_cpu.end(), sample_stats{});
		bpf_map_update_elem(fd, &key, per_cpu.data(), BPF_ANY);
	}
	return sum;
}

void RawProfile::add_account(const RawProfile &other)
{
	add_stats(totals, other.totals);
	taken += other.taken;
	stored += other.stored;
	truncated += other.truncated;
	raw_unwound += other.raw_unwound;
	raw_cut += other.raw_cut;
	depth_limit = std::max(depth_limit, other.depth_limit);
}

void RawProfile::add_unwound(const RawSample &sample, const std::vector<uint64_t> &more, bool truncated_walk)
{
	std::vector<uint64_t> user = sample.frames;
	user.insert(user.end(), more.begin(), more.end());
	if (truncated_walk)
		user.push_back(TRUNCATED_FRAME);
	Entry entry{sample.key, {1, sample.time_ns}};
	if (sample.kernel.size() == depth_limit || user.size() == depth_limit)
		truncated++;
	entry.key.kernel_stack_id = NO_STACK;
	if (!sample.kernel.empty()) {
		entry.key.kernel_stack_id = int32_t(stacks.size());
		stacks.push_back(sample.kernel);
	}
	entry.key.user_stack_id = int32_t(stacks.size());
	stacks.push_back(std::move(user));
	entries.push_back(entry);
	stored++;
	raw_unwound++;
	raw_cut += truncated_walk;
}

void Sampler::Impl::wait_for_programs() const
{
	if (can_drain)
		syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

// Moves one generation's counts and the stacks they name into a batch, then empties both
// maps. Only called when no program can be writing them.
RawProfile Sampler::Impl::drain(uint32_t generation)
{
	bpf_map *counts = generation & 1 ? skel->maps.counts1 : skel->maps.counts0;
	bpf_map *stacks = generation & 1 ? skel->maps.stacks1 : skel->maps.stacks0;
	bpf_map *store = generation & 1 ? skel->maps.store1 : skel->maps.store0;
	const int counts_fd = bpf_map__fd(counts), stacks_fd = bpf_map__fd(stacks), store_fd = bpf_map__fd(store);

	RawProfile batch;
	batch.depth_limit = depth;
	read_counts(counts_fd, bpf_map__max_entries(counts), batch.entries);
	std::unordered_map<int32_t, int32_t> ids; // the map's stack id -> the batch's
	std::vector<uint64_t> frames(depth + 1);
	// Stacks kept by content: every one is read now, by its id (the map's value).
	std::unordered_map<int32_t, std::vector<uint64_t>> stored_stacks;
	std::vector<stack_hash> store_keys;
	if (unwinding) {
		std::vector<uint8_t> value(STORED_STACK_SIZE(depth));
		for (const stack_hash &key : all_keys<stack_hash>(store_fd)) {
			if (bpf_map_lookup_elem(store_fd, &key, value.data()) == 0) {
				stored_stack stack;
				std::memcpy(&stack, value.data(), std::min(value.size(), sizeof(stack)));
				const size_t n = std::min<size_t>(stack.n, depth + 1);
				stored_stacks.try_emplace(int32_t(stack.id), stack.ip, stack.ip + n);
			}
			store_keys.push_back(key);
		}
	}
	// Turns a stack id of the map into the batch's, reading the stack the first time;
	// true when the stack filled every frame slot (likely cut).
	auto batch_id = [&](int32_t &id) {
		if (id < 0)
			return false;
		auto [it, inserted] = ids.try_emplace(id, int32_t(batch.stacks.size()));
		if (inserted) {
			if (unwinding) {
				auto found = stored_stacks.find(id);
				batch.stacks.push_back(found != stored_stacks.end() ? std::move(found->second)
										  : std::vector<uint64_t>{});
			} else {
				size_t n = 0;
				if (bpf_map_lookup_elem(stacks_fd, &id, frames.data()) == 0)
					while (n < depth && frames[n])
						n++;
				batch.stacks.emplace_back(frames.begin(), frames.begin() + n);
			}
		}
		id = it->second;
		return batch.stacks[size_t(id)].size() == depth;
	};
	sampled_until_drain.clear();
	for (RawProfile::Entry &entry : batch.entries) {
		const stack_key key = entry.key;
		const bool kernel_full = batch_id(entry.key.kernel_stack_id);
		const bool user_full = batch_id(entry.key.user_stack_id);
		batch.stored += entry.value.count;
		if (kernel_full || user_full)
			batch.truncated += entry.value.count;
		sampled_until_drain.insert(key.pid);
		// Emptied as read: a stack's sample may have been lost after its stack was
		// stored (the other stack collided, the counts map was full), so the stack map
		// is emptied key by key below.
		bpf_map_delete_elem(counts_fd, &key);
	}
	if (unwinding) {
		read_raw(generation, batch, batch_id);
		for (const stack_hash &key : store_keys)
			bpf_map_delete_elem(store_fd, &key);
	} else {
		for (uint32_t id : all_keys<uint32_t>(stacks_fd))
			bpf_map_delete_elem(stacks_fd, &id);
	}
	const int sampled_fd = bpf_map__fd(skel->maps.sampled_pids);
	for (uint32_t pid : sampled_until_drain)
		bpf_map_delete_elem(sampled_fd, &pid);
	batch.totals = tally(generation, true);
	batch.taken = batch.totals.seen;
	return batch;
}

// The generation's samples kept raw (complete ones), into the batch; their slots freed.
template <typename BatchId>
void Sampler::Impl::read_raw(uint32_t generation, RawProfile &batch, BatchId &batch_id)
{
	const uint32_t g = generation & 1;
	const uint32_t claimed = std::min<uint32_t>(__atomic_load_n(&skel->bss->raw_claimed[g], __ATOMIC_RELAXED), RAW_SLOTS);
	const int fd = bpf_map__fd(skel->maps.raw_samples);
	auto raw = std::make_unique<raw_sample>();
	const raw_sample empty{};
	for (uint32_t i = 0; i < claimed; i++) {
		const uint32_t slot = g * RAW_SLOTS + i;
		if (bpf_map_lookup_elem(fd, &slot, raw.get()) != 0 || !raw->complete)
			continue;
		RawProfile::RawSample sample;
		sample.key = raw->key;
		sample.key.user_stack_id = NO_STACK;
		if (int32_t id = sample.key.kernel_stack_id; id >= 0) {
			batch_id(id);
			sample.kernel = batch.stacks[size_t(id)];
		}
		sample.key.kernel_stack_id = NO_STACK;
		sample.time_ns = raw->time_ns;
		sample.frames.assign(raw->frames, raw->frames + std::min<uint32_t>(raw->n, depth));
		sample.stack.pc = raw->pc;
		sample.stack.sp = raw->sp;
		sample.stack.bp = raw->bp;
		sample.stack.leaf = raw->n == 1;
		sample.stack.base = raw->stack_base;
		sample.stack.bytes.assign(raw->stack, raw->stack + std::min<uint32_t>(raw->stack_len, RAW_STACK_BYTES));
		sampled_until_drain.insert(sample.key.pid);
		batch.raw.push_back(std::move(sample));
		bpf_map_update_elem(fd, &slot, &empty, BPF_ANY);
	}
	skel->bss->raw_claimed[g] = 0;
}

// Sends new samples to the other generation, waits until no program still writes this
// one, and moves it out.
RawProfile Sampler::Impl::flip_and_drain()
{
	const uint32_t old = skel->bss->generation;
	__atomic_store_n(&skel->bss->generation, old + 1, __ATOMIC_SEQ_CST);
	wait_for_programs();
	last_drain_ns = int64_t(monotonic_ns());
	return drain(old);
}

std::optional<RawProfile> Sampler::tick()
{
	Impl &d = *impl_;
	if (!d.can_drain || d.links.empty())
		return std::nullopt;
	const int64_t now = int64_t(monotonic_ns());
	// A drain at most every second; the fill looked at ten times a second at most (a read
	// of every CPU's tally, which 50 ticks a second would make a good part of an idle
	// agent's CPU). When every slot for samples kept raw is taken (the next would stay cut
	// short), four times a second at first (raw_wait_ns).
	const int64_t since_drain = now - d.last_drain_ns;
	const bool raw_full = d.unwinding && __atomic_load_n(&d.skel->bss->raw_claimed[d.skel->bss->generation & 1],
							      __ATOMIC_RELAXED) >= RAW_SLOTS;
	if (!raw_full && since_drain >= d.raw_wait_ns)
		d.raw_wait_ns = 250000000;
	if (raw_full && since_drain >= d.raw_wait_ns) {
		d.raw_wait_ns = std::min<int64_t>(d.raw_wait_ns * 2, 4000000000);
		d.drains++;
		return d.flip_and_drain();
	}
	if (since_drain < 1000000000 || now - d.last_fill_check_ns < 100000000)
		return std::nullopt;
	d.last_fill_check_ns = now;
	// The generation in use counts from its last drain.
	const sample_stats t = d.tally(d.skel->bss->generation);
	const uint64_t capacity = std::min(d.options.stack_storage_size, d.options.hash_storage_size);
	// A new stack collides with the odds of the stack map's fill, so drain early: a
	// sixteenth full. Stores keyed by content do not collide: drained when they may be half
	// full (a key may bring two new stacks), which spares most of the drains' work of
	// deleting kilobyte keys. Losing samples with few new stacks coming: every 5 s at most.
	const bool filling = d.unwinding ? t.new_keys * 4 >= capacity : t.new_keys * 16 >= capacity;
	const bool losing = lost_samples(t) > 0 &&
			    (t.new_keys * 64 >= capacity || now - d.last_drain_ns >= 5000000000);
	if (!filling && !losing)
		return std::nullopt;
	d.drains++;
	return d.flip_and_drain();
}

bool Sampler::can_cut() const
{
	return impl_->can_drain;
}

RawProfile Sampler::cut()
{
	return impl_->flip_and_drain();
}

uint64_t Sampler::drains() const
{
	return impl_->drains;
}

RawProfile Sampler::read()
{
	Impl &d = *impl_;
	// Detached: once the programs still running are done, both generations are still.
	// The other generation was emptied by the drain that left it.
	d.wait_for_programs();
	return d.drain(d.skel->bss->generation);
}

PythonMaps Sampler::python_maps() const
{
	PythonMaps maps;
	if (!impl_->unwinding || !impl_->options.python)
		return maps;
	const profile_bpf &skel = *impl_->skel;
	maps.processes = bpf_map__fd(skel.maps.python_processes);
	maps.wanted = bpf_map__fd(skel.maps.python_wanted);
	maps.codes = bpf_map__fd(skel.maps.python_codes);
	maps.seen = bpf_map__fd(skel.maps.python_seen);
	return maps;
}

UnwindMaps Sampler::unwind_maps() const
{
	UnwindMaps maps;
	if (!impl_->unwinding)
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
	maps.depth = impl_->depth;
	maps.row_capacity = impl_->options.unwind_table_size;
	maps.object_capacity = bpf_map__max_entries(skel.maps.unwind_objects);
	maps.process_capacity = bpf_map__max_entries(skel.maps.unwind_processes);
	return maps;
}
