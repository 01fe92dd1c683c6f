// tests/test_elf_source_lines.cpp: SourceLines against the lines the inlined fixture
// marks in its source, in every form of debug info the fixture build makes.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <dwarf.h>
#include <elf.h>
#include <fcntl.h>
#include <initializer_list>
#include <map>
#include <random>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fd.h"
#include "elf/dwarf_file.h"
#include "elf/source_lines.h"
#include "tests/fixtures/fixture_files.h"
#include "tests/support.h"

namespace {

const char *const kOuter = "_ZN7fixture10outer_loopEl";
const char *const kOuterName = "fixture::outer_loop(long)"; // its linkage name, demangled

// The line of the fixture source that carries /* LINE:tag */.
uint32_t marked_line(const std::string &source_name, const std::string &tag)
{
	std::string source = read_text(fixture_path(source_name));
	REQUIRE_MESSAGE(!source.empty(), "missing fixture " << fixture_path(source_name) << " (run: make fixtures)");
	size_t at = source.find("/* LINE:" + tag + " */");
	REQUIRE(at != std::string::npos);
	return uint32_t(std::count(source.begin(), source.begin() + at, '\n') + 1);
}

std::unique_ptr<SourceLines> open_fixture(const std::string &name)
{
	UniqueFd fd = open_read_only(fixture_path(name).c_str());
	REQUIRE_MESSAGE(fd.valid(), "missing fixture " << fixture_path(name) << " (run: make fixtures)");
	return SourceLines::open(fd.get()); // the fd closes here: SourceLines must not need it
}

// bytes in an anonymous file, as an fd: what a hostile or damaged file on disk would be.
UniqueFd memory_file(const std::string &bytes)
{
	UniqueFd fd(memfd_create("source-lines-test", MFD_CLOEXEC));
	REQUIRE(fd.valid());
	REQUIRE(write(fd.get(), bytes.data(), bytes.size()) == ssize_t(bytes.size()));
	return fd;
}

bool ends_with(const std::string &text, const std::string &tail)
{
	return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// Checks that lines answers as expected does at each of the 32 addresses from each start;
// returns at how many it gave a line.
int same_answers(SourceLines &expected_lines, SourceLines &lines, std::initializer_list<uint64_t> starts)
{
	int with_lines = 0;
	for (uint64_t start : starts) {
		for (uint64_t address = start; address < start + 32; address++) {
			CAPTURE(address);
			const std::vector<SourceLocation> expected = expected_lines.find(address);
			const std::vector<SourceLocation> found = lines.find(address);
			REQUIRE(found.size() == expected.size());
			for (size_t i = 0; i < found.size(); i++) {
				CHECK(found[i].function == expected[i].function);
				CHECK(found[i].file == expected[i].file);
				CHECK(found[i].line == expected[i].line);
				CHECK(found[i].inlined == expected[i].inlined);
			}
			with_lines += !found.empty();
		}
	}
	return with_lines;
}

// Each debug-info form of the fixture, with the nm listing that gives its addresses.
// GCC gives the static inline function no linkage name: its name is qualified from the
// namespace around it, without the parameters a demangled name would have.
struct Variant {
	const char *debug_file, *listing, *inner_name;
};
const char *const kGccInnerName = "fixture::inner_step";
const Variant kGccVariants[] = {
	{"inlined", "inlined.nm", kGccInnerName}, // DWARF 5
	{"inlined-dwarf4", "inlined-dwarf4.nm", kGccInnerName},
	{"inlined-gz", "inlined-gz.nm", kGccInnerName}, // SHF_COMPRESSED debug sections
	{"inlined-split.debug", "inlined-split.nm", kGccInnerName}, // objcopy --only-keep-debug
};
const Variant kVariants[] = {
	kGccVariants[0], kGccVariants[1], kGccVariants[2], kGccVariants[3],
	{"inlined-clang", "inlined-clang.nm", "fixture::inner_step(long)"}, // no .debug_aranges
};

// The [offset, size) of each section whose name starts with prefix, read from the
// ELF64 section headers.
std::vector<std::pair<size_t, size_t>> sections_named(const std::string &elf, const std::string &prefix)
{
	std::vector<std::pair<size_t, size_t>> found;
	Elf64_Ehdr header;
	REQUIRE(elf.size() >= sizeof(header));
	std::memcpy(&header, elf.data(), sizeof(header));
	REQUIRE(header.e_shoff + uint64_t(header.e_shnum) * sizeof(Elf64_Shdr) <= elf.size());
	auto section = [&](size_t i) {
		Elf64_Shdr shdr;
		std::memcpy(&shdr, elf.data() + header.e_shoff + i * sizeof(Elf64_Shdr), sizeof(shdr));
		return shdr;
	};
	Elf64_Shdr names = section(header.e_shstrndx);
	for (size_t i = 0; i < header.e_shnum; i++) {
		Elf64_Shdr shdr = section(i);
		if (shdr.sh_type == SHT_NOBITS || names.sh_offset + shdr.sh_name >= elf.size())
			continue;
		if (std::string(elf.c_str() + names.sh_offset + shdr.sh_name).starts_with(prefix) &&
		    shdr.sh_offset + shdr.sh_size <= elf.size() && shdr.sh_size > 0)
			found.push_back({size_t(shdr.sh_offset), size_t(shdr.sh_size)});
	}
	return found;
}

uint64_t read_uleb(const std::string &bytes, size_t &at)
{
	uint64_t value = 0;
	for (int shift = 0; at < bytes.size(); shift += 7) {
		uint8_t byte = uint8_t(bytes[at++]);
		value |= uint64_t(byte & 0x7f) << (shift < 64 ? shift : 0);
		if (byte < 0x80)
			break;
	}
	return value;
}

// Every DW_AT_name the abbreviations give as DW_FORM_strp turned into DW_FORM_strp_sup
// (same size): the names are then read from the alt file, which libdw goes looking for.
int names_to_alt_file(std::string &elf)
{
	auto abbrev = sections_named(elf, ".debug_abbrev");
	REQUIRE(abbrev.size() == 1);
	size_t at = abbrev[0].first, end = abbrev[0].first + abbrev[0].second;
	int changed = 0;
	while (at < end) {
		if (read_uleb(elf, at) == 0) // the end of a unit's abbreviations
			continue;
		read_uleb(elf, at); // tag
		at++;               // children
		while (at < end) {
			uint64_t attribute = read_uleb(elf, at);
			size_t form_at = at;
			uint64_t form = read_uleb(elf, at);
			if (form == DW_FORM_implicit_const)
				read_uleb(elf, at); // its value, an SLEB128 skipped the same way
			if (attribute == 0 && form == 0)
				break;
			if (attribute == DW_AT_name && form == DW_FORM_strp) {
				elf[form_at] = char(DW_FORM_strp_sup);
				changed++;
			}
		}
	}
	return changed;
}

// The lookups of the alt-link test, in a child of their own (ChildWork) that the test kills
// if they hang: FILE's lines at MARKER stand (INNER_LINE inlined, then CALL_LINE); names
// that were to come from the alt file are gone, the one from a linkage name (in .debug_str
// still) is not. Exit 0 when they are so.
const ChildWork altlink_lookups("source lines: altlink lookups", [](const std::vector<std::string> &args) {
	if (args.size() != 4)
		return 2;
	UniqueFd fd = open_read_only(args[0].c_str());
	std::unique_ptr<SourceLines> lines = SourceLines::open(fd.get());
	if (!lines)
		return 2;
	std::vector<SourceLocation> found = lines->find(std::stoull(args[1]));
	bool right = found.size() == 2 && found[0].line == std::stoul(args[2]) && found[0].inlined &&
		     found[1].line == std::stoul(args[3]) && found[1].function == kOuterName;
	return right ? 0 : 3;
});

} // namespace

TEST_SUITE("unit")
{
	TEST_CASE("source lines: the noinline function's address gives its file and line")
	{
		uint32_t outer_line = marked_line("inlined.cpp", "outer");
		for (const Variant &variant : kVariants) {
			CAPTURE(std::string(variant.debug_file));
			std::unique_ptr<SourceLines> lines = open_fixture(variant.debug_file);
			REQUIRE(lines);
			uint64_t outer = nm_address(variant.listing, kOuter);
			REQUIRE(outer != 0);
			// The marked line starts with four bytes of its own at the function's start.
			for (uint64_t inside : {0, 2}) {
				std::vector<SourceLocation> found = lines->find(outer + inside);
				REQUIRE(found.size() == 1);
				CHECK(found[0].function == kOuterName);
				CHECK(ends_with(found[0].file, "/tests/fixtures/inlined.cpp"));
				CHECK(found[0].file.front() == '/'); // joined with the compile folder
				CHECK(found[0].line == outer_line);
				CHECK(!found[0].inlined);
			}
		}
	}

	// The inlined body is in inlined.h, its call in inlined.cpp: a DW_AT_call_file read
	// against the wrong file table, or off by one entry, names the wrong one.
	TEST_CASE("source lines: code inlined into a function gives the inlined frame, then the caller at the call")
	{
		uint32_t inner_line = marked_line("inlined.h", "inner");
		uint32_t call_line = marked_line("inlined.cpp", "call");
		for (const Variant &variant : kVariants) {
			CAPTURE(std::string(variant.debug_file));
			std::unique_ptr<SourceLines> lines = open_fixture(variant.debug_file);
			REQUIRE(lines);
			uint64_t marker = nm_address(variant.listing, "inner_marker");
			REQUIRE(marker != 0);
			std::vector<SourceLocation> found = lines->find(marker);
			REQUIRE(found.size() == 2);
			CHECK(found[0].function == variant.inner_name);
			CHECK(found[0].inlined);
			CHECK(found[0].line == inner_line);
			CHECK(ends_with(found[0].file, "/tests/fixtures/inlined.h"));
			CHECK(found[1].function == kOuterName);
			CHECK(!found[1].inlined);
			CHECK(found[1].line == call_line);
			CHECK(ends_with(found[1].file, "/tests/fixtures/inlined.cpp"));
		}
	}

	TEST_CASE("source lines: DWARF 4, compressed and separate debug info answer as DWARF 5 does")
	{
		std::unique_ptr<SourceLines> reference = open_fixture("inlined");
		REQUIRE(reference);
		uint64_t main_start = nm_address("inlined.nm", "main");
		uint64_t outer = nm_address("inlined.nm", kOuter);
		REQUIRE(main_start != 0);
		REQUIRE(outer != 0);
		for (const Variant &variant : kGccVariants) {
			CAPTURE(std::string(variant.debug_file));
			// The same code: only the debug info differs.
			REQUIRE(nm_address(variant.listing, kOuter) == outer);
			REQUIRE(nm_address(variant.listing, "main") == main_start);
			std::unique_ptr<SourceLines> lines = open_fixture(variant.debug_file);
			REQUIRE(lines);
			CHECK(same_answers(*reference, *lines, {main_start, outer}) > 32);
		}
	}

	TEST_CASE("source lines: a decompressed copy of compressed DWARF answers as the file does; other files get none")
	{
		UniqueFd gz = open_read_only(fixture_path("inlined-gz").c_str());
		REQUIRE(gz.valid());
		size_t bytes = 0;
		UniqueFd copy = decompressed_copy(gz.get(), &bytes);
		REQUIRE(copy.valid());
		CHECK(bytes > 0);
		CHECK(write(copy.get(), "x", 1) == -1); // sealed
		std::unique_ptr<SourceLines> from_file = open_fixture("inlined-gz");
		std::unique_ptr<SourceLines> from_copy = SourceLines::open(copy.get());
		REQUIRE(from_file);
		REQUIRE(from_copy);
		CHECK(from_file->inflated_bytes() >= bytes); // the copy's sections are laid out anew, packed
		CHECK(from_copy->inflated_bytes() == 0);
		const uint64_t main_start = nm_address("inlined-gz.nm", "main"), outer = nm_address("inlined-gz.nm", kOuter);
		REQUIRE(main_start != 0);
		REQUIRE(outer != 0);
		CHECK(same_answers(*from_file, *from_copy, {main_start, outer}) > 32);
		// Nothing compressed, nothing to copy.
		UniqueFd plain = open_read_only(fixture_path("inlined").c_str());
		size_t none = 0;
		CHECK(!decompressed_copy(plain.get(), &none).valid());
		CHECK(open_fixture("inlined")->inflated_bytes() == 0);
		CHECK(!decompressed_copy(memory_file("not an ELF file").get(), &none).valid());
	}

	TEST_CASE("source lines: an address no unit covers gives nothing")
	{
		std::unique_ptr<SourceLines> lines = open_fixture("inlined");
		REQUIRE(lines);
		CHECK(lines->find(0).empty());
		CHECK(lines->find(~0ull).empty());
		CHECK(lines->find(nm_address("inlined.nm", kOuter) + 0x100000).empty());
	}

	TEST_CASE("source lines: a file without debug info gives none")
	{
		// inlined-split is the program stripped of its DWARF; hello-stripped of everything.
		CHECK(!open_fixture("inlined-split"));
		CHECK(!open_fixture("hello-stripped"));
		CHECK(!SourceLines::open(-1));
		CHECK(!SourceLines::open(memory_file("").get()));
		CHECK(!SourceLines::open(memory_file("\x7f" "ELF").get()));
		int pipe_ends[2];
		REQUIRE(pipe2(pipe_ends, O_CLOEXEC) == 0);
		UniqueFd read_end(pipe_ends[0]), write_end(pipe_ends[1]);
		CHECK(!SourceLines::open(read_end.get())); // never blocks on a pipe or FIFO
	}

	// libdw opens the alt file a .gnu_debugaltlink names on first use of an alt form, by
	// that name: as root, anything, blocking for ever on a FIFO. The fixture's link names
	// alt.fifo; the test makes it one, beside the file, and runs the lookups in a child
	// it kills if they hang.
	TEST_CASE("source lines: the alt file a .gnu_debugaltlink names is not opened from where the file says")
	{
		std::string program = read_text(fixture_path("inlined-altlink"));
		REQUIRE_MESSAGE(!program.empty(),
				"missing fixture " << fixture_path("inlined-altlink") << " (run: make fixtures)");
		REQUIRE(names_to_alt_file(program) > 0);
		uint64_t marker = nm_address("inlined.nm", "inner_marker");
		uint32_t inner_line = marked_line("inlined.h", "inner"), call_line = marked_line("inlined.cpp", "call");
		REQUIRE(marker != 0);

		char dir_template[] = "/tmp/source-lines-altlink-XXXXXX";
		REQUIRE(mkdtemp(dir_template));
		std::string dir = dir_template, path = dir + "/program", fifo = dir + "/alt.fifo";
		{
			UniqueFd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
			REQUIRE(out.valid());
			REQUIRE(write(out.get(), program.data(), program.size()) == ssize_t(program.size()));
		}
		REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);

		// A hang is killed after 10 s.
		const CommandResult r = run_command(child_work_argv("source lines: altlink lookups",
								    {path, std::to_string(marker), std::to_string(inner_line),
								     std::to_string(call_line)}),
						    10);
		unlink(fifo.c_str());
		unlink(path.c_str());
		rmdir(dir.c_str());
		REQUIRE_MESSAGE(r.status != 128 + SIGKILL, "the lookups hung: the FIFO the link names was opened");
		CHECK_MESSAGE(r.status == 0, r.err);
	}

