// unwind/table.cpp: an object's unwind table, compiled from its call frame information with libdw.
#include "unwind/table.h"

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>

#include "syms/elf.h"
#include "syms/elf_handles.h"
#include "syms/fd.h"

namespace {

// Bounds that hold whatever the input: real objects stay far below them (cc1plus, 35 MB,
// has 49,000 FDEs, 6,678 rows in its longest).
constexpr size_t kMaxFdes = 4u << 20;
constexpr size_t kMaxRowsPerFde = 1u << 16;
// libdw plays an FDE's program from its start for every row asked of it, so a row costs
// about the bytes of its FDE, and hostile CFI (one FDE of a million rows) would take hours.
// An object may have libdw play kBytesPlayedPerByte times its CFI's size, plus a little:
// real code plays about 100 (cc1plus: 258 MB for 2.6 MB of .eh_frame, in 0.3 s).
constexpr uint64_t kBytesPlayedPerByte = 256;
constexpr uint64_t kBytesPlayedAnyway = 64ull << 20;
// Real objects have a handful of PT_LOAD segments; each row is matched against all of them.
constexpr size_t kMaxLoadSegments = 64;
// No .debug_frame is decompressed past this.
constexpr uint64_t kMaxDecompressed = 1ull << 30;

constexpr int kRegRbp = 6;
constexpr int kRegRsp = 7;
constexpr int kRegRip = 16; // the return address column

// An ELF64 x86-64 object open in libelf, and the bytes it reads when they are a copy.
// libelf writes into an image it reads from memory (elf_compress rewrites a section's
// header in place): it never gets the caller's bytes, or a read-only mapping.
struct ElfImage {
	std::vector<uint8_t> copy;
	ElfHandle elf; // ended before copy goes
};

bool x86_64_object(Elf *elf)
{
	GElf_Ehdr header;
	return elf && elf_kind(elf) == ELF_K_ELF && gelf_getclass(elf) == ELFCLASS64 && gelf_getehdr(elf, &header) &&
	       header.e_ident[EI_DATA] == ELFDATA2LSB && header.e_machine == EM_X86_64;
}

bool libelf_ready()
{
	static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
	return ready;
}

ElfImage image_of_copy(std::vector<uint8_t> bytes)
{
	ElfImage image;
	image.copy = std::move(bytes);
	if (!libelf_ready() || image.copy.size() < sizeof(Elf64_Ehdr))
		return {};
	image.elf.reset(elf_memory(reinterpret_cast<char *>(image.copy.data()), image.copy.size()));
	if (!x86_64_object(image.elf.get()))
		return {};
	return image;
}

// A file only root can change is mapped (ELF_C_READ_MMAP: private, and libelf copies what
// it rewrites); any other is read, as ElfFile does: a mapping dies with SIGBUS when its
// owner truncates the file under it.
ElfImage image_of_file(int fd)
{
	struct stat st;
	if (!libelf_ready() || fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		return {};
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		if (uint64_t(st.st_size) > ElfFile::kMaxCopiedSize)
			return {};
		std::vector<uint8_t> bytes(size_t(st.st_size));
		bytes.resize(read_up_to(fd, bytes.data(), bytes.size())); // shrunk meanwhile: what was read is the file
		return image_of_copy(std::move(bytes));
	}
	ElfImage image;
	image.elf.reset(elf_begin(fd, ELF_C_READ_MMAP, nullptr));
	if (!x86_64_object(image.elf.get()))
		return {};
	return image;
}

// The section of that name with contents in the file (not NOBITS, as in a debug file).
Elf_Scn *section_named(Elf *elf, const char *wanted, GElf_Shdr &header)
{
	size_t names;
	if (elf_getshdrstrndx(elf, &names) != 0)
		return nullptr;
	for (Elf_Scn *section = nullptr; (section = elf_nextscn(elf, section));) {
		if (!gelf_getshdr(section, &header) || header.sh_type == SHT_NOBITS)
			continue;
		const char *name = elf_strptr(elf, names, header.sh_name);
		if (name && std::strcmp(name, wanted) == 0)
			return section;
	}
	return nullptr;
}

// A PT_LOAD segment's file bytes: [address, end) in memory is [offset, ...) in the file.
struct Load {
	uint64_t address, end, offset;
};

std::vector<Load> load_segments(Elf *elf)
{
	std::vector<Load> loads;
	size_t count;
	if (elf_getphdrnum(elf, &count) != 0)
		return loads;
	for (size_t i = 0; i < count && loads.size() < kMaxLoadSegments; i++) {
		GElf_Phdr segment;
		uint64_t end, file_end;
		if (!gelf_getphdr(elf, int(i), &segment) || segment.p_type != PT_LOAD || segment.p_filesz == 0 ||
		    __builtin_add_overflow(segment.p_vaddr, segment.p_filesz, &end) ||
		    __builtin_add_overflow(segment.p_offset, segment.p_filesz, &file_end))
			continue;
		loads.push_back({segment.p_vaddr, end, segment.p_offset});
	}
	return loads;
}

// Adds the rule over [start, end) (ELF virtual addresses) as spans of file offsets: the
// parts in no segment's file bytes are dropped.
void add_in_file(const std::vector<Load> &loads, uint64_t start, uint64_t end, const unwind_row &rule,
		 std::vector<UnwindSpan> &spans)
{
	for (const Load &load : loads) {
		const uint64_t from = std::max(start, load.address), to = std::min(end, load.end);
		if (from < to)
			spans.push_back({from - load.address + load.offset, to - load.address + load.offset, rule});
	}
}

// --- FDEs: where each one is ----------------------------------------------------------------

// A value in the DW_EH_PE format of encoding's low bits, read from [p, end) (little-endian).
bool read_encoded(const uint8_t *&p, const uint8_t *end, uint8_t encoding, uint64_t &value)
{
	auto fixed = [&](size_t size, bool is_signed) {
		if (size_t(end - p) < size)
			return false;
		value = 0;
		std::memcpy(&value, p, size);
		if (is_signed && size < 8 && (value >> (size * 8 - 1)) & 1)
			value |= ~uint64_t(0) << (size * 8);
		p += size;
		return true;
	};
	auto leb = [&](bool is_signed) {
		value = 0;
		for (unsigned shift = 0; p < end; shift += 7) {
			const uint8_t byte = *p++;
			if (shift < 64)
				value |= uint64_t(byte & 0x7f) << shift;
			if (!(byte & 0x80)) {
				if (is_signed && shift + 7 < 64 && (byte & 0x40))
					value |= ~uint64_t(0) << (shift + 7);
				return true;
			}
		}
		return false;
	};
	switch (encoding & 0x0f) {
	case DW_EH_PE_absptr:
		return fixed(8, false);
	case DW_EH_PE_udata2:
		return fixed(2, false);
	case DW_EH_PE_udata4:
		return fixed(4, false);
	case DW_EH_PE_udata8:
		return fixed(8, false);
	case DW_EH_PE_sdata2:
		return fixed(2, true);
	case DW_EH_PE_sdata4:
		return fixed(4, true);
	case DW_EH_PE_sdata8:
		return fixed(8, true);
	case DW_EH_PE_uleb128:
		return leb(false);
	case DW_EH_PE_sleb128:
		return leb(true);
	default:
		return false;
	}
}

// How the CIE's FDEs encode their addresses: its 'R' augmentation, absptr without one.
// Nothing for an augmentation that cannot be read past (not "z...", or one we do not know).
std::optional<uint8_t> fde_encoding(const Dwarf_CIE &cie)
{
	const char *augmentation = cie.augmentation;
	if (!augmentation || !*augmentation)
		return DW_EH_PE_absptr;
	if (augmentation[0] != 'z' || (!cie.augmentation_data && cie.augmentation_data_size))
		return std::nullopt;
	const uint8_t *p = cie.augmentation_data, *end = p + cie.augmentation_data_size;
	for (const char *c = augmentation + 1; *c; c++) {
		switch (*c) {
		case 'R':
			if (p >= end)
				return std::nullopt;
			return *p;
		case 'L': // the LSDA pointer's encoding
			if (p >= end)
				return std::nullopt;
			p++;
			break;
		case 'P': { // the personality routine: its encoding, then the pointer
			uint64_t ignored;
			if (p >= end)
				return std::nullopt;
			const uint8_t encoding = *p++;
			if (encoding != DW_EH_PE_omit && !read_encoded(p, end, encoding, ignored))
				return std::nullopt;
			break;
		}
		case 'S': // a signal frame
		case 'B': // AArch64 pointer authentication, no data
			break;
		default:
			return std::nullopt;
		}
	}
	return DW_EH_PE_absptr;
}

// libdw grows a frame's register array to the highest register an instruction names (up to
// 134 million of them: 2 GiB, zeroed) and copies the frame at each DW_CFA_remember_state: a
// few hostile bytes would have it allocate gigabytes. So every program is checked before
// libdw may play it: registers up to kMaxRegister (x86-64's go up to 125), remember_state
// nested at most kMaxRememberDepth deep, every operand inside the program. This reads
// operands only; what the instructions mean is libdw's to say.
constexpr uint64_t kMaxRegister = 255;
constexpr int kMaxRememberDepth = 64;

bool program_bounded(const uint8_t *p, const uint8_t *end, uint8_t address_encoding)
{
	uint64_t value;
	auto uleb = [&] { return read_encoded(p, end, DW_EH_PE_uleb128, value); };
	auto sleb = [&] { return read_encoded(p, end, DW_EH_PE_sleb128, value); };
	auto reg = [&] { return uleb() && value <= kMaxRegister; };
	auto skip = [&](uint64_t size) {
		if (uint64_t(end - p) < size)
			return false;
		p += size;
		return true;
	};
	int depth = 0;
	while (p < end) {
		const uint8_t op = *p++;
		bool ok;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
		case DW_CFA_restore: // the register is in the opcode's low 6 bits
			continue;
		case DW_CFA_offset:
			ok = uleb();
			break;
		default:
			switch (op) {
			case DW_CFA_nop:
			case DW_CFA_GNU_window_save:
				ok = true;
				break;
			case DW_CFA_remember_state:
				ok = ++depth <= kMaxRememberDepth;
				break;
			case DW_CFA_restore_state:
				depth -= depth > 0;
				ok = true;
				break;
			case DW_CFA_set_loc:
				ok = read_encoded(p, end, address_encoding, value);
				break;
			case DW_CFA_advance_loc1:
				ok = skip(1);
				break;
			case DW_CFA_advance_loc2:
				ok = skip(2);
				break;
			case DW_CFA_advance_loc4:
				ok = skip(4);
				break;
			case DW_CFA_MIPS_advance_loc8:
				ok = skip(8);
				break;
			case DW_CFA_def_cfa_offset:
			case DW_CFA_GNU_args_size:
				ok = uleb();
				break;
			case DW_CFA_def_cfa_offset_sf:
				ok = sleb();
				break;
			case DW_CFA_restore_extended:
			case DW_CFA_undefined:
			case DW_CFA_same_value:
			case DW_CFA_def_cfa_register:
				ok = reg();
				break;
			case DW_CFA_offset_extended:
			case DW_CFA_val_offset:
			case DW_CFA_def_cfa:
			case DW_CFA_GNU_negative_offset_extended:
				ok = reg() && uleb();
				break;
			case DW_CFA_register:
				ok = reg() && reg();
				break;
			case DW_CFA_offset_extended_sf:
			case DW_CFA_val_offset_sf:
			case DW_CFA_def_cfa_sf:
				ok = reg() && sleb();
				break;
			case DW_CFA_def_cfa_expression:
				ok = uleb() && skip(value);
				break;
			case DW_CFA_expression:
			case DW_CFA_val_expression:
				ok = reg() && uleb() && skip(value);
				break;
			default:
				ok = false;
			}
		}
		if (!ok)
			return false;
	}
	return true;
}

