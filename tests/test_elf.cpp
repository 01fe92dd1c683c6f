// tests/test_elf.cpp: ElfFile against what nm and readelf say about the fixtures.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <random>
#include <unistd.h>

#include "elf/demangle.h"
#include "elf/elf.h"
#include "base/fd.h"
#include "tests/fixtures/fixture_files.h"
#include "tests/support.h"
#include "tests/test_report_data.h"

namespace {

std::unique_ptr<ElfFile> open_fixture(const std::string &name)
{
	UniqueFd fd = open_read_only(fixture_path(name).c_str());
	REQUIRE_MESSAGE(fd.valid(), "missing fixture " << fixture_path(name) << " (run: make fixtures)");
	return ElfFile::open(fd.get());
}

std::vector<uint8_t> fixture_bytes(const std::string &name)
{
	std::string text = read_text(fixture_path(name));
	REQUIRE_MESSAGE(!text.empty(), "missing fixture " << fixture_path(name) << " (run: make fixtures)");
	return std::vector<uint8_t>(text.begin(), text.end());
}

bool is_function_type(char type)
{
	return type == 'T' || type == 't' || type == 'W' || type == 'w';
}

// Every fixture function nm lists is found by ElfFile at its address and inside it.
void check_functions(const std::string &program, const std::string &listing)
{
	std::unique_ptr<ElfFile> elf = open_fixture(program);
	REQUIRE(elf);
	int checked = 0;
	for (const NmSymbol &symbol : read_nm(listing)) {
		if (!is_function_type(symbol.type) ||
		    (symbol.name != "main" && symbol.name.find("fixture") == std::string::npos &&
		     symbol.name.find("uses_lib") == std::string::npos))
			continue;
		CAPTURE(program);
		CAPTURE(symbol.name);
		for (uint64_t inside : {uint64_t(0), uint64_t(1)}) {
			const ElfFile::Symbol *found = elf->find_symbol(symbol.address + inside);
			REQUIRE(found);
			CHECK(found->name == symbol.name);
			CHECK(found->start == symbol.address);
		}
		checked++;
	}
	CHECK(checked >= 2);
}

} // namespace

