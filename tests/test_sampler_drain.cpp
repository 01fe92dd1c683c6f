// tests/test_sampler_drain.cpp: when the sampler drains its maps, decided without a kernel.
#include <doctest/doctest.h>

#include "sampler/sampler.h"

TEST_SUITE("unit") {

TEST_CASE("maps are drained by their fill as loaded, not as the option asked")
{
	// A run of known length has stores smaller than --stack-storage-size (plan_maps): a
	// store of 1,000 stacks may be half full at 250 new keys, whatever the option said.
	MapSizes sizes;
	sizes.unwinding = true;
	sizes.stack_entries = 1000;
	sizes.count_entries = 40960;
	sample_stats t{};
	t.new_keys = 249;
	CHECK(!maps_filling(t, sizes, 1000000000));
	t.new_keys = 250;
	CHECK(maps_filling(t, sizes, 1000000000));

	// The STACK_TRACE maps of --unwind fp collide early: a sixteenth full. The counts map
	// bounds the capacity when it is the smaller.
	sizes.unwinding = false;
	sizes.stack_entries = 16384;
	sizes.count_entries = 1600;
	t.new_keys = 99;
	CHECK(!maps_filling(t, sizes, 1000000000));
	t.new_keys = 100;
	CHECK(maps_filling(t, sizes, 1000000000));

	// Losing samples: at once with a sixty-fourth of the capacity new, else every 5 s.
	t.new_keys = 1;
	t.lost_counts_full = 3;
	CHECK(!maps_filling(t, sizes, 4999999999));
	CHECK(maps_filling(t, sizes, 5000000000));
	t.new_keys = 25;
	CHECK(maps_filling(t, sizes, 1000000000));
}

} // TEST_SUITE