	TEST_CASE("source lines: random, truncated and damaged files give null or empty, never a crash")
	{
		std::string program = read_text(fixture_path("inlined"));
		REQUIRE(!program.empty());
		uint64_t outer = nm_address("inlined.nm", kOuter);
		uint64_t marker = nm_address("inlined.nm", "inner_marker");
		auto try_all = [&](const std::string &bytes) {
			UniqueFd fd = memory_file(bytes);
			std::unique_ptr<SourceLines> lines = SourceLines::open(fd.get());
			fd.reset();
			if (!lines)
				return false;
			for (uint64_t address : {outer, outer + 2, marker, marker + 1, uint64_t(0)})
				for (const SourceLocation &location : lines->find(address))
					CHECK(location.function.size() < 4096);
			return true;
		};

		std::mt19937_64 random(20240611);
		std::string noise(program.size(), '\0');
		for (char &byte : noise)
			byte = char(random());
		CHECK(!try_all(noise));

		for (size_t size : {size_t(64), size_t(4096), program.size() / 2, program.size() - 100})
			try_all(program.substr(0, size));

		// libdw hands out a string by its offset and strlen()s it: without the NUL at the
		// end of the section, that reads past it (ASan saw it in libdw 0.188).
		std::vector<std::pair<size_t, size_t>> line_strings = sections_named(program, ".debug_line_str");
		REQUIRE(line_strings.size() == 1);
		std::string unterminated = program;
		unterminated[line_strings[0].first + line_strings[0].second - 1] = 'x';
		CHECK(!try_all(unterminated));

		// Bytes flipped inside the DWARF sections themselves, where the parsing is.
		std::vector<std::pair<size_t, size_t>> dwarf = sections_named(program, ".debug_");
		REQUIRE(dwarf.size() >= 4);
		int opened = 0;
		for (int round = 0; round < 400; round++) {
			std::string damaged = program;
			int flips = 1 + int(random() % 8);
			for (int i = 0; i < flips; i++) {
				const auto &[offset, size] = dwarf[random() % dwarf.size()];
				damaged[offset + random() % size] = char(random());
			}
			opened += try_all(damaged);
		}
		CHECK(opened > 0); // most damage leaves the file readable: find ran on it
	}
	// Where each attribute of the fixture's first inlined call is, as readelf -wi lists them:
	// its offset in .debug_info and its size (up to the next attribute). The bytes are then
	// changed in place, form and size kept, so the tree is malformed, not the file.
	TEST_CASE("source lines: a malformed inline tree keeps the function's own frame, and never crashes")
	{
		const CommandResult readelf = run_command({"/bin/sh", "-c", "readelf --debug-dump=info \"$0\"", fixture_path("inlined")});
		REQUIRE_MESSAGE(readelf.status == 0, "readelf is needed: " << readelf.err);
		uint64_t unit = 0, unit_die = 0, call = 0;
		std::map<std::string, std::pair<uint64_t, uint64_t>> attributes; // name: offset, size
		std::string last;
		uint64_t last_at = 0;
		bool in_call = false;
		for (const std::string &line : split_lines(readelf.out)) {
			unsigned long long offset = 0;
			char text[128] = "";
			if (std::sscanf(line.c_str(), "  Compilation Unit @ offset %llx", &offset) == 1 && !call)
				unit = offset;
			int level = 0;
			if (std::sscanf(line.c_str(), " <%d><%llx>: Abbrev Number: %*d (%127[^)])", &level, &offset, text) == 3) {
				if (in_call)
					break;
				if (level == 0)
					unit_die = offset;
				in_call = std::string(text) == "DW_TAG_inlined_subroutine";
				if (in_call)
					call = offset;
				continue;
			}
			if (in_call && std::sscanf(line.c_str(), "    <%llx> %127[^: ]", &offset, text) == 2) {
				if (!last.empty())
					attributes[last] = {last_at, offset - last_at};
				last = text;
				last_at = offset;
			}
		}
		REQUIRE(call);
		REQUIRE(unit_die > unit);
		REQUIRE(attributes.count("DW_AT_abstract_origin"));
		REQUIRE(attributes.count("DW_AT_call_file"));

		const std::string program = read_text(fixture_path("inlined"));
		const std::vector<std::pair<size_t, size_t>> info = sections_named(program, ".debug_info");
		REQUIRE(info.size() == 1);
		const uint64_t marker = nm_address("inlined.nm", "inner_marker");
		auto patched = [&](const char *attribute, uint64_t value) {
			const auto [at, size] = attributes.at(attribute);
			REQUIRE(at + size <= info[0].second);
			std::string bytes = program;
			for (uint64_t i = 0; i < size; i++) // little-endian; a 1-byte ULEB128 stays one
				bytes[info[0].first + at + i] = char(size == 1 ? value & 0x7f : value >> (8 * i));
			return bytes;
		};
		struct Damage {
			const char *what, *attribute;
			uint64_t value;
		};
		const uint64_t self = call - unit; // DW_FORM_ref4 counts from its unit
		std::vector<Damage> damages = {
			{"its origin past the end of the unit", "DW_AT_abstract_origin", 0xffffffff},
			{"its origin itself, a loop", "DW_AT_abstract_origin", self},
			{"its origin the unit's own DIE", "DW_AT_abstract_origin", unit_die - unit},
			{"its origin inside the unit's header", "DW_AT_abstract_origin", 0},
			{"its call file past the file table", "DW_AT_call_file", 0x7f},
		};
		for (const char *ranges : {"DW_AT_ranges", "DW_AT_low_pc", "DW_AT_high_pc"})
			if (attributes.count(ranges))
				damages.push_back({"its code range out of the section or of the function", ranges, 0xffffffff});
		for (const Damage &damage : damages) {
			INFO("the inlined call with " << damage.what);
			UniqueFd fd = memory_file(patched(damage.attribute, damage.value));
			std::unique_ptr<SourceLines> lines = SourceLines::open(fd.get());
			REQUIRE(lines);
			const std::vector<SourceLocation> found = lines->find(marker);
			REQUIRE(!found.empty());
			CHECK(found.back().function == kOuterName); // the function the address is in
			CHECK(!found.back().inlined);
			CHECK(found.size() <= 2);
			for (size_t i = 0; i + 1 < found.size(); i++) {
				CHECK(found[i].inlined);
				// Either the name the call's origin gives, or none: the symbolizer drops a
				// nameless inlined frame.
				CHECK((found[i].function == kGccInnerName || found[i].function.empty()));
			}
		}
	}
}