TEST_SUITE("unit")
{
	TEST_CASE("elf: functions of every fixture are found at the addresses nm gives")
	{
		for (const char *program : {"hello-nopie", "hello-pie", "libfixture.so", "uses-lib", "cxx"})
			check_functions(program, std::string(program) + ".nm");
	}

	TEST_CASE("elf: a non-PIE executable is ET_EXEC at its fixed address, PIE and .so are ET_DYN")
	{
		CHECK(open_fixture("hello-nopie")->type() == ET_EXEC);
		CHECK(nm_address("hello-nopie.nm", "fixture_leaf") >= 0x400000);
		CHECK(open_fixture("hello-pie")->type() == ET_DYN);
		CHECK(open_fixture("libfixture.so")->type() == ET_DYN);
	}

	TEST_CASE("elf: .symtab is preferred and holds local functions")
	{
		std::unique_ptr<ElfFile> elf = open_fixture("hello-pie");
		CHECK(!elf->symbols_loaded()); // read only when first asked
		CHECK(elf->symbol_table() == ".symtab");
		CHECK(elf->symbols_loaded());
		uint64_t local = nm_address("hello-pie.nm", "fixture_local");
		REQUIRE(local != 0);
		REQUIRE(elf->find_symbol(local + 1));
		CHECK(elf->find_symbol(local + 1)->name == "fixture_local");
	}

	TEST_CASE("elf: a binary stripped of .symtab falls back to .dynsym")
	{
		std::unique_ptr<ElfFile> elf = open_fixture("hello-stripped");
		REQUIRE(elf);
		CHECK(!elf->section_data(".symtab"));
		CHECK(elf->symbol_table() == ".dynsym");
		check_functions("hello-stripped", "hello-stripped.nm");
		// Only exported functions survive the strip.
		CHECK(elf->symbol_count() < 10);
	}

	TEST_CASE("elf: file offsets become addresses through the PT_LOAD segments, and back")
	{
		for (const char *program : {"hello-nopie", "hello-pie", "libfixture.so"}) {
			CAPTURE(program);
			std::unique_ptr<ElfFile> elf = open_fixture(program);
			std::vector<LoadSegment> loads = read_loads(program);
			REQUIRE(loads.size() >= 2);
			for (const LoadSegment &load : loads) {
				CHECK(elf->address_of_file_offset(load.offset) == load.address);
				CHECK(elf->address_of_file_offset(load.offset + load.file_size - 1) ==
				      load.address + load.file_size - 1);
				CHECK(elf->file_offset_of_address(load.address) == load.offset);
				CHECK(elf->file_offset_of_address(load.address + load.file_size - 1) ==
				      load.offset + load.file_size - 1);
			}
			CHECK(!elf->address_of_file_offset(loads.back().offset + loads.back().file_size + 0x100000));
			CHECK(!elf->file_offset_of_address(loads.back().address + loads.back().file_size + 0x100000));
		}
		// The library is linked at 0x200000: an offset is never its own address there.
		std::unique_ptr<ElfFile> lib = open_fixture("libfixture.so");
		uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work");
		REQUIRE(work > 0x200000);
		CHECK(lib->address_of_file_offset(work - 0x200000) == work);
		CHECK(lib->file_offset_of_address(work) == work - 0x200000);
	}

	TEST_CASE("elf: the build id is the one readelf -n shows")
	{
		for (const char *program : {"hello-nopie", "hello-pie", "hello-stripped", "libfixture.so", "cxx"}) {
			CAPTURE(program);
			std::string expected = read_build_id(program);
			REQUIRE(expected.size() == 40);
			CHECK(open_fixture(program)->build_id() == expected);
		}
	}

	TEST_CASE("elf: C++ names come back mangled and demangle to what nm -C shows")
	{
		std::unique_ptr<ElfFile> elf = open_fixture("cxx");
		std::vector<NmSymbol> readable = read_nm("cxx.demangled");
		int checked = 0;
		for (const NmSymbol &symbol : read_nm("cxx.nm")) {
			if (!is_function_type(symbol.type) || !symbol.name.starts_with("_ZN7fixture"))
				continue;
			CAPTURE(symbol.name);
			const ElfFile::Symbol *found = elf->find_symbol(symbol.address + 1);
			REQUIRE(found);
			CHECK(found->name == symbol.name);
			for (const NmSymbol &other : readable)
				if (other.address == symbol.address) {
					CHECK(demangle(found->name) == other.name);
					checked++;
				}
		}
		CHECK(checked >= 4);
		CHECK(demangle("_ZN7fixture7Spinner4spinEl") == "fixture::Spinner::spin(long)");
		CHECK(demangle("main") == "main");
		CHECK(demangle("_Znot a mangled name") == "_Znot a mangled name");
	}

	TEST_CASE("elf: section bytes are found by name")
	{
		std::unique_ptr<ElfFile> elf = open_fixture("hello-pie");
		auto text = elf->section_data(".text");
		REQUIRE(text);
		CHECK(!text->empty());
		CHECK(!elf->section_data(".no-such-section"));
	}

	TEST_CASE("elf: truncated files give no symbols and no crash")
	{
		std::vector<uint8_t> whole = fixture_bytes("hello-pie");
		for (size_t size : {size_t(0), size_t(4), size_t(16), size_t(63), size_t(64), size_t(100), size_t(1000),
				    whole.size() / 2, whole.size() - 1}) {
			CAPTURE(size);
			std::unique_ptr<ElfFile> elf =
				ElfFile::from_bytes(std::vector<uint8_t>(whole.begin(), whole.begin() + size));
			if (size < sizeof(Elf64_Ehdr)) {
				CHECK(!elf);
				continue;
			}
			REQUIRE(elf);
			// The section headers sit at the end of the file: without them, no symbols.
			CHECK(elf->symbol_count() == 0);
			CHECK(!elf->find_symbol(nm_address("hello-pie.nm", "fixture_leaf")));
		}
	}

	TEST_CASE("elf: a truncated file on disk is mapped and read without crash")
	{
		std::vector<uint8_t> whole = fixture_bytes("libfixture.so");
		char path[] = "/tmp/syms-elf-XXXXXX";
		UniqueFd fd(mkostemp(path, O_CLOEXEC));
		REQUIRE(fd.valid());
		unlink(path);
		REQUIRE(write(fd.get(), whole.data(), whole.size() - 10) == ssize_t(whole.size() - 10));
		std::unique_ptr<ElfFile> elf = ElfFile::open(fd.get());
		REQUIRE(elf);
		CHECK(elf->symbol_count() == 0);
		CHECK(elf->build_id() == read_build_id("libfixture.so")); // the notes are near the start
	}

	TEST_CASE("elf: garbage is rejected and corrupted headers stay inside the file")
	{
		CHECK(!ElfFile::from_bytes(std::vector<uint8_t>(4096, 0xAB)));
		std::vector<uint8_t> elf32(64, 0);
		std::copy_n(ELFMAG, SELFMAG, elf32.begin());
		elf32[EI_CLASS] = ELFCLASS32;
		elf32[EI_DATA] = ELFDATA2LSB;
		CHECK(!ElfFile::from_bytes(elf32));

		// Random bytes written over the headers of a real file: whatever they say,
		// every call returns and reads nothing outside (ASan builds check the latter).
		std::vector<uint8_t> whole = fixture_bytes("hello-pie");
		Elf64_Ehdr header;
		std::memcpy(&header, whole.data(), sizeof(header));
		std::vector<std::pair<uint64_t, uint64_t>> areas = {
			{0, sizeof(Elf64_Ehdr)},
			{header.e_phoff, uint64_t(header.e_phnum) * header.e_phentsize},
			{header.e_shoff, uint64_t(header.e_shnum) * header.e_shentsize},
		};
		std::mt19937_64 random(42);
		for (int round = 0; round < 600; round++) {
			std::vector<uint8_t> bytes = whole;
			for (int flips = 0; flips < 8; flips++) {
				auto [start, size] = areas[random() % areas.size()];
				uint64_t at = start + random() % size;
				// Keep the magic most of the time so the damage reaches the tables.
				if (at >= SELFMAG && at < bytes.size())
					bytes[at] = static_cast<uint8_t>(random());
			}
			std::unique_ptr<ElfFile> elf = ElfFile::from_bytes(std::move(bytes));
			if (!elf)
				continue;
			(void)elf->build_id();
			(void)elf->address_of_file_offset(0x1000);
			(void)elf->section_data(".text");
			for (uint64_t address : {uint64_t(0x1000), uint64_t(0x1169), UINT64_MAX})
				(void)elf->find_symbol(address);
		}
	}

	TEST_CASE("elf: each PLT entry is NAME@plt, as objdump names it, not a part of _init")
	{
		for (const char *program : {"hello-pie", "cxx"}) {
			CAPTURE(program);
			std::unique_ptr<ElfFile> elf = open_fixture(program);
			REQUIRE(elf);
			std::string listing = read_text(fixture_path(std::string(program) + ".plt"));
			size_t checked = 0, at = 0;
			while (at < listing.size()) {
				size_t eol = listing.find('\n', at);
				std::string line = listing.substr(at, eol - at);
				at = eol == std::string::npos ? listing.size() : eol + 1;
				size_t space = line.find(' ');
				if (space == std::string::npos)
					continue;
				uint64_t address = std::stoull(line.substr(0, space), nullptr, 16);
				std::string name = line.substr(space + 1);
				CAPTURE(name);
				for (uint64_t inside : {uint64_t(0), uint64_t(6), uint64_t(15)}) {
					const ElfFile::Symbol *found = elf->find_symbol(address + inside);
					REQUIRE(found);
					CHECK(found->name == name);
					CHECK(found->start == address);
					CHECK(found->end == address + 16);
					CHECK(elf->find_plt_symbol(address + inside) == found);
				}
				checked++;
			}
			CHECK(checked >= 1);
			// Outside the PLT there is no PLT symbol, and _init still ends where the PLT starts.
			uint64_t main_address = nm_address(std::string(program) + ".nm", "main");
			CHECK(!elf->find_plt_symbol(main_address));
			uint64_t init = nm_address(std::string(program) + ".nm", "_init");
			if (init) {
				const ElfFile::Symbol *found = elf->find_symbol(init);
				REQUIRE(found);
				CHECK(found->name == "_init");
			}
		}
		// A stripped file's PLT is named from .dynsym and .rela.plt alone.
		std::unique_ptr<ElfFile> stripped = open_fixture("hello-nosyms");
		REQUIRE(stripped);
		std::string first = read_text(fixture_path("hello-pie.plt"));
		uint64_t address = std::stoull(first.substr(0, first.find(' ')), nullptr, 16);
		const ElfFile::Symbol *found = stripped->find_symbol(address + 2);
		REQUIRE(found);
		CHECK(std::string(found->name) == first.substr(first.find(' ') + 1, first.find('\n') - first.find(' ') - 1));
	}
}

