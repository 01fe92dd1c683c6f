// sampler/map_memory.h: what the sampler's maps will cost the kernel, from their sizes,
// before any is created; and whether a run should be warned or refused for it.
#pragma once

#include <cstdint>
#include <string>

#include "base/error.h"

// The sizes that decide the cost, as the sampler will create the maps.
struct MapSizes {
	uint32_t stack_entries = 16384;    // --stack-storage-size
	uint32_t depth = 127;              // frames per stack: --perf-max-stack-depth, as the kernel allows
	uint32_t count_entries = 40960;    // --hash-storage-size
	bool unwinding = false;            // stacks walked from unwind tables (not --unwind fp)
	uint32_t generations = 2;          // sets of maps: 2 when they are drained while sampling
	bool preallocated_hashes = false;  // hash maps allocate every entry at creation (kernels before 6.1)
};

// Kernel memory the maps take from their creation on, in bytes, as the kernel lays them
// out: a stack map (--unwind fp) is an array of one pointer per bucket (a power of two)
// and an entry of 16 bytes plus 8 per frame for every stack, all allocated at once; a hash
// map is an array of 16-byte buckets, with its entries (48 bytes, the key and the value)
// allocated as keys arrive (the counts), or at once when preallocated (the stores of
// stacks by content, when unwinding; every hash map before 6.1). Unwind tables are not
// counted: each is an array made to fit its rows as it loads, within --unwind-table-size.
struct MapMemory {
	uint64_t stacks = 0;      // the stack maps, or the stores of stacks by content
	uint64_t counts = 0;      // the counts maps and sampled_pids
	uint64_t other = 0;       // the unwinder's small maps
	uint64_t total() const { return stacks + counts + other; }
};
MapMemory map_memory(const MapSizes &sizes);

// What to say about the sizes, with `available` bytes of memory free on the machine
// (MemAvailable): an error when the maps would take more than half of it (the kernel
// would reclaim page cache for seconds, and may still fail); a warning when they take
// more than 1 GiB (creating and freeing them adds seconds to the run). Ok and "" when the
// sizes are ordinary. One line each, without the "profile: " prefix.
struct MapMemoryVerdict {
	Status status;       // not ok: the run is refused
	std::string warning; // "" for none
};
MapMemoryVerdict judge_map_memory(const MapSizes &sizes, uint64_t available);

// "3.0 GiB", "36 MiB", "512 KiB", "100 bytes".
std::string byte_size(uint64_t bytes);
