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

#include "elf/elf.h"
#include "elf/elf_handles.h"
#include "base/fd.h"
#include "unwind/cfi_image.h"

namespace {

// Bounds that hold whatever the input: real objects stay far below them (cc1plus, 35 MB,
// has 6,678 rows in its longest FDE; the FDEs' own bound is cfi_image.cpp's).
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
