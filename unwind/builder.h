// unwind/builder.h: builds the unwind table of each object asked for, on a thread of its own
// (from the cache when it is there), and loads the tables built into the kernel.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/fd.h"
#include "unwind/maps.h"
#include "unwind/table.h"

class CachePruner;

// Sets what the walk knows of an object (UNWIND_OBJECT_*), with no rows.
void set_object_state(const UnwindMaps &maps, uint32_t object, uint32_t state);

// A table to build: the file, opened while a process mapped it, or the image of the vDSO.
struct TableJob {
	uint32_t object;
	UniqueFd fd;
	std::string path;  // as mapped: where its separate debug file is looked for
	uint64_t size = 0; // of the file: small ones first
	std::vector<uint8_t> image; // the vDSO's (no fd, not cached)
};

class TableBuilder {
public:
	// cache_dir: where tables are read and stored ("" for nowhere); pruner: whether stores
	// are still on, and where to say they failed.
	TableBuilder(const UnwindMaps &maps, std::string cache_dir, CachePruner &pruner, bool debug);
	~TableBuilder();
	TableBuilder(const TableBuilder &) = delete;
	TableBuilder &operator=(const TableBuilder &) = delete;

	// Marks the object as being built and queues its job.
	void queue(TableJob job);
	// Waits until nothing is queued or under way, for at most timeout_ms.
	void wait_idle(int timeout_ms);
	// Loads the tables built since the last call, then marks their objects ready.
	void load_built();
	// Stops the thread (jobs not started are left undone) and loads what was built.
	void stop();

	struct Stats {
		uint32_t ready = 0, from_cache = 0, no_table = 0, no_room = 0;
		uint64_t rows = 0, no_room_rows = 0;
		double build_cpu_ms = 0, build_wall_ms = 0;
	};
	Stats stats() const;

private:
	struct Built {
		uint32_t object = 0;
		std::optional<UnwindTable> table;
		bool from_cache = false;
		uint32_t page_base = 0, pages = 0; // its page index, once in the kernel
		Status loaded;        // not ok: a cache file that did not check out, and why
		Status stored;        // not ok: why the table could not be cached
	};
	Built build(TableJob &job);
	UniqueFd fill(Built &built);
	void loop();

	const UnwindMaps maps_;
	const std::string cache_dir_;
	CachePruner &pruner_;
	const bool debug_;
	UniqueFd host_root_;

	// The jobs and what passes between the thread and the callers.
	mutable std::mutex queue_lock_;
	std::condition_variable work_, finished_;
	std::deque<TableJob> jobs_;
	size_t building_ = 0; // jobs queued or under way
	std::vector<Built> done_;
	bool stopping_ = false;
	double build_cpu_ms_ = 0;
	double first_asked_ms_ = 0, last_built_ms_ = 0;

	// Held while tables go into the kernel and their counts change: the thread loads what
	// it built as soon as it has nothing else to do, the run's thread at its ticks.
	mutable std::mutex loading_;
	Stats loaded_;

	std::thread thread_;
};
