// tests/collected_run.h: a run's batches for the tests of Collected and collect_batch:
// two processes of one library, in a container and a service, that have exited, two that
// the history never knew, and a fixture kallsyms with a BPF program loaded.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "run/collect_batch.h"
#include "proc/process_history.h"
#include "tests/fixtures/fixture_files.h"
#include "tests/perf_records.h"
#include "tests/support.h"

namespace collected_run {

constexpr uint64_t bias_a = 0x7f0000000000, bias_b = 0x7f5500000000;
constexpr uint64_t syscall_address = 0xffffffff81001090, program_address = 0xffffffffc0b00010;

inline RawProfile::Entry entry(uint32_t pid, const char *comm, int32_t kernel, int32_t user, uint64_t count,
			       uint64_t first_ns = 100)
{
	RawProfile::Entry e{};
	e.key.pid = pid;
	std::strncpy(e.key.comm, comm, sizeof(e.key.comm));
	e.key.kernel_stack_id = kernel;
	e.key.user_stack_id = user;
	e.value.count = count;
	e.value.first_ns = first_ns;
	return e;
}

inline const std::string container = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";

// Processes 1001 and 1002 ran libfixture.so, each at its own address (ASLR), 1001 in a
// docker container and 1002 in a service, and both exited; 1003 and 1004 ran nothing the
// history knows. The symbolizer reads a fixture kallsyms and a /proc of cgroup files.
struct Run {
	TempDir dir;
	std::unique_ptr<ProcessHistory> history = std::make_unique<ProcessHistory>(dir / "proc");
	std::unique_ptr<Symbolizer> symbolizer;
	uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work");
	uint64_t other = nm_address("libfixture.so.nm", "fixture_lib_other");

	Run()
	{
		REQUIRE(work);
		REQUIRE(other);
		write_file(dir / "kallsyms", "ffffffff81000000 T _text\n"
					     "ffffffff81001080 T do_syscall_64\n"
					     "ffffffff81001100 T _etext\n");
		std::filesystem::create_directories(dir.path() / "proc");
		write_file(dir / "proc/1001/cgroup", "0::/system.slice/docker-" + container + ".scope\n");
		write_file(dir / "proc/1002/cgroup", "0::/system.slice/cron.service\n");
		SymbolizerOptions options;
		options.kallsyms_path = dir / "kallsyms";
		options.proc_root = dir / "proc";
		options.perf_map_dir = dir.path();
		symbolizer = std::make_unique<Symbolizer>(options);
		const std::string lib = absolute_fixture("libfixture.so");
		history->add_snapshot(1001, "worker", mappings_of("libfixture.so", bias_a, lib, lib), 10);
		history->add_snapshot(1002, "worker", mappings_of("libfixture.so", bias_b, lib, lib), 10);
		REQUIRE(history->apply(ksymbol(0xffffffffc0b00000, 0x100, 0, "bpf_prog_6deef7357e7b4530_sampled", 50)));
		REQUIRE(history->apply(task(PERF_RECORD_EXIT, 1001, 1, 1001, 200)));
		REQUIRE(history->apply(task(PERF_RECORD_EXIT, 1002, 1, 1002, 200)));
		symbolizer->set_process_history(history.get());
	}

	// The same call chain in both processes: fixture_lib_other called fixture_lib_work,
	// under a syscall and a BPF program; and two addresses nothing maps.
	RawProfile batch() const
	{
		RawProfile raw;
		raw.stacks = {
			{program_address, syscall_address},
			{bias_a + work + 3, bias_a + other + 1},
			{bias_b + work + 3, bias_b + other + 1},
			{0x10},
			{0x20},
		};
		raw.entries = {entry(1001, "worker", 0, 1, 3), entry(1002, "worker", 0, 2, 4),
			       entry(1003, "lost", NO_STACK, 3, 1), entry(1004, "lost", NO_STACK, 4, 2)};
		return raw;
	}

	// Adds the batch, then forgets every process, as a long run does once their samples
	// are in: naming must need nothing of them.
	Profile collect(ReportDetail detail)
	{
		Collected collected(detail);
		collect_batch(batch(), *symbolizer, collected);
		history->forget_exited([](uint32_t) { return false; });
		CHECK(history->process_count() == 0);
		history.reset();
		symbolizer->set_process_history(nullptr);
		return collected.name(*symbolizer);
	}
};

inline std::vector<std::string> names(const Profile &profile, const std::vector<uint32_t> &frames)
{
	std::vector<std::string> out;
	for (uint32_t index : frames)
		out.push_back(frame_label(profile.frames[index]));
	return out;
}

inline const Sample *sample_of(const Profile &profile, const std::string &comm, uint32_t pid = 0)
{
	for (const Sample &sample : profile.samples)
		if (sample.comm == comm && (!pid || sample.pid == pid))
			return &sample;
	return nullptr;
}

} // namespace collected_run
