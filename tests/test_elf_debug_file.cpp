// tests/test_elf_debug_file.cpp: finding and checking separate debug files, over the
// fixtures objcopy split (hello-nosyms + hello-nosyms.debug, hello-debuglink) and the
// .build-id and debuglink layouts made here.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "elf/debug_file.h"
#include "base/fd.h"
#include "tests/fixtures/fixture_files.h"
#include "tests/support.h"

namespace fs = std::filesystem;

namespace {

std::unique_ptr<ElfFile> open_fixture(const std::string &name)
{
	UniqueFd fd = open_read_only(fixture_path(name).c_str());
	REQUIRE_MESSAGE(fd, "missing fixture " << fixture_path(name) << " (run: make fixtures)");
	std::unique_ptr<ElfFile> elf = ElfFile::open(fd.get());
	REQUIRE(elf);
	return elf;
}

struct Root {
	UniqueFd fd;
	explicit Root(const fs::path &path) : fd(open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)) { REQUIRE(fd); }
};

} // namespace

TEST_SUITE("unit")
{
	TEST_CASE("debug file: the debuglink objcopy wrote, and its CRC is zlib's CRC-32 of the file")
	{
		auto linked = open_fixture("hello-debuglink");
		auto link = read_debuglink(*linked);
		REQUIRE(link);
		CHECK(link->name == "hello-nosyms.debug");
		auto debug = open_fixture("hello-nosyms.debug");
		CHECK(debuglink_crc(debug->bytes()) == link->crc);
		CHECK(debuglink_crc({}) == 0);
		const uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
		CHECK(debuglink_crc(check) == 0xcbf43926u); // the CRC-32 check value
		CHECK(!read_debuglink(*open_fixture("hello-nosyms")));
	}

	TEST_CASE("debug file: candidates in gdb's order, build id first")
	{
		DebugLink link{"prog.debug", 1};
		auto candidates = debug_file_candidates("/opt/app/bin/prog", "abcdef0123", link, "/usr/lib/debug");
		REQUIRE(candidates.size() == 4);
		CHECK(candidates[0].path == "/usr/lib/debug/.build-id/ab/cdef0123.debug");
		CHECK(candidates[0].by_build_id);
		CHECK(candidates[1].path == "/opt/app/bin/prog.debug");
		CHECK(candidates[2].path == "/opt/app/bin/.debug/prog.debug");
		CHECK(candidates[3].path == "/usr/lib/debug/opt/app/bin/prog.debug");
		CHECK(!candidates[3].by_build_id);
		CHECK(debug_file_candidates("/prog", "", link, "/d")[0].path == "/prog.debug");
		CHECK(debug_file_candidates("/opt/prog", "", std::nullopt, "/d").empty());
	}

	TEST_CASE("debug file: found by build id in a .build-id tree, a wrong build id refused")
	{
		TempDir dir;
		auto stripped = open_fixture("hello-nosyms");
		std::string id = read_build_id("hello-nosyms");
		REQUIRE(id.size() == 40);
		CHECK(stripped->build_id() == id);
		fs::path tree = dir.path() / "debug" / ".build-id" / id.substr(0, 2);
		fs::create_directories(tree);
		Root root("/");

		CHECK(!find_debug_file(*stripped, "/usr/bin/hello-nosyms", dir.path() / "debug", root.fd.get()));
		// Another file under the right name: its build id is not the one asked for.
		fs::copy_file(fixture_path("hello-nopie"), tree / (id.substr(2) + ".debug"));
		CHECK(!find_debug_file(*stripped, "/usr/bin/hello-nosyms", dir.path() / "debug", root.fd.get()));
		fs::remove(tree / (id.substr(2) + ".debug"));
		fs::copy_file(fixture_path("hello-nosyms.debug"), tree / (id.substr(2) + ".debug"));
		auto found = find_debug_file(*stripped, "/usr/bin/hello-nosyms", dir.path() / "debug", root.fd.get());
		REQUIRE(found);
		CHECK(found->path == (tree / (id.substr(2) + ".debug")).string());
		CHECK(found->fd);
		CHECK(found->elf->build_id() == id);
		CHECK(found->elf->has_section(".symtab"));
		CHECK(found->elf->symbol_table() == ".symtab");
	}

	TEST_CASE("debug file: found by debuglink beside the binary, in .debug/, under the debug root")
	{
		TempDir dir;
		auto linked = open_fixture("hello-debuglink");
		Root root(dir.path());
		// Paths resolve inside the root given: "/app/bin" is dir/app/bin.
		fs::create_directories(dir.path() / "app" / "bin" / ".debug");
		fs::create_directories(dir.path() / "debug" / "app" / "bin");
		const std::string binary = "/app/bin/hello-debuglink";
		auto place = [&](const fs::path &where) {
			fs::copy_file(fixture_path("hello-nosyms.debug"), where);
			auto found = find_debug_file(*linked, binary, "/debug", root.fd.get());
			fs::remove(where);
			return found ? found->path : std::string("none");
		};
		CHECK(place(dir.path() / "app/bin/hello-nosyms.debug") == "/app/bin/hello-nosyms.debug");
		CHECK(place(dir.path() / "app/bin/.debug/hello-nosyms.debug") == "/app/bin/.debug/hello-nosyms.debug");
		CHECK(place(dir.path() / "debug/app/bin/hello-nosyms.debug") == "/debug/app/bin/hello-nosyms.debug");
		CHECK(!find_debug_file(*linked, binary, "/debug", root.fd.get()));
		// With build_id_only the debuglink is not followed.
		fs::copy_file(fixture_path("hello-nosyms.debug"), dir.path() / "app/bin/hello-nosyms.debug");
		CHECK(!find_debug_file(*linked, binary, "/debug", root.fd.get(), true));
		fs::remove(dir.path() / "app/bin/hello-nosyms.debug");

		// Another file under the linked name: the CRC tells it apart.
		fs::copy_file(fixture_path("hello-pie"), dir.path() / "app/bin/hello-nosyms.debug");
		CHECK(!find_debug_file(*linked, binary, "/debug", root.fd.get()));
	}

	TEST_CASE("debug file: a symlink out of the root is not followed out of it")
	{
		TempDir dir;
		auto linked = open_fixture("hello-debuglink");
		fs::create_directories(dir.path() / "jail" / "app");
		fs::create_symlink(fs::absolute(fixture_path("hello-nosyms.debug")),
				   dir.path() / "jail" / "app" / "hello-nosyms.debug");
		Root jail(dir.path() / "jail");
		CHECK(!find_debug_file(*linked, "/app/hello-debuglink", "/debug", jail.fd.get()));
		Root host("/");
		CHECK(find_debug_file(*linked, (dir.path() / "jail/app/hello-debuglink").string(), "/debug", host.fd.get()));
	}
}
