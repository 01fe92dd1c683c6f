// tests/test_run_collect_batch.cpp: a drained batch's marks read as it is collected.
#include <doctest/doctest.h>

#include "tests/collected_run.h"

using namespace collected_run;

TEST_SUITE("unit")
{
	TEST_CASE("collect_batch: a stack that stopped early ends in one [truncated] frame")
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
		collect_batch(raw, *run.symbolizer, collected);
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
