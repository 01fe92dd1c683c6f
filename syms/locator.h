// syms/locator.h: the first half of naming a user address (blazesym's normalize): an
// address of a process at a time becomes an object (a file, wherever each process mapped
// it; a kernel-made area; a process's JIT code) and an offset in it, while the process's
// history still knows it. What it hands out can be kept, compared, and named any time later.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "proc/maps.h"
#include "proc/process_history.h"
#include "syms/symbolizer_options.h"

class LiveProcesses;

// Where a mapping lay in its process: [start, end), with the file offset mapped at start.
struct MapPlacement {
	uint64_t start = 0, end = 0, offset = 0;
	bool operator==(const MapPlacement &) const = default;
};

// What user addresses lie in, in terms that outlive their process: one file mapped by
// many processes, wherever each mapped it, is one object.
struct UserObject {
	enum class Kind : uint8_t {
		Unknown, // code nothing mapped, of a process gone without a perf map: "[unknown]"
		File,    // a file, named from its symbols
		Area,    // a kernel-made area: [vdso] (named from this process's own), [heap]...
		Jit,     // code no file backs, of process `pid`: its perf map may name it
	};
	Kind kind = Kind::Unknown;
	// File: the last process seen mapping it, which may still map it at the end (the way
	// to its file inside a container, or to a deleted file); Jit: the process.
	uint32_t pid = 0;
	MapEntry mapping; // File, Area: that process's mapping of it
	// The offset of an address in it is an offset in the mapping (a file's or an area's).
	bool in_mapping() const { return kind == Kind::File || kind == Kind::Area; }
};

// A user address, normalized by Locator::locate.
struct UserLocation {
	// What the address lies in: an id of the locator's objects. 0: code nothing mapped,
	// of a process gone without a perf map ("[unknown]").
	uint32_t object = 0;
	// In a file or a kernel-made area ([vdso], [heap]): the offset in it; else the
	// address itself.
	uint64_t offset = 0;
	// The mapping the address was in, where the caller kept it (all 0 where not): the
	// frame's address (for a File or Area) and its pprof mapping come from it.
	MapPlacement mapped;
};

class Locator {
public:
	Locator(const SymbolizerOptions &options, LiveProcesses &processes);

	// The image pid ran at time_ns (CLOCK_MONOTONIC): from the history, else from what it
	// maps now. Null when nothing is known of the process.
	const ProcessImage *image_at(uint32_t pid, uint64_t time_ns);
	// address of pid, which ran image: its object, its offset in it, and its mapping. A
	// return address is looked up as address - 1, the call.
	UserLocation locate(uint32_t pid, const ProcessImage *image, uint64_t address, bool return_address);

	const UserObject &object(uint32_t id) const { return objects_[id]; }
	size_t object_count() const { return objects_.size(); }
	// Drops every object located so far: the next one is 1 again.
	void forget_objects();
	// Drops what was read of processes the history does not know: their maps, and which
	// were found gone without a perf map.
	void forget_processes();

private:
	uint32_t object_of(uint32_t pid, const MapEntry *mapping);

	const SymbolizerOptions &options_;
	LiveProcesses &processes_;
	ProcessHistory read_now_; // processes the history does not know, from their maps now
	std::vector<UserObject> objects_{UserObject{}}; // [0] is the Unknown one
	// (kind, device major, minor, inode or pid or [vdso] size, deleted, path) -> objects;
	// looked up without copying the path.
	using ObjectKey = std::tuple<UserObject::Kind, uint32_t, uint32_t, uint64_t, bool, std::string>;
	using ObjectLookup = std::tuple<UserObject::Kind, uint32_t, uint32_t, uint64_t, bool, std::string_view>;
	struct ObjectOrder {
		using is_transparent = void;
		static ObjectLookup view(const ObjectKey &key) { return ObjectLookup(key); }
		static const ObjectLookup &view(const ObjectLookup &key) { return key; }
		template <typename A, typename B>
		bool operator()(const A &a, const B &b) const
		{
			return view(a) < view(b);
		}
	};
	std::map<ObjectKey, uint32_t, ObjectOrder> object_ids_;
	// Processes found gone without a perf map since forget_processes(): their unmapped
	// code is the Unknown object.
	std::unordered_set<uint32_t> gone_without_perf_map_;
};
