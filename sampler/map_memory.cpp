// sampler/map_memory.cpp: the kernel memory of the sampler's maps, estimated from their sizes.
#include "sampler/map_memory.h"

#include <linux/types.h>

#include "profile.h"

#include <bit>
#include <cstdio>
#include <functional>
#include <vector>

namespace {

// The kernel's own layouts (kernel/bpf/stackmap.c, hashtab.c, arraymap.c, 6.x) and the
// sampler's map types (profile.bpf.c), checked against VmallocUsed
// (tests/test_sampler_map_memory.cpp).
constexpr uint64_t stack_bucket_pointer = 8; // one per bucket; buckets are a power of two
constexpr uint64_t stack_entry_header = 16;  // struct stack_map_bucket, before its frames
constexpr uint64_t hash_bucket = 16;         // struct bucket: list head and lock
constexpr uint64_t hash_entry_header = 48;   // struct htab_elem, before its key
constexpr uint64_t counts_key = 64, counts_value = 24; // stack_key (60 bytes, rounded up to 8), stack_count (profile.h)
constexpr uint64_t pid_key = 8, pid_value = 8;         // __u32 and __u8, each rounded up to 8
constexpr uint64_t store_key = 16;                     // struct stack_hash
// The unwinder's maps of fixed size: unwind_objects (an array of 16384 16-byte objects),
// unwind_tables (16384 pointers), the buckets of unwind_processes (8192) and unwind_files
// (16384), wanted_processes (4096 preallocated entries of a __u32 key and a __u8 value),
// wanted_files (4096 of a 16-byte key and a 24-byte value), the empty list exec copies, and
// the slots of samples kept raw (RAW_SLOTS a generation, both generations' always made).
constexpr uint64_t unwinder_fixed = 16384 * 16 + 16384 * 8 + 8192 * hash_bucket + 16384 * hash_bucket +
				    4096 * hash_bucket + 4096 * (hash_entry_header + pid_key + pid_value) +
				    4096 * hash_bucket + 4096 * (hash_entry_header + 16 + 24) + 8200 +
				    2 * RAW_SLOTS * sizeof(raw_sample);

uint64_t buckets(uint64_t entries)
{
	return std::bit_ceil(std::max<uint64_t>(entries, 1));
}

uint64_t stack_map(uint64_t entries, uint32_t depth)
{
	return buckets(entries) * stack_bucket_pointer + entries * (stack_entry_header + uint64_t(depth) * 8);
}

uint64_t hash_map(uint64_t entries, uint64_t key, uint64_t value, bool preallocated)
{
	return buckets(entries) * hash_bucket + (preallocated ? entries * (hash_entry_header + key + value) : 0);
}

// The largest n in [0, limit] for which fits(n), fits being monotonic.
uint64_t largest(uint64_t limit, const std::function<bool(uint64_t)> &fits)
{
	uint64_t low = 0, high = limit;
	while (low < high) {
		const uint64_t mid = low + (high - low + 1) / 2;
		if (fits(mid))
			low = mid;
		else
			high = mid - 1;
	}
	return low;
}

// Down to two significant digits: a number to type, not to read off a calculator.
uint64_t round_down(uint64_t n)
{
	uint64_t scale = 1;
	while (n / scale >= 100)
		scale *= 10;
	return n / scale * scale;
}

} // namespace

MapMemory map_memory(const MapSizes &sizes)
{
	// Without draining, the second set of maps is created with one entry each; the kind
	// of stack storage not used is one entry too.
	auto second = [&](uint64_t entries) { return sizes.generations > 1 ? entries : 1; };
	const uint64_t stacks = sizes.unwinding ? 1 : sizes.stack_entries;
	const uint64_t stores = sizes.unwinding ? sizes.stack_entries : 1;
	const uint64_t store_value = STORED_STACK_SIZE(uint64_t(sizes.depth));
	const bool pre = sizes.preallocated_hashes;
	MapMemory memory;
	// The stores of stacks by content are preallocated on every kernel: a burst of new
	// stacks must not fail to allocate.
	memory.stacks = stack_map(stacks, sizes.depth) + stack_map(second(stacks), sizes.depth) +
			hash_map(stores, store_key, store_value, true) + hash_map(second(stores), store_key, store_value, true);
	memory.counts = hash_map(sizes.count_entries, counts_key, counts_value, pre) +
			hash_map(second(sizes.count_entries), counts_key, counts_value, pre) +
			hash_map(sizes.count_entries, pid_key, pid_value, pre);
	memory.other = sizes.unwinding ? unwinder_fixed : 0;
	return memory;
}

