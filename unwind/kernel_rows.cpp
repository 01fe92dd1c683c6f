// unwind/kernel_rows.cpp: the rows the kernel walk reads, mapped read-only from their arrays.
#include "unwind/kernel_rows.h"

#include <bpf/bpf.h>

CodeRows KernelRows::code_rows(const MapEntry &m, uint32_t object, uint64_t address)
{
	// No object yet: the file the walk asked about is answered at the next tick.
	if (!object)
		return {CodeRows::Building, {}, 0};
	unwind_object state{};
	if (bpf_map_lookup_elem(maps_.objects, &object, &state) != 0)
		return {};
	if (state.state == UNWIND_OBJECT_NO_TABLE || state.state == UNWIND_OBJECT_NO_ROOM)
		return {CodeRows::FramePointers, {}, 0};
	if (state.state != UNWIND_OBJECT_READY)
		return {CodeRows::Building, {}, 0};
	auto [at, first_use] = mapped_.try_emplace(object);
	Mapped &rows = at->second;
	if (first_use) {
		// The outer map gives the inner array's id; its fd maps its slots.
		uint32_t inner_id = 0;
		bpf_map_info info{};
		uint32_t info_size = sizeof(info);
		UniqueFd inner;
		if (bpf_map_lookup_elem(maps_.tables, &object, &inner_id) == 0)
			inner.reset(bpf_map_get_fd_by_id(inner_id));
		if (inner && bpf_obj_get_info_by_fd(inner.get(), &info, &info_size) == 0 &&
		    uint64_t(info.max_entries) * info.value_size >= uint64_t(state.row_count) * sizeof(unwind_row))
			rows.memory = MappedFile::map_shared(inner.get(), size_t(info.max_entries) * info.value_size);
		if (!rows.memory.empty())
			rows.rows = {reinterpret_cast<const unwind_row *>(rows.memory.bytes().data()), state.row_count};
	}
	if (rows.rows.empty())
		return {};
	return {CodeRows::Rows, rows.rows, address - m.start + m.offset};
}
