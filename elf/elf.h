// elf/elf.h: function symbols, load segments and build id of an ELF64 file, read in place.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.h"

// Every offset and size the file states is checked against the file's size before it is
// read, so a truncated or hostile file yields fewer symbols, never a read outside it.
class ElfFile {
public:
	struct Symbol {
		uint64_t start = 0; // ELF virtual address
		uint64_t end = 0;   // start + st_size, or the next symbol's start when st_size is 0
		std::string_view name; // raw (mangled), pointing into the mapped file
	};

	// nullptr unless the bytes start with a little-endian ELF64 header. A file only root
	// can write is mapped; any other is read into memory (a mapping of it would fault if
	// its owner truncated it), unless it is larger than kMaxCopiedSize.
	static std::unique_ptr<ElfFile> open(int fd);
	static constexpr uint64_t kMaxCopiedSize = 512ull << 20;
	static std::unique_ptr<ElfFile> from_bytes(std::vector<uint8_t> bytes);

	// A file offset (what /proc/PID/maps gives) as the ELF virtual address it is loaded at:
	// through the PT_LOAD segment whose [p_offset, p_offset + p_filesz) holds it.
	std::optional<uint64_t> address_of_file_offset(uint64_t offset) const;
	// The other way: the file offset of an ELF virtual address the file holds (what a uprobe
	// is attached at), through the PT_LOAD segment whose file bytes hold it.
	std::optional<uint64_t> file_offset_of_address(uint64_t address) const;

	// The bytes loaded at [address, address + size) (ELF virtual addresses) that the file
	// holds: through the PT_LOAD segment holding them all.
	std::optional<std::span<const uint8_t>> bytes_at_address(uint64_t address, uint64_t size) const;

	// The function whose [start, end) holds address (an ELF virtual address), or nullptr.
	// The first call reads and sorts the symbols: .symtab, or .dynsym when the file was
	// stripped of .symtab; plus, on x86-64, one "NAME@plt" per PLT entry, as perf names them.
	const Symbol *find_symbol(uint64_t address);
	// The "NAME@plt" entry holding address, or nullptr: for a file whose other names come
	// from its separate debug file, which keeps no PLT.
	const Symbol *find_plt_symbol(uint64_t address);
	size_t symbol_count();
	bool symbols_loaded() const { return symbols_loaded_; }
	// Which table the symbols came from: ".symtab", ".dynsym", or "" when neither has any.
	std::string_view symbol_table();

	// The NT_GNU_BUILD_ID note as lowercase hex, "" when the file has none.
	const std::string &build_id() const { return build_id_; }

	// A section's bytes by name (".debug_line", ...), when it lies inside the file.
	// This is what a DWARF reader for file:line starts from.
	std::optional<std::span<const uint8_t>> section_data(std::string_view name) const;

	// The ELF virtual address a section is loaded at, by name (0 for one not loaded).
	std::optional<uint64_t> section_address(std::string_view name) const;

	// True when the section is there with contents (not SHT_NOBITS, as in a stripped file's
	// debug file): ".symtab" tells a file that has its own full symbol table.
	bool has_section(std::string_view name) const { return section_data(name).has_value(); }
	// True when it has DWARF debug info (compressed or not).
	bool has_dwarf() const { return has_section(".debug_info") || has_section(".zdebug_info"); }

	uint16_t type() const { return type_; } // ET_EXEC, ET_DYN, ...

	// The whole file, as read.
	std::span<const uint8_t> bytes() const { return data_; }
	// What it holds in memory: a copy of the file, or of a mapped one the pages of the
	// symbol table read; and the symbols sorted.
	size_t held_bytes() const;

private:
	struct Segment {
		uint64_t offset, file_size, address, memory_size;
	};
	struct Section {
		uint32_t name; // offset into the section-name table
		uint32_t type;
		uint64_t offset, size, entry_size;
		uint32_t link;
		uint64_t address;
	};

	struct NoteArea {
		uint64_t offset, size, align;
	};

	ElfFile() = default;
	bool read_headers();
	void read_build_id(const std::vector<NoteArea> &areas);
	void load_symbols();
	bool read_symbol_table(const Section &table);
	void add_plt_symbols();
	void end_unsized_symbols();
	const Section *section_named(std::string_view name) const;
	std::string_view section_name(const Section &section) const;
	std::optional<std::span<const uint8_t>> bytes_at(uint64_t offset, uint64_t size) const;

	MappedFile mapped_;
	std::vector<uint8_t> owned_;
	std::span<const uint8_t> data_;

	uint16_t type_ = 0;
	uint16_t machine_ = 0;
	std::vector<Segment> segments_; // PT_LOAD only
	std::vector<Section> sections_;
	std::optional<Section> section_names_;
	std::string build_id_;

	bool symbols_loaded_ = false;
	std::string_view symbol_table_;
	uint64_t symbol_table_bytes_ = 0; // the tables read and their strings
	std::vector<Symbol> symbols_; // sorted by start, one per start
	uint64_t plt_start_ = 0, plt_end_ = 0;
	std::deque<std::string> made_names_; // names no table holds ("puts@plt"); a deque keeps them in place
};

// A symbol's value by name, from .dynsym, then .symtab; with its size.
struct ElfSymbolValue {
	uint64_t address = 0, size = 0;
};
std::optional<ElfSymbolValue> find_elf_symbol(const ElfFile &elf, std::string_view name);
