// syms/unwind_table.cpp: compiles an object's CFI into unwind rows. libdw evaluates every
// CFA program; this file only lists the FDEs, asks libdw for the rule at each pc, and
// keeps the rules the kernel side can follow.
#include "syms/unwind_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

namespace {

constexpr int kRbp = 6, kRsp = 7, kReturnAddress = 16; // x86-64 DWARF register numbers
constexpr size_t kMaxRows = 16u << 20;                  // per object: the kernel's search covers 2^24
constexpr size_t kMaxFdes = 4u << 20;

struct ElfEnd {
	void operator()(Elf *elf) const { elf_end(elf); }
};
struct DwarfEnd {
	void operator()(Dwarf *dwarf) const { dwarf_end(dwarf); }
};
struct CfiEnd {
	void operator()(Dwarf_CFI *cfi) const { dwarf_cfi_end(cfi); }
};
using ElfPtr = std::unique_ptr<Elf, ElfEnd>;
using DwarfPtr = std::unique_ptr<Dwarf, DwarfEnd>;
using CfiPtr = std::unique_ptr<Dwarf_CFI, CfiEnd>; // from dwarf_getcfi_elf only
struct Free {
	void operator()(void *p) const { free(p); }
};

bool libelf_ready()
{
	static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
	return ready;
}

// An ELF64 x86-64 file.
bool is_x86_64(Elf *elf)
{
	GElf_Ehdr ehdr;
	return elf && elf_kind(elf) == ELF_K_ELF && gelf_getclass(elf) == ELFCLASS64 && gelf_getehdr(elf, &ehdr) &&
	       ehdr.e_machine == EM_X86_64;
}

struct Segment {
	uint64_t address, offset, file_size;
};

// PT_LOAD segments with bytes in the file: what turns an address into a file offset.
std::vector<Segment> load_segments(Elf *elf)
{
	std::vector<Segment> segments;
	size_t count = 0;
	if (elf_getphdrnum(elf, &count) != 0)
		return segments;
	for (size_t i = 0; i < count && i < 4096; i++) {
		GElf_Phdr phdr;
		if (gelf_getphdr(elf, int(i), &phdr) && phdr.p_type == PT_LOAD && phdr.p_filesz)
			segments.push_back({phdr.p_vaddr, phdr.p_offset, phdr.p_filesz});
	}
	return segments;
}

// A range of addresses with one rule.
struct Rule {
	uint64_t start, end; // addresses, then file offsets
	unwind_row row;      // pc unset
};

bool same_rule(const unwind_row &a, const unwind_row &b)
{
	return a.cfa_type == b.cfa_type && a.cfa_offset == b.cfa_offset && a.rbp_type == b.rbp_type &&
	       a.rbp_offset == b.rbp_offset;
}

// Size of a pointer in an encoding (DW_EH_PE_*), 0 for what we do not decode.
size_t encoded_size(uint8_t encoding)
{
	switch (encoding & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	default:
		return 0; // uleb128, sleb128: never seen for FDE addresses
	}
}

// Reads one encoded value at p (size checked by the caller), without applying its base.
uint64_t read_encoded(const uint8_t *p, uint8_t encoding)
{
	uint64_t u64 = 0;
	uint32_t u32 = 0;
	uint16_t u16 = 0;
	switch (encoding & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		std::memcpy(&u64, p, 8);
		return u64;
	case DW_EH_PE_udata4:
		std::memcpy(&u32, p, 4);
		return u32;
	case DW_EH_PE_sdata4:
		std::memcpy(&u32, p, 4);
		return uint64_t(int64_t(int32_t(u32)));
	case DW_EH_PE_udata2:
		std::memcpy(&u16, p, 2);
		return u16;
	case DW_EH_PE_sdata2:
		std::memcpy(&u16, p, 2);
		return uint64_t(int64_t(int16_t(u16)));
	}
	return 0;
}

// The FDE pointer encoding a CIE's augmentation names ('R'); absptr when it names none.
// Only augmentations this reader understands: anything else and the CIE's FDEs are skipped.
bool fde_encoding(const Dwarf_CIE &cie, bool eh_frame, uint8_t &encoding)
{
	encoding = DW_EH_PE_absptr;
	const char *aug = cie.augmentation ? cie.augmentation : "";
	if (!eh_frame || aug[0] == '\0')
		return aug[0] == '\0';
	if (aug[0] != 'z' || !cie.augmentation_data)
		return false;
	const uint8_t *data = cie.augmentation_data, *end = data + cie.augmentation_data_size;
	for (const char *c = aug + 1; *c; c++) {
		switch (*c) {
		case 'R':
			if (data >= end)
				return false;
			encoding = *data++;
			break;
		case 'L':
			if (data >= end)
				return false;
			data++;
			break;
		case 'P': {
			if (data >= end)
				return false;
			const uint8_t personality = *data++;
			const size_t size = encoded_size(personality);
			if (!size || size_t(end - data) < size)
				return false;
			data += size;
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return false;
		}
	}
	return true;
}

// Every FDE's [start, end) in addresses, from the raw section: libdw finds the FDE of a pc,
// but has no call that lists them.
std::vector<std::pair<uint64_t, uint64_t>> fde_ranges(Elf *elf, Elf_Scn *section, bool eh_frame)
{
	std::vector<std::pair<uint64_t, uint64_t>> ranges;
	GElf_Shdr shdr;
	Elf_Data *data = gelf_getshdr(section, &shdr) ? elf_getdata(section, nullptr) : nullptr;
	const unsigned char *ident = reinterpret_cast<const unsigned char *>(elf_getident(elf, nullptr));
	if (!data || !data->d_buf || !ident || shdr.sh_type == SHT_NOBITS)
		return ranges;
	const uint8_t *base = static_cast<const uint8_t *>(data->d_buf);
	const uint8_t *section_end = base + data->d_size;
	std::map<Dwarf_Off, std::optional<uint8_t>> encodings; // CIE offset -> FDE encoding

	Dwarf_Off offset = 0, next = 0;
	size_t entries = 0;
	while (offset < data->d_size && entries++ < 2 * kMaxFdes) {
		Dwarf_CFI_Entry entry;
		const int result = dwarf_next_cfi(ident, data, eh_frame, offset, &next, &entry);
		if (result > 0)
			break;
		if (result < 0) {
			if (next == Dwarf_Off(-1) || next <= offset)
				break; // cannot skip past it
			offset = next;
			continue;
		}
		const Dwarf_Off here = offset;
		if (next <= offset)
			break;
		offset = next;
		if (dwarf_cfi_cie_p(&entry)) {
			uint8_t encoding;
			encodings[here] = fde_encoding(entry.cie, eh_frame, encoding) ? std::optional(encoding)
											: std::nullopt;
			continue;
		}
		// .eh_frame's CIE pointer counts back from the field itself (here + 4 for a
		// 32-bit length); libdw already made it a section offset.
		auto cie = encodings.find(entry.fde.CIE_pointer);
		std::optional<uint8_t> encoding;
		if (cie != encodings.end()) {
			encoding = cie->second;
		} else {
			Dwarf_CFI_Entry cie_entry;
			Dwarf_Off after;
			if (dwarf_next_cfi(ident, data, eh_frame, entry.fde.CIE_pointer, &after, &cie_entry) == 0 &&
			    dwarf_cfi_cie_p(&cie_entry)) {
				uint8_t e;
				if (fde_encoding(cie_entry.cie, eh_frame, e))
					encoding = e;
			}
			encodings[entry.fde.CIE_pointer] = encoding;
		}
		if (!encoding || (*encoding & 0x70) > DW_EH_PE_pcrel || *encoding == DW_EH_PE_omit)
			continue;
		const size_t size = encoded_size(*encoding);
		const uint8_t *field = entry.fde.start;
		if (!size || field < base || field > section_end || size_t(section_end - field) < 2 * size)
			continue;
		uint64_t start = read_encoded(field, *encoding);
		if ((*encoding & 0x70) == DW_EH_PE_pcrel)
			start += shdr.sh_addr + uint64_t(field - base);
		const uint64_t length = read_encoded(field + size, *encoding & 0x0f);
		if (length == 0 || start + length < start || ranges.size() >= kMaxFdes)
			continue;
		ranges.emplace_back(start, start + length);
	}
	std::sort(ranges.begin(), ranges.end());
	return ranges;
}

Elf_Scn *section_named(Elf *elf, const char *name)
{
	size_t names;
	if (elf_getshdrstrndx(elf, &names) != 0)
		return nullptr;
	for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		const char *n = elf_strptr(elf, names, shdr.sh_name);
		if (n && std::strcmp(n, name) == 0)
			return scn;
	}
	return nullptr;
}

bool is_plt_expression(const Dwarf_Op *ops, size_t n, int32_t &threshold)
{
	// rsp + 8 + ((rip & 15) >= threshold) << 3: the CFA of a lazy-binding PLT entry.
	if (n != 9 || ops[0].atom != DW_OP_breg7 || ops[0].number != 8 || ops[1].atom != DW_OP_breg16 ||
	    ops[1].number != 0 || ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and ||
	    (ops[4].atom != DW_OP_lit11 && ops[4].atom != DW_OP_lit10) || ops[5].atom != DW_OP_ge ||
	    ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl || ops[8].atom != DW_OP_plus)
		return false;
	threshold = ops[4].atom - DW_OP_lit0;
	return true;
}

// The rule of one frame state, as a row the kernel side can follow (pc unset).
unwind_row rule_of(Dwarf_Frame *frame, bool signal)
{
	unwind_row row{};
	row.cfa_type = UNWIND_CFA_NONE;
	if (signal)
		return row; // the interrupted state, not a call: its CFI is an expression

	Dwarf_Op ops_mem[3];
	Dwarf_Op *ops = nullptr;
	size_t nops = 0;
	// The return address: undefined in the outermost frame, else at CFA - 8.
	if (dwarf_frame_register(frame, kReturnAddress, ops_mem, &ops, &nops) != 0)
		return row;
	if (nops == 0 && ops == ops_mem) {
		row.cfa_type = UNWIND_CFA_END;
		return row;
	}
	if (nops != 2 || ops[0].atom != DW_OP_call_frame_cfa || ops[1].atom != DW_OP_plus_uconst ||
	    int64_t(ops[1].number) != -8)
		return row;

	unwind_row rule{};
	if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops == 0)
		return row;
	if (nops == 1 && ops[0].atom == DW_OP_bregx && (ops[0].number == kRsp || ops[0].number == kRbp)) {
		const int64_t offset = int64_t(ops[0].number2);
		if (offset < INT32_MIN || offset > INT32_MAX)
			return row;
		rule.cfa_type = ops[0].number == kRsp ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
		rule.cfa_offset = int32_t(offset);
	} else if (int32_t threshold; is_plt_expression(ops, nops, threshold)) {
		rule.cfa_type = UNWIND_CFA_PLT;
		rule.cfa_offset = threshold;
	} else {
		return row;
	}

