// tests/test_syms_lru_cache.cpp: LruCache keeps the most recently used entries.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "syms/lru_cache.h"

namespace {

// The candidates kept, in the order given (each is then the most recently used).
std::vector<int> keys_of(LruCache<int, std::string> &cache, std::vector<int> candidates)
{
	std::vector<int> kept;
	for (int key : candidates)
		if (cache.find(key))
			kept.push_back(key);
	return kept;
}

} // namespace

TEST_SUITE("unit")
{
	TEST_CASE("lru cache: the least recently used entry is dropped past the capacity")
	{
		LruCache<int, std::string> cache(2);
		cache.insert(1, "one");
		cache.insert(2, "two");
		REQUIRE(cache.find(1));
		CHECK(*cache.find(1) == "one"); // 1 is now newer than 2
		cache.insert(3, "three");
		CHECK(cache.size() == 2);
		CHECK(cache.dropped() == 1);
		CHECK(!cache.find(2));
		CHECK(keys_of(cache, {1, 2, 3}) == std::vector<int>{1, 3});

		// Inserting a kept key replaces its value and drops nothing.
		cache.insert(1, "uno");
		CHECK(*cache.find(1) == "uno");
		CHECK(cache.size() == 2);
		CHECK(cache.dropped() == 1);

		cache.set_capacity(1);
		CHECK(cache.size() == 1);
		CHECK(cache.find(1)); // the most recently used stays
		CHECK(cache.dropped() == 2);
		cache.set_capacity(0); // never less than one: what was just inserted stays usable
		CHECK(cache.capacity() == 1);
		CHECK(cache.find(1));
	}

	TEST_CASE("lru cache: keep_newest and erase_if drop only the entries they are asked about")
	{
		LruCache<int, std::string> cache(10);
		for (int key = 1; key <= 6; key++)
			cache.insert(key, key % 2 ? "odd" : "even");
		// Newest first: 6 5 4 3 2 1. Keep two of the odd ones: 5 and 3.
		cache.keep_newest(2, [](int, const std::string &value) { return value == "odd"; });
		CHECK(cache.size() == 5);
		CHECK(cache.dropped() == 1);
		CHECK(!cache.find(1));
		cache.erase_if([](int key, const std::string &) { return key > 4; });
		CHECK(cache.size() == 3);
		for (int key : {2, 3, 4})
			CHECK(cache.find(key));
		CHECK(!cache.find(5));
		CHECK(!cache.find(6));
	}

	TEST_CASE("lru cache: pop_oldest hands back the least recently used value, nothing when empty")
	{
		LruCache<int, std::string> cache(10);
		cache.insert(1, "one");
		cache.insert(2, "two");
		REQUIRE(cache.find(1)); // 2 is now the oldest
		CHECK(cache.pop_oldest() == std::optional<std::string>("two"));
		CHECK(cache.pop_oldest() == std::optional<std::string>("one"));
		CHECK(cache.size() == 0);
		CHECK(cache.dropped() == 2);
		CHECK(!cache.pop_oldest());
		CHECK(cache.dropped() == 2);
	}
}
