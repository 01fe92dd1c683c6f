// elf/elf.cpp: function symbols, load segments and build id of an ELF64 file, read in place.
#include "elf/elf.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/demangle.h"

namespace {

int binding_rank(unsigned char info)
{
	switch (ELF64_ST_BIND(info)) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

struct Candidate {
	ElfFile::Symbol symbol; // its name without a version
	bool sized;
	bool versioned; // the table named it NAME@VERSION or NAME@@VERSION
	int binding;
};

// Of several names at one address, the one people know: a sized symbol over a label; a
// name the table holds without a version over one .symver made (a versioned name is an
// alias .symver makes of the definition at its address: glibc's
// __libc_start_main@@GLIBC_2.34 of __libc_start_main_impl, the name perf shows from
// DWARF); "getpid" over "__getpid"; a global over a local; the shorter (glibc's
// __libc_start_main_alias_1 is another alias of __libc_start_main_impl).
bool preferred(const Candidate &a, const Candidate &b)
{
	if (a.sized != b.sized)
		return a.sized;
	if (a.versioned != b.versioned)
		return !a.versioned;
	size_t au = leading_underscores(a.symbol.name), bu = leading_underscores(b.symbol.name);
	if (au != bu)
		return au < bu;
	if (a.binding != b.binding)
		return a.binding < b.binding;
	if (a.symbol.name.size() != b.symbol.name.size())
		return a.symbol.name.size() < b.symbol.name.size();
	return a.symbol.name < b.symbol.name;
}

// Reads a T at offset with memcpy: the file's own alignment is not trusted.
template <typename T>
bool read_struct(std::span<const uint8_t> data, uint64_t offset, T &out)
{
	if (offset > data.size() || sizeof(T) > data.size() - offset)
		return false;
	std::memcpy(&out, data.data() + offset, sizeof(T));
	return true;
}

} // namespace

std::unique_ptr<ElfFile> ElfFile::open(int fd)
{
	// A mapping dies with SIGBUS when the file is truncated under it, and the owner of a
	// file may do that while we read: a file anyone but root could change is copied.
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return nullptr;
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		if (st.st_size <= 0 || uint64_t(st.st_size) > kMaxCopiedSize)
			return nullptr;
		std::vector<uint8_t> bytes(size_t(st.st_size));
		bytes.resize(read_up_to(fd, bytes.data(), bytes.size())); // shrunk meanwhile: what was read is the file
		return from_bytes(std::move(bytes));
	}
	std::unique_ptr<ElfFile> elf(new ElfFile);
	elf->mapped_ = MappedFile::map(fd);
	elf->data_ = elf->mapped_.bytes();
	if (!elf->read_headers())
		return nullptr;
	return elf;
}

std::unique_ptr<ElfFile> ElfFile::from_bytes(std::vector<uint8_t> bytes)
{
	std::unique_ptr<ElfFile> elf(new ElfFile);
	elf->owned_ = std::move(bytes);
	elf->data_ = elf->owned_;
	if (!elf->read_headers())
		return nullptr;
	return elf;
}

std::optional<std::span<const uint8_t>> ElfFile::bytes_at(uint64_t offset, uint64_t size) const
{
	if (offset > data_.size() || size > data_.size() - offset)
		return std::nullopt;
	return data_.subspan(offset, size);
}

