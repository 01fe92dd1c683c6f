// tests/test_collected.cpp: batches of samples located while their processes are in the
// history, merged as the report allows, and named after the history has forgotten them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "sampler/collected.h"
#include "syms/process_history.h"
#include "tests/fixtures/fixture_files.h"
#include "tests/perf_records.h"
#include "tests/support.h"

namespace {

constexpr uint64_t bias_a = 0x7f0000000000, bias_b = 0x7f5500000000;
constexpr uint64_t syscall_address = 0xffffffff81001090, program_address = 0xffffffffc0b00010;

RawProfile::Entry entry(uint32_t pid, const char *comm, int32_t kernel, int32_t user, uint64_t count,
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

const std::string container = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";

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
		collected.add(batch(), *symbolizer);
		history->forget_exited([](uint32_t) { return false; });
		CHECK(history->process_count() == 0);
		history.reset();
		symbolizer->set_process_history(nullptr);
		return collected.name(*symbolizer);
	}
};

std::vector<std::string> names(const Profile &profile, const std::vector<uint32_t> &frames)
{
	std::vector<std::string> out;
	for (uint32_t index : frames)
		out.push_back(frame_label(profile.frames[index]));
	return out;
}

const Sample *sample_of(const Profile &profile, const std::string &comm, uint32_t pid = 0)
{
	for (const Sample &sample : profile.samples)
		if (sample.comm == comm && (!pid || sample.pid == pid))
			return &sample;
	return nullptr;
}

} // namespace

