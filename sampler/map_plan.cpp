// sampler/map_plan.cpp: how big the sampler's maps are made, and how, on this kernel.
#include "sampler/map_plan.h"

#include <linux/membarrier.h>
#include <linux/types.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "sampler/kernel_checks.h"
#include "profile.h"

MapPlan plan_maps(const SamplerConfig &options)
{
	MapPlan plan;
	MapSizes &sizes = plan.sizes;
	sizes.stack_entries = options.stack_storage_size;
	sizes.count_entries = options.hash_storage_size;
	// --off-cpu keeps its stacks as the table walk does, by content, even with -K.
	if (options.unwind != UnwindMode::FramePointers && (options.user_stacks || options.off_cpu)) {
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
	// stores need no more (one second and 256 entries spare). Not --off-cpu's: its rate is
	// the machine's context switches. Not the STACK_TRACE maps of
	// --unwind fp: a new stack is lost there when its bucket is taken, and fewer buckets
	// would lose more.
	if (sizes.unwinding && options.duration_s && options.frequency && !options.off_cpu) {
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
