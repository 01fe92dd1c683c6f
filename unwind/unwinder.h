// unwind/unwinder.h: the user half of the table unwinder: tells the BPF walk the
// executable mappings of each process it samples, and builds the unwind table of each
// object the walk meets, on a thread of its own while sampling goes on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "unwind/cache.h"
#include "unwind/maps.h"
#include "unwind/raw_walk.h"

class ProcessHistory;

class Unwinder {
public:
	// cache_dir: where tables are kept between runs ("" for nowhere), pruned to
	// cache_max_bytes on a thread of its own from the start.
	Unwinder(const UnwindMaps &maps, std::string cache_dir,
		 uint64_t cache_max_bytes = kDefaultUnwindCacheBytes);
	~Unwinder();
	Unwinder(const Unwinder &) = delete;
	Unwinder &operator=(const Unwinder &) = delete;

	// Before sampling starts: the mappings of these processes, and a table for each object
	// they map, asked for now rather than at their first sample.
	void prepare(const ProcessHistory &history, const std::vector<uint32_t> &pids);

	// Every 20 ms or so, once the side band's records are in the history: answers the
	// processes and objects the walk asked about, sends again the mappings of processes
	// that mapped or exec'd since, forgets those that exited, and loads the tables built.
	void tick(const ProcessHistory &history);

	// Stops building: tables not finished are left undone, those finished go in. Called once
	// sampling ends.
	void stop();

	// Finishes the walk of a user stack the kernel kept raw (its walk met code whose table
	// was being built), from the same rows the kernel walk reads, located in the mappings
	// the history gives the process at time_ns: at most max_frames more frames.
	RawWalk walk_raw(uint32_t pid, uint64_t time_ns, const RawUserStack &stack, size_t max_frames,
			 const ProcessHistory &history);
	// Unmaps the rows walk_raw mapped: a long run keeps none of their pages between batches.
	void drop_raw_rows();

	struct Stats {
		uint32_t objects = 0;          // asked for
		uint32_t ready = 0;            // with a table in the kernel
		uint32_t from_cache = 0;       // of those, read from the cache
		uint32_t no_table = 0;         // no CFI, or the file could not be read
		uint32_t no_room = 0;          // did not fit in --unwind-table-size
		uint32_t not_finished = 0;     // asked for, still being built when sampling ended
		uint64_t rows = 0;             // rows in the kernel
		uint64_t no_room_rows = 0;     // rows of the tables that did not fit
		uint32_t row_capacity = 0;
		uint32_t processes = 0;        // processes whose mappings were sent
		uint32_t dropped_mappings = 0; // executable mappings past UNWIND_MAX_MAPPINGS
		double build_cpu_ms = 0;       // the builder thread's CPU
		double build_wall_ms = 0;      // from the first table asked for to the last built
	};
	Stats stats() const;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};