// What a CIE's FDEs need of it, once its own program has been checked.
struct CieCheck {
	uint8_t encoding; // of the FDEs' addresses
	bool augmented;   // "z...": each FDE has an augmentation block before its program
};

std::optional<CieCheck> check_cie(const Dwarf_CIE &cie)
{
	const std::optional<uint8_t> encoding = fde_encoding(cie);
	if (!encoding || !program_bounded(cie.initial_instructions, cie.initial_instructions_end, *encoding))
		return std::nullopt;
	return CieCheck{*encoding, cie.augmentation && cie.augmentation[0] == 'z'};
}

struct Fde {
	uint64_t start, end; // ELF virtual addresses
	uint64_t size;       // of its entry: what libdw plays for each of its rows
};

// An FDE's [initial_location, + address_range), read as libdw reads it (a pc-relative
// location counts from the field's own address; the text- and data-relative bases of
// libdw's CFI are 0), once its program is checked.
std::optional<Fde> check_fde(const Dwarf_FDE &fde, const CieCheck &cie, uint64_t field_address)
{
	if (cie.encoding == DW_EH_PE_omit || (cie.encoding & DW_EH_PE_indirect))
		return std::nullopt;
	const uint8_t *p = fde.start;
	uint64_t start, range, end, augmentation;
	if (!read_encoded(p, fde.end, cie.encoding, start) || !read_encoded(p, fde.end, cie.encoding & 0x0f, range))
		return std::nullopt;
	switch (cie.encoding & 0x70) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_textrel:
	case DW_EH_PE_datarel:
		break;
	case DW_EH_PE_pcrel:
		start += field_address;
		break;
	default:
		return std::nullopt;
	}
	if (range == 0 || __builtin_add_overflow(start, range, &end))
		return std::nullopt;
	if (cie.augmented) {
		if (!read_encoded(p, fde.end, DW_EH_PE_uleb128, augmentation) || augmentation > uint64_t(fde.end - p))
			return std::nullopt;
		p += augmentation;
	}
	if (!program_bounded(p, fde.end, cie.encoding))
		return std::nullopt;
	return Fde{start, end, uint64_t(fde.end - fde.start)};
}

