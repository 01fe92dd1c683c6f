// tests/test_elf_demangle.cpp: demangle() on Rust names, legacy and v0, from the Rust
// fixtures read through ElfFile, and on C++ names against abi::__cxa_demangle.
#include <doctest/doctest.h>

#include <cxxabi.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <regex>
#include <set>

#include "elf/demangle.h"
#include "elf/elf.h"
#include "base/fd.h"
#include "tests/fixtures/fixture_files.h"
#include "tests/support.h"

namespace {

// The demangled names of a Rust fixture's functions that nm lists under a mangled name,
// each looked up through ElfFile at nm's address. Every one must demangle, with no hash
// and no suffix left.
std::set<std::string> rust_function_names(const std::string &program)
{
	UniqueFd fd = open_read_only(fixture_path(program).c_str());
	REQUIRE_MESSAGE(fd.valid(), "missing fixture " << fixture_path(program) << " (run: make fixtures)");
	std::unique_ptr<ElfFile> elf = ElfFile::open(fd.get());
	REQUIRE(elf);
	std::set<std::string> names;
	std::vector<std::string> kept_mangled, kept_hash;
	const std::regex hash("::h[0-9a-f]{16}$"); // ends a legacy name only before demangling
	for (const NmSymbol &symbol : read_nm(program + ".nm")) {
		if ((symbol.type != 'T' && symbol.type != 't') ||
		    !(symbol.name.starts_with("_ZN") || symbol.name.starts_with("_R")))
			continue;
		CAPTURE(symbol.name);
		const ElfFile::Symbol *found = elf->find_symbol(symbol.address);
		REQUIRE(found);
		if (found->name != symbol.name) // another name at the same address
			continue;
		std::string readable = demangle(found->name);
		if (readable == symbol.name || contains(readable, ".llvm."))
			kept_mangled.push_back(symbol.name);
		if (std::regex_search(readable, hash))
			kept_hash.push_back(readable);
		names.insert(readable);
	}
	CHECK(names.size() > 100);
	CHECK_MESSAGE(kept_mangled.empty(), kept_mangled.size() << " names not demangled, such as "
							 << (kept_mangled.empty() ? "" : kept_mangled[0]));
	CHECK_MESSAGE(kept_hash.empty(), kept_hash.size() << " names keep their hash, such as "
						       << (kept_hash.empty() ? "" : kept_hash[0]));
	return names;
}

std::string cxa_demangle(const std::string &name)
{
	int status = 0;
	std::unique_ptr<char, decltype(&std::free)> readable(
		abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
	return status == 0 && readable ? readable.get() : name;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("demangle: Rust legacy names lose their hash, v0 names are demangled")
{
	CHECK(demangle("_ZN3std2rt10lang_start17h1234567890abcdefE") == "std::rt::lang_start");
	CHECK(demangle("_ZN4core3fmt9Formatter3pad17hd0df02c4d4e5b2c8E") == "core::fmt::Formatter::pad");
	// $LT$, $u20$ and .. are legacy's escapes for <, space and ::.
	CHECK(demangle("_ZN78_$LT$rust_names..Spinner$u20$as$u20$core..iter..traits..iterator..Iterator$GT$4next"
		       "17hc455d039b37937e4E") == "<rust_names::Spinner as core::iter::traits::iterator::Iterator>::next");
	CHECK(demangle("_ZN4core3ptr35drop_in_place$LT$std..env..Args$GT$17h6f24e5e9b4ac7b0eE") ==
	      "core::ptr::drop_in_place<std::env::Args>");
	CHECK(demangle("_RNvMNtNtNtNtCsalM65ksrrJu_3std3sys3pal4unix4timeNtB2_8Timespec3now") ==
	      "<std::sys::pal::unix::time::Timespec>::now");
	CHECK(demangle("_RINvCsbt0fQicOZbh_10rust_names11generic_hotmEB2_") == "rust_names::generic_hot::<u32>");
	// A suffix LLVM added after the name is dropped, as rustfilt drops it.
	CHECK(demangle("_RNvCs7fattgR6AAa_3hot4main.llvm.10869530372781615814") == "hot::main");
	// C++ stays as it was; a C name that libiberty would read as a constructor list stays.
	CHECK(demangle("_ZN7fixture7Spinner4spinEl") == "fixture::Spinner::spin(long)");
	CHECK(demangle("_GLOBAL__sub_I_main") == "_GLOBAL__sub_I_main");
	CHECK(demangle("_Rnot mangled") == "_Rnot mangled");
	CHECK(demangle("") == "");
}

TEST_CASE("demangle: a Rust program's functions, legacy mangling, read through ElfFile")
{
	std::set<std::string> names = rust_function_names("rust-legacy");
	if (names.count("rust_names::fixture_hot") == 0 && names.count("rust_names::generic_hot::<u32>") != 0) {
		MESSAGE("this rustc mangles v0 by default: the legacy fixture holds v0 names");
		return;
	}
	for (const char *expected :
	     {"rust_names::fixture_hot", "rust_names::inner::nested_hot", "rust_names::Spinner::spin",
	      "<rust_names::Spinner as core::iter::traits::iterator::Iterator>::next", "rust_names::generic_hot",
	      "rust_names::main"}) {
		CAPTURE(expected);
		CHECK(names.count(expected) == 1);
	}
}

TEST_CASE("demangle: a Rust program's functions, v0 mangling, read through ElfFile")
{
	std::string skip = read_text(fixture_path("rust-v0.skip"));
	while (!skip.empty() && skip.back() == '\n')
		skip.pop_back();
	if (!skip.empty()) {
		skip_test(skip);
		return;
	}
	std::set<std::string> names = rust_function_names("rust-v0");
	for (const char *expected :
	     {"rust_names::fixture_hot", "rust_names::inner::nested_hot", "<rust_names::Spinner>::spin",
	      "<rust_names::Spinner as core::iter::traits::iterator::Iterator>::next",
	      "rust_names::generic_hot::<u32>", "rust_names::generic_hot::<u64>", "rust_names::main"}) {
		CAPTURE(expected);
		CHECK(names.count(expected) == 1);
	}
}

TEST_CASE("demangle: C++ names read as abi::__cxa_demangle printed them (every one in this test program)")
{
	char self[4096] = {};
	REQUIRE(readlink("/proc/self/exe", self, sizeof(self) - 1) > 0);
	CommandResult listing = run_command({"/usr/bin/nm", "--defined-only", self});
	REQUIRE(listing.status == 0);
	size_t checked = 0;
	for (const std::string &line : split_lines(listing.out)) {
		std::string name = line.substr(line.rfind(' ') + 1);
		if (!name.starts_with("_Z"))
			continue;
		CAPTURE(name);
		CHECK(demangle(name) == cxa_demangle(name));
		checked++;
	}
	CHECK(checked > 1000);
}

} // TEST_SUITE