bool ElfFile::read_headers()
{
	Elf64_Ehdr header;
	if (!read_struct(data_, 0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
	    header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
		return false;
	type_ = header.e_type;
	machine_ = header.e_machine;

	// Section headers first: with more than 0xfff0 sections or 0xffff segments, the real
	// counts live in section 0.
	uint64_t section_count = header.e_shnum;
	uint32_t names_index = header.e_shstrndx;
	uint64_t segment_count = header.e_phnum;
	std::vector<NoteArea> notes;
	Elf64_Shdr first;
	bool have_sections = header.e_shoff != 0 && header.e_shentsize >= sizeof(Elf64_Shdr) &&
			     read_struct(data_, header.e_shoff, first);
	if (have_sections) {
		if (section_count == 0)
			section_count = first.sh_size;
		if (names_index == SHN_XINDEX)
			names_index = first.sh_link;
		if (segment_count == PN_XNUM)
			segment_count = first.sh_info;
		// Every header must fit in the file; this also bounds the loop below.
		if (section_count > (data_.size() - header.e_shoff) / header.e_shentsize)
			section_count = 0;
		sections_.reserve(section_count);
		for (uint64_t i = 0; i < section_count; i++) {
			Elf64_Shdr sh;
			read_struct(data_, header.e_shoff + i * header.e_shentsize, sh);
			sections_.push_back(Section{sh.sh_name, sh.sh_type, sh.sh_offset, sh.sh_size,
						    sh.sh_entsize, sh.sh_link, sh.sh_addr});
		}
		if (names_index < sections_.size() && sections_[names_index].type == SHT_STRTAB)
			section_names_ = sections_[names_index];
	}

	if (header.e_phoff != 0 && header.e_phentsize >= sizeof(Elf64_Phdr) &&
	    header.e_phoff <= data_.size()) {
		uint64_t fit = (data_.size() - header.e_phoff) / header.e_phentsize;
		segment_count = std::min(segment_count, fit);
		for (uint64_t i = 0; i < segment_count; i++) {
			Elf64_Phdr ph;
			read_struct(data_, header.e_phoff + i * header.e_phentsize, ph);
			if (ph.p_type == PT_LOAD)
				segments_.push_back(Segment{ph.p_offset, ph.p_filesz, ph.p_vaddr, ph.p_memsz});
			else if (ph.p_type == PT_NOTE)
				notes.push_back(NoteArea{ph.p_offset, ph.p_filesz, ph.p_align == 8 ? 8u : 4u});
		}
	}
	// Files without program headers (separate debug files) still carry the sections.
	for (const Section &section : sections_)
		if (section.type == SHT_NOTE)
			notes.push_back(NoteArea{section.offset, section.size, 4});
	read_build_id(notes);
	return true;
}

void ElfFile::read_build_id(const std::vector<NoteArea> &areas)
{
	// Notes in ELF64 are 4-byte aligned except in 8-aligned segments (.note.gnu.property):
	// the alignment decides where the next note starts.
	auto scan = [&](std::span<const uint8_t> notes, uint64_t align) {
		uint64_t pos = 0;
		while (notes.size() - pos >= sizeof(Elf64_Nhdr)) {
			Elf64_Nhdr note;
			std::memcpy(&note, notes.data() + pos, sizeof(note));
			pos += sizeof(note);
			uint64_t name_size = (uint64_t(note.n_namesz) + align - 1) & ~(align - 1);
			uint64_t desc_size = (uint64_t(note.n_descsz) + align - 1) & ~(align - 1);
			if (name_size > notes.size() - pos)
				return false;
			const uint8_t *name = notes.data() + pos;
			pos += name_size;
			if (note.n_descsz > notes.size() - pos)
				return false;
			if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
			    note.n_descsz > 0) {
				static const char hex[] = "0123456789abcdef";
				for (uint32_t i = 0; i < note.n_descsz; i++) {
					uint8_t byte = notes[pos + i];
					build_id_ += hex[byte >> 4];
					build_id_ += hex[byte & 15];
				}
				return true;
			}
			if (desc_size > notes.size() - pos)
				return false;
			pos += desc_size;
		}
		return false;
	};

	for (const NoteArea &area : areas) {
		auto notes = bytes_at(area.offset, area.size);
		if (notes && scan(*notes, area.align))
			return;
	}
}

std::optional<uint64_t> ElfFile::address_of_file_offset(uint64_t offset) const
{
	for (const Segment &segment : segments_)
		if (offset >= segment.offset && offset - segment.offset < segment.file_size)
			return offset - segment.offset + segment.address;
	return std::nullopt;
}

std::optional<uint64_t> ElfFile::file_offset_of_address(uint64_t address) const
{
	for (const Segment &segment : segments_)
		if (address >= segment.address && address - segment.address < segment.file_size)
			return address - segment.address + segment.offset;
	return std::nullopt;
}

std::optional<std::span<const uint8_t>> ElfFile::bytes_at_address(uint64_t address, uint64_t size) const
{
	for (const Segment &segment : segments_)
		if (address >= segment.address && address - segment.address <= segment.file_size &&
		    size <= segment.file_size - (address - segment.address))
			return bytes_at(segment.offset + (address - segment.address), size);
	return std::nullopt;
}

std::string_view ElfFile::section_name(const Section &section) const
{
	if (!section_names_)
		return {};
	auto table = bytes_at(section_names_->offset, section_names_->size);
	if (!table || section.name >= table->size())
		return {};
	const char *start = reinterpret_cast<const char *>(table->data()) + section.name;
	const void *nul = std::memchr(start, 0, table->size() - section.name);
	if (!nul)
		return {};
	return std::string_view(start, static_cast<const char *>(nul) - start);
}

std::optional<std::span<const uint8_t>> ElfFile::section_data(std::string_view name) const
{
	for (const Section &section : sections_)
		if (section.type != SHT_NOBITS && section_name(section) == name)
			return bytes_at(section.offset, section.size);
	return std::nullopt;
}

std::optional<uint64_t> ElfFile::section_address(std::string_view name) const
{
	const Section *section = section_named(name);
	if (!section)
		return std::nullopt;
	return section->address;
}

bool ElfFile::read_symbol_table(const Section &table)
{
	if (table.entry_size != 0 && table.entry_size != sizeof(Elf64_Sym))
		return false;
	auto entries = bytes_at(table.offset, table.size);
	if (!entries || table.link >= sections_.size())
		return false;
	const Section &strings_section = sections_[table.link];
	if (strings_section.type != SHT_STRTAB)
		return false;
	auto strings = bytes_at(strings_section.offset, strings_section.size);
	if (!strings)
		return false;
	symbol_table_bytes_ += entries->size() + strings->size();
	const char *string_base = reinterpret_cast<const char *>(strings->data());

	std::vector<Candidate> candidates;
	size_t count = entries->size() / sizeof(Elf64_Sym);
	for (size_t i = 1; i < count; i++) { // entry 0 is the reserved null symbol
		Elf64_Sym sym;
		std::memcpy(&sym, entries->data() + i * sizeof(Elf64_Sym), sizeof(sym));
		unsigned type = ELF64_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0 ||
		    sym.st_name >= strings->size())
			continue;
		const char *name = string_base + sym.st_name;
		const void *nul = std::memchr(name, 0, strings->size() - sym.st_name);
		if (!nul || nul == name)
			continue;
		uint64_t end = sym.st_value + sym.st_size;
		if (end < sym.st_value)
			end = UINT64_MAX;
		// A version is no part of the name: "__libc_start_main@@GLIBC_2.34".
		std::string_view text(name, static_cast<const char *>(nul) - name);
		const size_t at = text.find('@');
		if (at == 0)
			continue;
		candidates.push_back(Candidate{{sym.st_value, end, text.substr(0, at)}, sym.st_size != 0,
					       at != std::string_view::npos, binding_rank(sym.st_info)});
	}
	if (candidates.empty())
		return false;

	std::sort(candidates.begin(), candidates.end(), [](const Candidate &a, const Candidate &b) {
		if (a.symbol.start != b.symbol.start)
			return a.symbol.start < b.symbol.start;
		return preferred(a, b);
	});
	symbols_.clear();
	symbols_.reserve(candidates.size());
	for (const Candidate &c : candidates)
		if (symbols_.empty() || symbols_.back().start != c.symbol.start)
			symbols_.push_back(c.symbol);

	return true;
}