// --- what libdw reads -------------------------------------------------------------------------

// libdw gets a CFI section in an ELF image of its own, [header][section][names][section
// headers]: the one section (".eh_frame" or ".debug_frame") at the object's address for
// it, every FDE that fails its checks emptied (zeroed: it covers no address and plays
// nothing). So libdw plays only programs checked here, never follows the object's
// .eh_frame_hdr (whose table could send it to bytes no one checked), and dwarf_begin_elf
// decompresses nothing else of a debug file (whose .debug_info may be a gigabyte).
struct CfiImage {
	std::vector<uint8_t> bytes;
	Elf_Data section{}; // the CFI, inside bytes
	std::vector<Fde> fdes; // those that passed, in the section's order
	ElfHandle elf;      // over bytes: ended first
};

void make_image(CfiImage &image, const char *name, uint64_t address, const Elf_Data &data)
{
	const std::string names = std::string(1, '\0') + name + std::string(1, '\0') + ".shstrtab" + std::string(1, '\0');
	const size_t section_at = sizeof(Elf64_Ehdr), names_at = section_at + data.d_size;
	const size_t headers_at = (names_at + names.size() + 7) & ~size_t(7);
	image.bytes.assign(headers_at + 3 * sizeof(Elf64_Shdr), 0);

	Elf64_Ehdr header{};
	std::memcpy(header.e_ident, ELFMAG, SELFMAG);
	header.e_ident[EI_CLASS] = ELFCLASS64;
	header.e_ident[EI_DATA] = ELFDATA2LSB;
	header.e_ident[EI_VERSION] = EV_CURRENT;
	header.e_type = ET_DYN;
	header.e_machine = EM_X86_64; // libdw's x86-64 rules for what a CIE leaves unsaid
	header.e_version = EV_CURRENT;
	header.e_ehsize = sizeof(Elf64_Ehdr);
	header.e_shoff = headers_at;
	header.e_shentsize = sizeof(Elf64_Shdr);
	header.e_shnum = 3;
	header.e_shstrndx = 2;
	Elf64_Shdr sections[3] = {};
	sections[1].sh_name = 1;
	sections[1].sh_type = SHT_PROGBITS;
	sections[1].sh_addr = address;
	sections[1].sh_offset = section_at;
	sections[1].sh_size = data.d_size;
	sections[1].sh_addralign = 8;
	sections[2].sh_name = uint32_t(2 + std::strlen(name));
	sections[2].sh_type = SHT_STRTAB;
	sections[2].sh_offset = names_at;
	sections[2].sh_size = names.size();
	sections[2].sh_addralign = 1;
	std::memcpy(image.bytes.data(), &header, sizeof(header));
	std::memcpy(image.bytes.data() + section_at, data.d_buf, data.d_size);
	std::memcpy(image.bytes.data() + names_at, names.data(), names.size());
	std::memcpy(image.bytes.data() + headers_at, sections, sizeof(sections));
	image.section.d_buf = image.bytes.data() + section_at;
	image.section.d_size = data.d_size;
	image.section.d_type = ELF_T_BYTE;
}

