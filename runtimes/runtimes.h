// runtimes/runtimes.h: the language runtimes the run knows (one row each, runtime/room.h),
// and those a run follows: their readers, from the sampling program's load to the last
// frame named.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/room.h"

// Every runtime, in --help's order.
std::span<const RuntimeRoom *const> runtime_rooms();
// The runtime whose frame a stored user stack's value is; nullptr for a native address.
const RuntimeRoom *runtime_room_of_frame(uint64_t value);

// The readers of the runtimes a run follows.
class Runtimes {
public:
	// A reader for each runtime in `on` (RUNTIME_BIT of its tag) whose maps the loaded
	// program has; inlined: the functions a runtime's compiler inlined are frames of their
	// own (off with --no-inline).
	Runtimes(uint32_t on, const RuntimeKernel &kernel, bool inlined = true);

	bool empty() const { return readers_.empty(); }
	void prepare(const std::vector<uint32_t> &pids);
	void tick();
	// A runtime's frame of process pid, named (with what was inlined there, unless inlined
	// frames are off); its room's `unnamed` when its reader never named it or the runtime is
	// not followed.
	RuntimeFrameName name(const RuntimeRoom &room, uint32_t pid, uint64_t frame) const;
	// Each reader's -v line.
	std::vector<std::string> stats() const;
	// After each window of a continuous run: each reader forgets what no recent window named.
	void end_window();

private:
	struct Followed {
		const RuntimeRoom *room;
		std::unique_ptr<RuntimeReader> reader;
	};
	std::vector<Followed> readers_;
	bool inlined_ = true;
};
