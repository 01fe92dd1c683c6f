// tests/test_proc_kallsyms.cpp: KernelSymbols on kallsyms text written here, and on the real one.
#include <doctest/doctest.h>

#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "base/fd.h"
#include "proc/kallsyms.h"
#include "tests/support.h"

namespace {

// Out of order like the real file (modules and BPF programs after vmlinux), with data
// symbols, aliases at one address and lines that do not parse.
const char *const kallsyms_text =
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81001000 t native_read_msr\n"
	"ffffffff81001080 T do_syscall_64\n"
	"ffffffff81001100 D some_data\n"
	"ffffffff81001200 r some_rodata\n"
	"ffffffff81001300 W weak_function\n"
	"ffffffff81001400 T _etext\n"
	"0000000000000000 A fixed_percpu_data\n"
	"ffffffffc0a01000 t ext4_block_write\t[ext4]\n"
	"ffffffffc0a01200 T ext4_file_read_iter\t[ext4]\n"
	"ffffffffc0a00800 d ext4_data\t[ext4]\n"
	"ffffffffc0a00f00 t ext4_lowest\t[ext4]\n"
	"ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_sd_fw_egress\t[bpf]\n"
	"ffffffffc0b00400 t bpf_prog_b1f2a3c4d5e6f708_do_profile\t[bpf]\n"
	"ffffffffc0900000 t xfs_thing\t[xfs]\n"
	"ffffffff81000800 t entry_SYSCALL_64\n"
	"not a line at all\n"
	"ffffffff81000900\n"
	"ffffffff81000a00 T\n"
	"zzzz T bad_address\n"
	"ffffffff81000c00 w weak_local"; // no newline at the end

struct Expect {
	uint64_t address;
	const char *name;
	uint64_t offset;
	const char *module;
};

} // namespace