// Checks every entry of the image's section as libdw will walk them (past an entry it cannot
// read, when it can tell where the next one starts), keeps the FDEs that pass and empties the
// others; then opens the image.
void check_entries(CfiImage &image, bool eh_frame, uint64_t address)
{
	const auto *ident = image.bytes.data();
	auto *bytes = static_cast<uint8_t *>(image.section.d_buf);
	// A CIE is checked once, where its first FDE points to it.
	std::unordered_map<Dwarf_Off, std::optional<CieCheck>> cies;
	auto cie_at = [&](Dwarf_Off offset) {
		auto [known, fresh] = cies.try_emplace(offset);
		if (fresh) {
			Dwarf_CFI_Entry entry;
			Dwarf_Off next;
			if (dwarf_next_cfi(ident, &image.section, eh_frame, offset, &next, &entry) == 0 &&
			    dwarf_cfi_cie_p(&entry))
				known->second = check_cie(entry.cie);
		}
		return known->second;
	};
	size_t entries = 0;
	for (Dwarf_Off offset = 0, next = 0; image.section.d_size > 0; offset = next) {
		Dwarf_CFI_Entry entry;
		const int result = dwarf_next_cfi(ident, &image.section, eh_frame, offset, &next, &entry);
		if (result > 0 || next <= offset || next == Dwarf_Off(-1))
			break;
		if (result < 0 || dwarf_cfi_cie_p(&entry))
			continue;
		std::optional<Fde> fde;
		if (++entries <= kMaxFdes)
			if (std::optional<CieCheck> cie = cie_at(entry.fde.CIE_pointer))
				fde = check_fde(entry.fde, *cie, address + uint64_t(entry.fde.start - bytes));
		if (fde)
			image.fdes.push_back(*fde);
		else
			std::memset(bytes + (entry.fde.start - bytes), 0, size_t(entry.fde.end - entry.fde.start));
	}
	image.elf.reset(elf_memory(reinterpret_cast<char *>(image.bytes.data()), image.bytes.size()));
}

