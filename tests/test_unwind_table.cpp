// tests/test_unwind_table.cpp: unwind tables against readelf's reading of the same CFI
// (--debug-dump=frames-interp), row by row, and what hostile bytes make of the compiler.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "elf/elf.h"
#include "base/fd.h"
#include "unwind/table.h"
#include "tests/fixtures/fixture_files.h"
#include "tests/support.h"

namespace {

// --- readelf's rows ---------------------------------------------------------------------------

// One row readelf prints: over [start, end) (ELF virtual addresses), the rules of the CFA,
// rbp and the return address as it spells them ("rsp+16", "c-16", "u", "exp", "r10 (r10)");
// "" for a column it does not print.
struct ReadelfRow {
	uint64_t start = 0, end = 0;
	std::string cfa, rbp, ra;
};

struct ReadelfFrames {
	std::vector<ReadelfRow> rows;
	std::vector<std::pair<uint64_t, uint64_t>> fdes; // every FDE's [start, end)
};

bool is_address(const std::string &token)
{
	return token.size() == 16 && token.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::vector<std::string> tokens_of(std::string_view line)
{
	std::vector<std::string> tokens;
	while (true) {
		const size_t start = line.find_first_not_of(' ');
		if (start == std::string_view::npos)
			break;
		line.remove_prefix(start);
		const size_t end = std::min(line.find(' '), line.size());
		std::string_view token = line.substr(0, end);
		line.remove_prefix(end);
		// A register rule names the register twice, "r3 (rbx)": one column.
		if (token.front() == '(' && !tokens.empty())
			tokens.back().append(" ").append(token);
		else
			tokens.emplace_back(token);
	}
	return tokens;
}

// The rows of one section's FDEs (".eh_frame" or ".debug_frame"). An FDE whose program is
// empty gets no rows from readelf: its CIE's first row is the rule over all of it.
ReadelfFrames read_frames(const std::string &text, const std::string &wanted_section)
{
	struct Entry {
		bool fde = false;
		uint64_t offset = 0, cie = 0, start = 0, end = 0;
		std::vector<std::string> header;
		std::vector<std::pair<uint64_t, std::vector<std::string>>> rows;
	};
	ReadelfFrames frames;
	std::map<uint64_t, Entry> cies; // of the wanted section, by offset
	std::string section;
	Entry entry;
	auto finish = [&] {
		if (section != wanted_section)
			return;
		if (!entry.fde) {
			cies[entry.offset] = entry;
			return;
		}
		frames.fdes.emplace_back(entry.start, entry.end);
		std::vector<std::string> header = entry.header;
		auto rows = entry.rows;
		if (rows.empty()) {
			const Entry &cie = cies[entry.cie];
			REQUIRE_MESSAGE(!cie.rows.empty(), "no row for the CIE at " << entry.cie);
			header = cie.header;
			rows = {{entry.start, cie.rows.front().second}};
		}
		auto column = [&](const char *name) {
			return size_t(std::find(header.begin(), header.end(), name) - header.begin());
		};
		const size_t cfa = column("CFA"), rbp = column("rbp"), ra = column("ra");
		for (size_t i = 0; i < rows.size(); i++) {
			const std::vector<std::string> &values = rows[i].second;
			if (values.size() != header.size())
				FAIL("a row of " << values.size() << " columns under " << header.size());
			ReadelfRow row;
			row.start = rows[i].first;
			row.end = i + 1 < rows.size() ? rows[i + 1].first : entry.end;
			row.cfa = cfa < values.size() ? values[cfa] : "";
			row.rbp = rbp < values.size() ? values[rbp] : "";
			row.ra = ra < values.size() ? values[ra] : "";
			if (row.start < row.end)
				frames.rows.push_back(std::move(row));
		}
	};
	std::istringstream in(text);
	for (std::string line; std::getline(in, line);) {
		const std::vector<std::string> tokens = tokens_of(line);
		if (line.rfind("Contents of the ", 0) == 0) {
			finish();
			entry = {};
			section = tokens[3];
		} else if (tokens.size() >= 4 && (tokens[3] == "CIE" || tokens[3] == "FDE")) {
			finish();
			entry = {};
			entry.offset = std::stoull(tokens[0], nullptr, 16);
			if (tokens[3] == "CIE")
				continue;
			entry.fde = true;
			entry.cie = std::stoull(tokens[4].substr(4), nullptr, 16); // cie=...
			const std::string &range = tokens.back();                  // pc=START..END
			entry.start = std::stoull(range.substr(3), nullptr, 16);
			entry.end = std::stoull(range.substr(range.find("..") + 2), nullptr, 16);
		} else if (tokens.size() > 1 && tokens[0] == "LOC") {
			entry.header.assign(tokens.begin() + 1, tokens.end());
		} else if (tokens.size() > 1 && is_address(tokens[0])) {
			entry.rows.emplace_back(std::stoull(tokens[0], nullptr, 16),
						std::vector<std::string>(tokens.begin() + 1, tokens.end()));
		}
	}
	finish();
	return frames;
}

// --- what a row should be -----------------------------------------------------------------------

// Offsets in 8-byte slots, as rows hold them.
unwind_row rule(uint8_t cfa_type, int32_t cfa_offset = 0, uint8_t rbp_type = UNWIND_RBP_SAME, int16_t rbp_offset = 0)
{
	unwind_row row{};
	row.cfa_type = cfa_type;
	row.cfa_offset = cfa_offset;
	row.rbp_type = rbp_type;
	row.rbp_offset = rbp_offset;
	return row;
}

std::string describe(const unwind_row &row)
{
	static const char *const cfa[] = {"none", "rsp", "rbp", "plt", "end"};
	static const char *const rbp[] = {"same", "cfa", "undefined"};
	std::ostringstream text;
	// In bytes, as readelf prints them (but the PLT rule's threshold, bytes already).
	text << (row.cfa_type < 5 ? cfa[row.cfa_type] : "?") << "+"
	     << row.cfa_offset * (row.cfa_type == UNWIND_CFA_PLT ? 1 : UNWIND_SLOT) << " rbp "
	     << (row.rbp_type < 3 ? rbp[row.rbp_type] : "?") << row.rbp_offset * UNWIND_SLOT;
	return text.str();
}

struct Expected {
	unwind_row rule;
	bool expression = false; // readelf's "exp" CFA: the PLT rule (with this rbp), or none
};

// readelf's columns as the compiler should compile them. Where readelf prints "u" for rbp,
// the FDE mentions rbp only later (it is saved further on): libdw's x86-64 ABI rules make an
// unmentioned rbp the caller's own, the same value, and that is right for the walk.
Expected expected_rule(const ReadelfRow &columns)
{
	const std::string ra = columns.ra.empty() ? "u" : columns.ra, &cfa = columns.cfa,
			  rbp = columns.rbp.empty() ? "s" : columns.rbp;
	if (ra == "u")
		return {rule(UNWIND_CFA_END)};
	if (ra != "c-8")
		return {rule(UNWIND_CFA_NONE)};
	unwind_row row{};
	if (rbp == "u" || rbp == "s") {
		row.rbp_type = UNWIND_RBP_SAME;
	} else if (rbp[0] == 'c' && std::stoi(rbp.substr(1)) % UNWIND_SLOT == 0 &&
		   std::abs(std::stoi(rbp.substr(1)) / UNWIND_SLOT) <= 127) {
		row.rbp_type = UNWIND_RBP_AT_CFA;
		row.rbp_offset = int8_t(std::stoi(rbp.substr(1)) / UNWIND_SLOT);
	} else {
		row.rbp_type = UNWIND_RBP_UNDEFINED;
	}
	if (cfa == "exp") {
		row.cfa_type = UNWIND_CFA_PLT;
		return {row, true};
	}
	if (cfa.rfind("rsp+", 0) == 0 || cfa.rfind("rbp+", 0) == 0) {
		const int bytes = std::stoi(cfa.substr(4));
		if (bytes % UNWIND_SLOT || bytes / UNWIND_SLOT > 65535)
			return {rule(UNWIND_CFA_NONE)};
		row.cfa_type = cfa[1] == 's' ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
		row.cfa_offset = uint16_t(bytes / UNWIND_SLOT);
		return {row};
	}
	return {rule(UNWIND_CFA_NONE)};
}

bool matches(const Expected &expected, const unwind_row &row)
{
	if (!expected.expression)
		return same_unwind_rule(expected.rule, row);
	if (row.cfa_type == UNWIND_CFA_NONE)
		return same_unwind_rule(row, rule(UNWIND_CFA_NONE));
	const int threshold = row.cfa_offset;
	return row.cfa_type == UNWIND_CFA_PLT && (threshold == 5 || threshold == 9 || threshold == 10 || threshold == 11) &&
	       row.rbp_type == expected.rule.rbp_type && row.rbp_offset == expected.rule.rbp_offset;
}

// --- the checks ---------------------------------------------------------------------------------

std::optional<uint64_t> file_offset(const std::vector<LoadSegment> &loads, uint64_t address)
{
	for (const LoadSegment &load : loads)
		if (address >= load.address && address - load.address < load.file_size)
			return address - load.address + load.offset;
	return std::nullopt;
}

// What every table promises, whatever it was compiled from: "" when it holds, else the
// first broken promise. (Checked per row with no assertion each: cc1plus has 500,000.)
std::string broken_promise(const UnwindTable &table)
{
	for (size_t i = 0; i < table.rows.size(); i++) {
		const unwind_row &row = table.rows[i];
		const std::string at = "row " + std::to_string(i) + " (" + describe(row) + "): ";
		if (row.cfa_type > UNWIND_CFA_END || row.rbp_type > UNWIND_RBP_UNDEFINED)
			return at + "no such type";
		if ((row.cfa_type == UNWIND_CFA_NONE || row.cfa_type == UNWIND_CFA_END) &&
		    !same_unwind_rule(row, rule(row.cfa_type)))
			return at + "fields beside none or end";
		if (row.rbp_type != UNWIND_RBP_AT_CFA && row.rbp_offset != 0)
			return at + "an rbp offset with no rbp saved";
		if (i > 0 && table.rows[i - 1].pc >= row.pc)
			return at + "out of order";
		if (i > 0 && same_unwind_rule(table.rows[i - 1], row))
			return at + "the rule of the row before";
	}
	if (!table.rows.empty() && table.rows.back().cfa_type != UNWIND_CFA_NONE)
		return "the last row has a rule";
	return "";
}

void check_well_formed(const UnwindTable &table)
{
	CHECK(broken_promise(table) == "");
}

struct Agreement {
	size_t readelf_rows = 0, table_rows = 0, gaps = 0;
	std::map<uint8_t, size_t> by_type; // table rows checked, by cfa_type
	size_t rbp_saved = 0;
};

// Every readelf row's range holds only table rows with its rule; past each FDE's end that
// no other FDE covers, the table has no rule.
Agreement check_against_readelf(const UnwindTable &table, const ReadelfFrames &frames,
				const std::vector<LoadSegment> &loads)
{
	check_well_formed(table);
	Agreement agreement;
	size_t mismatches = 0;
	auto mismatch = [&](const std::string &what) {
		if (++mismatches <= 10)
			FAIL_CHECK(what);
	};
	for (const ReadelfRow &row : frames.rows) {
		const std::optional<uint64_t> start = file_offset(loads, row.start);
		if (!start)
			continue;
		const uint64_t end = *start + (row.end - row.start);
		const Expected expected = expected_rule(row);
		agreement.readelf_rows++;
		const unwind_row *found = find_unwind_row(table.rows, *start);
		if (!found) {
			mismatch("no row at " + std::to_string(row.start));
			continue;
		}
		for (const unwind_row *at = found; at != table.rows.data() + table.rows.size() && at->pc < end; at++) {
			agreement.table_rows++;
			agreement.by_type[at->cfa_type]++;
			agreement.rbp_saved += at->rbp_type == UNWIND_RBP_AT_CFA;
			if (!matches(expected, *at)) {
				std::ostringstream text;
				text << std::hex << "at 0x" << row.start << " (offset 0x" << at->pc << "), readelf: CFA "
				     << row.cfa << ", rbp " << row.rbp << ", ra " << row.ra;
				text << "; table: " << describe(*at) << "; expected " << describe(expected.rule);
				mismatch(text.str());
			}
		}
	}
	// An FDE's end is covered when one of the FDEs starting at or before it ends after it.
	std::vector<std::pair<uint64_t, uint64_t>> fdes = frames.fdes;
	std::sort(fdes.begin(), fdes.end());
	std::vector<uint64_t> furthest_end; // of fdes[0..i]
	for (const auto &[start, end] : fdes)
		furthest_end.push_back(std::max(end, furthest_end.empty() ? 0 : furthest_end.back()));
	for (const auto &[fde_start, fde_end] : fdes) {
		const size_t before = size_t(std::upper_bound(fdes.begin(), fdes.end(), std::pair(fde_end, UINT64_MAX)) -
					     fdes.begin());
		const bool covered = before > 0 && furthest_end[before - 1] > fde_end;
		const std::optional<uint64_t> last = file_offset(loads, fde_end - 1);
		if (covered || !last)
			continue;
		agreement.gaps++;
		const unwind_row *past = find_unwind_row(table.rows, *last + 1);
		if (!past || past->cfa_type != UNWIND_CFA_NONE)
			mismatch("a rule past the FDE ending at " + std::to_string(fde_end));
	}
	CHECK(mismatches == 0);
	return agreement;
}

bool same_rows(const UnwindTable &a, const UnwindTable &b)
{
	return a.source == b.source &&
	       std::equal(a.rows.begin(), a.rows.end(), b.rows.begin(), b.rows.end(), [](const auto &x, const auto &y) {
		       return x.pc == y.pc && same_unwind_rule(x, y);
	       });
}

std::vector<uint8_t> fixture_bytes(const std::string &name)
{
	std::string text = read_text(fixture_path(name));
	REQUIRE_MESSAGE(!text.empty(), "missing fixture " << fixture_path(name) << " (run: make fixtures)");
	return std::vector<uint8_t>(text.begin(), text.end());
}

UnwindTable compile_fixture(const std::string &name, const std::string &debug = "")
{
	std::vector<uint8_t> bytes = fixture_bytes(name), debug_bytes;
	if (!debug.empty())
		debug_bytes = fixture_bytes(debug);
	std::optional<UnwindTable> table = compile_unwind_table(bytes, debug_bytes);
	REQUIRE(table);
	return *table;
}

Agreement check_fixture(const std::string &program, const std::string &section = ".eh_frame")
{
	CAPTURE(program);
	CAPTURE(section);
	UnwindTable table = compile_fixture(program);
	ReadelfFrames frames = read_frames(read_text(fixture_path(program + ".frames")), section);
	REQUIRE(!frames.rows.empty());
	return check_against_readelf(table, frames, read_loads(program));
}

// Where a section's bytes lie in the file.
std::pair<uint64_t, uint64_t> section_offsets(const std::string &program, const std::string &section)
{
	UniqueFd fd = open_read_only(fixture_path(program).c_str());
	REQUIRE(fd.valid());
	std::unique_ptr<ElfFile> elf = ElfFile::open(fd.get());
	REQUIRE(elf);
	std::optional<std::span<const uint8_t>> data = elf->section_data(section);
	REQUIRE(data);
	const uint64_t start = uint64_t(data->data() - elf->bytes().data());
	return {start, start + data->size()};
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("unwind table: without frame pointers, non-PIE, every row as readelf reads .eh_frame")
{
	Agreement agreement = check_fixture("unwind-nofp");
	CHECK(compile_fixture("unwind-nofp").source == ".eh_frame");
	CHECK(agreement.by_type[UNWIND_CFA_RSP] >= 20);
	CHECK(agreement.by_type[UNWIND_CFA_RBP] >= 2); // alloca's frame
	CHECK(agreement.by_type[UNWIND_CFA_NONE] >= 2); // realigned through r10
	CHECK(agreement.by_type[UNWIND_CFA_END] == 1);  // _start
	CHECK(agreement.by_type[UNWIND_CFA_PLT] == 1);
	CHECK(agreement.rbp_saved >= 10);
	CHECK(agreement.gaps >= 2);
	// Non-PIE at 0x400000: the rows are file offsets, nothing near the addresses.
	UnwindTable table = compile_fixture("unwind-nofp");
	CHECK(table.rows.front().pc < 0x100000);
}

TEST_CASE("unwind table: with frame pointers, a PIE at 0x200000, every row as readelf reads .eh_frame")
{
	Agreement agreement = check_fixture("unwind-fp");
	CHECK(agreement.by_type[UNWIND_CFA_RBP] >= 5);
	CHECK(agreement.by_type[UNWIND_CFA_END] == 1);
	CHECK(compile_fixture("unwind-fp").rows.back().pc < 0x200000);
}

TEST_CASE("unwind table: PLT stubs, the lazy PLT and IBT's")
{
	for (const auto &plt : {std::pair<std::string, int>{"unwind-nofp", 11}, {"unwind-ibt", 9}}) {
		const std::string &program = plt.first;
		const int threshold = plt.second;
		CAPTURE(program);
		check_fixture(program);
		UnwindTable table = compile_fixture(program);
		const auto [start, end] = section_offsets(program, ".plt");
		// PLT0 pushes twice, then each stub pushes once before its jump.
		const unwind_row *row = find_unwind_row(table.rows, start);
		REQUIRE(row);
		CHECK(same_unwind_rule(*row, rule(UNWIND_CFA_RSP, 16 / UNWIND_SLOT)));
		CHECK(same_unwind_rule(*find_unwind_row(table.rows, start + 6), rule(UNWIND_CFA_RSP, 24 / UNWIND_SLOT)));
		for (uint64_t at : {start + 16, start + 16 + threshold, end - 1})
			CHECK(same_unwind_rule(*find_unwind_row(table.rows, at), rule(UNWIND_CFA_PLT, threshold)));
		CHECK(find_unwind_row(table.rows, end)->cfa_type != UNWIND_CFA_PLT);
	}
}

TEST_CASE("unwind table: .debug_frame fills in what .eh_frame leaves out")
{
	// -fno-asynchronous-unwind-tables: crt's _start in .eh_frame, the program's own
	// functions in .debug_frame.
	Agreement from_eh = check_fixture("unwind-dwarf", ".eh_frame");
	Agreement from_debug = check_fixture("unwind-dwarf", ".debug_frame");
	CHECK(compile_fixture("unwind-dwarf").source == ".eh_frame+.debug_frame");
	CHECK(from_eh.by_type[UNWIND_CFA_END] == 1);
	CHECK(from_debug.by_type[UNWIND_CFA_RSP] >= 10);
	CHECK(from_debug.readelf_rows > from_eh.readelf_rows);
}

TEST_CASE("unwind table: a compressed .debug_frame, from a file mapped or read")
{
	const UnwindTable plain = compile_fixture("unwind-dwarf");
	const UnwindTable compressed = compile_fixture("unwind-dwarf-gz");
	CHECK(same_rows(plain, compressed));
	// A file only root can change is mapped: libelf must not write into the mapping when
	// it decompresses. Anyone else's is read into memory.
	TempDir dir;
	const std::string copy = dir / "unwind-dwarf-gz";
	write_file(copy, read_text(fixture_path("unwind-dwarf-gz")));
	for (uid_t owner : {uid_t(0), uid_t(65534)}) {
		CAPTURE(owner);
		REQUIRE(chown(copy.c_str(), owner, owner) == 0);
		REQUIRE(chmod(copy.c_str(), 0644) == 0);
		UniqueFd fd = open_read_only(copy.c_str());
		std::optional<UnwindTable> table = compile_unwind_table(fd.get());
		REQUIRE(table);
		CHECK(same_rows(plain, *table));
	}
}

TEST_CASE("unwind table: a stripped file's rows from its debug file's .debug_frame, at the file's offsets")
{
	UnwindTable none = compile_fixture("unwind-dwarf-stripped");
	CHECK(none.rows.empty());
	CHECK(none.source == "");

	UnwindTable table = compile_fixture("unwind-dwarf-stripped", "unwind-dwarf.debug");
	CHECK(table.source == ".debug_frame");
	ReadelfFrames frames = read_frames(read_text(fixture_path("unwind-dwarf.debug.frames")), ".debug_frame");
	REQUIRE(frames.rows.size() > 10);
	// The stripped file's segments convert the debug file's addresses: the debug file's
	// own hold no bytes.
	const std::vector<LoadSegment> loads = read_loads("unwind-dwarf-stripped");
	Agreement agreement = check_against_readelf(table, frames, loads);
	CHECK(agreement.readelf_rows == frames.rows.size());
	CHECK(agreement.by_type[UNWIND_CFA_RSP] >= 10);
	CHECK(table.rows.front().pc < 0x300000);

	// Through file descriptors, the same.
	UniqueFd fd = open_read_only(fixture_path("unwind-dwarf-stripped").c_str());
	UniqueFd debug_fd = open_read_only(fixture_path("unwind-dwarf.debug").c_str());
	std::optional<UnwindTable> from_fds = compile_unwind_table(fd.get(), debug_fd.get());
	REQUIRE(from_fds);
	CHECK(from_fds->source == ".debug_frame");
	CHECK(same_rows(*from_fds, table));
	// A debug file is not read where the file has CFI of its own for everything.
	UniqueFd nofp = open_read_only(fixture_path("unwind-nofp").c_str());
	std::optional<UnwindTable> own = compile_unwind_table(nofp.get(), debug_fd.get());
	REQUIRE(own);
	CHECK(own->source == ".eh_frame");
}

TEST_CASE("unwind table: rows from spans merge equal neighbours and start every gap with no rule")
{
	const unwind_row rsp8 = rule(UNWIND_CFA_RSP, 1), rsp16 = rule(UNWIND_CFA_RSP, 2),
			 rbp16 = rule(UNWIND_CFA_RBP, 2, UNWIND_RBP_AT_CFA, -2);
	// Out of order; two FDEs back to back with one rule; a gap; an overlap.
	std::vector<unwind_row> rows = unwind_rows_of({{0x2000, 0x2010, rbp16},
						       {0x1000, 0x1001, rsp8},
						       {0x1001, 0x1008, rsp16},
						       {0x1008, 0x1010, rsp8},
						       {0x1010, 0x1020, rsp8},
						       {0x2008, 0x2030, rsp8}});
	struct Want {
		uint32_t pc;
		unwind_row rule;
	};
	const std::vector<Want> want = {{0x1000, rsp8}, {0x1001, rsp16}, {0x1008, rsp8}, {0x1020, rule(UNWIND_CFA_NONE)},
					{0x2000, rbp16}, {0x2010, rsp8},  {0x2030, rule(UNWIND_CFA_NONE)}};
	REQUIRE(rows.size() == want.size());
	for (size_t i = 0; i < want.size(); i++) {
		CAPTURE(i);
		CHECK(rows[i].pc == want[i].pc);
		CHECK(same_unwind_rule(rows[i], want[i].rule));
	}
	CHECK(find_unwind_row(rows, 0xfff) == nullptr);
	CHECK(find_unwind_row(rows, 0x1000)->pc == 0x1000);
	CHECK(find_unwind_row(rows, 0x1007)->pc == 0x1001);
	CHECK(find_unwind_row(rows, 0x1fff)->cfa_type == UNWIND_CFA_NONE);
	CHECK(find_unwind_row(rows, 0x100000)->cfa_type == UNWIND_CFA_NONE);

	// A span whose rule is none merges with the gap after it; offsets a row cannot hold go.
	rows = unwind_rows_of({{0x10, 0x20, rsp8}, {0x20, 0x30, rule(UNWIND_CFA_NONE)}, {0x40, 0x50, rsp8},
			       {0x100000000, 0x100000010, rsp16}});
	REQUIRE(rows.size() == 4);
	CHECK(rows[1].pc == 0x20);
	CHECK(unsigned(rows[1].cfa_type) == UNWIND_CFA_NONE);
	CHECK(rows[2].pc == 0x40);
	CHECK(rows[3].pc == 0x50);
	CHECK(unwind_rows_of({}).empty());
}

TEST_CASE("unwind table: an FDE whose program names a register no machine has is dropped, not played")
{
	// libdw would grow its register array to 31 million entries (500 MB, zeroed) for it.
	std::vector<uint8_t> bytes = fixture_bytes("unwind-nofp");
	const auto [eh_start, eh_end] = section_offsets("unwind-nofp", ".eh_frame");
	// GCC's FDEs: length, CIE pointer, pc-relative sdata4 start and length, an empty
	// augmentation, then the program. The longest is unwind_many_saved's.
	uint64_t longest = 0, longest_size = 0;
	for (uint64_t at = eh_start; at + 8 <= eh_end;) {
		uint32_t length, cie_pointer;
		std::memcpy(&length, &bytes[at], 4);
		std::memcpy(&cie_pointer, &bytes[at + 4], 4);
		if (length == 0)
			break;
		if (cie_pointer != 0 && length > longest_size) {
			longest = at;
			longest_size = length;
		}
		at += 4 + length;
	}
	REQUIRE(longest_size > 30);
	int32_t relative;
	uint32_t size;
	std::memcpy(&relative, &bytes[longest + 8], 4);
	std::memcpy(&size, &bytes[longest + 12], 4);
	// The code is where the field's own address says; all the fixture's segments are
	// as far from their file offsets as the first.
	const std::vector<LoadSegment> loads = read_loads("unwind-nofp");
	const uint64_t bias = loads[0].address - loads[0].offset;
	const uint64_t function_offset = *file_offset(loads, bias + longest + 8 + int64_t(relative));

	const UnwindTable good = compile_fixture("unwind-nofp");
	CHECK(find_unwind_row(good.rows, function_offset + 2)->cfa_type == UNWIND_CFA_RSP);
	// DW_CFA_offset_extended, register 31,457,280, at CFA - 8: first in the program.
	const uint8_t bomb[] = {0x05, 0x80, 0x80, 0x80, 0x0f, 0x01};
	std::memcpy(&bytes[longest + 17], bomb, sizeof(bomb));
	std::optional<UnwindTable> table = compile_unwind_table(bytes);
	REQUIRE(table);
	check_well_formed(*table);
	CHECK(find_unwind_row(table->rows, function_offset + 2)->cfa_type == UNWIND_CFA_NONE);
	// Every other function keeps its rows.
	size_t kept = 0;
	for (const unwind_row &row : good.rows) {
		if (row.pc >= function_offset && row.pc < function_offset + size)
			continue;
		const unwind_row *same = find_unwind_row(table->rows, row.pc);
		CHECK((same && same_unwind_rule(*same, row)));
		kept++;
	}
	CHECK(kept > 30);
}

TEST_CASE("unwind table: not an x86-64 ELF object, no table; hostile bytes, fewer rows and no crash")
{
	CHECK(!compile_unwind_table(std::span<const uint8_t>()));
	const std::string text = "#!/bin/sh\necho not an ELF file\n";
	CHECK(!compile_unwind_table(std::span(reinterpret_cast<const uint8_t *>(text.data()), text.size())));
	std::vector<uint8_t> bytes = fixture_bytes("unwind-nofp");
	std::vector<uint8_t> other_machine = bytes;
	other_machine[18] = 183; // EM_AARCH64
	CHECK(!compile_unwind_table(other_machine));
	UniqueFd directory(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	CHECK(!compile_unwind_table(directory.get()));
	CHECK(!compile_unwind_table(-1));

	const size_t full_rows = compile_fixture("unwind-nofp").rows.size();
	// Cut anywhere: every prefix (a cut inside .eh_frame loses the FDEs after it).
	for (size_t size = 0; size < bytes.size(); size += 61) {
		std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + size);
		if (std::optional<UnwindTable> table = compile_unwind_table(cut)) {
			check_well_formed(*table);
			CHECK(table->rows.size() <= full_rows);
		}
	}
	// Bytes flipped, most of them in .eh_frame and .eh_frame_hdr.
	const auto [eh_start, eh_end] = section_offsets("unwind-nofp", ".eh_frame");
	const auto [hdr_start, hdr_end] = section_offsets("unwind-nofp", ".eh_frame_hdr");
	std::mt19937 random(1234);
	for (int round = 0; round < 600; round++) {
		std::vector<uint8_t> hostile = bytes;
		for (int flips = 1 + round % 8; flips > 0; flips--) {
			size_t at;
			switch (random() % 4) {
			case 0:
				at = random() % hostile.size();
				break;
			case 1:
				at = hdr_start + random() % (hdr_end - hdr_start);
				break;
			default:
				at = eh_start + random() % (eh_end - eh_start);
			}
			hostile[at] = uint8_t(random());
		}
		if (std::optional<UnwindTable> table = compile_unwind_table(hostile))
			check_well_formed(*table);
	}
	// Nothing but garbage after a valid header.
	std::vector<uint8_t> garbage(bytes.begin(), bytes.begin() + 64);
	for (int i = 0; i < 8192; i++)
		garbage.push_back(uint8_t(random()));
	if (std::optional<UnwindTable> table = compile_unwind_table(garbage))
		check_well_formed(*table);
}

} // TEST_SUITE("unit")

namespace {

// readelf -lW's PT_LOAD lines: the segments a system object's addresses convert through.
std::vector<LoadSegment> loads_of(const std::string &program_headers)
{
	std::vector<LoadSegment> loads;
	std::istringstream in(program_headers);
	for (std::string line; std::getline(in, line);) {
		std::vector<std::string> tokens = tokens_of(line);
		if (tokens.size() >= 5 && tokens[0] == "LOAD")
			loads.push_back({std::stoull(tokens[1], nullptr, 16), std::stoull(tokens[2], nullptr, 16),
					 std::stoull(tokens[4], nullptr, 16)});
	}
	return loads;
}


// Every row of the system object at `path` as readelf reads its .eh_frame.
void check_system_object(const char *path)
{
	const std::string name = path;
	CAPTURE(name);
	UniqueFd fd = open_read_only(path);
	if (!fd) {
		skip_test(name + " is not on this system");
		return;
	}
	const auto start = std::chrono::steady_clock::now();
	std::optional<UnwindTable> table = compile_unwind_table(fd.get());
	const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
	REQUIRE(table);
	CHECK(table->source == ".eh_frame");
	INFO(name << ": " << table->rows.size() << " rows (" << table->rows.size() * sizeof(unwind_row)
		  << " bytes), compiled in " << ms << " ms");

	CommandResult frames = run_command({"/usr/bin/readelf", "--debug-dump=frames-interp", path}, 120);
	CommandResult headers = run_command({"/usr/bin/readelf", "-lW", path});
	// readelf exits 1 on libc after printing every frame: what it printed is the answer.
	ReadelfFrames rows = read_frames(frames.out, ".eh_frame");
	REQUIRE(rows.rows.size() > 1000);
	Agreement agreement = check_against_readelf(*table, rows, loads_of(headers.out));
	CHECK(agreement.readelf_rows == rows.rows.size());
	CHECK(agreement.by_type[UNWIND_CFA_PLT] >= 1);
}

} // namespace

TEST_SUITE("unit") {

// The objects the kernel side's row cap is chosen from; what each costs is printed.
TEST_CASE("unwind table: libc, python3.11 and liblzma, every row as readelf reads them")
{
	for (const char *path : {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11",
				 "/usr/lib/x86_64-linux-gnu/liblzma.so.5"})
		check_system_object(path);
}

} // TEST_SUITE("unit")

// cc1plus, the largest object here, in the first pass only: its size is what it checks, and
// under ASan the four objects together took 11.5 s, where libc's rows run the same code.
TEST_SUITE("integration") {

TEST_CASE("unwind table: cc1plus, the largest, every row as readelf reads it")
{
	check_system_object("/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus");
}

} // TEST_SUITE("integration")

TEST_SUITE("unit") {

TEST_CASE("unwind table: the page index narrows every search to rows that hold the answer")
{
	// Rows far apart, several in one page, a page with no row of its own, and libc's.
	std::vector<std::vector<unwind_row>> tables;
	std::vector<unwind_row> sparse;
	for (uint32_t pc : {0x1010u, 0x1020u, 0x1ff0u, 0x5008u, 0x5009u, 0x9000u}) {
		unwind_row row = rule(UNWIND_CFA_RSP, 1);
		row.pc = pc;
		sparse.push_back(row);
	}
	tables.push_back(sparse);
	std::optional<UnwindTable> libc = compile_unwind_table(
		UniqueFd(open("/usr/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY | O_CLOEXEC)).get());
	REQUIRE(libc);
	REQUIRE(libc->rows.size() > 1000);
	tables.push_back(libc->rows);
	CHECK(unwind_page_index({}).empty());

	for (const std::vector<unwind_row> &rows : tables) {
		const std::vector<unwind_page> pages = unwind_page_index(rows);
		const uint32_t base = rows.front().pc >> UNWIND_PAGE_SHIFT;
		REQUIRE(pages.size() == (rows.back().pc >> UNWIND_PAGE_SHIFT) - base + 1);
		size_t widest = 0;
		// Every pc from the first row's page to past the last row: the row found within the
		// page's range is the one a search of all the rows finds.
		for (uint64_t pc = uint64_t(base) << UNWIND_PAGE_SHIFT; pc < rows.back().pc + 0x100; pc += 5) {
			const uint32_t page = uint32_t(pc >> UNWIND_PAGE_SHIFT) - base;
			const unwind_row *want = find_unwind_row(rows, pc);
			if (page >= pages.size()) {
				CHECK(want == &rows.back());
				continue;
			}
			// One assertion each only when it fails: libc alone has a million pcs here.
			const unwind_page entry = pages[page];
			if (entry.first >= entry.end || entry.end > rows.size()) {
				CAPTURE(page);
				REQUIRE(entry.first < entry.end);
				REQUIRE(entry.end <= rows.size());
			}
			widest = std::max<size_t>(widest, entry.end - entry.first);
			const unwind_row *got = find_unwind_row(std::span(rows).subspan(entry.first, entry.end - entry.first), pc);
			if (want != got) {
				CAPTURE(pc);
				REQUIRE(want == got);
			}
		}
		// The point of it: a page's range is a small part of a large table.
		if (rows.size() > 1000)
			CHECK(widest * 20 < rows.size());
	}
}

} // TEST_SUITE
