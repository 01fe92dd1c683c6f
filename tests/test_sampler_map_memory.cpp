// tests/test_sampler_map_memory.cpp: the kernel memory of the maps, and the warning or the
// refusal it earns.
#include <doctest/doctest.h>

#include "sampler/map_memory.h"
#include "sampler/sampler.h"
#include "tests/support.h"

namespace {

constexpr uint64_t MiB = 1 << 20, GiB = 1 << 30;

// The sizes of a run that walks user stacks from unwind tables (--unwind auto, the default).
MapSizes unwinding()
{
	MapSizes sizes;
	sizes.unwinding = true;
	return sizes;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("map memory: --unwind fp's stack maps, as VmallocUsed grew on 6.18")
{
	// The defaults: 2 x (16384 x (16 + 127 x 8) + 16384 x 8) for the stacks (and one entry
	// for each unused store), 3 x 65536 x 16 for the counts (two counts maps and
	// sampled_pids, 40960 rounded up to a power of two); VmallocUsed grew by 36,732 kB.
	MapMemory defaults = map_memory({});
	CHECK(defaults.stacks == 2 * (16384 * (16 + 127 * 8) + 16384 * 8) + 2 * (16 + 48 + 16 + 8 + 128 * 8));
	CHECK(defaults.counts == 3 * 65536 * 16);
	CHECK(defaults.total() / 1024 == doctest::Approx(36732).epsilon(0.015));
	// --stack-storage-size 262144: VmallocUsed grew by 536,764 kB.
	MapSizes stacks;
	stacks.stack_entries = 262144;
	CHECK(map_memory(stacks).total() / 1024 == doctest::Approx(536764).epsilon(0.01));
	// --hash-storage-size 16777216: VmallocUsed grew by 821,448 kB.
	MapSizes counts;
	counts.count_entries = 16777216;
	CHECK(map_memory(counts).total() / 1024 == doctest::Approx(821448).epsilon(0.01));
	// Without draining the second set is one entry each; fewer frames, smaller stacks.
	MapSizes one;
	one.generations = 1;
	one.depth = 20;
	CHECK(map_memory(one).stacks == 16384 * (16 + 20 * 8) + 16384 * 8 + (16 + 20 * 8) + 8 + 2 * (16 + 48 + 16 + 8 + 21 * 8));
	CHECK(map_memory(one).counts == 2 * 65536 * 16 + 16);
	// Preallocated hash maps (kernels before 6.1) hold every entry from the start.
	MapSizes old;
	old.preallocated_hashes = true;
	CHECK(map_memory(old).counts == 3 * 65536 * 16 + 2 * 40960 * (48 + 64 + 24) + 40960 * (48 + 8 + 8));
}

TEST_CASE("map memory: the unwinder's stores of stacks by content, as VmallocUsed grew on 6.18")
{
	const uint64_t kRawKiB = 2 * RAW_SLOTS * sizeof(raw_sample) / 1024;
	// Stacks kept by content are preallocated: a 16-byte bucket and an entry of 48 bytes,
	// the 16-byte hash (the key), then the id, the count and the frames (one slot more than
	// the depth), for each. Unwind tables take nothing at the start: each is an array of
	// its own, made as it loads. (VmallocUsed grew by 71,812 and 599,068 kB with a 1 Mi-row
	// table of 16-byte rows preallocated and stacks keyed by their frames; the maps that
	// find tables per file and follow processes in the kernel add 808 kB, and the hash key
	// 16 bytes a stack, and the slots of samples kept raw, by their sizes, not measured again.)
	MapMemory defaults = map_memory(unwinding());
	CHECK(defaults.stacks == 2 * 16384 * (16 + 48 + 16 + 8 + 128 * 8) + 2 * (8 + 16 + 127 * 8));
	CHECK(defaults.total() / 1024 == doctest::Approx(71812 - 2 * 16384 + 808 + kRawKiB + 2 * 16384 * 16 / 1024).epsilon(0.015));
	MapSizes stacks = unwinding();
	stacks.stack_entries = 262144;
	CHECK(map_memory(stacks).total() / 1024 ==
	      doctest::Approx(599068 - 2 * 16384 + 808 + kRawKiB + 2 * 262144 * 16 / 1024).epsilon(0.01));
}

TEST_CASE("map memory: ordinary sizes say nothing, gigabytes warn, more than half the memory is refused")
{
	const uint64_t available = 22 * GiB;
	for (const MapSizes &sizes : {MapSizes{}, unwinding()}) {
		MapMemoryVerdict defaults = judge_map_memory(sizes, available);
		CHECK(defaults.status.ok());
		CHECK(defaults.warning == "");
	}

	MapSizes hash;
	hash.count_entries = 67108864;
	MapMemoryVerdict big = judge_map_memory(hash, available);
	CHECK(big.status.ok());
	CHECK(big.warning ==
	      "warning: the maps take 3.0 GiB of kernel memory, allocated when the run starts "
	      "(--hash-storage-size 67108864: 48 bytes an entry), which adds seconds to its start and end; "
	      "the defaults take 36 MiB");

	// --unwind fp: every stack's frames from the start.
	MapSizes stacks;
	stacks.stack_entries = 67108864;
	MapMemoryVerdict huge = judge_map_memory(stacks, available);
	CHECK(huge.warning == "");
	CHECK(huge.status.error() ==
	      "--stack-storage-size 67108864 would take 130 GiB of kernel memory (2.0 KiB a stack at "
	      "127 frames), more than half of the 22 GiB available: at most 5600000 fits");
	// The size it names fits, rounded down to a number to type; a tenth more does not.
	MapSizes at_most = stacks;
	at_most.stack_entries = 5600000;
	CHECK(map_memory(at_most).total() <= available / 2);
	at_most.stack_entries = 6160000;
	CHECK(map_memory(at_most).total() > available / 2);
	// Both maps too large for even one entry of the larger: lower both.
	MapSizes both;
	both.stack_entries = 67108864;
	both.count_entries = 67108864;
	CHECK(judge_map_memory(both, 2 * GiB).status.error().ends_with(
		"more than half of the 2.0 GiB available: lower --stack-storage-size and --hash-storage-size"));

	// Unwinding: the stores take about as much per stack, and the largest part is named.
	MapSizes stores = unwinding();
	stores.stack_entries = 1048576;
	CHECK(judge_map_memory(stores, available).warning ==
	      "warning: the maps take 2.2 GiB of kernel memory, allocated when the run starts "
	      "(--stack-storage-size 1048576: 2.2 KiB a stack at 127 frames), which adds seconds to its start "
	      "and end; the defaults take 40 MiB");
	stores.stack_entries = 67108864;
	CHECK(judge_map_memory(stores, available).status.error() ==
	      "--stack-storage-size 67108864 would take 139 GiB of kernel memory (2.2 KiB a stack at 127 frames), "
	      "more than half of the 22 GiB available: at most 5200000 fits");
	CHECK(byte_size(100) == "100 bytes");
	CHECK(byte_size(2080) == "2.0 KiB");
	CHECK(byte_size(36 * MiB + 100) == "36 MiB");
	CHECK(byte_size(3 * GiB + GiB / 100) == "3.0 GiB");
	CHECK(byte_size(130 * GiB) == "130 GiB");
}

} // TEST_SUITE

TEST_SUITE("unit") {

TEST_CASE("map plan: the sizes the run judges are the options' as this kernel allows them, one plan for the sampler too")
{
	SamplerConfig options;
	options.unwind = UnwindMode::FramePointers; // no probe of the kernel's helpers
	options.stack_storage_size = 1000;
	options.hash_storage_size = 2000;
	options.max_stack_depth = 64;
	const MapPlan plan = plan_maps(options);
	CHECK(plan.status.ok());
	CHECK(!plan.sizes.unwinding);
	CHECK(plan.sizes.stack_entries == 1000);
	CHECK(plan.sizes.count_entries == 2000);
	CHECK(plan.sizes.depth <= 64);
	CHECK(plan.sizes.depth >= 1);
	{
		// Nothing is drained: the second set of maps is never used, and costs nothing.
		ScopedEnv no_drain("PROFILE_NO_DRAIN", "1");
		CHECK(plan_maps(options).sizes.generations == 1);
		CHECK((map_memory(plan_maps(options).sizes).total() < map_memory(plan.sizes).total() ||
		       plan.sizes.generations == 1));
	}
	// Kernel stacks only: no user stack to walk, whatever --unwind says.
	options.unwind = UnwindMode::Tables;
	options.user_stacks = false;
	CHECK(!plan_maps(options).sizes.unwinding);
	CHECK(plan_maps(options).status.ok());
	// Deeper than the kernel cuts stacks: the plan is cut too, and says so.
	options.max_stack_depth = 1024;
	const MapPlan deep = plan_maps(options);
	if (deep.sizes.depth < 1024)
		CHECK(deep.warnings.size() == 1);
}

TEST_CASE("map plan: a run of known length at a known rate gets stores of stacks no larger than it can fill")
{
	SamplerConfig options;
	options.unwind = UnwindMode::FramePointers;
	options.frequency = 49;
	options.duration_s = 1;
	// --unwind fp's STACK_TRACE maps keep their size: fewer buckets would lose stacks.
	CHECK(plan_maps(options).sizes.stack_entries == 16384);
	options.unwind = UnwindMode::Auto;
	const MapPlan plan = plan_maps(options);
	if (!plan.sizes.unwinding) { // only where the kernel lacks what the walk needs
		CHECK(!unwinder_support().ok());
		return;
	}
	const uint64_t cpus = online_cpus().size();
	// Two stacks a sample, every CPU at 49 Hz for the second and one more, 256 spare.
	CHECK(plan.sizes.stack_entries == 2 * 49 * cpus * 2 + 256);
	options.cpu = 0;
	CHECK(plan_maps(options).sizes.stack_entries == 2 * 49 * 2 + 256);
	// Until stopped, at a period, or longer than the option allows: the option's size.
	options.duration_s.reset();
	CHECK(plan_maps(options).sizes.stack_entries == 16384);
	options.duration_s = 3600;
	CHECK(plan_maps(options).sizes.stack_entries == 16384);
	options.duration_s = 1;
	options.frequency = 0;
	options.period = 100000;
	CHECK(plan_maps(options).sizes.stack_entries == 16384);
}

} // TEST_SUITE