// --- rows: what each one says -----------------------------------------------------------------

// CFA = rsp + 8, + 8 once the stub has pushed: what binutils writes for a lazy .plt,
// `DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN; DW_OP_ge;
// DW_OP_lit3; DW_OP_shl; DW_OP_plus`, where N is the offset of the push's end in each
// 16-byte stub: 11 (jmp *GOT; push), 9 (IBT: endbr64; push), 10 (IBT with a BND prefix),
// 5 (BND: push first). N, or 0 for any other expression.
int plt_threshold(const Dwarf_Op *ops, size_t count)
{
	if (count != 9 || ops[0].atom != DW_OP_breg7 || ops[0].number != 8 || ops[1].atom != DW_OP_breg16 ||
	    ops[1].number != 0 || ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and || ops[5].atom != DW_OP_ge ||
	    ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl || ops[8].atom != DW_OP_plus)
		return 0;
	switch (ops[4].atom) {
	case DW_OP_lit5:
	case DW_OP_lit9:
	case DW_OP_lit10:
	case DW_OP_lit11:
		return ops[4].atom - DW_OP_lit0;
	default:
		return 0;
	}
}

// A register saved at CFA + offset (DW_CFA_offset), as dwarf_frame_register gives it:
// `DW_OP_call_frame_cfa [DW_OP_plus_uconst offset]`. Not for a value (DW_CFA_val_offset,
// which ends in DW_OP_stack_value).
std::optional<int64_t> saved_at_cfa(const Dwarf_Op *ops, size_t count)
{
	if (count == 1 && ops[0].atom == DW_OP_call_frame_cfa)
		return 0;
	if (count == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst)
		return int64_t(ops[1].number); // libdw stores the signed offset there as is
	return std::nullopt;
}

