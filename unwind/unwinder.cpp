// unwind/unwinder.cpp: the unwinder as the run sees it: a feeder of mappings, a builder of
// tables and a pruner of their cache, each with its own state, and the rows of raw walks.
#include "unwind/unwinder.h"

#include <algorithm>
#include <cstdlib>

#include "proc/process_history.h"
#include "unwind/builder.h"
#include "unwind/feeder.h"
#include "unwind/kernel_rows.h"
#include "unwind/pruner.h"

struct Unwinder::Impl {
	Impl(const UnwindMaps &maps, std::string cache_dir, uint64_t cache_max_bytes)
		: maps(maps), pruner(cache_dir, cache_max_bytes, debug), builder(maps, cache_dir, pruner, debug),
		  feeder(maps, builder), rows(maps)
	{
	}
	const UnwindMaps maps;
	const bool debug = getenv("PROFILE_DEBUG") != nullptr;
	CachePruner pruner;
	TableBuilder builder;
	MappingFeeder feeder;
	KernelRows rows;
};

Unwinder::Unwinder(const UnwindMaps &maps, std::string cache_dir, uint64_t cache_max_bytes)
	: impl_(std::make_unique<Impl>(maps, std::move(cache_dir), cache_max_bytes))
{
}

Unwinder::~Unwinder()
{
	stop();
}

void Unwinder::stop()
{
	impl_->pruner.request_stop();
	impl_->builder.stop();
	impl_->pruner.stop();
}

void Unwinder::prepare(const ProcessHistory &history, const std::vector<uint32_t> &pids)
{
	impl_->feeder.prepare(history, pids);
	// Their first samples are whole if their tables are in before sampling starts. A table
	// that takes longer (seconds, for a compiler's hundreds of thousands of rows, the first
	// time) comes in while sampling goes on.
	impl_->builder.wait_idle(2000);
	impl_->builder.load_built();
}

void Unwinder::tick(const ProcessHistory &history)
{
	impl_->feeder.tick(history);
	impl_->builder.load_built();
}

RawWalk Unwinder::walk_raw(uint32_t pid, uint64_t time_ns, const RawUserStack &stack, size_t max_frames,
			   const ProcessHistory &history)
{
	Impl &d = *impl_;
	const ProcessImage *image = history.image_at(pid, time_ns);
	if (!image || !image->maps)
		return {{}, true};
	const std::vector<MapEntry> &mappings = *image->maps;
	return walk_raw_stack(stack, max_frames, d.maps.frame_pointers, [&](uint64_t address) -> CodeRows {
		// Sorted by start, never overlapping: the last starting at or before the address.
		auto after = std::upper_bound(mappings.begin(), mappings.end(), address,
					      [](uint64_t a, const MapEntry &m) { return a < m.start; });
		if (after == mappings.begin() || address >= (after - 1)->end || !(after - 1)->executable())
			return {};
		if (!has_table(*(after - 1)))
			return {CodeRows::FramePointers, {}, 0};
		const MapEntry m = walk_identity(*(after - 1));
		return d.rows.code_rows(m, d.feeder.object_id(m), address);
	});
}

void Unwinder::drop_raw_rows()
{
	impl_->rows.drop();
}

Unwinder::Stats Unwinder::stats() const
{
	const MappingFeeder::Stats &fed = impl_->feeder.stats();
	const TableBuilder::Stats built = impl_->builder.stats();
	Stats s;
	s.objects = fed.objects;
	s.ready = built.ready;
	s.from_cache = built.from_cache;
	s.no_table = fed.no_file + built.no_table;
	s.no_room = built.no_room;
	s.rows = built.rows;
	s.no_room_rows = built.no_room_rows;
	s.row_capacity = impl_->maps.row_capacity;
	s.processes = fed.processes;
	s.dropped_mappings = fed.dropped_mappings;
	s.build_cpu_ms = built.build_cpu_ms;
	s.build_wall_ms = built.build_wall_ms;
	s.not_finished = s.objects - s.ready - s.no_table - s.no_room;
	return s;
}
