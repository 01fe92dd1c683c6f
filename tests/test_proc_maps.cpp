// tests/test_proc_maps.cpp: ProcessMaps on maps text written here, and on this process's own.
#include <doctest/doctest.h>

#include <climits>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#include "proc/maps.h"

namespace {

const char *const maps_text =
	"55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 1234567                    /usr/bin/prog\n"
	"55d0c0a02000-55d0c0a08000 r-xp 00002000 fd:01 1234567                    /usr/bin/prog\n"
	"55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f0000000000-7f0000001000 r-xp 00001000 103:02 42                        /opt/my app/lib thing.so\n"
	"7f0000010000-7f0000011000 r-xp 00000000 fd:01 77                         /tmp/gone.so (deleted)\n"
	"7f0000020000-7f0000021000 rw-p 00000000 00:00 0 \n"
	"7f0000030000-7f0000031000 rw-p 00000000 00:00 0\n"
	"7f0000040000-7f0000041000 r-xp 00000000 00:00 0                          [anon:jit code]\n"
	"7f0000050000-7f0000051000 r--s 00000000 00:05 99                         /memfd:shared (deleted)\n"
	"garbage line\n"
	"7f0000060000-7f0000050000 r-xp 00000000 fd:01 5 /end/before/start\n"
	"7fff00000000-7fff00002000 r-xp 00000000 00:00 0                          [vdso]\n"
	"7ffe00000000-7ffe00021000 rw-p 00000000 00:00 0                          [stack]"; // unsorted, no newline

} // namespace

__attribute__((noinline)) static int maps_test_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