TEST_SUITE("unit")
{
	TEST_CASE("collected: without PIDs or addresses shown, one file's stacks merge across processes")
	{
		Run run;
		Profile profile = run.collect({.pids = false, .addresses = false});
		REQUIRE(profile.samples.size() == 2);
		const Sample *worker = sample_of(profile, "worker");
		REQUIRE(worker);
		CHECK(worker->count == 7);
		CHECK(names(profile, worker->user) == std::vector<std::string>{"fixture_lib_work", "fixture_lib_other"});
		CHECK(names(profile, worker->kernel) ==
		      std::vector<std::string>{"bpf_prog_6deef7357e7b4530_sampled", "do_syscall_64"});
		CHECK(profile.frames[worker->user[0]].module == absolute_fixture("libfixture.so"));
		// Addresses nothing mapped, of processes gone without a perf map: "[unknown]", one
		// frame whatever the address.
		const Sample *lost = sample_of(profile, "lost");
		REQUIRE(lost);
		CHECK(lost->count == 3);
		CHECK(names(profile, lost->user) == std::vector<std::string>{"[unknown]"});
		CHECK(run.symbolizer->stats().elf_files_parsed == 1);
	}

	TEST_CASE("collected: with PIDs and addresses shown, each process keeps its own, named the same")
	{
		Run run;
		Profile profile = run.collect({.pids = true, .addresses = true});
		REQUIRE(profile.samples.size() == 4);
		const Sample *a = sample_of(profile, "worker", 1001), *b = sample_of(profile, "worker", 1002);
		REQUIRE(a);
		REQUIRE(b);
		CHECK(a->count == 3);
		CHECK(b->count == 4);
		for (const Sample *sample : {a, b})
			CHECK(names(profile, sample->user) ==
			      std::vector<std::string>{"fixture_lib_work", "fixture_lib_other"});
		const Frame &leaf_a = profile.frames[a->user[0]], &leaf_b = profile.frames[b->user[0]];
		CHECK(leaf_a.address == bias_a + run.work + 3);
		CHECK(leaf_b.address == bias_b + run.work + 3);
		CHECK(leaf_a.map_start == bias_a + (run.work & ~(page - 1)));
		CHECK(leaf_a.map_start != leaf_b.map_start);
		CHECK(leaf_a.symbol_offset == 3);
		CHECK(profile.frames[a->user[1]].address == bias_a + run.other + 1);
		// One kernel stack, named once for both.
		CHECK(a->kernel == b->kernel);
		CHECK(profile.frames[a->kernel[0]].address == program_address);

		const Sample *lost_a = sample_of(profile, "lost", 1003), *lost_b = sample_of(profile, "lost", 1004);
		REQUIRE(lost_a);
		REQUIRE(lost_b);
		CHECK(profile.frames[lost_a->user[0]].address == 0x10);
		CHECK(profile.frames[lost_b->user[0]].address == 0x20);
		CHECK(run.symbolizer->stats().elf_files_parsed == 1);
	}

	TEST_CASE("collected: each sample has its process's cgroup and container, also once it is forgotten")
	{
		Run run;
		Profile profile = run.collect({.pids = true, .addresses = false});
		const Sample *a = sample_of(profile, "worker", 1001), *b = sample_of(profile, "worker", 1002);
		REQUIRE(a);
		REQUIRE(b);
		CHECK(a->cgroup == "/system.slice/docker-" + container + ".scope");
		CHECK(a->container == container);
		CHECK(b->cgroup == "/system.slice/cron.service");
		CHECK(b->container == "");
		// Unknown to the history and gone from /proc: no labels.
		const Sample *lost = sample_of(profile, "lost", 1003);
		REQUIRE(lost);
		CHECK(lost->cgroup == "");
		CHECK(lost->container == "");
	}

	TEST_CASE("collected: a process in two cgroups in turn is two samples where PIDs are shown")
	{
		// 1001 moved to another group and exec'd at 150: its samples before and after.
		Run run;
		write_file(run.dir / "proc/1001/cgroup", "0::/system.slice/other.service\n");
		REQUIRE(run.history->apply(comm(1001, "worker", 150, true)));
		// Read once it shows up with samples, as the run does before adding a batch.
		run.history->settle_labels([](uint32_t) { return true; }, 200);
		RawProfile raw;
		raw.stacks = {{program_address, syscall_address}};
		raw.entries = {entry(1001, "worker", 0, NO_STACK, 3, 100), entry(1001, "worker", 0, NO_STACK, 5, 180)};
		for (bool pids : {true, false}) {
			CAPTURE(pids);
			Collected collected({.pids = pids, .addresses = false});
			collected.add(raw, *run.symbolizer);
			Profile profile = collected.name(*run.symbolizer);
			if (!pids) {
				REQUIRE(profile.samples.size() == 1);
				CHECK(profile.samples[0].count == 8);
				continue;
			}
			REQUIRE(profile.samples.size() == 2);
			for (const Sample &sample : profile.samples)
				CHECK(sample.cgroup == (sample.count == 3 ? "/system.slice/docker-" + container + ".scope"
									  : "/system.slice/other.service"));
		}
	}

	TEST_CASE("collected: PIDs without addresses: a sample per process, frames shared")
	{
		Run run;
		Profile profile = run.collect({.pids = true, .addresses = false});
		REQUIRE(profile.samples.size() == 4);
		const Sample *a = sample_of(profile, "worker", 1001), *b = sample_of(profile, "worker", 1002);
		REQUIRE(a);
		REQUIRE(b);
		CHECK(a->user == b->user);
		CHECK(names(profile, a->user) == std::vector<std::string>{"fixture_lib_work", "fixture_lib_other"});
		CHECK(a->count + b->count == 7);
	}

	TEST_CASE("collected: batches add up, and a BPF program is the one loaded at the sample's time")
	{
		Run run;
		Collected collected({.pids = false, .addresses = false});
		RawProfile first = run.batch();
		collected.add(first, *run.symbolizer);
		// Later the program is gone and another took its place: a sample of then names
		// the other, and the first batch's keep their own.
		REQUIRE(run.history->apply(ksymbol(0xffffffffc0b00000, 0x100, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER,
						   "bpf_prog_6deef7357e7b4530_sampled", 300)));
		REQUIRE(run.history->apply(ksymbol(0xffffffffc0b00000, 0x80, 0, "bpf_prog_0123456789abcdef_later", 310)));
		RawProfile second;
		second.stacks = {{program_address, syscall_address}};
		second.entries = {entry(1005, "worker", 0, NO_STACK, 5, 400), entry(1006, "worker", 0, NO_STACK, 1, 400)};
		collected.add(second, *run.symbolizer);
		CHECK(collected.entry_count() == 3);
		Profile profile = collected.name(*run.symbolizer);
		uint64_t earlier = 0, later = 0;
		for (const Sample &sample : profile.samples) {
			if (sample.kernel.empty())
				continue;
			const std::string program = names(profile, sample.kernel)[0];
			(program == "bpf_prog_6deef7357e7b4530_sampled" ? earlier : later) += sample.count;
			if (program != "bpf_prog_6deef7357e7b4530_sampled")
				CHECK(program == "bpf_prog_0123456789abcdef_later");
		}
		CHECK(earlier == 7);
		CHECK(later == 6);
	}

	TEST_CASE("collected: code nothing maps, of a process gone with a perf map, stays that process's")
	{
		Run run;
		write_file(run.dir / "perf-1004.map", "20 10 jitted_fn\n");
		Profile profile = run.collect({.pids = false, .addresses = false});
		REQUIRE(profile.samples.size() == 3);
		uint64_t unknown = 0, jitted = 0;
		for (const Sample &sample : profile.samples)
			if (sample.comm == "lost") {
				const std::string name = names(profile, sample.user)[0];
				(name == "[unknown]" ? unknown : jitted) += sample.count;
			}
		CHECK(unknown == 1);
		CHECK(jitted == 2);
	}

	TEST_CASE("collected: a stack that stopped early ends in one [truncated] frame")
	{
		Run run;
		RawProfile raw;
		raw.depth_limit = 3;
		raw.stacks = {
			// The walk's mark.
			{bias_a + run.work + 3, TRUNCATED_FRAME},
			// A caller in no executable mapping of its process: garbage a frame-pointer
			// walk read, and everything after it.
			{bias_a + run.work + 3, 0x1234, bias_a + run.other + 1},
			// Every slot filled: cut at the depth limit.
			{bias_a + run.work + 3, bias_a + run.other + 1, bias_a + run.other + 1},
			// Whole.
			{bias_a + run.work + 3, bias_a + run.other + 1},
		};
		raw.entries = {entry(1001, "marked", NO_STACK, 0, 1), entry(1001, "garbage", NO_STACK, 1, 2),
			       entry(1001, "deep", NO_STACK, 2, 4), entry(1001, "whole", NO_STACK, 3, 8)};
		Collected collected({.pids = false, .addresses = false});
		collected.add(raw, *run.symbolizer);
		Profile profile = collected.name(*run.symbolizer);
		auto user = [&](const char *comm) {
			const Sample *sample = sample_of(profile, comm);
			REQUIRE(sample);
			return names(profile, sample->user);
		};
		using Names = std::vector<std::string>;
		CHECK(user("marked") == Names{"fixture_lib_work", "[truncated]"});
		CHECK(user("garbage") == Names{"fixture_lib_work", "[truncated]"});
		CHECK(user("deep") == Names{"fixture_lib_work", "fixture_lib_other", "fixture_lib_other", "[truncated]"});
		CHECK(user("whole") == Names{"fixture_lib_work", "fixture_lib_other"});
	}
}