	rule.rbp_type = UNWIND_RBP_UNDEFINED;
	if (dwarf_frame_register(frame, kRbp, ops_mem, &ops, &nops) == 0) {
		if (nops == 0 && ops == nullptr) {
			rule.rbp_type = UNWIND_RBP_SAME;
		} else if (nops >= 1 && nops <= 2 && ops[0].atom == DW_OP_call_frame_cfa &&
			   (nops == 1 || ops[1].atom == DW_OP_plus_uconst)) {
			const int64_t offset = nops == 1 ? 0 : int64_t(ops[1].number);
			if (offset >= INT16_MIN && offset <= INT16_MAX) {
				rule.rbp_type = UNWIND_RBP_AT_CFA;
				rule.rbp_offset = int16_t(offset);
			}
		}
	}
	return rule;
}

// The rules of every pc the FDEs cover, by address.
void add_rules(Dwarf_CFI *cfi, const std::vector<std::pair<uint64_t, uint64_t>> &ranges, std::vector<Rule> &rules)
{
	for (auto [start, end] : ranges) {
		uint64_t pc = start;
		while (pc < end && rules.size() < kMaxRows) {
			Dwarf_Frame *raw = nullptr;
			if (dwarf_cfi_addrframe(cfi, pc, &raw) != 0 || !raw)
				break;
			std::unique_ptr<Dwarf_Frame, Free> frame(raw);
			Dwarf_Addr from = 0, to = 0;
			bool signal = false;
			if (dwarf_frame_info(frame.get(), &from, &to, &signal) < 0 || to <= pc)
				break;
			rules.push_back({pc, std::min<uint64_t>(to, end), rule_of(frame.get(), signal)});
			pc = to;
		}
	}
}

