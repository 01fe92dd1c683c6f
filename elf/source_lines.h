// elf/source_lines.h: file:line (and inlined callers) for an address, from an ELF file's
// DWARF line tables and debug info, through elfutils' libdw.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/fd.h"

struct SourceLocation {
	std::string function; // demangled; for an inlined frame, the inlined function
	std::string file;     // as the line table names it (absolute where DWARF has the dir)
	uint32_t line = 0;
	bool inlined = false; // this location is code inlined into the next one
};

class SourceLines {
public:
	// Debug info of one ELF file: the binary itself, or its separate debug file. Null
	// when the file has no DWARF. The fd is not kept.
	static std::unique_ptr<SourceLines> open(int fd);
	~SourceLines();
	SourceLines(const SourceLines &) = delete;
	SourceLines &operator=(const SourceLines &) = delete;

	// Innermost first: each inlined function the address sits in (inlined = true), then
	// the concrete function with the line of the address. Empty when no line covers it.
	// `address` is in the ELF file's own terms (what addr2line takes).
	std::vector<SourceLocation> find(uint64_t address);

	// Its file had compressed debug sections, which libdw decompressed to read it: what
	// the file would take with them decompressed (decompressed_copy's size, at most). 0
	// when it had none.
	size_t inflated_bytes() const;

private:
	SourceLines();
	struct Impl;
	std::unique_ptr<Impl> impl_;
};
