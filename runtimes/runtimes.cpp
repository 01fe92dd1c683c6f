// runtimes/runtimes.cpp: the runtimes' rows, and the readers of a run. A runtime added is
// its room's include and a row here (its kernel walk: runtimes/runtimes.bpf.h).
#include "runtimes/runtimes.h"

#include "hotspot/room.h"
#include "python/room.h"
#include "runtime/runtime.h"
#include "v8/room.h"

namespace {

const RuntimeRoom *const rooms[] = {&python_room, &v8_room, &hotspot_room};

} // namespace

std::span<const RuntimeRoom *const> runtime_rooms()
{
	return rooms;
}

const RuntimeRoom *runtime_room_of_frame(uint64_t value)
{
	for (const RuntimeRoom *room : rooms)
		if (RUNTIME_TAG_OF(value) == room->tag)
			return room;
	return nullptr;
}

Runtimes::Runtimes(uint32_t on, const RuntimeKernel &kernel, bool inlined) : inlined_(inlined)
{
	for (const RuntimeRoom *room : rooms)
		if (on & RUNTIME_BIT(room->tag))
			if (std::unique_ptr<RuntimeReader> reader = room->start(kernel))
				readers_.push_back({room, std::move(reader)});
}

void Runtimes::prepare(const std::vector<uint32_t> &pids)
{
	MapsReads maps;
	for (Followed &followed : readers_)
		followed.reader->prepare(pids, maps);
}

void Runtimes::tick()
{
	MapsReads maps;
	for (Followed &followed : readers_)
		followed.reader->tick(maps);
}

RuntimeFrameName Runtimes::name(const RuntimeRoom &room, uint32_t pid, uint64_t frame) const
{
	RuntimeFrameName name;
	for (const Followed &followed : readers_)
		if (followed.room == &room && followed.reader->name(pid, frame, name)) {
			if (!inlined_)
				name.inlined_here.clear();
			return name;
		}
	return {room.unnamed, "", 0};
}

void Runtimes::end_window()
{
	for (const Followed &followed : readers_)
		followed.reader->end_window();
}

std::vector<std::string> Runtimes::stats() const
{
	std::vector<std::string> lines;
	for (const Followed &followed : readers_)
		lines.push_back(followed.reader->stats());
	return lines;
}