// A symbol without a size (assembly, hand-written labels) runs to the next symbol,
// or to the end of the segment it is in when it is the last one.
void ElfFile::end_unsized_symbols()
{
	for (size_t i = 0; i < symbols_.size(); i++) {
		Symbol &s = symbols_[i];
		if (s.end != s.start)
			continue;
		if (i + 1 < symbols_.size()) {
			s.end = symbols_[i + 1].start;
			continue;
		}
		s.end = s.start + 1;
		for (const Segment &segment : segments_)
			if (s.start >= segment.address && s.start - segment.address < segment.memory_size)
				s.end = segment.address + segment.memory_size;
	}
}

const ElfFile::Section *ElfFile::section_named(std::string_view name) const
{
	for (const Section &section : sections_)
		if (section.type != SHT_NOBITS && section_name(section) == name)
			return &section;
	return nullptr;
}

// x86-64's PLT: after the 16-byte PLT0, one 16-byte entry per .rela.plt relocation, in
// order (in .plt.sec instead when the file was built for IBT). A sample in one, and code
// that jumps through one, are named "NAME@plt" as perf names them.
void ElfFile::add_plt_symbols()
{
	if (machine_ != EM_X86_64)
		return;
	const Section *relocations = section_named(".rela.plt");
	const Section *plt = section_named(".plt.sec");
	uint64_t first = 0;
	if (!plt) {
		plt = section_named(".plt");
		first = 16;
	}
	if (!relocations || !plt || relocations->type != SHT_RELA || relocations->link >= sections_.size())
		return;
	const Section &dynsym = sections_[relocations->link];
	if (dynsym.link >= sections_.size())
		return;
	auto entries = bytes_at(relocations->offset, relocations->size);
	auto symbols = bytes_at(dynsym.offset, dynsym.size);
	auto strings = bytes_at(sections_[dynsym.link].offset, sections_[dynsym.link].size);
	if (!entries || !symbols || !strings)
		return;
	// Each relocation's name, by the GOT slot it fills (r_offset) and in table order.
	std::vector<std::pair<uint64_t, std::string>> by_slot;
	std::vector<std::string> in_order;
	const size_t count = entries->size() / sizeof(Elf64_Rela);
	for (size_t i = 0; i < count; i++) {
		Elf64_Rela rela;
		Elf64_Sym sym;
		std::memcpy(&rela, entries->data() + i * sizeof(rela), sizeof(rela));
		std::string name;
		if (ELF64_R_SYM(rela.r_info) == 0 && ELF64_R_TYPE(rela.r_info) == R_X86_64_IRELATIVE) {
			// No symbol: the resolver's address (libc's memcpy, chosen at load), named
			// as objdump and perf name it.
			char text[40];
			std::snprintf(text, sizeof(text), "*ABS*+0x%" PRIx64, uint64_t(rela.r_addend));
			name = text;
		} else if (read_struct(*symbols, ELF64_R_SYM(rela.r_info) * sizeof(Elf64_Sym), sym) &&
			   sym.st_name < strings->size()) {
			const char *text = reinterpret_cast<const char *>(strings->data()) + sym.st_name;
			if (const void *nul = std::memchr(text, 0, strings->size() - sym.st_name))
				name.assign(text, static_cast<const char *>(nul));
		}
		in_order.push_back(name);
		if (!name.empty())
			by_slot.emplace_back(rela.r_offset, std::move(name));
	}
	std::sort(by_slot.begin(), by_slot.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
	// An entry jumps through its GOT slot (jmp *disp32(%rip), ff 25, after an endbr64 or a
	// bnd prefix): the slot names it, as objdump finds it. Without the entries' bytes (a
	// debug file's), entry i is taken to be relocation i's, as in an ordinary lazy PLT.
	auto code = plt->type == SHT_NOBITS ? std::nullopt : bytes_at(plt->offset, plt->size);
	std::vector<Symbol> added;
	// Entries are read from the section (within the file), or one per relocation.
	const size_t entries_count = code ? code->size() / 16 : in_order.size();
	for (size_t i = 0; i < entries_count && first + 16 * (i + 1) <= plt->size; i++) {
		const uint64_t start = plt->address + first + 16 * i;
		std::string name;
		if (code) {
			const uint8_t *entry = code->data() + first + 16 * i;
			for (size_t at = 0; at + 6 <= 16; at++) {
				if (entry[at] != 0xff || entry[at + 1] != 0x25)
					continue;
				int32_t displacement;
				std::memcpy(&displacement, entry + at + 2, sizeof(displacement));
				const uint64_t slot = start + at + 6 + uint64_t(int64_t(displacement));
				auto it = std::lower_bound(by_slot.begin(), by_slot.end(), slot,
							   [](const auto &a, uint64_t b) { return a.first < b; });
				if (it != by_slot.end() && it->first == slot)
					name = it->second;
				break;
			}
		} else if (i < in_order.size()) {
			name = in_order[i];
		}
		// Sized symbols only, as yet: unsized ones still end where they start.
		if (name.empty() || find_symbol(start))
			continue;
		made_names_.push_back(name + "@plt");
		added.push_back(Symbol{start, start + 16, made_names_.back()});
	}
	if (added.empty())
		return;
	plt_start_ = added.front().start;
	plt_end_ = added.back().end;
	symbols_.insert(symbols_.end(), added.begin(), added.end());
	std::sort(symbols_.begin(), symbols_.end(), [](const Symbol &a, const Symbol &b) { return a.start < b.start; });
}

void ElfFile::load_symbols()
{
	symbols_loaded_ = true;
	for (uint32_t wanted : {SHT_SYMTAB, SHT_DYNSYM})
		for (const Section &section : sections_)
			if (section.type == wanted && read_symbol_table(section)) {
				symbol_table_ = wanted == SHT_SYMTAB ? ".symtab" : ".dynsym";
				add_plt_symbols();
				end_unsized_symbols();
				return;
			}
	add_plt_symbols();
}

size_t ElfFile::held_bytes() const
{
	size_t bytes = sizeof(ElfFile) + owned_.capacity() + segments_.capacity() * sizeof(Segment) +
		       sections_.capacity() * sizeof(Section) + symbols_.capacity() * sizeof(Symbol);
	if (owned_.empty())
		bytes += symbol_table_bytes_;
	for (const std::string &name : made_names_)
		bytes += sizeof(name) + name.capacity() + 1;
	return bytes;
}

const ElfFile::Symbol *ElfFile::find_symbol(uint64_t address)
{
	if (!symbols_loaded_)
		load_symbols();
	auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
				   [](uint64_t a, const Symbol &s) { return a < s.start; });
	// The nearest start may be a small symbol nested in a bigger one that still holds
	// the address (a local label with a size inside its function): look a little further back.
	for (int steps = 0; it != symbols_.begin() && steps < 8; steps++) {
		--it;
		if (address < it->end)
			return &*it;
	}
	return nullptr;
}

