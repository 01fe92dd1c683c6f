// unwind/feeder.h: tells the BPF walk the executable mappings of the processes it samples,
// and gives each file the walk meets an object whose table the builder makes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "proc/maps.h"
#include "unwind/maps.h"

class ProcessHistory;
struct ProcessImage;
class TableBuilder;
struct unwind_file;
struct unwind_file_seen;

// A mapping as the walk knows its file: the vDSO by the identity the kernel gives it
// (UNWIND_VDSO_INODE, its size in pages as the device); others as they are.
MapEntry walk_identity(MapEntry m);
// Whether the walk can have a table for the mapping's code: a file's, or the vDSO's.
bool has_table(const MapEntry &m);

// Runs on the run's thread only (prepare, tick, object_id): it has no lock of its own.
class MappingFeeder {
public:
	MappingFeeder(const UnwindMaps &maps, TableBuilder &builder);

	// The mappings of these processes (none: every live one), and a table asked for each
	// object they map.
	void prepare(const ProcessHistory &history, const std::vector<uint32_t> &pids);
	// Answers the processes and files the walk asked about, sends again the mappings of
	// processes that mapped or exec'd since, and forgets those that exited.
	void tick(const ProcessHistory &history);

	// The object of a file as the walk knows it (walk_identity), 0 when it has none yet.
	uint32_t object_id(const MapEntry &walk_mapping) const;

	struct Stats {
		uint32_t objects = 0;          // asked for
		uint32_t no_file = 0;          // asked for, but their file could not be opened
		uint32_t processes = 0;        // processes whose mappings were sent
		uint32_t dropped_mappings = 0; // executable mappings past UNWIND_MAX_MAPPINGS
	};
	const Stats &stats() const { return stats_; }

private:
	uint32_t object_of(uint32_t pid, const MapEntry &m);
	void send_process(uint32_t pid, const ProcessImage *image, uint64_t flags);
	void answer_file(const unwind_file &file, const unwind_file_seen &seen, const ProcessHistory &history);
	void ask(uint32_t object);

	const UnwindMaps maps_;
	TableBuilder &builder_;

	struct Object {
		MapEntry mapping; // a mapping of it: path, device and inode
		uint32_t pid = 0; // the last process seen mapping it (its map_files open it)
		bool asked = false;
	};
	std::vector<Object> objects_{Object{}}; // [0]: none
	std::map<FileKey, uint32_t> object_ids_;

	// Where the kernel does not follow processes itself: the mappings each process's walk
	// has, as the history held them when sent (null: sent with none, the history never knew it).
	std::unordered_map<uint32_t, std::shared_ptr<const std::vector<MapEntry>>> sent_;
	std::unordered_map<uint32_t, uint32_t> unknown_ticks_; // asked about, not in the history yet
	uint32_t next_serial_ = 0; // of the lists sent, above UNWIND_SENT_SERIAL

	Stats stats_;
};
