// tests/test_syms_symbolizer.cpp: Symbolizer over a fake /proc built here, over process
// histories made here (exited processes, exec, replaced binaries, debug files, JIT maps),
// over live child processes running the fixtures, and over this test process itself.
#include <doctest/doctest.h>

#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "elf/elf.h"
#include "base/fd.h"
#include "proc/maps.h"
#include "proc/process_history.h"
#include "syms/symbolizer.h"
#include "tests/fixtures/fixture_files.h"
#include "tests/support.h"

namespace fs = std::filesystem;

namespace syms_test {

__attribute__((noinline)) int live_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 5 + 2;
}

} // namespace syms_test

namespace {

std::string map_line(uint64_t start, uint64_t end, const char *perms, uint64_t offset, const char *dev,
		     uint64_t inode, const std::string &path)
{
	char line[160];
	std::snprintf(line, sizeof(line), "%" PRIx64 "-%" PRIx64 " %s %08" PRIx64 " %s %" PRIu64, start, end, perms,
		      offset, dev, inode);
	return std::string(line) + (path.empty() ? " " : "                    " + path) + "\n";
}

// The maps lines the loader would make for a fixture loaded with the given bias, from
// readelf's view of its PT_LOAD segments. With proc_pid, map_files links are made too.
std::string loaded_lines(const std::string &program, uint64_t bias, const char *dev, uint64_t inode,
			 const std::string &path, const fs::path &proc_pid = {})
{
	std::string lines;
	for (const LoadSegment &load : read_loads(program)) {
		uint64_t start = bias + (load.address & ~(page - 1));
		uint64_t end = (bias + load.address + load.file_size + page - 1) & ~(page - 1);
		lines += map_line(start, end, "r-xp", load.offset & ~(page - 1), dev, inode, path);
		if (!proc_pid.empty()) {
			char range[48];
			std::snprintf(range, sizeof(range), "%" PRIx64 "-%" PRIx64, start, end);
			fs::create_directories(proc_pid / "map_files");
			fs::create_symlink(absolute_fixture(program), proc_pid / "map_files" / range);
		}
	}
	return lines;
}

// A PID no process has: a process of the history that is gone.
constexpr uint32_t gone_pid = 4000000 + 17;

const char *const kallsyms_text = "ffffffff81000000 T _text\n"
				  "ffffffff81000000 T startup_64\n"
				  "ffffffff81001080 T do_syscall_64\n"
				  "ffffffff81001100 T _etext\n"
				  "ffffffffc0a00f00 t ext4_lowest\t[ext4]\n"
				  "ffffffffc0a01200 T ext4_file_read_iter\t[ext4]\n"
				  "ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_sd_fw_egress\t[bpf]\n"
				  "ffffffffc0b00400 t bpf_prog_b1f2a3c4d5e6f708_do_profile\t[bpf]\n";

// Options that read kallsyms_text, written into dir.
SymbolizerOptions with_fixture_kallsyms(const TempDir &dir)
{
	write_file(dir.path() / "kallsyms", kallsyms_text);
	SymbolizerOptions options;
	options.kallsyms_path = dir.path() / "kallsyms";
	return options;
}

// A fixture program run with "wait": alive, its code mapped, until the object goes.
struct Child {
	pid_t pid = -1;
	explicit Child(const std::string &program)
	{
		std::string path = absolute_fixture(program);
		int out[2];
		REQUIRE(pipe2(out, O_CLOEXEC) == 0);
		// The child calls only what is async-signal-safe: its argv is made before the fork.
		char wait_arg[] = "wait";
		char *const argv[] = {path.data(), wait_arg, nullptr};
		pid = fork();
		if (pid == 0) {
			dup2(out[1], STDOUT_FILENO);
			execv(argv[0], argv);
			_exit(127);
		}
		REQUIRE(pid >= 0);
		close(out[1]);
		char ready[6] = {};
		ssize_t n = read(out[0], ready, sizeof(ready));
		close(out[0]);
		REQUIRE_MESSAGE(n == 6, program << " did not start");
	}
	~Child() { stop(); }
	void stop()
	{
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
			pid = -1;
		}
	}
	// Where the file's address 0 is in the child: the start of its mapping at offset 0,
	// less the address of the file's first segment.
	uint64_t bias(const std::string &program) const
	{
		ProcessMaps maps;
		REQUIRE(ProcessMaps::load("/proc/" + std::to_string(pid) + "/maps", maps));
		std::string path = absolute_fixture(program);
		for (const MapEntry &entry : maps.entries())
			if (entry.offset == 0 && fs::path(entry.path) == fs::canonical(path))
				return entry.start - (read_loads(program).front().address & ~(page - 1));
		FAIL("no mapping of " << path << " in " << pid);
		return 0;
	}
};

} // namespace

