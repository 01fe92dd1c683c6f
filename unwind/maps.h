// unwind/maps.h: the kernel maps through which user space feeds the table walk, as the
// sampler hands them to the unwinder.
#pragma once

#include <cstdint>

struct UnwindMaps {
	int processes = -1, objects = -1, tables = -1, wanted_processes = -1, files = -1, wanted_files = -1;
	uint32_t row_capacity = 0, object_capacity = 0, process_capacity = 0;
	// The kernel keeps the mappings of processes once it has them (exec, fork, mmap and
	// exit hooked): user space sends only those it asks for.
	bool kernel_follows = false;
	// --unwind auto: code without a rule takes frame-pointer steps (dwarf: the walk ends).
	bool frame_pointers = true;
	uint32_t depth = 0; // frames a user stack may hold

};
