// unwind/cfi_image.cpp: a CFI section checked before libdw plays it, in an ELF image of its
// own: every FDE's program bounded, the FDEs that fail emptied.
#include "unwind/cfi_image.h"

#include <dwarf.h>
#include <elf.h>

#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>

namespace {

// Bounds that hold whatever the input: real objects stay far below them (cc1plus, 35 MB,
// has 49,000 FDEs).
constexpr size_t kMaxFdes = 4u << 20;

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

} // namespace

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

