// tests/test_proc_perf_map.cpp: PerfMap over perf map text written here, and the checks on
// the file before it is read.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "proc/perf_map.h"
#include "tests/support.h"

namespace fs = std::filesystem;

namespace {

std::string name_at(const PerfMap &map, uint64_t address)
{
	const PerfMap::Symbol *symbol = map.find(address);
	return symbol ? symbol->name : "";
}

const char *const node_text = "3ef2f6c0a0c0 42 LazyCompile:~fib /srv/app/fib.js:3\n"
			      "3ef2f6c0a140 1a0 Builtin:ArgumentsAdaptorTrampoline\n"
			      "0x7f0000001000 0x100 jit_spin_loop\n";

} // namespace

TEST_SUITE("unit")
{
	TEST_CASE("perf map: node's lines, names with spaces, 0x or not")
	{
		PerfMap map = PerfMap::parse(node_text);
		CHECK(map.size() == 3);
		CHECK(name_at(map, 0x3ef2f6c0a0c0) == "LazyCompile:~fib /srv/app/fib.js:3");
		CHECK(name_at(map, 0x3ef2f6c0a0c0 + 0x41) == "LazyCompile:~fib /srv/app/fib.js:3");
		CHECK(name_at(map, 0x3ef2f6c0a0c0 + 0x42) == "");
		const PerfMap::Symbol *trampoline = map.find(0x3ef2f6c0a150);
		REQUIRE(trampoline);
		CHECK(trampoline->start == 0x3ef2f6c0a140);
		CHECK(trampoline->end == 0x3ef2f6c0a140 + 0x1a0);
		CHECK(name_at(map, 0x7f0000001000) == "jit_spin_loop");
		CHECK(name_at(map, 0x7f00000010ff) == "jit_spin_loop");
		CHECK(name_at(map, 0x7f0000000fff) == "");
		CHECK(name_at(map, 0) == "");
		CHECK(name_at(map, UINT64_MAX) == "");
	}

	TEST_CASE("perf map: broken lines are skipped, CRLF and trailing blanks trimmed")
	{
		PerfMap map = PerfMap::parse("\n"
					     "zzzz 10 not_hex\n"
					     "1000\n"
					     "1000 10\n"
					     "1000 10 \n"
					     "2000 0 empty_size\n"
					     "ffffffffffffffff 10 wraps\n"
					     "12345678901234567 10 too_long\n"
					     "3000 10 good\r\n"
					     "4000\t20\ttabbed  \n"
					     "5000 10 last_without_newline");
		CHECK(map.size() == 3);
		CHECK(name_at(map, 0x3008) == "good");
		CHECK(name_at(map, 0x4010) == "tabbed");
		CHECK(name_at(map, 0x5000) == "last_without_newline");
		CHECK(name_at(map, 0x1005) == "");
		CHECK(name_at(map, 0x2000) == "");
	}

	TEST_CASE("perf map: where functions overlap, the line written last wins")
	{
		// A JIT freed old_big and put two functions in its place; the same start was reused.
		PerfMap map = PerfMap::parse("1000 100 old_big\n"
					     "1040 20 new_inside\n"
					     "10f0 40 new_across_end\n"
					     "2000 10 first_at_2000\n"
					     "2000 10 second_at_2000\n");
		CHECK(name_at(map, 0x1000) == "old_big");
		CHECK(name_at(map, 0x103f) == "old_big");
		CHECK(name_at(map, 0x1040) == "new_inside");
		CHECK(name_at(map, 0x105f) == "new_inside");
		CHECK(name_at(map, 0x1060) == "old_big");
		CHECK(name_at(map, 0x10ef) == "old_big");
		CHECK(name_at(map, 0x10f0) == "new_across_end");
		CHECK(name_at(map, 0x112f) == "new_across_end");
		CHECK(name_at(map, 0x1130) == "");
		CHECK(name_at(map, 0x2008) == "second_at_2000");
		// Offsets count from the function's own start, even in a piece left of it.
		CHECK(map.find(0x1060)->start == 0x1000);
	}

	TEST_CASE("perf map: a regular file of root or of the process's user is read; nothing else")
	{
		TempDir dir;
		fs::path file = dir.path() / "perf-4242.map";
		std::ofstream(file) << node_text;
		const uid_t me = geteuid();

		auto loaded = PerfMap::load(file, me);
		REQUIRE(loaded);
		CHECK(loaded->size() == 3);
		CHECK(PerfMap::load(dir.path() / "perf-1.map", me) == std::nullopt);

		// Never through a symlink: whoever can write /tmp could point one anywhere.
		fs::create_symlink(file, dir.path() / "perf-4243.map");
		CHECK(PerfMap::load(dir.path() / "perf-4243.map", me) == std::nullopt);
		// Not a FIFO (which would block the report), not a folder.
		REQUIRE(mkfifo((dir.path() / "perf-4244.map").c_str(), 0600) == 0);
		CHECK(PerfMap::load(dir.path() / "perf-4244.map", me) == std::nullopt);
		fs::create_directory(dir.path() / "perf-4245.map");
		CHECK(PerfMap::load(dir.path() / "perf-4245.map", me) == std::nullopt);

		if (me == 0) {
			// Another user's file, for a process of a third user: refused. The same
			// file is the process's own when that user runs it.
			REQUIRE(chown(file.c_str(), 65534, 65534) == 0);
			CHECK(PerfMap::load(file, 1000) == std::nullopt);
			CHECK(PerfMap::load(file, 0) == std::nullopt);
			CHECK(PerfMap::load(file, 65534));
		}
	}

	TEST_CASE("perf map: inside a root folder, no symlink anywhere on the way")
	{
		TempDir dir;
		fs::path root = dir.path() / "container";
		fs::create_directories(root / "tmp");
		std::ofstream(root / "tmp" / "perf-7.map") << node_text;
		fs::create_directory_symlink(root / "tmp", root / "linked");
		int root_fd = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
		REQUIRE(root_fd >= 0);
		CHECK(PerfMap::load("/tmp/perf-7.map", geteuid(), root_fd));
		CHECK(PerfMap::load("/linked/perf-7.map", geteuid(), root_fd) == std::nullopt);
		CHECK(PerfMap::load("/../../tmp/perf-7.map", geteuid(), root_fd)); // ".." stops at the root
		close(root_fd);
	}
}
