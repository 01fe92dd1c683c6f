// tests/test_offcpu.cpp: --off-cpu against a workload that measures its own time off the CPU,
// built without frame pointers: where each thread waited, for how long, and in what state.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/support.h"

namespace {

// The functions tests/workloads/offcpu.c measures, in its truth file's order.
const char *const kMeasured[] = {"sleep_three_ms", "sleep_one_ms", "read_pipe", "wait_mutex"};
constexpr size_t kCount = std::size(kMeasured);

// The workload's running totals, nanoseconds off the CPU in each measured function.
struct Measured {
	double ns[kCount] = {};
};

Measured read_truth(const std::string &path)
{
	Measured m;
	const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	void *map = mmap(nullptr, kCount * sizeof(uint64_t), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	REQUIRE(map != MAP_FAILED);
	for (size_t i = 0; i < kCount; i++)
		m.ns[i] = double(__atomic_load_n(static_cast<uint64_t *>(map) + i, __ATOMIC_RELAXED));
	munmap(map, kCount * sizeof(uint64_t));
	return m;
}

bool is_root(const std::string &frame)
{
	return frame == "start_thread" || frame == "clone3" || frame == "clone";
}

} // namespace

TEST_SUITE("integration") {

TEST_CASE("--off-cpu: each function's share of the time off the CPU and the total are the workload's own, "
	  "its stacks whole without frame pointers" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	TempDir dir;
	const std::string truth = dir / "truth";
	Background program({workload("offcpu"), "60", truth});
	REQUIRE(program.read_line() == "ready");
	Measured before, after;
	const OffCpuRun run = off_cpu_run({"-p", std::to_string(program.pid())}, 3, [&] { before = read_truth(truth); },
					  [&] { after = read_truth(truth); });

	// Microseconds off the CPU with each function on the stack, and how much of it came whole
	// (from a thread's root) and [blocked].
	double profiled[kCount] = {}, whole[kCount] = {}, blocked[kCount] = {}, profiled_total = 0, truth_total = 0;
	for (const FoldedLine &l : run.lines)
		for (size_t i = 0; i < kCount; i++)
			if (std::find(l.frames.begin(), l.frames.end(), kMeasured[i]) != l.frames.end()) {
				profiled[i] += double(l.count);
				whole[i] += l.frames.size() > 2 && is_root(l.frames[2]) ? double(l.count) : 0;
				blocked[i] += l.frames[1] == "[blocked]" ? double(l.count) : 0;
			}
	double measured[kCount];
	for (size_t i = 0; i < kCount; i++) {
		measured[i] = (after.ns[i] - before.ns[i]) / 1000;
		profiled_total += profiled[i];
		truth_total += measured[i];
	}
	REQUIRE(truth_total > 0);
	REQUIRE(profiled_total > 0);
	for (size_t i = 0; i < kCount; i++) {
		CAPTURE(kMeasured[i]);
		INFO("profiled " << profiled[i] << " us of " << profiled_total << ", measured " << measured[i] << " us of "
				 << truth_total);
		CHECK(std::fabs(profiled[i] / profiled_total - measured[i] / truth_total) <= 0.03);
		CHECK(whole[i] >= 0.95 * profiled[i]);
		CHECK(blocked[i] >= 0.9 * profiled[i]);
	}
	INFO("profiled " << profiled_total << " us, measured " << truth_total << " us");
	CHECK(std::fabs(profiled_total - truth_total) <= 0.1 * truth_total);
	// The reader blocks again and again where it blocked before: its stack is taken again
	// with no walk, and the shares above hold (sleep_three_ms and sleep_one_ms block with
	// the same registers, in nanosleep, and differ only in a return address).
	INFO(run.err);
	CHECK(run.err.find("as the thread's last walk left them") != std::string::npos);
}

TEST_CASE("--off-cpu --wakers: the pipe reader's blocked time carries the writer's stack above \"--\", as "
	  "offwaketime folds it")
{
	require_root();
	TempDir dir;
	Background program({workload("offcpu"), "60", dir / "truth"});
	REQUIRE(program.read_line() == "ready");
	const OffCpuRun run = off_cpu_run({"-p", std::to_string(program.pid()), "--wakers"}, 3, [] {}, [] {});
	REQUIRE_MESSAGE(run.status == 0, run.err);

	// read_pipe below "--" is the blocked thread's; write_pipe above it, the waker's, whose
	// comm is the line's last frame.
	double blocked = 0, by_writer = 0;
	for (const FoldedLine &l : run.lines) {
		const auto cut = std::find(l.frames.begin(), l.frames.end(), "--");
		if (std::find(l.frames.begin(), cut, "read_pipe") == cut)
			continue;
		blocked += double(l.count);
		if (std::find(cut, l.frames.end(), "write_pipe") != l.frames.end() && l.frames.back() == "offcpu")
			by_writer += double(l.count);
	}
	INFO("read_pipe: " << blocked << " us off the CPU, " << by_writer << " us of it woken by write_pipe");
	REQUIRE(blocked > 0);
	CHECK(by_writer >= 0.9 * blocked);
}

} // TEST_SUITE