TEST_SUITE("unit")
{
	TEST_CASE("maps: every field of a line is read")
	{
		ProcessMaps maps = ProcessMaps::parse(maps_text);
		REQUIRE(maps.entries().size() == 11);
		const MapEntry &text = maps.entries()[1];
		CHECK(text.start == 0x55d0c0a02000);
		CHECK(text.end == 0x55d0c0a08000);
		CHECK(std::string(text.perms.begin(), text.perms.end()) == "r-xp");
		CHECK(text.executable());
		CHECK(text.offset == 0x2000);
		CHECK(text.dev_major == 0xfd);
		CHECK(text.dev_minor == 1);
		CHECK(text.inode == 1234567);
		CHECK(text.path == "/usr/bin/prog");
		CHECK(!text.deleted);
		CHECK(text.file_backed());
		CHECK(!maps.entries()[0].executable());
	}

	TEST_CASE("maps: spaces in paths, deleted files, anonymous and named areas")
	{
		ProcessMaps maps = ProcessMaps::parse(maps_text);
		const MapEntry *spaces = maps.find(0x7f0000000010);
		REQUIRE(spaces);
		CHECK(spaces->path == "/opt/my app/lib thing.so");
		CHECK(spaces->dev_major == 0x103);
		CHECK(spaces->dev_minor == 2);
		CHECK(spaces->offset == 0x1000);

		const MapEntry *gone = maps.find(0x7f0000010000);
		REQUIRE(gone);
		CHECK(gone->path == "/tmp/gone.so");
		CHECK(gone->deleted);
		CHECK(gone->file_backed());

		const MapEntry *memfd = maps.find(0x7f0000050000);
		REQUIRE(memfd);
		CHECK(memfd->path == "/memfd:shared");
		CHECK(memfd->deleted);
		CHECK(memfd->perms[3] == 's');

		for (uint64_t anonymous : {uint64_t(0x7f0000020000), uint64_t(0x7f0000030fff)}) {
			const MapEntry *entry = maps.find(anonymous);
			REQUIRE(entry);
			CHECK(entry->path.empty());
			CHECK(!entry->file_backed());
			CHECK(!entry->pseudo());
		}

		for (const char *name : {"[heap]", "[vdso]", "[stack]", "[anon:jit code]"}) {
			CAPTURE(name);
			bool found = false;
			for (const MapEntry &entry : maps.entries())
				if (entry.path == name) {
					found = true;
					CHECK(entry.pseudo());
					CHECK(!entry.file_backed());
				}
			CHECK(found);
		}
	}

	TEST_CASE("maps: lookup is by [start, end), sorted even when the text is not")
	{
		ProcessMaps maps = ProcessMaps::parse(maps_text);
		for (size_t i = 1; i < maps.entries().size(); i++)
			CHECK(maps.entries()[i - 1].start < maps.entries()[i].start);
		CHECK(maps.find(0x55d0c0a00000) == &maps.entries()[0]);
		CHECK(maps.find(0x55d0c0a01fff) == &maps.entries()[0]);
		CHECK(maps.find(0x55d0c0a02000) == &maps.entries()[1]);
		CHECK(!maps.find(0x55d0c0a08000)); // end is exclusive; a gap follows
		CHECK(!maps.find(0));
		CHECK(!maps.find(0x1000));
		CHECK(!maps.find(UINT64_MAX));
		REQUIRE(maps.find(0x7ffe00000100));
		CHECK(maps.find(0x7ffe00000100)->path == "[stack]");
		CHECK(ProcessMaps::parse("").entries().empty());
	}

	TEST_CASE("maps: a file is executed when some mapping of it, the same file, is executable")
	{
		const ProcessMaps maps = ProcessMaps::parse(
			"7f0000000000-7f0000001000 r--p 00000000 08:01 100 /usr/lib/libjvm.so\n"
			"7f0000001000-7f0000002000 r-xp 00001000 08:01 100 /usr/lib/libjvm.so\n"
			"7f0000010000-7f0000011000 r--p 00000000 08:01 200 /usr/bin/node\n"
			"7f0000020000-7f0000021000 r--p 00000000 08:02 300 /opt/python3.11\n"
			"7f0000021000-7f0000022000 r-xp 00001000 08:02 301 /opt/python3.11 (deleted)\n");
		REQUIRE(maps.entries().size() == 5);
		CHECK(maps.executes(maps.entries()[0])); // its text is mapped beside it
		CHECK(maps.executes(maps.entries()[1]));
		CHECK(!maps.executes(maps.entries()[2])); // read, not run
		CHECK(!maps.executes(maps.entries()[3])); // another file of that path (its inode) runs
	}

	TEST_CASE("maps: this process's own maps hold its code")
	{
		ProcessMaps maps;
		REQUIRE(ProcessMaps::load("/proc/self/maps", maps));
		const MapEntry *entry = maps.find(reinterpret_cast<uintptr_t>(&maps_test_target));
		REQUIRE(entry);
		CHECK(entry->executable());
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		REQUIRE(n > 0);
		CHECK(entry->path == std::string(exe, n));
		CHECK(maps_test_target(1) == 2);

		ProcessMaps none;
		CHECK(!ProcessMaps::load("/proc/no-such-process/maps", none));
	}

	TEST_CASE("maps: one round's reads read each process's maps once, and none of a process gone")
	{
		MapsReads reads;
		const ProcessMaps *first = reads.of(uint32_t(getpid()));
		REQUIRE(first);
		CHECK(first->find(reinterpret_cast<uintptr_t>(&maps_test_target)));
		// Mapped after the first read: the round's maps are the ones it read.
		void *at = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		REQUIRE(at != MAP_FAILED);
		CHECK(reads.of(uint32_t(getpid())) == first);
		CHECK(!first->find(reinterpret_cast<uintptr_t>(at)));
		MapsReads next;
		const ProcessMaps *again = next.of(uint32_t(getpid()));
		REQUIRE(again);
		CHECK(again->find(reinterpret_cast<uintptr_t>(at)));
		munmap(at, 4096);
		// No process has a pid past pid_max's largest (4194304).
		CHECK(!reads.of(4194305));
		CHECK(!reads.of(4194305));
	}
}