// Rules by address -> rows by file offset: converted through the segments, sorted,
// gaps marked, equal neighbours merged.
std::vector<unwind_row> rows_of(std::vector<Rule> rules, const std::vector<Segment> &segments)
{
	std::vector<Rule> placed;
	placed.reserve(rules.size());
	for (Rule &r : rules)
		for (const Segment &s : segments)
			if (r.start >= s.address && r.start - s.address < s.file_size) {
				const uint64_t end = std::min(r.end, s.address + s.file_size);
				const uint64_t start = r.start - s.address + s.offset;
				if (start + (end - r.start) <= UINT32_MAX)
					placed.push_back({start, start + (end - r.start), r.row});
				break;
			}
	std::stable_sort(placed.begin(), placed.end(), [](const Rule &a, const Rule &b) { return a.start < b.start; });

	std::vector<unwind_row> rows;
	uint64_t covered = 0; // end of the last rule placed
	for (const Rule &r : placed) {
		uint64_t start = std::max(r.start, covered);
		if (start >= r.end)
			continue; // overlapping FDEs: the first one's rules stand
		if (!rows.empty() && start > covered) {
			unwind_row gap{};
			gap.pc = uint32_t(covered);
			gap.cfa_type = UNWIND_CFA_NONE;
			if (rows.back().cfa_type != UNWIND_CFA_NONE)
				rows.push_back(gap);
		}
		if (rows.empty() || !same_rule(rows.back(), r.row)) {
			unwind_row row = r.row;
			row.pc = uint32_t(start);
			rows.push_back(row);
		}
		covered = r.end;
	}
	if (!rows.empty() && rows.back().cfa_type != UNWIND_CFA_NONE) {
		unwind_row end{};
		end.pc = uint32_t(covered);
		rows.push_back(end);
	}
	return rows;
}

