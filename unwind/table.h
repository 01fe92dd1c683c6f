// unwind/table.h: an object's unwind table, compiled from its call frame information
// (.eh_frame, or .debug_frame) with libdw, for the kernel side's table walk.
#pragma once

#include <linux/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "unwind/unwind.h"

struct UnwindTable {
	// Sorted by pc (a file offset, see struct unwind_row). Adjacent rows never hold the
	// same rule; a UNWIND_CFA_NONE row starts each gap that no FDE covers, so a pc past
	// the last FDE before it finds no rule.
	std::vector<unwind_row> rows;
	// Where the rules came from: ".eh_frame", ".debug_frame" (the file's own or its debug
	// file's), ".eh_frame+.debug_frame" (code .eh_frame leaves out, from .debug_frame: a
	// file built with -fno-asynchronous-unwind-tables keeps only crt1's _start in
	// .eh_frame), or "" when neither had any (and then there are no rows).
	std::string source;
};

// The table of the ELF file open at fd, from its .eh_frame; for code .eh_frame leaves out,
// from the .debug_frame of the file or, when it has none, of its separate debug file
// (debug_fd, -1 for none, read only then; its addresses are the file's, converted through
// the file's PT_LOAD segments). A file only root can change is mapped, any other read.
// Nothing when the file is no ELF64 x86-64 object; an empty table when it has no CFI.
// Hostile input yields fewer rows, never a crash or a read outside the file; libdw plays
// at most 64 MiB plus 256 times the CFI's size of CFI programs (real objects: 100 times).
// Measured: libc 6 ms, python3.11 16 ms, cc1plus 0.25 s (517,281 rows).
std::optional<UnwindTable> compile_unwind_table(int fd, int debug_fd = -1);
// The same from bytes in memory (tests and the fuzz target), copied first: libelf writes
// into an image it reads from memory.
std::optional<UnwindTable> compile_unwind_table(std::span<const uint8_t> elf,
						std::span<const uint8_t> debug = {});

// At most this many rows per object (192 MiB of them); the rest of the object gets none.
constexpr size_t kMaxUnwindRows = 16u << 20;

// One rule over [start, end) of file offsets: what the compiler reads out of each FDE's
// rows before it makes a table of them. rule.pc is not read.
struct UnwindSpan {
	uint64_t start = 0, end = 0;
	unwind_row rule{};
};

// The table's rows for spans in any order: where spans overlap, the one that starts first
// keeps the bytes; equal neighbours merge; a UNWIND_CFA_NONE row starts each gap and follows
// the last span. Offsets from 2^32 - 1 on cannot be a row's pc and are left out.
std::vector<unwind_row> unwind_rows_of(std::vector<UnwindSpan> spans);

// Two rows hold the same rule (their pc aside).
bool same_unwind_rule(const unwind_row &a, const unwind_row &b);

// The row whose rule holds at file offset pc: the last with row.pc <= pc, as the kernel
// side's binary search finds it; nullptr before the first row.
const unwind_row *find_unwind_row(std::span<const unwind_row> rows, uint64_t pc);

// The page index of sorted rows (struct unwind_page): for each page of file offsets from the
// first row's page to the last row's, the rows a pc in it can need. Empty for no rows.
std::vector<unwind_page> unwind_page_index(std::span<const unwind_row> rows);
