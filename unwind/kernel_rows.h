// unwind/kernel_rows.h: the rows the kernel walk reads, mapped read-only from their arrays so
// that user space finishes a raw stack's walk on the same rows, with no second copy.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

#include "base/fd.h"
#include "proc/maps.h"
#include "unwind/maps.h"
#include "unwind/raw_walk.h"
#include "unwind/unwind.h"

class KernelRows {
public:
	explicit KernelRows(const UnwindMaps &maps) : maps_(maps) {}

	// What the kernel walk would find for an address in walk_mapping (as walk_identity
	// names it), whose file is object (0: none yet): its rows once they are in, a
	// frame-pointer step where the object has no table, nothing while it is built.
	CodeRows code_rows(const MapEntry &walk_mapping, uint32_t object, uint64_t address);
	// Unmaps them all: a long run keeps none of their pages between batches.
	void drop() { mapped_.clear(); }

private:
	struct Mapped {
		MappedFile memory;
		std::span<const unwind_row> rows; // empty: the array could not be mapped
	};
	const UnwindMaps maps_;
	std::unordered_map<uint32_t, Mapped> mapped_; // object -> its rows
};