TEST_SUITE("unit")
{
	TEST_CASE("symbolizer: kernel frames, with kallsyms loaded from another thread")
	{
		TempDir dir;
		SymbolizerOptions options = with_fixture_kallsyms(dir);
		Symbolizer symbolizer(options);
		std::thread loader([&] { symbolizer.load_kernel_symbols(); });
		loader.join();
		CHECK(symbolizer.stats().kernel_symbols == 7);

		Frame core = symbolizer.kernel_frame(0xffffffff81001090);
		CHECK(core.kind == FrameKind::Kernel);
		CHECK(core.address == 0xffffffff81001090);
		CHECK(core.name == "do_syscall_64");
		CHECK(core.symbol_offset == 0x10);
		CHECK(core.module == "");
		CHECK(frame_label(core) == "do_syscall_64");

		Frame module = symbolizer.kernel_frame(0xffffffffc0a01208);
		CHECK(module.name == "ext4_file_read_iter");
		CHECK(module.symbol_offset == 8);
		CHECK(module.module == "ext4");
		CHECK(module.module_offset == 0x308);

		Frame bpf = symbolizer.kernel_frame(0xffffffffc0b00010);
		CHECK(bpf.name == "bpf_prog_6deef7357e7b4530_sd_fw_egress");
		CHECK(bpf.module == "bpf");

		// A return address at a function's start is where a call at the very end of the
		// function before it returns to: that function is the caller.
		CHECK(symbolizer.kernel_frame(0xffffffff81001080).name == "do_syscall_64");
		Frame caller = symbolizer.kernel_frame(0xffffffff81001080, true);
		CHECK(caller.address == 0xffffffff81001080);
		CHECK(caller.name == "startup_64");
		CHECK(caller.symbol_offset == 0x1080);
		CHECK(symbolizer.kernel_frame(0xffffffff81001090, true).name == "do_syscall_64");
		CHECK(symbolizer.kernel_frame(0xffffffff81001090, true).symbol_offset == 0x10);

		for (uint64_t unknown : {uint64_t(0x1000), uint64_t(0xffffffffc0b00500)}) {
			Frame frame = symbolizer.kernel_frame(unknown);
			CHECK(!frame.named());
			CHECK(frame.module.empty());
			CHECK(frame_label(frame) == "[unknown]");
		}
	}

	TEST_CASE("symbolizer: a BPF program loaded while sampling is named from the side band's record")
	{
		TempDir dir;
		SymbolizerOptions options = with_fixture_kallsyms(dir);
		Symbolizer symbolizer(options);
		// kallsyms, read at the start, has no sizes: it would take a program loaded later at
		// ...0200 for a part of the one before it.
		CHECK(symbolizer.kernel_frame(0xffffffffc0b00210).name == "bpf_prog_6deef7357e7b4530_sd_fw_egress");

		ProcessHistory history;
		perf_event_header header{PERF_RECORD_KSYMBOL, 0, 0};
		std::vector<uint8_t> record(sizeof(header));
		auto add = [&](const void *p, size_t n) {
			record.insert(record.end(), static_cast<const uint8_t *>(p), static_cast<const uint8_t *>(p) + n);
		};
		uint64_t addr = 0xffffffffc0b00200;
		uint32_t len = 0x100;
		uint16_t type = PERF_RECORD_KSYMBOL_TYPE_BPF, flags = 0;
		add(&addr, 8);
		add(&len, 4);
		add(&type, 2);
		add(&flags, 2);
		const char name[32] = "bpf_prog_0011223344556677_new";
		add(name, sizeof(name));
		struct {
			uint32_t pid, tid;
			uint64_t time;
		} id{0, 0, 50};
		add(&id, sizeof(id));
		header.size = uint16_t(record.size());
		std::memcpy(record.data(), &header, sizeof(header));
		REQUIRE(history.apply(record));
		symbolizer.set_process_history(&history);

		Frame frame = symbolizer.kernel_frame(0xffffffffc0b00210);
		CHECK(frame.name == "bpf_prog_0011223344556677_new");
		CHECK(frame.symbol_offset == 0x10);
		CHECK(frame.module == "bpf");
		CHECK(symbolizer.kernel_frame(0xffffffffc0b00200, true).name == "bpf_prog_6deef7357e7b4530_sd_fw_egress");
		CHECK(symbolizer.kernel_frame(0xffffffffc0b00300).name == "bpf_prog_6deef7357e7b4530_sd_fw_egress");
		CHECK(symbolizer.kernel_frame(0xffffffff81001090).name == "do_syscall_64");
	}

	TEST_CASE("symbolizer: a kallsyms that cannot be read names nothing, and kernel_frame loads it itself")
	{
		SymbolizerOptions options;
		options.kallsyms_path = "/nonexistent/kallsyms";
		Symbolizer symbolizer(options);
		CHECK(!symbolizer.kernel_frame(0xffffffff81001090).named());
		CHECK(symbolizer.stats().kernel_symbols == 0);
	}

	TEST_CASE("symbolizer: a shared library in a fake /proc, through map_files")
	{
		TempDir proc;
		const uint64_t bias = 0x7f1234000000;
		std::string lib = "/usr/lib/fake/libfixture.so";
		std::string maps = map_line(0x5555000, 0x5556000, "rw-p", 0, "00:00", 0, "[heap]") +
				   loaded_lines("libfixture.so", bias, "fd:01", 4242, lib, proc.path() / "1001") +
				   map_line(0x7f2000000000, 0x7f2000001000, "r-xp", 0, "00:00", 0, "");
		write_file(proc.path() / "1001" / "maps", maps);
		SymbolizerOptions options;
		options.proc_root = proc.path();
		options.perf_map_dir = proc.path(); // holds no perf map
		Symbolizer symbolizer(options);

		uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work");
		REQUIRE(work != 0);
		Frame frame = symbolizer.user_frame(1001, bias + work + 3);
		CHECK(frame.kind == FrameKind::Native);
		CHECK(frame.address == bias + work + 3);
		CHECK(frame.name == "fixture_lib_work");
		CHECK(frame.symbol_offset == 3);
		CHECK(frame.module == lib);
		CHECK(frame.module_offset == work + 3);
		CHECK(frame.build_id == read_build_id("libfixture.so"));
		CHECK(frame.map_start == bias + (work & ~(page - 1)));
		CHECK(frame.map_end == frame.map_start + page);
		CHECK(frame.map_offset == ((work - 0x200000) & ~(page - 1)));

		Frame other = symbolizer.user_frame(1001, bias + nm_address("libfixture.so.nm", "fixture_lib_other"));
		CHECK(other.name == "fixture_lib_other");
		CHECK(other.symbol_offset == 0);

		// Code never runs from the heap: only executable mappings are kept.
		Frame heap = symbolizer.user_frame(1001, 0x5555010);
		CHECK(frame_label(heap) == "[unknown]");

		Frame anonymous = symbolizer.user_frame(1001, 0x7f2000000010);
		CHECK(frame_label(anonymous) == "[unknown]");
		CHECK(anonymous.map_start == 0x7f2000000000);

		Frame nothing = symbolizer.user_frame(1001, 0x10);
		CHECK(frame_label(nothing) == "[unknown]");
		CHECK(nothing.module.empty());

		Frame gone = symbolizer.user_frame(999999, bias + work);
		CHECK(frame_label(gone) == "[unknown]");
		CHECK(symbolizer.stats().processes_read == 1);
	}

	TEST_CASE("symbolizer: two processes mapping one file (same device and inode) parse it once")
	{
		TempDir proc;
		std::string lib = "/usr/lib/fake/libfixture.so";
		write_file(proc.path() / "2001" / "maps",
			   loaded_lines("libfixture.so", 0x7f0000000000, "fd:01", 777, lib, proc.path() / "2001"));
		write_file(proc.path() / "2002" / "maps",
			   loaded_lines("libfixture.so", 0x7f5500000000, "fd:01", 777, lib, proc.path() / "2002"));
		// Another device, same inode number: another file.
		write_file(proc.path() / "2003" / "maps",
			   loaded_lines("libfixture.so", 0x7f6600000000, "fd:02", 777, lib, proc.path() / "2003"));
		SymbolizerOptions options;
		options.proc_root = proc.path();
		Symbolizer symbolizer(options);
		uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work");

		CHECK(symbolizer.user_frame(2001, 0x7f0000000000 + work).name == "fixture_lib_work");
		CHECK(symbolizer.stats().elf_files_parsed == 1);
		CHECK(symbolizer.user_frame(2002, 0x7f5500000000 + work).name == "fixture_lib_work");
		CHECK(symbolizer.user_frame(2001, 0x7f0000000000 + work + 1).name == "fixture_lib_work");
		CHECK(symbolizer.stats().elf_files_parsed == 1);
		CHECK(symbolizer.user_frame(2003, 0x7f6600000000 + work).name == "fixture_lib_work");
		CHECK(symbolizer.stats().elf_files_parsed == 2);
		CHECK(symbolizer.stats().processes_read == 3);
	}

	TEST_CASE("symbolizer: PIE and C++ files found through the process's root, names demangled")
	{
		TempDir proc;
		const uint64_t pie_bias = 0x555555554000, cxx_bias = 0x565656560000;
		std::string pie = absolute_fixture("hello-pie"), cxx = absolute_fixture("cxx");
		Identity pie_id = identity_of(pie), cxx_id = identity_of(cxx);
		write_file(proc.path() / "3001" / "maps",
			   loaded_lines("hello-pie", pie_bias, pie_id.dev.c_str(), pie_id.inode, pie) +
				   loaded_lines("cxx", cxx_bias, cxx_id.dev.c_str(), cxx_id.inode, cxx));
		fs::create_directory_symlink("/", proc.path() / "3001" / "root");
		SymbolizerOptions options;
		options.proc_root = proc.path();
		Symbolizer symbolizer(options);

		uint64_t local = nm_address("hello-pie.nm", "fixture_local");
		Frame frame = symbolizer.user_frame(3001, pie_bias + local + 2);
		CHECK(frame.name == "fixture_local");
		CHECK(frame.module == pie);
		CHECK(frame.module_offset == local + 2);

		for (const NmSymbol &symbol : read_nm("cxx.demangled")) {
			if (symbol.name.find("fixture::") == std::string::npos || (symbol.type != 'T' && symbol.type != 'W'))
				continue;
			CAPTURE(symbol.name);
			CHECK(symbolizer.user_frame(3001, cxx_bias + symbol.address + 1).name == symbol.name);
		}
		CHECK(symbolizer.user_frame(3001, cxx_bias + nm_address("cxx.nm", "_ZN7fixture7Spinner4spinEl")).name ==
		      "fixture::Spinner::spin(long)");
	}

	TEST_CASE("symbolizer: deleted files are read through map_files only, never through a path to another file")
	{
		TempDir proc;
		const uint64_t bias = 0x7f0000000000, other_bias = 0x7f1000000000;
		std::string maps = loaded_lines("libfixture.so", bias, "fd:01", 51, "/tmp/libgone.so (deleted)",
						proc.path() / "4001") +
				   // Its path still names a file, but a deleted mapping's path is never trusted.
				   loaded_lines("libfixture.so", other_bias, "fd:01", 52,
						absolute_fixture("libfixture.so") + " (deleted)");
		write_file(proc.path() / "4001" / "maps", maps);
		fs::create_directory_symlink("/", proc.path() / "4001" / "root");
		SymbolizerOptions options;
		options.proc_root = proc.path();
		Symbolizer symbolizer(options);
		uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work");

		Frame frame = symbolizer.user_frame(4001, bias + work);
		CHECK(frame.name == "fixture_lib_work");
		CHECK(frame.module == "/tmp/libgone.so");

		Frame unreadable = symbolizer.user_frame(4001, other_bias + work);
		CHECK(!unreadable.named());
		CHECK(unreadable.module_offset == work - 0x200000); // the file offset: no ELF to translate it
		char label[64];
		std::snprintf(label, sizeof(label), "[libfixture.so+0x%" PRIx64 "]", work - 0x200000);
		CHECK(frame_label(unreadable) == label);
	}

	TEST_CASE("symbolizer: a path is opened inside the process's root, never outside it")
	{
		TempDir proc;
		fs::path jail = proc.path() / "jail";
		std::string lib = absolute_fixture("libfixture.so");
		// An absolute symlink and a ".." walk: both would reach the real file outside the jail.
		fs::create_directories(jail / "lib");
		fs::create_symlink(lib, jail / "lib" / "escape.so");
		fs::create_directories(jail / "copy");
		fs::copy_file(lib, jail / "copy" / "libfixture.so");
		const uint64_t a = 0x7f0000000000, b = 0x7f1000000000, c = 0x7f2000000000;
		// The escapes name the real file's own device and inode: only the escape itself
		// could lead to them.
		Identity real = identity_of(lib), copy = identity_of(jail / "copy" / "libfixture.so");
		write_file(proc.path() / "5001" / "maps",
			   loaded_lines("libfixture.so", a, real.dev.c_str(), real.inode, "/lib/escape.so") +
				   loaded_lines("libfixture.so", b, real.dev.c_str(), real.inode, "/../../../../.." + lib) +
				   loaded_lines("libfixture.so", c, copy.dev.c_str(), copy.inode, "/copy/libfixture.so"));
		fs::create_directory_symlink(jail, proc.path() / "5001" / "root");
		SymbolizerOptions options;
		options.proc_root = proc.path();
		Symbolizer symbolizer(options);
		uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work");

		CHECK(!symbolizer.user_frame(5001, a + work).named());
		CHECK(!symbolizer.user_frame(5001, b + work).named());
		CHECK(symbolizer.user_frame(5001, c + work).name == "fixture_lib_work");
		CHECK(symbolizer.stats().elf_files_parsed == 1);
	}

	TEST_CASE("symbolizer: this process's own function, libc's getpid and a dlopen'd library")
	{
		void *library = dlopen(absolute_fixture("libfixture.so").c_str(), RTLD_NOW | RTLD_LOCAL);
		REQUIRE(library);
		struct Closer {
			void *handle;
			~Closer() { dlclose(handle); }
		} closer{library};

		Symbolizer symbolizer;
		uint32_t self = static_cast<uint32_t>(getpid());

		Frame own = symbolizer.user_frame(self, reinterpret_cast<uintptr_t>(&syms_test::live_target) + 1);
		CHECK(own.name == "syms_test::live_target(int)");
		CHECK(own.symbol_offset == 1);
		CHECK(fs::path(own.module) == fs::canonical("/proc/self/exe"));
		CHECK(syms_test::live_target(1) == 7);

		void *getpid_address = dlsym(RTLD_DEFAULT, "getpid");
		REQUIRE(getpid_address);
		Frame libc = symbolizer.user_frame(self, reinterpret_cast<uintptr_t>(getpid_address) + 1);
		CHECK(libc.name == "getpid"); // over its alias __getpid
		CHECK(libc.module.find("libc.so") != std::string::npos);
		CHECK(libc.build_id.size() == 40);

		void *work = dlsym(library, "fixture_lib_work");
		REQUIRE(work);
		Frame frame = symbolizer.user_frame(self, reinterpret_cast<uintptr_t>(work) + 2);
		CHECK(frame.name == "fixture_lib_work");
		CHECK(frame.module_offset == nm_address("libfixture.so.nm", "fixture_lib_work") + 2);
		CHECK(frame.build_id == read_build_id("libfixture.so"));
	}

	TEST_CASE("symbolizer: the vDSO is named from this process's copy of it")
	{
		ProcessMaps maps;
		REQUIRE(ProcessMaps::load("/proc/self/maps", maps));
		const MapEntry *vdso = nullptr;
		for (const MapEntry &entry : maps.entries())
			if (entry.path == "[vdso]")
				vdso = &entry;
		REQUIRE(vdso);
		Symbolizer symbolizer;
		int named = 0;
		for (uint64_t address = vdso->start; address < vdso->end; address += 16) {
			Frame frame = symbolizer.user_frame(static_cast<uint32_t>(getpid()), address);
			CHECK(frame.module == "[vdso]");
			if (frame.name.find("gettimeofday") != std::string::npos ||
			    frame.name.find("clock_gettime") != std::string::npos)
				named++;
		}
		CHECK(named > 0);
	}

	TEST_CASE("symbolizer: live PIE, non-PIE and shared-library processes, each file parsed once")
	{
		Child pie1("hello-pie"), pie2("hello-pie"), nopie("hello-nopie"), user("uses-lib");
		Symbolizer symbolizer;
		uint64_t middle = nm_address("hello-pie.nm", "fixture_middle");

		Frame first = symbolizer.user_frame(pie1.pid, pie1.bias("hello-pie") + middle + 1);
		CHECK(first.name == "fixture_middle");
		CHECK(first.module_offset == middle + 1);
		CHECK(first.build_id == read_build_id("hello-pie"));
		size_t parsed = symbolizer.stats().elf_files_parsed;
		CHECK(parsed == 1);
		Frame second = symbolizer.user_frame(pie2.pid, pie2.bias("hello-pie") + middle + 1);
		CHECK(second.name == "fixture_middle");
		CHECK(symbolizer.stats().elf_files_parsed == parsed);

		uint64_t fixed = nm_address("hello-nopie.nm", "fixture_leaf");
		Frame leaf = symbolizer.user_frame(nopie.pid, fixed + 1);
		CHECK(leaf.name == "fixture_leaf");
		CHECK(leaf.module_offset == fixed + 1);

		uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work");
		Frame lib = symbolizer.user_frame(user.pid, user.bias("libfixture.so") + work + 4);
		CHECK(lib.name == "fixture_lib_work");
		CHECK(lib.module_offset == work + 4);
		CHECK(fs::path(lib.module).filename() == "libfixture.so");
		uint64_t caller = nm_address("uses-lib.nm", "uses_lib_caller");
		CHECK(symbolizer.user_frame(user.pid, user.bias("uses-lib") + caller).name == "uses_lib_caller");
	}

	TEST_CASE("symbolizer: a process of the history is still named after it exits")
	{
		Child child("hello-pie");
		uint64_t address = child.bias("hello-pie") + nm_address("hello-pie.nm", "fixture_leaf");
		uint32_t pid = static_cast<uint32_t>(child.pid);
		ProcessHistory history;
		snapshot_processes(history, 100);
		REQUIRE(history.image_at(pid, 100));
		child.stop();
		Symbolizer symbolizer;
		symbolizer.set_process_history(&history);
		const ProcessImage *image = symbolizer.image_at(pid, 150);
		CHECK(image == history.image_at(pid, 150));
		CHECK(symbolizer.user_frame(pid, address, 150).name == "fixture_leaf");
		CHECK(symbolizer.stats().processes_read == 0); // its maps are gone: the history had them
	}

	// How long this takes is measured by scripts/bench.sh (end of sampling to report).
	TEST_CASE("symbolizer: 40 live processes: each ELF file is parsed once for all of them")
	{
		std::vector<std::unique_ptr<Child>> children;
		for (int i = 0; i < 40; i++)
			children.push_back(std::make_unique<Child>(i % 2 ? "hello-pie" : "uses-lib"));
		Symbolizer symbolizer;
		size_t frames = 0, named = 0;
		for (const auto &child : children) {
			uint32_t pid = static_cast<uint32_t>(child->pid);
			ProcessMaps maps;
			REQUIRE(ProcessMaps::load("/proc/" + std::to_string(pid) + "/maps", maps));
			// 64 addresses in every executable mapping: libc, ld.so, the program, the vDSO.
			for (const MapEntry &entry : maps.entries()) {
				if (!entry.executable())
					continue;
				for (uint64_t i = 0; i < 64; i++) {
					Frame frame = symbolizer.user_frame(pid, entry.start + (entry.end - entry.start) * i / 64);
					frames++;
					named += frame.named();
				}
			}
		}
		SymbolizerStats stats = symbolizer.stats();
		INFO(frames << " frames (" << named << " named) of 40 processes; " << stats.elf_files_parsed
			    << " ELF files parsed");
		CHECK(stats.processes_read == 40);
		CHECK(stats.elf_files_parsed <= 5); // hello-pie, uses-lib, libfixture.so, libc, ld.so
		CHECK(named >= 40); // stripped libc names only its exported functions
	}

	TEST_CASE("symbolizer: an exec inside one PID: each image named from its own files")
	{
		// Two programs mapped at the same addresses, one after the other, in one process
		// that is gone: the time of a sample picks the image.
		ProcessHistory history;
		std::string nopie = absolute_fixture("hello-nopie"), lib = absolute_fixture("libfixture.so");
		history.add_snapshot(gone_pid, "before", mappings_of("hello-nopie", 0, nopie, nopie), 100);
		// libfixture.so is linked at 0x200000: a bias of 0x200000 lays it over hello-nopie.
		history.add_snapshot(gone_pid, "after", mappings_of("libfixture.so", 0x200000, lib, lib), 200);
		Symbolizer symbolizer;
		symbolizer.set_process_history(&history);
		const ProcessImage *before = symbolizer.image_at(gone_pid, 150), *after = symbolizer.image_at(gone_pid, 250);
		REQUIRE(before);
		REQUIRE(after);
		CHECK(before != after);
		CHECK(before->comm == "before");

		uint64_t leaf = nm_address("hello-nopie.nm", "fixture_leaf");
		uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work") + 0x200000;
		std::vector<Frame> frames;
		symbolizer.user_frames(symbolizer.locate(gone_pid, before, leaf, false), false, frames);
		symbolizer.user_frames(symbolizer.locate(gone_pid, after, work, false), false, frames);
		REQUIRE(frames.size() == 2);
		CHECK(frames[0].name == "fixture_leaf");
		CHECK(frames[0].module == nopie);
		CHECK(frames[1].name == "fixture_lib_work");
		CHECK(frames[1].module == lib);
		// The same address in the other image is another file's.
		CHECK(symbolizer.user_frame(gone_pid, leaf, 250).module == lib);
		CHECK(symbolizer.user_frame(gone_pid, leaf, 50).name == "fixture_leaf"); // before the first: the first
	}

	TEST_CASE("symbolizer: a replaced binary lends no names to the image that ran the old one")
	{
		TempDir dir;
		fs::path program = dir.path() / "prog";
		fs::copy_file(absolute_fixture("hello-pie"), program);
		fs::permissions(program, fs::perms::owner_all);
		// The child calls only what is async-signal-safe: its argv is made before the fork.
		std::string program_path = program.string();
		char wait_arg[] = "wait";
		char *const argv[] = {program_path.data(), wait_arg, nullptr};
		pid_t pid = fork();
		if (pid == 0) {
			int null = open("/dev/null", O_WRONLY);
			dup2(null, STDOUT_FILENO);
			execv(argv[0], argv);
			_exit(127);
		}
		REQUIRE(pid >= 0);
		struct Reaper {
			pid_t pid;
			~Reaper()
			{
				if (pid > 0) {
					kill(pid, SIGKILL);
					waitpid(pid, nullptr, 0);
				}
			}
		} reaper{pid};
		// Wait until the program is mapped (exec done).
		ProcessMaps maps;
		for (int i = 0; i < 200; i++) {
			REQUIRE(ProcessMaps::load("/proc/" + std::to_string(pid) + "/maps", maps));
			bool mapped = false;
			for (const MapEntry &entry : maps.entries())
				mapped |= entry.path == program.string();
			if (mapped)
				break;
			usleep(10000);
		}
		ProcessHistory history;
		snapshot_processes(history, 100);
		const ProcessImage *image = history.image_at(uint32_t(pid), 100);
		REQUIRE(image);
		uint64_t base = 0;
		for (const MapEntry &entry : *image->maps)
			if (entry.path == program.string() && entry.offset == 0x1000)
				base = entry.start - 0x1000;
		REQUIRE(base);
		uint64_t leaf = base + nm_address("hello-pie.nm", "fixture_leaf");

		// An upgrade puts a new file (another inode) at the path.
		fs::copy_file(absolute_fixture("cxx"), dir.path() / "prog.new");
		fs::rename(dir.path() / "prog.new", program);
		{
			// Alive: the old file is still there through map_files.
			Symbolizer symbolizer;
			symbolizer.set_process_history(&history);
			Frame frame = symbolizer.user_frame(uint32_t(pid), leaf, 150);
			CHECK(frame.name == "fixture_leaf");
			CHECK(frame.module == program.string());
		}
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		reaper.pid = -1;
		{
			// Gone: only the path is left, and it leads to another file.
			Symbolizer symbolizer;
			symbolizer.set_process_history(&history);
			Frame frame = symbolizer.user_frame(uint32_t(pid), leaf, 150);
			CHECK(!frame.named());
			char label[64];
			std::snprintf(label, sizeof(label), "[prog+0x%" PRIx64 "]", leaf - base);
			CHECK(frame_label(frame) == label);
			CHECK(symbolizer.stats().elf_files_parsed == 0);
		}
	}

	TEST_CASE("symbolizer: stripped binaries named from their debug files, by debuglink and by build id")
	{
		TempDir dir;
		std::string linked = absolute_fixture("hello-debuglink"), nosyms = absolute_fixture("hello-nosyms");
		const uint64_t bias = 0x555555554000, other = 0x565656560000;
		ProcessHistory history;
		std::vector<MapEntry> maps = mappings_of("hello-debuglink", bias, linked, linked);
		for (const MapEntry &entry : mappings_of("hello-nosyms", other, nosyms, nosyms))
			maps.push_back(entry);
		history.add_snapshot(gone_pid, "stripped", maps, 100);
		uint64_t leaf = nm_address("hello-nosyms.nm", "fixture_leaf");
		uint64_t local = nm_address("hello-nosyms.nm", "fixture_local");
		REQUIRE(leaf);

		SymbolizerOptions options;
		options.debug_root = dir.path() / "debug";
		{
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			// hello-debuglink's debug file sits beside it, under the name its debuglink gives.
			Frame frame = symbolizer.user_frame(gone_pid, bias + leaf + 1);
			CHECK(frame.name == "fixture_leaf");
			CHECK(frame.symbol_offset == 1);
			CHECK(frame.module == linked);
			CHECK(frame.build_id == read_build_id("hello-nosyms"));
			CHECK(symbolizer.user_frame(gone_pid, bias + local).name == "fixture_local");
			// The debug file keeps no PLT: its entries are named from the binary.
			std::string plt = read_text(fixture_path("hello-pie.plt"));
			REQUIRE(plt.find(' ') != std::string::npos);
			uint64_t entry = std::stoull(plt.substr(0, plt.find(' ')), nullptr, 16);
			CHECK(symbolizer.user_frame(gone_pid, bias + entry + 4).name ==
			      plt.substr(plt.find(' ') + 1, plt.find('\n') - plt.find(' ') - 1));
			// hello-nosyms has no debuglink, and no .build-id tree holds its file yet.
			Frame bare = symbolizer.user_frame(gone_pid, other + leaf);
			CHECK(!bare.named());
			CHECK(frame_label(bare).starts_with("[hello-nosyms+0x"));
			CHECK(symbolizer.stats().debug_files_read == 1);
		}
		std::string id = read_build_id("hello-nosyms");
		fs::create_directories(dir.path() / "debug" / ".build-id" / id.substr(0, 2));
		fs::copy_file(absolute_fixture("hello-nosyms.debug"),
			      dir.path() / "debug" / ".build-id" / id.substr(0, 2) / (id.substr(2) + ".debug"));
		{
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			CHECK(symbolizer.user_frame(gone_pid, other + leaf).name == "fixture_leaf");
			CHECK(symbolizer.user_frame(gone_pid, bias + leaf).name == "fixture_leaf");
			// Two binaries (two inodes), one debug file each time it is found.
			CHECK(symbolizer.stats().elf_files_parsed == 2);
			CHECK(symbolizer.stats().debug_files_read == 2);
		}
	}

	TEST_CASE("symbolizer: a debug file from elsewhere (debuginfod) is asked for once and taken only for its build id")
	{
		TempDir dir;
		std::string nosyms = absolute_fixture("hello-nosyms");
		const uint64_t bias = 0x565656560000;
		ProcessHistory history;
		history.add_snapshot(gone_pid, "stripped", mappings_of("hello-nosyms", bias, nosyms, nosyms), 100);
		const uint64_t leaf = nm_address("hello-nosyms.nm", "fixture_leaf");
		REQUIRE(leaf);
		const std::string id = read_build_id("hello-nosyms");
		// Another file, to push hello-nosyms out of the one file kept.
		const std::string lib = absolute_fixture("libfixture.so");
		history.add_snapshot(gone_pid + 1, "lib", mappings_of("libfixture.so", 0x7f0000000000, lib, lib), 100);
		const uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work");
		REQUIRE(work);

		SymbolizerOptions options;
		options.debug_root = dir.path() / "debug"; // empty: nothing here has its symbols
		options.kept_files = 1;
		Symbolizer symbolizer(options);
		symbolizer.set_process_history(&history);
		CHECK(frame_label(symbolizer.user_frame(gone_pid, bias + leaf)).starts_with("[hello-nosyms+0x"));
		CHECK(symbolizer.wanted_debug_files() == std::vector<std::string>{id});
		CHECK(symbolizer.wanted_debug_files().empty());

		// Another build's debug file, a file that is no ELF, and one for no file here: refused.
		UniqueFd other = open_read_only(absolute_fixture("libfixture.so").c_str());
		CHECK(contains(symbolizer.add_debug_file(id, other.get()).error(), "build id"));
		UniqueFd text = open_read_only(absolute_fixture("hello-nosyms.nm").c_str());
		CHECK(symbolizer.add_debug_file(id, text.get()).error() == "not an ELF file");
		UniqueFd right = open_read_only(absolute_fixture("hello-nosyms.debug").c_str());
		CHECK(!symbolizer.add_debug_file(std::string(40, 'a'), right.get()).ok());
		CHECK(!symbolizer.user_frame(gone_pid, bias + leaf).named());
		CHECK(symbolizer.stats().debug_files_added == 0);

		CHECK(symbolizer.add_debug_file(id, right.get()).ok());
		CHECK(symbolizer.user_frame(gone_pid, bias + leaf).name == "fixture_leaf");
		CHECK(symbolizer.stats().debug_files_added == 1);
		CHECK(symbolizer.wanted_debug_files().empty());
		// The file read again (dropped for room) takes the debug file again.
		CHECK(symbolizer.user_frame(gone_pid + 1, 0x7f0000000000 + work).name == "fixture_lib_work");
		const size_t parsed = symbolizer.stats().elf_files_parsed;
		CHECK(symbolizer.user_frame(gone_pid, bias + leaf).name == "fixture_leaf");
		CHECK(symbolizer.stats().elf_files_parsed == parsed + 1);
		CHECK(symbolizer.wanted_debug_files().empty());
	}

	TEST_CASE("symbolizer: a process that has exited but is not reaped yet (a zombie) is named from its files' paths")
	{
		// Its /proc/PID is there, with empty maps and no root to open: an 8 s workload that
		// ended after a 3 s run's sampling but before its report was named by nothing.
		TempDir proc;
		const uint32_t zombie = 4343;
		std::filesystem::create_directories(proc.path() / std::to_string(zombie));
		write_file(proc.path() / std::to_string(zombie) / "maps", "");
		ProcessHistory history;
		const std::string lib = absolute_fixture("libfixture.so");
		history.add_snapshot(zombie, "app", mappings_of("libfixture.so", 0x7f0000000000, lib, lib), 100);
		SymbolizerOptions options;
		options.proc_root = proc.path();
		options.kallsyms_path = "/nonexistent";
		Symbolizer symbolizer(options);
		symbolizer.set_process_history(&history);
		const uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work");
		CHECK(symbolizer.user_frame(zombie, 0x7f0000000000 + work).name == "fixture_lib_work");
	}

	TEST_CASE("symbolizer: JIT code named from /tmp/perf-PID.map, read once, only for code no file holds")
	{
		TempDir dir;
		ProcessHistory history;
		std::string lib = absolute_fixture("libfixture.so");
		std::vector<MapEntry> maps = mappings_of("libfixture.so", 0x7f0000000000, lib, lib);
		MapEntry anonymous;
		anonymous.start = 0x7e0000000000;
		anonymous.end = 0x7e0000010000;
		anonymous.perms = {'r', 'w', 'x', 'p'};
		maps.push_back(anonymous);
		history.add_snapshot(gone_pid, "node", maps, 100);
		write_file(dir.path() / ("perf-" + std::to_string(gone_pid) + ".map"),
			   "7e0000000100 80 LazyCompile:~fib /srv/fib.js:3\n"
			   "7d0000000000 40 outside_every_mapping\n"
			   "7f0000201000 1000 would_shadow_the_library\n");
		SymbolizerOptions options;
		options.perf_map_dir = dir.path();
		Symbolizer symbolizer(options);
		symbolizer.set_process_history(&history);

		Frame jit = symbolizer.user_frame(gone_pid, 0x7e0000000110);
		CHECK(jit.name == "LazyCompile:~fib /srv/fib.js:3");
		CHECK(jit.symbol_offset == 0x10);
		CHECK(jit.module == (dir.path() / ("perf-" + std::to_string(gone_pid) + ".map")).string());
		CHECK(jit.map_start == 0x7e0000000000);
		CHECK(symbolizer.user_frame(gone_pid, 0x7d0000000008).name == "outside_every_mapping");
		CHECK(frame_label(symbolizer.user_frame(gone_pid, 0x7e0000000200)) == "[unknown]");
		uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work");
		CHECK(symbolizer.user_frame(gone_pid, 0x7f0000000000 + work).name == "fixture_lib_work");
		// A return address at the end of a JIT function is its caller's call.
		std::vector<Frame> frames;
		symbolizer.user_frames(symbolizer.locate(gone_pid, symbolizer.image_at(gone_pid, 150), 0x7e0000000180, true), true, frames);
		CHECK(frames.at(0).name == "LazyCompile:~fib /srv/fib.js:3");
		CHECK(frames.at(0).symbol_offset == 0x80);
		CHECK(symbolizer.stats().perf_maps_read == 1);
	}

	TEST_CASE("symbolizer: a perf map owned by another user is not read for a process that is gone")
	{
		if (geteuid() != 0) {
			skip_test("not root: the test chowns a file"); // make test runs this suite as root
			return;
		}
		TempDir dir;
		ProcessHistory history;
		MapEntry anonymous;
		anonymous.start = 0x7e0000000000;
		anonymous.end = 0x7e0000010000;
		anonymous.perms = {'r', '-', 'x', 'p'};
		history.add_snapshot(gone_pid, "node", {anonymous}, 100);
		fs::path file = dir.path() / ("perf-" + std::to_string(gone_pid) + ".map");
		write_file(file, "7e0000000100 80 planted\n");
		REQUIRE(chown(file.c_str(), 65534, 65534) == 0);
		SymbolizerOptions options;
		options.perf_map_dir = dir.path();
		Symbolizer symbolizer(options);
		symbolizer.set_process_history(&history);
		CHECK(!symbolizer.user_frame(gone_pid, 0x7e0000000110).named());
		CHECK(symbolizer.stats().perf_maps_read == 0);
	}

	TEST_CASE("symbolizer: a return address is named as the call before it")
	{
		// fixture_last_call ends with a call, and fixture_after starts right after it.
		std::string calls = absolute_fixture("calls");
		ProcessHistory history;
		const uint64_t bias = 0x555555554000;
		history.add_snapshot(gone_pid, "calls", mappings_of("calls", bias, calls, calls), 100);
		Symbolizer symbolizer;
		symbolizer.set_process_history(&history);
		const uint64_t caller = nm_address("calls.nm", "fixture_last_call"),
			       next = nm_address("calls.nm", "fixture_after");
		REQUIRE(caller);
		REQUIRE(next > caller);
		{
			// The fixture is as this test needs it: a 5-byte call right before `next`.
			std::string bytes = read_text(calls);
			std::unique_ptr<ElfFile> elf = ElfFile::from_bytes(std::vector<uint8_t>(bytes.begin(), bytes.end()));
			REQUIRE(elf);
			const ElfFile::Symbol *symbol = elf->find_symbol(caller);
			REQUIRE(symbol);
			REQUIRE(symbol->end == next);
		}
		const ProcessImage *image = symbolizer.image_at(gone_pid, 150);
		std::vector<Frame> frames;
		symbolizer.user_frames(symbolizer.locate(gone_pid, image, bias + next, false), false, frames);
		symbolizer.user_frames(symbolizer.locate(gone_pid, image, bias + next, true), true, frames);
		REQUIRE(frames.size() == 2);
		CHECK(frames[0].name == "fixture_after");
		CHECK(frames[0].symbol_offset == 0);
		CHECK(frames[1].name == "fixture_last_call");
		CHECK(frames[1].address == bias + next); // as sampled
		CHECK(frames[1].symbol_offset == next - caller);
		CHECK(frames[1].module_offset == next);
	}
	TEST_CASE("symbolizer: files dropped for room or between windows, objects forgotten: named again the same")
	{
		// Three copies of one program with DWARF (three files) and a stripped one, in
		// processes that are gone: each file is read again from its path when needed.
		TempDir dir;
		std::vector<std::string> copies;
		ProcessHistory history;
		for (int i = 0; i < 3; i++) {
			copies.push_back(dir / ("inlined-" + std::to_string(i)));
			fs::copy_file(absolute_fixture("inlined"), copies.back());
			history.add_snapshot(gone_pid + i, "inlined", mappings_of("inlined", 0x555555554000, copies.back(), copies.back()), 100);
		}
		const std::string stripped = absolute_fixture("hello-stripped");
		history.add_snapshot(gone_pid + 3, "stripped",
				     mappings_of("hello-stripped", 0x7f0000000000, stripped, stripped), 100);
		// The same program with its DWARF compressed (its code and segments are inlined's).
		const std::string gz = dir / "inlined-gz";
		fs::copy_file(absolute_fixture("inlined-gz"), gz);
		history.add_snapshot(gone_pid + 4, "inlined-gz", mappings_of("inlined", 0x555555554000, gz, gz), 100);
		const uint64_t marker = 0x555555554000 + nm_address("inlined.nm", "inner_marker");
		const uint64_t leaf = 0x7f0000000000 + nm_address("hello-stripped.nm", "fixture_leaf");
		REQUIRE(marker != 0x555555554000);
		REQUIRE(leaf != 0x7f0000000000);

		auto frames_of = [](Symbolizer &symbolizer, uint32_t pid, uint64_t address) {
			std::vector<Frame> frames;
			symbolizer.user_frames(symbolizer.locate(pid, symbolizer.image_at(pid, 150), address, false), false,
					       frames);
			std::vector<std::string> names;
			for (const Frame &frame : frames)
				names.push_back(frame_label(frame) + " " + frame.source_file + ":" + std::to_string(frame.line) +
						(frame.inlined ? " inlined" : ""));
			return names;
		};
		SymbolizerOptions options;
		options.want_inlined = true;
		Symbolizer reference(options);
		reference.set_process_history(&history);
		const std::vector<std::string> inlined = frames_of(reference, gone_pid, marker);
		REQUIRE(inlined.size() == 2);
		CHECK(inlined[0].starts_with("fixture::inner_step "));
		const std::vector<std::string> plain = frames_of(reference, gone_pid + 3, leaf);
		REQUIRE(plain.size() == 1);
		CHECK(plain[0] == "fixture_leaf :0"); // from .dynsym; no DWARF

		SUBCASE("one file kept: each file read again when it is needed again")
		{
			options.kept_files = 1;
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			for (int round = 0; round < 2; round++) {
				CHECK(frames_of(symbolizer, gone_pid, marker) == inlined);
				CHECK(frames_of(symbolizer, gone_pid + 3, leaf) == plain);
			}
			CHECK(symbolizer.stats().elf_files_parsed == 4);
			CHECK(symbolizer.stats().files_dropped == 3);
		}
		SUBCASE("two files with DWARF held: the least recently used lets it go and reads it again when needed")
		{
			options.kept_dwarf_files = 2;
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			CHECK(frames_of(symbolizer, gone_pid + 3, leaf) == plain);
			CHECK(frames_of(symbolizer, gone_pid, marker) == inlined);
			CHECK(frames_of(symbolizer, gone_pid + 1, marker) == inlined);
			CHECK(frames_of(symbolizer, gone_pid, marker) == inlined); // 0 is now newer than 1
			CHECK(symbolizer.stats().elf_files_parsed == 3);
			CHECK(frames_of(symbolizer, gone_pid + 2, marker) == inlined); // 1 lets its DWARF go
			CHECK(symbolizer.stats().files_dropped == 0);
			CHECK(frames_of(symbolizer, gone_pid, marker) == inlined);
			CHECK(frames_of(symbolizer, gone_pid + 3, leaf) == plain);
			CHECK(symbolizer.stats().elf_files_parsed == 4);
			CHECK(symbolizer.stats().dwarf_read_again == 0);
			CHECK(frames_of(symbolizer, gone_pid + 1, marker) == inlined); // its DWARF read again
			CHECK(symbolizer.stats().elf_files_parsed == 4);
			CHECK(symbolizer.stats().dwarf_read_again == 1);
		}
		SUBCASE("end_window keeps the files, lets their DWARF go and starts the objects again")
		{
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			CHECK(frames_of(symbolizer, gone_pid, marker) == inlined);
			CHECK(frames_of(symbolizer, gone_pid + 3, leaf) == plain);
			CHECK(symbolizer.object_count() == 3);
			symbolizer.end_window();
			CHECK(symbolizer.object_count() == 1);
			CHECK(symbolizer.stats().files_dropped == 0);
			CHECK(symbolizer.stats().files_kept == 2);
			CHECK(frames_of(symbolizer, gone_pid + 3, leaf) == plain); // now object 1
			CHECK(frames_of(symbolizer, gone_pid, marker) == inlined);
			CHECK(symbolizer.object_count() == 3);
			CHECK(symbolizer.stats().elf_files_parsed == 2);
			CHECK(symbolizer.stats().dwarf_read_again == 1);
		}
		SUBCASE("kept_decompressed_bytes: compressed DWARF read in a window is read again decompressed, within "
			"the bound")
		{
			REQUIRE(nm_address("inlined-gz.nm", "inner_marker") == nm_address("inlined.nm", "inner_marker"));
			options.kept_decompressed_bytes = size_t(64) << 20;
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			CHECK(frames_of(symbolizer, gone_pid + 4, marker) == inlined);
			CHECK(frames_of(symbolizer, gone_pid, marker) == inlined); // uncompressed: no copy
			CHECK(symbolizer.stats().decompressed_copies == 1); // made at the first read
			symbolizer.end_window();
			CHECK(symbolizer.stats().decompressed_copies == 1);
			const size_t copy = symbolizer.stats().decompressed_bytes;
			CHECK(copy > 0);
			CHECK(frames_of(symbolizer, gone_pid + 4, marker) == inlined);
			CHECK(frames_of(symbolizer, gone_pid, marker) == inlined);
			CHECK(symbolizer.stats().dwarf_read_again == 2);
			CHECK(symbolizer.stats().dwarf_read_from_copy == 1);
			symbolizer.end_window();
			CHECK(symbolizer.stats().decompressed_copies == 1); // the same copy, kept

			// A bound below the copy's size keeps none.
			options.kept_decompressed_bytes = copy - 1;
			Symbolizer tight(options);
			tight.set_process_history(&history);
			CHECK(frames_of(tight, gone_pid + 4, marker) == inlined);
			tight.end_window();
			CHECK(tight.stats().decompressed_copies == 0);
			CHECK(frames_of(tight, gone_pid + 4, marker) == inlined);
			CHECK(tight.stats().dwarf_read_again == 1);
			CHECK(tight.stats().dwarf_read_from_copy == 0);
		}
	}

	TEST_CASE("symbolizer: a file named in one window is not parsed again in the next while within kept_file_bytes, and is dropped past it")
	{
		// Two files without DWARF, in processes that are gone, as an agent meets them window
		// after window: each window's processes map them at addresses of their own.
		const std::string lib = absolute_fixture("libfixture.so"), stripped = absolute_fixture("hello-stripped");
		const uint64_t work = nm_address("libfixture.so.nm", "fixture_lib_work");
		const uint64_t leaf = nm_address("hello-stripped.nm", "fixture_leaf");
		REQUIRE(work);
		REQUIRE(leaf);
		ProcessHistory history;
		for (uint32_t window = 0; window < 3; window++) {
			const uint64_t bias = 0x7f0000000000 + (uint64_t(window) << 32);
			history.add_snapshot(gone_pid + 2 * window, "lib", mappings_of("libfixture.so", bias, lib, lib), 100);
			history.add_snapshot(gone_pid + 2 * window + 1, "stripped",
					     mappings_of("hello-stripped", bias, stripped, stripped), 100);
		}
		auto lib_in = [&](Symbolizer &symbolizer, uint32_t window) {
			return symbolizer.user_frame(gone_pid + 2 * window, 0x7f0000000000 + (uint64_t(window) << 32) + work).name;
		};
		auto stripped_in = [&](Symbolizer &symbolizer, uint32_t window) {
			return symbolizer.user_frame(gone_pid + 2 * window + 1, 0x7f0000000000 + (uint64_t(window) << 32) + leaf).name;
		};
		SymbolizerOptions options;
		Symbolizer measure(options);
		measure.set_process_history(&history);
		CHECK(lib_in(measure, 0) == "fixture_lib_work");
		const size_t one = measure.stats().file_bytes_kept;
		CHECK(stripped_in(measure, 0) == "fixture_leaf");
		const size_t both = measure.stats().file_bytes_kept;
		CHECK(one > 0);
		CHECK(both > one);

		SUBCASE("within the bound: each file parsed once over three windows")
		{
			options.kept_file_bytes = both;
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			for (uint32_t window = 0; window < 3; window++) {
				CHECK(lib_in(symbolizer, window) == "fixture_lib_work");
				CHECK(stripped_in(symbolizer, window) == "fixture_leaf");
				symbolizer.end_window();
				CHECK(symbolizer.stats().elf_files_parsed == 2);
			}
			CHECK(symbolizer.stats().files_kept == 2);
			CHECK(symbolizer.stats().file_bytes_kept == both);
			CHECK(symbolizer.stats().files_dropped == 0);
		}
		SUBCASE("past the bound: the least recently used file goes, and is parsed again when met again")
		{
			options.kept_file_bytes = both - 1;
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			CHECK(lib_in(symbolizer, 0) == "fixture_lib_work");
			CHECK(stripped_in(symbolizer, 0) == "fixture_leaf");
			symbolizer.end_window(); // the library goes: the stripped program was used last
			CHECK(symbolizer.stats().files_dropped == 1);
			CHECK(symbolizer.stats().files_kept == 1);
			CHECK(symbolizer.stats().file_bytes_kept <= both - 1);
			CHECK(stripped_in(symbolizer, 1) == "fixture_leaf");
			CHECK(symbolizer.stats().elf_files_parsed == 2);
			CHECK(lib_in(symbolizer, 1) == "fixture_lib_work");
			CHECK(symbolizer.stats().elf_files_parsed == 3);
		}
	}

	TEST_CASE("symbolizer: names kept past a window's end (kept_named_bytes): the file is read again only for an address not kept")
	{
		// One program with DWARF mapped at two places by two processes that are gone, and a
		// stripped one without: what is named from what was kept is what the file names.
		const std::string program = absolute_fixture("inlined"), stripped = absolute_fixture("hello-stripped");
		const uint64_t first_bias = 0x555555554000, second_bias = 0x560000000000, stripped_bias = 0x7f0000000000;
		ProcessHistory history;
		history.add_snapshot(gone_pid, "inlined", mappings_of("inlined", first_bias, program, program), 100);
		history.add_snapshot(gone_pid + 1, "inlined", mappings_of("inlined", second_bias, program, program), 100);
		history.add_snapshot(gone_pid + 2, "stripped",
				     mappings_of("hello-stripped", stripped_bias, stripped, stripped), 100);
		const uint64_t marker = nm_address("inlined.nm", "inner_marker");
		const uint64_t leaf = nm_address("hello-stripped.nm", "fixture_leaf");
		REQUIRE(marker);
		REQUIRE(leaf);

		// Every field of each frame, as one line.
		auto frames_of = [](Symbolizer &symbolizer, uint32_t pid, uint64_t address, bool return_address) {
			std::vector<Frame> frames;
			symbolizer.user_frames(symbolizer.locate(pid, symbolizer.image_at(pid, 150), address, return_address),
					       return_address, frames);
			std::vector<std::string> lines;
			for (const Frame &f : frames) {
				std::ostringstream line;
				line << std::hex << f.address << " " << f.name << "+" << f.symbol_offset << " " << f.module << "+"
				     << f.module_offset << " " << f.build_id << " " << f.source_file << ":" << std::dec << f.line
				     << (f.inlined ? " inlined " : " ") << std::hex << f.map_start << "-" << f.map_end << "@"
				     << f.map_offset;
				lines.push_back(line.str());
			}
			return lines;
		};
		SymbolizerOptions options;
		options.want_inlined = true;
		Symbolizer reference(options);
		reference.set_process_history(&history);
		const auto first = frames_of(reference, gone_pid, first_bias + marker, false);
		const auto second = frames_of(reference, gone_pid + 1, second_bias + marker, false);
		const auto returned = frames_of(reference, gone_pid + 1, second_bias + marker + 1, true);
		const auto plain = frames_of(reference, gone_pid + 2, stripped_bias + leaf, false);
		REQUIRE(first.size() == 2); // fixture::inner_step inlined into fixture::outer_loop
		REQUIRE(second.size() == 2);
		CHECK(first != second); // their addresses and mappings differ

		SUBCASE("an address kept is named without the file, wherever the next process maps it")
		{
			options.kept_named_bytes = 1 << 20;
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			CHECK(frames_of(symbolizer, gone_pid, first_bias + marker, false) == first);
			CHECK(symbolizer.stats().elf_files_parsed == 1);
			symbolizer.end_window();
			CHECK(frames_of(symbolizer, gone_pid + 1, second_bias + marker, false) == second);
			CHECK(frames_of(symbolizer, gone_pid, first_bias + marker, false) == first);
			CHECK(symbolizer.stats().elf_files_parsed == 1);
			CHECK(symbolizer.stats().named_from_kept == 2);
			CHECK(symbolizer.stats().named_from_file == 1);
			// The same offset as a return address is another address: the file's DWARF is read.
			CHECK(frames_of(symbolizer, gone_pid + 1, second_bias + marker + 1, true) == returned);
			CHECK(symbolizer.stats().elf_files_parsed == 1);
			CHECK(symbolizer.stats().dwarf_read_again == 1);
			CHECK(symbolizer.stats().named_kept == 2);
			CHECK(symbolizer.stats().named_dropped == 0);
			// Names from symbols alone are not kept: the stripped file, which holds no DWARF,
			// is kept instead, past the window's end.
			CHECK(frames_of(symbolizer, gone_pid + 2, stripped_bias + leaf, false) == plain);
			symbolizer.end_window();
			CHECK(frames_of(symbolizer, gone_pid + 2, stripped_bias + leaf, false) == plain);
			CHECK(symbolizer.stats().elf_files_parsed == 2);
			CHECK(symbolizer.stats().named_kept == 2);
		}
		SUBCASE("past its bytes the least recently used address goes, and its file is read again")
		{
			options.kept_named_bytes = 1 << 20;
			Symbolizer measure(options);
			measure.set_process_history(&history);
			frames_of(measure, gone_pid, first_bias + marker, false);
			const size_t one = measure.stats().named_kept_bytes;
			CHECK(one > 2 * sizeof(Frame));
			frames_of(measure, gone_pid + 1, second_bias + marker + 1, true);
			const size_t both = measure.stats().named_kept_bytes;
			CHECK(both > one);

			options.kept_named_bytes = both - 1;
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			CHECK(frames_of(symbolizer, gone_pid, first_bias + marker, false) == first);
			CHECK(frames_of(symbolizer, gone_pid + 1, second_bias + marker + 1, true) == returned);
			CHECK(symbolizer.stats().named_dropped == 1);
			CHECK(symbolizer.stats().named_kept == 1);
			CHECK(symbolizer.stats().named_kept_bytes <= both - 1);
			CHECK(symbolizer.stats().elf_files_parsed == 1);
			symbolizer.end_window();
			CHECK(frames_of(symbolizer, gone_pid + 1, second_bias + marker + 1, true) == returned); // kept
			CHECK(symbolizer.stats().elf_files_parsed == 1);
			CHECK(frames_of(symbolizer, gone_pid, first_bias + marker, false) == first); // dropped: read again
			CHECK(symbolizer.stats().elf_files_parsed == 1);
			CHECK(symbolizer.stats().dwarf_read_again == 1);
		}
		SUBCASE("an address none of the last kept_named_windows windows named goes, and its file is read again")
		{
			options.kept_named_bytes = 1 << 20;
			options.kept_named_windows = 2;
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			CHECK(frames_of(symbolizer, gone_pid, first_bias + marker, false) == first);
			CHECK(frames_of(symbolizer, gone_pid + 1, second_bias + marker + 1, true) == returned);
			symbolizer.end_window();
			symbolizer.end_window();
			// Named in the first of the last two windows: kept. The other is named again now.
			CHECK(frames_of(symbolizer, gone_pid + 1, second_bias + marker + 1, true) == returned);
			CHECK(symbolizer.stats().named_from_kept == 1);
			CHECK(symbolizer.stats().named_aged == 0);
			symbolizer.end_window();
			// The first one's two windows passed without it: it went, with its bytes.
			CHECK(symbolizer.stats().named_aged == 1);
			CHECK(symbolizer.stats().named_kept == 1);
			CHECK(symbolizer.stats().named_dropped == 0);
			CHECK(frames_of(symbolizer, gone_pid, first_bias + marker, false) == first); // read again
			CHECK(symbolizer.stats().named_from_file == 3);
			CHECK(symbolizer.stats().named_kept == 2);
			CHECK(frames_of(symbolizer, gone_pid + 1, second_bias + marker + 1, true) == returned);
			CHECK(symbolizer.stats().named_from_kept == 2);
		}
		SUBCASE("0 bytes keeps nothing")
		{
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			CHECK(frames_of(symbolizer, gone_pid, first_bias + marker, false) == first);
			symbolizer.end_window();
			CHECK(frames_of(symbolizer, gone_pid, first_bias + marker, false) == first);
			CHECK(symbolizer.stats().elf_files_parsed == 1);
			CHECK(symbolizer.stats().dwarf_read_again == 1);
			CHECK(symbolizer.stats().named_kept == 0);
			CHECK(symbolizer.stats().named_from_kept == 0);
		}
	}

	TEST_CASE("symbolizer: code inlined at an address is a frame of its own, innermost first, unless turned off")
	{
		// inner_marker is in fixture::inner_step, inlined into fixture::outer_loop (see
		// tests/fixtures/inlined.cpp).
		std::string program = absolute_fixture("inlined");
		ProcessHistory history;
		const uint64_t bias = 0x555555554000;
		history.add_snapshot(gone_pid, "inlined", mappings_of("inlined", bias, program, program), 100);
		const uint64_t marker = nm_address("inlined.nm", "inner_marker");
		REQUIRE(marker);
		auto frames_with = [&](bool inlined, bool lines) {
			SymbolizerOptions options;
			options.want_inlined = inlined;
			options.want_lines = lines;
			Symbolizer symbolizer(options);
			symbolizer.set_process_history(&history);
			std::vector<Frame> frames;
			symbolizer.user_frames(
				symbolizer.locate(gone_pid, symbolizer.image_at(gone_pid, 150), bias + marker, false), false,
				frames);
			return frames;
		};

		const std::vector<Frame> inlined = frames_with(true, false);
		REQUIRE(inlined.size() == 2);
		CHECK(inlined[0].name == "fixture::inner_step"); // GCC gives it no linkage name
		CHECK(inlined[0].inlined);
		CHECK(inlined[0].address == bias + marker); // the same address as its caller's frame
		CHECK(inlined[0].source_file.ends_with("/tests/fixtures/inlined.h"));
		CHECK(inlined[1].name == "fixture::outer_loop(long)");
		CHECK(!inlined[1].inlined);
		CHECK(inlined[1].address == bias + marker);
		CHECK(inlined[1].source_file.ends_with("/tests/fixtures/inlined.cpp")); // at the call

		// --no-inline: the function alone, as the ELF symbols name it, and no DWARF read.
		const std::vector<Frame> plain = frames_with(false, false);
		REQUIRE(plain.size() == 1);
		CHECK(plain[0].name == "fixture::outer_loop(long)");
		CHECK(plain[0].source_file.empty());
		// --no-inline with -v: no inlined frame; the function's file and line are its own,
		// the call's it inlined the address from, as in its frame above.
		const std::vector<Frame> lines = frames_with(false, true);
		REQUIRE(lines.size() == 1);
		CHECK(lines[0].name == "fixture::outer_loop(long)");
		CHECK(lines[0].source_file == inlined[1].source_file);
		CHECK(lines[0].line == inlined[1].line);
		CHECK(!lines[0].inlined);
	}
}