TEST_SUITE("unit")
{
	TEST_CASE("kallsyms: text symbols, module symbols and BPF programs are found by address")
	{
		KernelSymbols symbols = KernelSymbols::parse(kallsyms_text);
		// Kept: startup_64 (the _text alias folds into it), entry_SYSCALL_64, weak_local,
		// native_read_msr, do_syscall_64, weak_function, _etext, xfs_thing, ext4 x3, bpf x2.
		CHECK(symbols.size() == 13);

		const Expect expected[] = {
			{0xffffffff81000000, "startup_64", 0, ""},
			{0xffffffff81000010, "startup_64", 0x10, ""},
			{0xffffffff81000800, "entry_SYSCALL_64", 0, ""},
			{0xffffffff81000c08, "weak_local", 8, ""},
			{0xffffffff81001004, "native_read_msr", 4, ""},
			{0xffffffff81001090, "do_syscall_64", 0x10, ""},
			// some_data and some_rodata were dropped: their addresses belong to the function before.
			{0xffffffff81001100, "do_syscall_64", 0x80, ""},
			{0xffffffff81001250, "do_syscall_64", 0x1d0, ""},
			{0xffffffff81001310, "weak_function", 0x10, ""},
			{0xffffffffc0900004, "xfs_thing", 4, "xfs"},
			{0xffffffffc0a00f10, "ext4_lowest", 0x10, "ext4"},
			{0xffffffffc0a01010, "ext4_block_write", 0x10, "ext4"},
			{0xffffffffc0a01234, "ext4_file_read_iter", 0x34, "ext4"},
			{0xffffffffc0b00020, "bpf_prog_6deef7357e7b4530_sd_fw_egress", 0x20, "bpf"},
			{0xffffffffc0b00400, "bpf_prog_b1f2a3c4d5e6f708_do_profile", 0, "bpf"},
		};
		for (const Expect &e : expected) {
			CAPTURE(e.name);
			CAPTURE(e.address);
			auto match = symbols.find(e.address);
			REQUIRE(match);
			CHECK(match->name == e.name);
			CHECK(match->offset == e.offset);
			CHECK(match->module == e.module);
		}
	}

	TEST_CASE("kallsyms: module offsets count from the module's lowest function")
	{
		KernelSymbols symbols = KernelSymbols::parse(kallsyms_text);
		auto match = symbols.find(0xffffffffc0a01234);
		REQUIRE(match);
		CHECK(match->module_offset == 0xffffffffc0a01234 - 0xffffffffc0a00f00);
		auto core = symbols.find(0xffffffff81001090);
		REQUIRE(core);
		CHECK(core->module_offset == 0xffffffff81001090); // vmlinux: the address itself
	}

	TEST_CASE("kallsyms: addresses below the first symbol or beyond the last are unknown")
	{
		KernelSymbols symbols = KernelSymbols::parse(kallsyms_text);
		CHECK(!symbols.find(0));
		CHECK(!symbols.find(0xffffffff80ffffff));
		CHECK(!symbols.find(0xffffffffc0b00401));
		CHECK(!symbols.find(UINT64_MAX));
		CHECK(!KernelSymbols::parse("").find(0xffffffff81000000));
	}

	TEST_CASE("kallsyms: hidden addresses (read without privilege) give no symbols")
	{
		KernelSymbols symbols = KernelSymbols::parse("0000000000000000 T _text\n"
							     "0000000000000000 T do_syscall_64\n"
							     "0000000000000000 t ext4_thing\t[ext4]\n");
		CHECK(symbols.empty());
		CHECK(!symbols.find(0));
	}

	TEST_CASE("kallsyms: a text symbol's range ends at the next text symbol above it, aliases and data aside")
	{
		static constexpr std::string_view names[] = {"startup_64", "_text", "native_read_msr", "weak_function",
							     "ext4_block_write", "some_data", "no_such_symbol", "_etext"};
		const std::vector<KernelTextRange> ranges = kernel_text_ranges(kallsyms_text, names);
		REQUIRE(ranges.size() == 8);
		// An alias at the same address ends where the next address begins.
		CHECK(ranges[0].start == 0xffffffff81000000);
		CHECK(ranges[0].end == 0xffffffff81000800);
		CHECK(ranges[1].start == 0xffffffff81000000);
		CHECK(ranges[1].end == 0xffffffff81000800);
		// some_data (D) lies between: a text symbol's end is the next text symbol.
		CHECK(ranges[2].start == 0xffffffff81001000);
		CHECK(ranges[2].end == 0xffffffff81001080);
		CHECK(ranges[3].start == 0xffffffff81001300);
		CHECK(ranges[3].end == 0xffffffff81001400);
		// A module's function: the next text above it, in any module.
		CHECK(ranges[4].start == 0xffffffffc0a01000);
		CHECK(ranges[4].end == 0xffffffffc0a01200);
		CHECK(ranges[5].start == 0); // data
		CHECK(ranges[6].start == 0); // absent
		CHECK(ranges[7].start == 0xffffffff81001400);
		CHECK(ranges[7].end == 0xffffffffc0900000);
		// Hidden addresses (read without privilege) give nothing.
		const std::vector<KernelTextRange> hidden =
			kernel_text_ranges("0000000000000000 T _text\n0000000000000000 T startup_64\n", names);
		CHECK(hidden[0].start == 0);
		CHECK(hidden[0].end == 0);
		CHECK(kernel_text_ranges("", names).size() == 8);
	}

	TEST_CASE("kallsyms: a file on disk loads like the text; a missing file loads empty")
	{
		char path[] = "/tmp/syms-kallsyms-XXXXXX";
		UniqueFd fd(mkostemp(path, O_CLOEXEC));
		REQUIRE(fd.valid());
		std::string text = kallsyms_text;
		REQUIRE(write(fd.get(), text.data(), text.size()) == ssize_t(text.size()));
		KernelSymbols symbols = KernelSymbols::load(path);
		unlink(path);
		CHECK(symbols.size() == 13);
		CHECK(symbols.find(0xffffffffc0a01010)->name == "ext4_block_write");
		CHECK(KernelSymbols::load("/nonexistent/kallsyms").empty());
	}

	TEST_CASE("kallsyms: 200k lines, half of them data: every text symbol is kept")
	{
		std::string text;
		text.reserve(200000 * 48);
		char line[128];
		for (int i = 0; i < 200000; i++) {
			int n = std::snprintf(line, sizeof(line), "ffffffff%08x %c some_kernel_function_%d%s\n",
					      0x81000000 + i * 0x40, "tTdr"[i % 4], i,
					      i > 190000 ? "\t[some_module]" : "");
			text.append(line, n);
		}
		KernelSymbols symbols = KernelSymbols::parse(text);
		CHECK(symbols.size() == 100000);
		// 199994 was a data symbol: its address belongs to the function before.
		auto match = symbols.find(0xffffffff81000000 + 199994 * 0x40 + 8);
		REQUIRE(match);
		CHECK(match->name == "some_kernel_function_199993");
		CHECK(match->module == "some_module");
	}

	TEST_CASE("kallsyms: the running kernel's symbols are found by address")
	{
		if (geteuid() != 0) {
			skip_test("not root: /proc/kallsyms hides addresses");
			return;
		}
		KernelSymbols symbols = KernelSymbols::load("/proc/kallsyms");
		CHECK(symbols.size() > 10000);

		// The address of a function the kernel always has, read the slow way.
		std::ifstream in("/proc/kallsyms");
		std::string line;
		uint64_t schedule = 0;
		while (std::getline(in, line)) {
			std::istringstream fields(line);
			std::string address, type, name;
			fields >> address >> type >> name;
			if (name == "schedule" && (type == "T" || type == "t"))
				schedule = std::stoull(address, nullptr, 16);
		}
		REQUIRE(schedule != 0);
		auto match = symbols.find(schedule + 4);
		REQUIRE(match);
		CHECK(match->name == "schedule");
		CHECK(match->offset == 4);
		CHECK(match->module == "");
	}
}