// The row libdw's frame state makes; ra_column is what dwarf_frame_info returned.
unwind_row rule_of(Dwarf_Frame *frame, int ra_column)
{
	const unwind_row none{};
	Dwarf_Op ops_mem[3];
	Dwarf_Op *ops;
	size_t count;

	// The return address first: undefined ends the stack; anywhere but CFA - 8 is no
	// rule the kernel side can follow.
	if (ra_column != kRegRip || dwarf_frame_register(frame, kRegRip, ops_mem, &ops, &count) != 0)
		return none;
	if (count == 0 && ops == ops_mem) {
		unwind_row end{};
		end.cfa_type = UNWIND_CFA_END;
		return end;
	}
	if (saved_at_cfa(ops, count) != -8)
		return none;

	unwind_row row{};
	if (dwarf_frame_cfa(frame, &ops, &count) != 0 || count == 0)
		return none;
	int64_t register_number = -1, offset = 0;
	if (count == 1 && ops[0].atom == DW_OP_bregx) { // DW_CFA_def_cfa and its kin
		register_number = int64_t(ops[0].number);
		offset = int64_t(ops[0].number2);
	} else if (count == 1 && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		register_number = ops[0].atom - DW_OP_breg0;
		offset = int64_t(ops[0].number);
	}
	if (register_number == kRegRsp || register_number == kRegRbp) {
		if (offset < 0 || offset % UNWIND_SLOT || offset / UNWIND_SLOT > std::numeric_limits<uint16_t>::max())
			return none;
		row.cfa_type = register_number == kRegRsp ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
		row.cfa_offset = uint16_t(offset / UNWIND_SLOT);
	} else if (int threshold = plt_threshold(ops, count)) {
		row.cfa_type = UNWIND_CFA_PLT;
		row.cfa_offset = threshold;
	} else {
		return none;
	}

	// rbp: the one callee-saved register the walk carries (for the frames above that
	// find their CFA from it). A rule we cannot follow loses it, not the row.
	row.rbp_type = UNWIND_RBP_UNDEFINED;
	if (dwarf_frame_register(frame, kRegRbp, ops_mem, &ops, &count) == 0) {
		if (count == 0 && ops == nullptr) {
			row.rbp_type = UNWIND_RBP_SAME;
		} else if (std::optional<int64_t> at = saved_at_cfa(ops, count);
			   at && *at % UNWIND_SLOT == 0 && *at / UNWIND_SLOT >= std::numeric_limits<int8_t>::min() &&
			   *at / UNWIND_SLOT <= std::numeric_limits<int8_t>::max()) {
			row.rbp_type = UNWIND_RBP_AT_CFA;
			row.rbp_offset = int8_t(*at / UNWIND_SLOT);
		}
	}
	return row;
}

// What one CFI section adds, and the allowance of bytes libdw may still play.
struct Walk {
	const std::vector<Load> &loads;
	std::vector<UnwindSpan> spans;
	uint64_t bytes_left = kBytesPlayedAnyway;
};

// The rows of one FDE, from libdw, as spans of file offsets; none of them when libdw fails
// on any (a corrupt program), or the FDE has more rows than any real one.
void walk_fde(Dwarf_CFI *cfi, const Fde &fde, Walk &walk)
{
	const size_t first = walk.spans.size();
	size_t rows = 0;
	for (uint64_t pc = fde.start; pc < fde.end;) {
		const uint64_t cost = fde.size + 64; // the bytes played, and the lookup
		if (++rows > kMaxRowsPerFde || walk.bytes_left < cost || walk.spans.size() >= kMaxUnwindRows) {
			walk.spans.resize(first);
			return;
		}
		walk.bytes_left -= cost;
		Dwarf_Frame *raw = nullptr;
		if (dwarf_cfi_addrframe(cfi, pc, &raw) != 0) {
			walk.spans.resize(first);
			return;
		}
		FrameHandle frame(raw);
		Dwarf_Addr start, end;
		bool signal_frame;
		const int ra_column = dwarf_frame_info(frame.get(), &start, &end, &signal_frame);
		if (ra_column < 0 || start > pc || end <= pc) {
			walk.spans.resize(first);
			return;
		}
		end = std::min<uint64_t>(end, fde.end);
		add_in_file(walk.loads, pc, end, rule_of(frame.get(), ra_column), walk.spans);
		pc = end;
	}
}

// The rows of every FDE of image. stored_size is the section's size in the file (compressed,
// it may be): what earns libdw its allowance, not what a few bytes inflate to.
void walk_image(Dwarf_CFI *cfi, const CfiImage &image, uint64_t stored_size, Walk &walk)
{
	walk.bytes_left += kBytesPlayedPerByte * std::min<uint64_t>(stored_size, image.section.d_size);
	for (const Fde &fde : image.fdes) {
		if (walk.bytes_left == 0 || walk.spans.size() >= kMaxUnwindRows)
			break;
		walk_fde(cfi, fde, walk);
	}
}