TEST_SUITE("unit")
{
	// glibc's symbol table names __libc_start_main's code five times: the definition
	// __libc_start_main_impl, two __libc_start_main_alias_N, and two versioned names made
	// from it by .symver, __libc_start_main@@GLIBC_2.34 and @GLIBC_2.2.5. perf shows the
	// definition (from DWARF); a version suffix is no part of a function's name.
	TEST_CASE("elf: no name carries a symbol version; at an address, the definition's name over .symver's aliases")
	{
		const std::string libc_path = "/lib/x86_64-linux-gnu/libc.so.6";
		UniqueFd libc_fd = open_read_only(libc_path.c_str());
		if (!libc_fd) {
			skip_test(libc_path + " is not on this system");
			return;
		}
		auto libc = ElfFile::open(libc_fd.get());
		REQUIRE(libc);
		const std::string id = libc->build_id();
		REQUIRE(id.size() > 2);
		const std::string debug_path = "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
		UniqueFd debug_fd = open_read_only(debug_path.c_str());
		if (!debug_fd) {
			skip_test(debug_path + " is missing (apt-get install libc6-dbg)");
			return;
		}
		auto debug = ElfFile::open(debug_fd.get());
		REQUIRE(debug);
		// The address from .dynsym, whose names carry no version (.gnu.version holds it).
		uint64_t start_main = 0;
		for (uint64_t address = 0; !start_main && address < (64u << 20);) {
			const ElfFile::Symbol *s = libc->find_symbol(address);
			if (s && s->name == "__libc_start_main")
				start_main = s->start;
			address = s && s->end > address ? s->end : address + 16;
		}
		REQUIRE(start_main != 0);
		const ElfFile::Symbol *named = debug->find_symbol(start_main);
		REQUIRE(named);
		CHECK(named->name == "__libc_start_main_impl");
		for (uint64_t address = start_main; address < start_main + (1u << 20); address += 64)
			if (const ElfFile::Symbol *s = debug->find_symbol(address))
				CHECK_MESSAGE(s->name.find('@') == std::string::npos, s->name);
	}

	// libc calls memcpy and its kin through PLT entries whose relocation (IRELATIVE) names
	// no symbol, only the resolver that picks a version at load: objdump and perf name
	// them *ABS*+0xADDEND@plt, and so must profile, or a stack through qsort ends unnamed.
	TEST_CASE("elf: libc's PLT entries of IRELATIVE relocations are *ABS*+0xADDEND@plt, as objdump names them")
	{
		std::string libc;
		for (const char *path : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"})
			if (access(path, R_OK) == 0)
				libc = path;
		if (libc.empty()) {
			skip_test("no x86-64 libc.so.6 here");
			return;
		}
		const std::string objdump = find_tool("objdump");
		REQUIRE_MESSAGE(!objdump.empty(), "objdump is missing (apt-get install binutils)");
		CommandResult listing = run_command({objdump, "-d", "-j", ".plt", libc});
		REQUIRE_MESSAGE(listing.status == 0, listing.err);
		UniqueFd fd = open_read_only(libc.c_str());
		std::unique_ptr<ElfFile> elf = ElfFile::open(fd.get());
		REQUIRE(elf);
		size_t checked = 0;
		for (const std::string &line : split_lines(listing.out)) {
			const size_t open = line.find(" <*ABS*+0x"), close = line.find("@plt>:");
			if (open == std::string::npos || close == std::string::npos || close < open)
				continue;
			const uint64_t address = std::stoull(line.substr(0, open), nullptr, 16);
			const std::string name = line.substr(open + 2, close + 4 - open - 2);
			CAPTURE(name);
			const ElfFile::Symbol *found = elf->find_plt_symbol(address + 4);
			REQUIRE(found);
			CHECK(found->name == name);
			checked++;
		}
		CHECK(checked >= 1);
	}
}
