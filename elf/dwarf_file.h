// elf/dwarf_file.h: an ELF file's DWARF opened for libdw (elf/source_lines reads it): how
// the file is read, and a copy of it with its compressed sections decompressed.
#pragma once

#include <cstddef>
#include <vector>

#include "base/fd.h"
#include "elf/elf_handles.h"

struct DebugInfo {
	ElfHandle elf;
	DwarfHandle dwarf; // ended before elf: it reads elf's section data
	// What the file would take with its compressed sections decompressed; 0 when it has
	// none (libdw decompressed them).
	size_t inflated_bytes = 0;
};

// The DWARF of the ELF file behind fd. libdw reads every debug section in dwarf_begin_elf;
// the fd is then given up, so nothing reads it later and the caller may close it. Empty
// (no dwarf) when the file is not ELF, has no DWARF, or its string sections are not
// NUL-terminated.
DebugInfo read_debug_info(int fd);

// An ELF image whose only DWARF is an empty .debug_line: a stand-in alt file that holds
// nothing, so every reference into it fails cleanly.
std::vector<char> empty_dwarf_image();

// A copy of the ELF file at fd with its compressed sections decompressed (SHF_COMPRESSED,
// as Debian, Fedora and debuginfod ship debug files), in memory (a memfd) that
// SourceLines::open reads again without inflating anything; *bytes is its size. Invalid
// when fd has no compressed section, or the copy cannot be made.
UniqueFd decompressed_copy(int fd, size_t *bytes);