// The rules of the .eh_frame of elf.
std::vector<UnwindSpan> eh_frame_spans(Elf *elf, Walk &walk)
{
	GElf_Shdr header;
	Elf_Scn *section = section_named(elf, ".eh_frame", header);
	Elf_Data *data = section ? elf_getdata(section, nullptr) : nullptr;
	if (!data || !data->d_buf)
		return {};
	CfiImage image;
	make_image(image, ".eh_frame", header.sh_addr, *data);
	check_entries(image, true, header.sh_addr);
	CfiHandle cfi(image.elf ? dwarf_getcfi_elf(image.elf.get()) : nullptr);
	if (!cfi)
		return {};
	walk_image(cfi.get(), image, header.sh_size, walk);
	return std::exchange(walk.spans, {});
}

// The rules of the .debug_frame of elf (the object's, or its debug file's: the addresses
// are the object's either way, and walk.loads are the object's segments).
std::vector<UnwindSpan> debug_frame_spans(Elf *elf, Walk &walk)
{
	GElf_Shdr header;
	Elf_Scn *section = section_named(elf, ".debug_frame", header);
	if (!section)
		return {};
	const uint64_t stored_size = header.sh_size;
	if (header.sh_flags & SHF_COMPRESSED) {
		// libelf allocates what the header claims: no more than zlib can make of the
		// bytes there (about 1032:1), nor than kMaxDecompressed.
		GElf_Chdr compressed;
		if (!gelf_getchdr(section, &compressed) || compressed.ch_size / 1100 > header.sh_size ||
		    compressed.ch_size > kMaxDecompressed || elf_compress(section, 0, 0) < 0)
			return {};
	}
	Elf_Data *data = elf_getdata(section, nullptr);
	if (!data || !data->d_buf || !gelf_getshdr(section, &header) || (header.sh_flags & SHF_COMPRESSED))
		return {};
	CfiImage image;
	make_image(image, ".debug_frame", header.sh_addr, *data);
	check_entries(image, false, header.sh_addr);
	DwarfHandle dwarf(image.elf ? dwarf_begin_elf(image.elf.get(), DWARF_C_READ, nullptr) : nullptr);
	Dwarf_CFI *cfi = dwarf ? dwarf_getcfi(dwarf.get()) : nullptr; // owned by dwarf
	if (!cfi)
		return {};
	walk_image(cfi, image, stored_size, walk);
	return std::exchange(walk.spans, {});
}

// The parts of spans no interval of covered (sorted, disjoint) holds.
void add_uncovered(const std::vector<UnwindSpan> &spans, const std::vector<std::pair<uint64_t, uint64_t>> &covered,
		   std::vector<UnwindSpan> &out)
{
	for (const UnwindSpan &span : spans) {
		uint64_t at = span.start;
		auto next = std::upper_bound(covered.begin(), covered.end(), at,
					     [](uint64_t x, const auto &interval) { return x < interval.second; });
		for (; at < span.end && next != covered.end() && next->first < span.end; ++next) {
			if (out.size() >= kMaxUnwindRows)
				return;
			if (next->first > at)
				out.push_back({at, next->first, span.rule});
			at = std::max(at, next->second);
		}
		if (at < span.end && out.size() < kMaxUnwindRows)
			out.push_back({at, span.end, span.rule});
	}
}

std::vector<std::pair<uint64_t, uint64_t>> coverage(std::vector<UnwindSpan> spans)
{
	std::sort(spans.begin(), spans.end(), [](const auto &a, const auto &b) { return a.start < b.start; });
	std::vector<std::pair<uint64_t, uint64_t>> covered;
	for (const UnwindSpan &span : spans) {
		if (!covered.empty() && span.start <= covered.back().second)
			covered.back().second = std::max(covered.back().second, span.end);
		else
			covered.emplace_back(span.start, span.end);
	}
	return covered;
}

