// syms/symbol_file.h: a file some process mapped executable, and the sources that name
// addresses in it: its ELF symbols (its own .symtab, its separate debug file's, else its
// .dynsym) and, when wanted, its DWARF (lines and inlined calls, elf/source_lines.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/fd.h"
#include "elf/elf.h"
#include "elf/source_lines.h"
#include "syms/symbolizer_options.h"

class SymbolFile {
public:
	// The file at fd, which a process mapped from `path`, with its debug file looked up
	// inside `root` (the process's root) and then in `host_root` by build id, and its
	// DWARF read when the options want it. Null when fd is not an ELF file.
	static std::unique_ptr<SymbolFile> open(int fd, const std::string &path, int root, int host_root,
						const SymbolizerOptions &options, SymbolizerStats &stats);
	// An image in memory (the vDSO), named from its own symbols alone.
	static std::unique_ptr<SymbolFile> of_image(std::unique_ptr<ElfFile> elf);

	const ElfFile &elf() const { return *elf_; }
	const std::string &build_id() const { return elf_->build_id(); }
	// The function holding address (an ELF virtual address of the file), from the
	// fullest table; a PLT entry from the file itself, which a debug file does not have.
	const ElfFile::Symbol *symbol_at(uint64_t address);
	// symbol's name demangled, once per symbol.
	const std::string &name_of(const ElfFile::Symbol &symbol);
	// Its DWARF, read again when it was released; null when it has none (or none is wanted).
	SourceLines *lines(SymbolizerStats &stats);
	bool holds_lines() const { return lines_ != nullptr; }
	// Lets its DWARF go, the most memory by far: read again from the file, kept open, when
	// a frame needs it.
	void release_lines() { lines_.reset(); }
	// The decompressed copy of its DWARF (kept_decompressed_bytes), made when the DWARF was
	// first read from compressed sections; once dropped, it is read from the file again.
	void drop_dwarf_copy() { dwarf_copy_.reset(); }
	size_t dwarf_copy_bytes() const { return dwarf_copy_ ? dwarf_copy_bytes_ : 0; }

	// Its symbols (or, with want_lines, its DWARF) are in no file here: a debug file from
	// elsewhere may still have them.
	bool wants_debug_file() const { return wants_debug_file_; }
	// A debug file from elsewhere, already checked against the build id: its symbols
	// where this file has no .symtab, its DWARF where it has none and the options want
	// it. Nothing when it is not this file's or has neither.
	void take_debug_file(int fd, const SymbolizerOptions &options);

	// What it holds in memory, DWARF aside: for the bounds of the files kept.
	size_t held_bytes() const;

private:
	SymbolFile() = default;
	// lines_ from the DWARF of fd, kept open for reading it again.
	void read_lines(int fd, const SymbolizerOptions &options);

	std::unique_ptr<ElfFile> elf_;
	std::unique_ptr<ElfFile> debug_;     // its separate debug file, when one was found
	ElfFile *symbols_ = nullptr;         // the fullest table: elf's .symtab, else debug's, else elf's .dynsym
	std::unique_ptr<SourceLines> lines_; // with want_lines or want_inlined, where DWARF was found
	UniqueFd dwarf_fd_;                  // the file lines_ was read from, to read it again
	UniqueFd dwarf_copy_;                // the same, decompressed: read from first
	size_t dwarf_copy_bytes_ = 0;
	// Demangled names, keyed by where the raw name lies in the mapped file: each name is
	// demangled once, and only if some frame needs it.
	std::unordered_map<const char *, std::string> names_;
	bool wants_debug_file_ = false;
};