std::string byte_size(uint64_t bytes)
{
	const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
	if (bytes < 1024)
		return std::to_string(bytes) + " bytes";
	double value = double(bytes) / 1024;
	size_t unit = 0;
	while (value >= 1024 && unit + 1 < std::size(units)) {
		value /= 1024;
		unit++;
	}
	char text[32];
	std::snprintf(text, sizeof(text), value < 9.95 ? "%.1f %s" : "%.0f %s", value, units[unit]);
	return text;
}

MapMemoryVerdict judge_map_memory(const MapSizes &sizes, uint64_t available)
{
	const MapMemory memory = map_memory(sizes);
	const uint64_t generations = sizes.generations > 1 ? 2 : 1;
	const bool pre = sizes.preallocated_hashes;
	// Each option's part, and what one more of its entries costs at the start.
	struct Part {
		std::string option;
		uint64_t bytes;
		std::string each;
		uint32_t MapSizes::*size;
	};
	const uint64_t per_stack =
		sizes.unwinding ? generations * (hash_bucket + hash_entry_header + store_key +
						 STORED_STACK_SIZE(uint64_t(sizes.depth)))
				: generations * (stack_entry_header + uint64_t(sizes.depth) * 8 + stack_bucket_pointer);
	const uint64_t per_count = (generations + 1) * hash_bucket +
				   (pre ? generations * (hash_entry_header + counts_key + counts_value) +
						  hash_entry_header + pid_key + pid_value
					: 0);
	std::vector<Part> parts = {
		{"--stack-storage-size " + std::to_string(sizes.stack_entries), memory.stacks,
		 byte_size(per_stack) + " a stack at " + std::to_string(sizes.depth) + " frames",
		 &MapSizes::stack_entries},
		{"--hash-storage-size " + std::to_string(sizes.count_entries), memory.counts,
		 byte_size(per_count) + " an entry", &MapSizes::count_entries},
	};

	MapMemoryVerdict verdict;
	if (available && memory.total() > available / 2) {
		// The largest part is the one to lower, the others staying as they are.
		const Part *largest_part = &parts[0];
		for (const Part &part : parts)
			if (part.bytes > largest_part->bytes)
				largest_part = &part;
		MapSizes smaller = sizes;
		const uint64_t most = largest(1u << 26, [&](uint64_t n) {
			smaller.*largest_part->size = uint32_t(n);
			return map_memory(smaller).total() <= available / 2;
		});
		std::string others;
		for (const Part &part : parts)
			others += (others.empty() ? "" : " and ") + part.option.substr(0, part.option.find(' '));
		verdict.status = Error(largest_part->option + " would take " + byte_size(memory.total()) +
				       " of kernel memory (" + largest_part->each + "), more than half of the " +
				       byte_size(available) + " available: " +
				       (round_down(most) ? "at most " + std::to_string(round_down(most)) + " fits"
							 : "lower " + others));
		return verdict;
	}
	if (memory.total() >= (uint64_t(1) << 30)) {
		// Name the maps that take the memory: whichever holds a quarter of it or more.
		std::string which;
		for (const Part &part : parts)
			if (part.bytes * 4 >= memory.total())
				which += (which.empty() ? "" : "; ") + part.option + ": " + part.each;
		MapSizes defaults;
		defaults.unwinding = sizes.unwinding;
		defaults.depth = sizes.depth;
		defaults.generations = sizes.generations;
		defaults.preallocated_hashes = sizes.preallocated_hashes;
		verdict.warning = "warning: the maps take " + byte_size(memory.total()) +
				  " of kernel memory, allocated when the run starts (" + which +
				  "), which adds seconds to its start and end; the defaults take " +
				  byte_size(map_memory(defaults).total());
	}
	return verdict;
}