// The table of `binary`, from its .eh_frame, else its .debug_frame, else debug's.
std::optional<UnwindTable> compile(Elf *binary, Elf *debug)
{
	if (!libelf_ready() || !is_x86_64(binary))
		return std::nullopt;
	const std::vector<Segment> segments = load_segments(binary);
	UnwindTable table;
	std::vector<Rule> rules;

	if (Elf_Scn *eh_frame = section_named(binary, ".eh_frame")) {
		CfiPtr cfi(dwarf_getcfi_elf(binary));
		if (cfi) {
			add_rules(cfi.get(), fde_ranges(binary, eh_frame, true), rules);
			table.source = ".eh_frame";
		}
	}
	for (Elf *elf : {binary, debug}) {
		if (!rules.empty() || !elf || (elf == debug && !is_x86_64(debug)))
			continue;
		Elf_Scn *debug_frame = section_named(elf, ".debug_frame");
		if (!debug_frame)
			continue;
		DwarfPtr dwarf(dwarf_begin_elf(elf, DWARF_C_READ, nullptr));
		Dwarf_CFI *cfi = dwarf ? dwarf_getcfi(dwarf.get()) : nullptr; // owned by dwarf
		if (cfi) {
			add_rules(cfi, fde_ranges(elf, debug_frame, false), rules);
			table.source = ".debug_frame";
		}
	}
	table.rows = rows_of(std::move(rules), segments);
	if (table.rows.empty())
		table.source.clear();
	return table;
}

} // namespace

std::optional<UnwindTable> compile_unwind_table(int fd, int debug_fd)
{
	if (!libelf_ready())
		return std::nullopt;
	// ELF_C_READ, not a mapping: a file its owner truncates meanwhile gives read errors,
	// not SIGBUS.
	ElfPtr binary(elf_begin(fd, ELF_C_READ, nullptr));
	ElfPtr debug(debug_fd >= 0 ? elf_begin(debug_fd, ELF_C_READ, nullptr) : nullptr);
	return compile(binary.get(), debug.get());
}

std::optional<UnwindTable> compile_unwind_table(std::span<const uint8_t> elf, std::span<const uint8_t> debug)
{
	if (!libelf_ready())
		return std::nullopt;
	// libelf takes a writable image; copies keep the caller's bytes as they are.
	std::vector<char> elf_copy(elf.begin(), elf.end()), debug_copy(debug.begin(), debug.end());
	ElfPtr binary(elf_copy.empty() ? nullptr : elf_memory(elf_copy.data(), elf_copy.size()));
	ElfPtr debug_elf(debug_copy.empty() ? nullptr : elf_memory(debug_copy.data(), debug_copy.size()));
	return compile(binary.get(), debug_elf.get());
}
