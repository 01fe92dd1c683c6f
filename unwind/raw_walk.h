// unwind/raw_walk.h: the end of a user stack's walk in user space, for a sample the kernel
// kept raw (registers and a copy of stack bytes) because code it reached had no table yet:
// the same row semantics as the kernel's walk (unwind/unwind.bpf.h), over the copied bytes.
#pragma once

#include <linux/types.h>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "unwind/unwind.h"

// Where the kernel's walk stopped: the frame at pc is its last (already recorded); sp and
// bp are that frame's; `bytes` are the user stack copied from `base` on.
struct RawUserStack {
	uint64_t pc = 0, sp = 0, bp = 0;
	bool leaf = false; // pc is where the sample was taken, not a return address
	uint64_t base = 0;
	std::vector<uint8_t> bytes;
};

// How to step out of the code at an address (a pc, or a return address less one).
struct CodeRows {
	enum Kind {
		Unknown,       // no table to trust (nothing mapped executable there): stop
		Building,      // its file's table is still being built: stop, for now
		FramePointers, // code with no table (no file, no CFI): a frame-pointer step
		Rows,          // the rows of its file; `offset` is the address's file offset
	} kind = Unknown;
	std::span<const unwind_row> rows;
	uint64_t offset = 0;
};
using FindCodeRows = std::function<CodeRows(uint64_t address)>;

struct RawWalk {
	std::vector<uint64_t> frames; // the callers found, outermost last
	bool truncated = false;       // stopped before the stack's end (read outside the bytes, no rule, depth)
	bool waiting = false;         // stopped at code whose table is still being built: may go on later
};

// Walks on from the stack's frame at pc, adding at most max_frames frames. frame_pointers:
// code without a rule takes a frame-pointer step (--unwind auto) rather than ending the
// walk (--unwind dwarf).
RawWalk walk_raw_stack(const RawUserStack &stack, size_t max_frames, bool frame_pointers,
		       const FindCodeRows &find);