// The table of the object in image; debug_image opens its debug file, if it has one, when
// it is needed.
std::optional<UnwindTable> compile(const ElfImage &image, const std::function<ElfImage()> &debug_image)
{
	Elf *elf = image.elf.get();
	if (!elf)
		return std::nullopt;
	const std::vector<Load> loads = load_segments(elf);
	UnwindTable table;
	if (loads.empty())
		return table;

	Walk walk{loads, {}};
	std::vector<UnwindSpan> spans = eh_frame_spans(elf, walk);
	// Code .eh_frame leaves out: the object's own .debug_frame, else its debug file's.
	GElf_Shdr header;
	std::vector<UnwindSpan> debug_spans;
	if (section_named(elf, ".debug_frame", header)) {
		debug_spans = debug_frame_spans(elf, walk);
	} else if (ElfImage debug = debug_image(); debug.elf) {
		debug_spans = debug_frame_spans(debug.elf.get(), walk);
	}

	if (!spans.empty())
		table.source = ".eh_frame";
	if (!debug_spans.empty()) {
		const size_t before = spans.size();
		add_uncovered(debug_spans, coverage(spans), spans);
		if (spans.size() > before)
			table.source += table.source.empty() ? ".debug_frame" : "+.debug_frame";
	}
	table.rows = unwind_rows_of(std::move(spans));
	if (table.rows.empty()) // rules only for offsets no row can hold
		table.source.clear();
	return table;
}

} // namespace

bool same_unwind_rule(const unwind_row &a, const unwind_row &b)
{
	return a.cfa_type == b.cfa_type && a.cfa_offset == b.cfa_offset && a.rbp_type == b.rbp_type &&
	       a.rbp_offset == b.rbp_offset;
}

std::vector<unwind_row> unwind_rows_of(std::vector<UnwindSpan> spans)
{
	constexpr uint64_t kPcEnd = std::numeric_limits<uint32_t>::max(); // the last NONE row's pc at most
	std::stable_sort(spans.begin(), spans.end(), [](const auto &a, const auto &b) { return a.start < b.start; });
	std::vector<unwind_row> rows;
	auto add = [&](uint64_t pc, unwind_row rule) {
		if (!rows.empty() && same_unwind_rule(rows.back(), rule))
			return;
		rule.pc = uint32_t(pc);
		rows.push_back(rule);
	};
	bool any = false;
	uint64_t covered_end = 0;
	for (const UnwindSpan &span : spans) {
		const uint64_t start = any ? std::max(span.start, covered_end) : span.start;
		const uint64_t end = std::min(span.end, kPcEnd);
		if (start >= end)
			continue;
		if (rows.size() + 2 > kMaxUnwindRows) // room for this row and the NONE after it
			break;
		if (any && start > covered_end)
			add(covered_end, unwind_row{});
		add(start, span.rule);
		covered_end = end;
		any = true;
	}
	if (any)
		add(covered_end, unwind_row{});
	return rows;
}

const unwind_row *find_unwind_row(std::span<const unwind_row> rows, uint64_t pc)
{
	auto after = std::upper_bound(rows.begin(), rows.end(), pc,
				      [](uint64_t x, const unwind_row &row) { return x < row.pc; });
	return after == rows.begin() ? nullptr : &*(after - 1);
}

std::vector<unwind_page> unwind_page_index(std::span<const unwind_row> rows)
{
	std::vector<unwind_page> pages;
	if (rows.empty())
		return pages;
	const uint32_t base = rows.front().pc >> UNWIND_PAGE_SHIFT, last = rows.back().pc >> UNWIND_PAGE_SHIFT;
	pages.resize(size_t(last - base) + 1);
	// The row covering a page's first byte: the last row at or before it. The first page's
	// is row 0 (a pc before it finds no row).
	uint32_t covering = 0;
	for (uint32_t page = 0; page < pages.size(); page++) {
		const uint64_t start = uint64_t(base + page) << UNWIND_PAGE_SHIFT;
		while (covering + 1 < rows.size() && rows[covering + 1].pc <= start)
			covering++;
		pages[page].first = covering;
	}
	for (uint32_t page = 0; page < pages.size(); page++)
		pages[page].end = page + 1 < pages.size() ? pages[page + 1].first + 1 : uint32_t(rows.size());
	return pages;
}

std::optional<UnwindTable> compile_unwind_table(std::span<const uint8_t> elf, std::span<const uint8_t> debug)
{
	return compile(image_of_copy(std::vector<uint8_t>(elf.begin(), elf.end())), [debug] {
		return debug.empty() ? ElfImage{} : image_of_copy(std::vector<uint8_t>(debug.begin(), debug.end()));
	});
}

std::optional<UnwindTable> compile_unwind_table(int fd, int debug_fd)
{
	return compile(image_of_file(fd), [debug_fd] { return image_of_file(debug_fd); });
}
