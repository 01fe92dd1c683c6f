// tests/test_syms_kallsyms_cache.cpp: the core kernel's symbols kept between runs of one boot.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "syms/kallsyms_cache.h"
#include "syms/symbolizer.h"
#include "tests/support.h"

namespace {

const char *const kallsyms_text = "ffffffff81000000 T _text\n"
				  "ffffffff81001000 t native_read_msr\n"
				  "ffffffff81001080 T do_syscall_64\n"
				  "ffffffff81001100 D some_data\n"
				  "ffffffff81001400 T _etext\n"
				  "ffffffffc0a01000 t ext4_block_write\t[ext4]\n"
				  "ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_sd_fw_egress\t[bpf]\n";

std::string name_at(const KernelSymbols &symbols, uint64_t address)
{
	auto match = symbols.find(address);
	return match ? std::string(match->name) : "(none)";
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("kallsyms cache: the first load reads kallsyms and keeps the core kernel for the next")
{
	TempDir dir;
	write_file(dir / "kallsyms", kallsyms_text);
	const std::string cache = dir / "cache";

	KernelSymbolSource first = load_kernel_symbols(dir / "kallsyms", cache, "boot 1, kernel 6.18");
	CHECK(first.complete);
	CHECK(first.symbols.size() == 6);
	struct stat st;
	REQUIRE(stat(cache.c_str(), &st) == 0);
	CHECK((st.st_mode & 0777) == 0700);
	REQUIRE(stat((cache + "/kallsyms").c_str(), &st) == 0);
	CHECK((st.st_mode & 0777) == 0600);

	// kallsyms changes under the cache (a BPF program more): the cache still answers, with
	// the core kernel only.
	write_file(dir / "kallsyms", std::string(kallsyms_text) + "ffffffffc0c00000 t bpf_prog_0000_new\t[bpf]\n");
	KernelSymbolSource second = load_kernel_symbols(dir / "kallsyms", cache, "boot 1, kernel 6.18");
	CHECK(!second.complete);
	CHECK(second.symbols.size() == 4);
	CHECK(name_at(second.symbols, 0xffffffff81001090) == "do_syscall_64");
	CHECK(name_at(second.symbols, 0xffffffff81001010) == "native_read_msr");
	CHECK(second.symbols.core_end() == first.symbols.core_end());
	CHECK(second.symbols.core_end() == 0xffffffff81001400);

	// Another boot: read again, and the cache rewritten for it.
	KernelSymbolSource other = load_kernel_symbols(dir / "kallsyms", cache, "boot 2, kernel 6.18");
	CHECK(other.complete);
	CHECK(other.symbols.size() == 7);
	CHECK(!load_kernel_symbols(dir / "kallsyms", cache, "boot 2, kernel 6.18").complete);
	CHECK(load_kernel_symbols(dir / "kallsyms", cache, "boot 1, kernel 6.18").complete);
}

TEST_CASE("kallsyms cache: no cache without an identity, in a directory open to others, or through a link")
{
	TempDir dir;
	write_file(dir / "kallsyms", kallsyms_text);
	CHECK(load_kernel_symbols(dir / "kallsyms", "", "boot 1").complete);
	CHECK(load_kernel_symbols(dir / "kallsyms", dir / "c1", "").complete);
	CHECK(!std::filesystem::exists(dir / "c1"));

	// A directory others may write into is not used.
	REQUIRE(mkdir((dir / "open").c_str(), 0777) == 0);
	chmod((dir / "open").c_str(), 0777);
	load_kernel_symbols(dir / "kallsyms", dir / "open", "boot 1");
	CHECK(!std::filesystem::exists(dir / "open/kallsyms"));

	// A cache file planted as a symlink is neither followed nor replaced through.
	REQUIRE(mkdir((dir / "linked").c_str(), 0700) == 0);
	write_file(dir / "elsewhere", std::string("# profile: core kernel symbols of boot 1\n") +
					      "ffffffff81001080 T planted_name\n");
	REQUIRE(symlink((dir / "elsewhere").c_str(), (dir / "linked/kallsyms").c_str()) == 0);
	KernelSymbolSource source = load_kernel_symbols(dir / "kallsyms", dir / "linked", "boot 1");
	CHECK(source.complete);
	CHECK(name_at(source.symbols, 0xffffffff81001090) == "do_syscall_64");
	CHECK(read_file(dir / "elsewhere").find("planted_name") != std::string::npos);
	// A directory that is a symlink is not used either.
	REQUIRE(symlink((dir / "linked").c_str(), (dir / "dirlink").c_str()) == 0);
	CHECK(load_kernel_symbols(dir / "kallsyms", dir / "dirlink", "boot 1").complete);
}

TEST_CASE("kallsyms cache: the identity is the boot and the kernel release")
{
	TempDir dir;
	std::filesystem::create_directories(dir / "sys/kernel/random");
	write_file(dir / "sys/kernel/random/boot_id", "64dcb66e-0107-4471-bcb5-90a1ab423cf9\n");
	write_file(dir / "sys/kernel/osrelease", "6.18.44\n");
	CHECK(kernel_identity(dir.path()) == "boot 64dcb66e-0107-4471-bcb5-90a1ab423cf9, kernel 6.18.44");
	std::filesystem::remove(dir / "sys/kernel/osrelease");
	CHECK(kernel_identity(dir.path()) == "");
	CHECK(!kernel_identity().empty()); // this machine's
}

TEST_CASE("symbolizer: past the cached core kernel, kallsyms itself is read, once")
{
	TempDir dir;
	write_file(dir / "kallsyms", kallsyms_text);
	SymbolizerOptions options;
	options.kallsyms_path = dir / "kallsyms";
	options.kernel_cache_dir = dir / "cache";
	{
		Symbolizer warm_up(options); // writes the cache
		warm_up.load_kernel_symbols();
		CHECK(!warm_up.stats().kallsyms_reread);
	}
	Symbolizer symbolizer(options);
	symbolizer.load_kernel_symbols();
	CHECK(symbolizer.stats().kernel_symbols == 4);
	CHECK(symbolizer.kernel_frame(0xffffffff81001090).name == "do_syscall_64");
	CHECK(!symbolizer.stats().kallsyms_reread);
	Frame module = symbolizer.kernel_frame(0xffffffffc0a01010);
	CHECK(symbolizer.stats().kallsyms_reread);
	CHECK(symbolizer.stats().kernel_symbols == 6);
	CHECK(module.name == "ext4_block_write");
	CHECK(module.module == "ext4");
	CHECK(symbolizer.kernel_frame(0xffffffffc0b00000).name == "bpf_prog_6deef7357e7b4530_sd_fw_egress");
	CHECK(symbolizer.kernel_frame(0xffffffff81001090).name == "do_syscall_64");
}

} // TEST_SUITE
