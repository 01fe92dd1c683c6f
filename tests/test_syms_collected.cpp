// tests/test_syms_collected.cpp: samples located while their processes are in the
// history, merged as the report allows, and named after the history has forgotten them.
#include <doctest/doctest.h>

#include "tests/collected_run.h"

using namespace collected_run;

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
			collect_batch(raw, *run.symbolizer, collected);
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
		collect_batch(first, *run.symbolizer, collected);
		// Later the program is gone and another took its place: a sample of then names
		// the other, and the first batch's keep their own.
		REQUIRE(run.history->apply(ksymbol(0xffffffffc0b00000, 0x100, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER,
						   "bpf_prog_6deef7357e7b4530_sampled", 300)));
		REQUIRE(run.history->apply(ksymbol(0xffffffffc0b00000, 0x80, 0, "bpf_prog_0123456789abcdef_later", 310)));
		RawProfile second;
		second.stacks = {{program_address, syscall_address}};
		second.entries = {entry(1005, "worker", 0, NO_STACK, 5, 400), entry(1006, "worker", 0, NO_STACK, 1, 400)};
		collect_batch(second, *run.symbolizer, collected);
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
}