const ElfFile::Symbol *ElfFile::find_plt_symbol(uint64_t address)
{
	if (!symbols_loaded_)
		load_symbols();
	return address >= plt_start_ && address < plt_end_ ? find_symbol(address) : nullptr;
}

size_t ElfFile::symbol_count()
{
	if (!symbols_loaded_)
		load_symbols();
	return symbols_.size();
}

std::string_view ElfFile::symbol_table()
{
	if (!symbols_loaded_)
		load_symbols();
	return symbol_table_;
}

std::optional<ElfSymbolValue> find_elf_symbol(const ElfFile &elf, std::string_view name)
{
	for (auto [table_name, strings_name] : {std::pair{".dynsym", ".dynstr"}, std::pair{".symtab", ".strtab"}}) {
		auto table = elf.section_data(table_name);
		auto strings = elf.section_data(strings_name);
		if (!table || !strings)
			continue;
		for (size_t at = 0; at + sizeof(Elf64_Sym) <= table->size(); at += sizeof(Elf64_Sym)) {
			Elf64_Sym symbol;
			std::memcpy(&symbol, table->data() + at, sizeof(symbol));
			if (symbol.st_shndx == SHN_UNDEF || symbol.st_name >= strings->size())
				continue;
			const char *text = reinterpret_cast<const char *>(strings->data()) + symbol.st_name;
			const size_t room = strings->size() - symbol.st_name;
			if (strnlen(text, room) == name.size() && std::memcmp(text, name.data(), name.size()) == 0)
				return ElfSymbolValue{symbol.st_value, symbol.st_size};
		}
	}
	return std::nullopt;
}
