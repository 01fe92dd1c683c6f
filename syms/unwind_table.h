// syms/unwind_table.h: an object's unwind table, compiled from its call frame information
// (.eh_frame, or .debug_frame) with libdw, for the kernel side's table walk.
#pragma once

#include <linux/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "profile.h"

struct UnwindTable {
	// Sorted by pc (a file offset, see struct unwind_row). Adjacent rows never hold the
	// same rule; a UNWIND_CFA_NONE row starts each gap that no FDE covers, so a pc past
	// the last FDE before it finds no rule.
	std::vector<unwind_row> rows;
	// Where the rules came from: ".eh_frame", ".debug_frame" (the file's own or its debug
	// file's), or "" when neither had any.
	std::string source;
};

// The table of the ELF file open at fd, from its .eh_frame; from the .debug_frame of the
// file, or of its separate debug file (debug_fd, -1 for none), where there is no .eh_frame.
// Nothing when the file is no ELF64 x86-64 object; an empty table when it has no CFI.
// Hostile input yields fewer rows, never a crash or a read outside the file.
std::optional<UnwindTable> compile_unwind_table(int fd, int debug_fd = -1);
// The same from bytes in memory (tests and the fuzz target).
std::optional<UnwindTable> compile_unwind_table(std::span<const uint8_t> elf,
						std::span<const uint8_t> debug = {});
