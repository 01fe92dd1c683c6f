// tests/test_syms_unwind_cache.cpp: unwind tables kept on disk between runs of one boot, and
// every file or directory the cache must refuse.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>

#include "syms/fd.h"
#include "syms/unwind_cache.h"
#include "syms/unwind_table.h"
#include "tests/fixtures/fixture_files.h"
#include "tests/support.h"

namespace {

UnwindTable fixture_table(const std::string &name)
{
	UniqueFd fd = open_read_only(fixture_path(name).c_str());
	REQUIRE_MESSAGE(fd.valid(), "missing fixture " << fixture_path(name) << " (run: make fixtures)");
	std::optional<UnwindTable> table = compile_unwind_table(fd.get());
	REQUIRE(table);
	REQUIRE(!table->rows.empty());
	return *table;
}

bool same_table(const std::optional<UnwindTable> &a, const UnwindTable &b)
{
	return a && a->source == b.source &&
	       std::equal(a->rows.begin(), a->rows.end(), b.rows.begin(), b.rows.end(), [](const auto &x, const auto &y) {
		       return x.pc == y.pc && same_unwind_rule(x, y);
	       });
}

mode_t mode_of(const std::string &path)
{
	struct stat st;
	REQUIRE(lstat(path.c_str(), &st) == 0);
	return st.st_mode & 07777;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("unwind cache: a table stored is the table loaded, in a private file of a private directory")
{
	TempDir dir;
	const std::string cache = dir / "profile/unwind"; // neither exists yet
	const UnwindTable table = fixture_table("unwind-nofp");
	const std::string key = unwind_table_key(open_read_only(fixture_path("unwind-nofp").c_str()).get());
	CHECK(key == "u2-b-" + read_build_id("unwind-nofp"));

	CHECK(!load_cached_unwind_table(cache, key));
	store_unwind_table(cache, key, table);
	CHECK(mode_of(dir / "profile") == 0700);
	CHECK(mode_of(cache) == 0700);
	CHECK(mode_of(cache + "/" + key) == 0600);
	CHECK(same_table(load_cached_unwind_table(cache, key), table));
	// Nothing left beside it.
	CHECK(std::distance(std::filesystem::directory_iterator(cache), std::filesystem::directory_iterator()) == 1);

	// Stored again (another run, another table for the key): replaced whole.
	const UnwindTable other = fixture_table("unwind-fp");
	store_unwind_table(cache, key, other);
	CHECK(same_table(load_cached_unwind_table(cache, key), other));
	// An empty table is a table too.
	store_unwind_table(cache, "u2-b-00", UnwindTable{});
	std::optional<UnwindTable> empty = load_cached_unwind_table(cache, "u2-b-00");
	REQUIRE(empty);
	CHECK(empty->rows.empty());
	CHECK(empty->source == "");
	// No directory, no cache.
	store_unwind_table("", key, table);
	CHECK(!load_cached_unwind_table("", key));
}

TEST_CASE("unwind cache: the key is the build id, else the file's identity, which changes with the file")
{
	TempDir dir;
	const std::string path = dir / "no-build-id";
	write_file(path, "not an ELF file\n");
	UniqueFd fd = open_read_only(path.c_str());
	const std::string key = unwind_table_key(fd.get());
	CHECK(key.rfind("u2-f-", 0) == 0);
	CHECK(key == unwind_table_key(fd.get()));
	CHECK(key.find('/') == std::string::npos);
	write_file(path, "not an ELF file either\n");
	CHECK(unwind_table_key(fd.get()) != key);
	CHECK(unwind_table_key(-1) == "");
	UniqueFd directory(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	CHECK(unwind_table_key(directory.get()) == "");

	struct stat st {};
	CHECK(unwind_table_key("0123abcd", st) == "u2-b-0123abcd");
	CHECK(unwind_table_key("../../etc", st).rfind("u2-f-", 0) == 0); // not hex: not a build id
}

TEST_CASE("unwind cache: a directory open to others, or a symlink, is not used")
{
	TempDir dir;
	const UnwindTable table = fixture_table("unwind-nofp");
	const std::string key = "u2-b-1234";

	REQUIRE(mkdir((dir / "open").c_str(), 0700) == 0);
	REQUIRE(chmod((dir / "open").c_str(), 0777) == 0);
	store_unwind_table(dir / "open", key, table);
	CHECK(!std::filesystem::exists(dir / ("open/" + key)));

	// One that was private when the table went in, and is no longer.
	store_unwind_table(dir / "private", key, table);
	REQUIRE(load_cached_unwind_table(dir / "private", key));
	REQUIRE(chmod((dir / "private").c_str(), 0755) == 0);
	CHECK(!load_cached_unwind_table(dir / "private", key));
	REQUIRE(chmod((dir / "private").c_str(), 0700) == 0);

	// Not ours.
	REQUIRE(chown((dir / "private").c_str(), 65534, 65534) == 0);
	CHECK(!load_cached_unwind_table(dir / "private", key));
	REQUIRE(chown((dir / "private").c_str(), 0, 0) == 0);

	// A symlink to a private directory of ours.
	REQUIRE(symlink((dir / "private").c_str(), (dir / "link").c_str()) == 0);
	CHECK(!load_cached_unwind_table(dir / "link", key));
	store_unwind_table(dir / "link", "u2-b-5678", table);
	CHECK(!std::filesystem::exists(dir / "private/u2-b-5678"));
}

TEST_CASE("unwind cache: a file that is a symlink, open to others, or not ours is not read; a symlink is replaced, not written through")
{
	TempDir dir;
	const std::string cache = dir / "cache";
	const UnwindTable table = fixture_table("unwind-nofp");
	const std::string key = "u2-b-abcd";
	store_unwind_table(cache, key, table);
	const std::string file = cache + "/" + key;
	REQUIRE(load_cached_unwind_table(cache, key));

	REQUIRE(chmod(file.c_str(), 0644) == 0);
	CHECK(!load_cached_unwind_table(cache, key));
	REQUIRE(chmod(file.c_str(), 0600) == 0);
	REQUIRE(chown(file.c_str(), 65534, 65534) == 0);
	CHECK(!load_cached_unwind_table(cache, key));
	REQUIRE(chown(file.c_str(), 0, 0) == 0);
	REQUIRE(load_cached_unwind_table(cache, key));

	// Planted: the key a symlink to a good table elsewhere.
	const std::string elsewhere = dir / "elsewhere";
	std::filesystem::rename(file, elsewhere);
	REQUIRE(symlink(elsewhere.c_str(), file.c_str()) == 0);
	CHECK(!load_cached_unwind_table(cache, key));
	const std::string before = read_file(elsewhere);
	store_unwind_table(cache, key, fixture_table("unwind-fp"));
	CHECK(read_file(elsewhere) == before);
	CHECK(!std::filesystem::is_symlink(file));
	CHECK(same_table(load_cached_unwind_table(cache, key), fixture_table("unwind-fp")));

	// Keys that would name another file are refused.
	for (const std::string bad : {"", "../escape", ".hidden", "a/b", "UPPER"}) {
		CAPTURE(bad);
		store_unwind_table(cache, bad, table);
		CHECK(!load_cached_unwind_table(cache, bad));
	}
	CHECK(!std::filesystem::exists(dir / "escape"));
}

TEST_CASE("unwind cache: a file that does not check out is a miss, and storing again mends it")
{
	TempDir dir;
	const std::string cache = dir / "cache";
	const UnwindTable table = fixture_table("unwind-nofp");
	const std::string key = "u2-b-feed";
	store_unwind_table(cache, key, table);
	const std::string file = cache + "/" + key;
	const std::string good = read_file(file);
	REQUIRE(good.size() > 100);

	auto spoiled = [&](const std::string &bytes) {
		write_file(file, bytes);
		chmod(file.c_str(), 0600);
		return !load_cached_unwind_table(cache, key);
	};
	CHECK(spoiled(""));
	CHECK(spoiled(good.substr(0, 30)));                 // a header cut short
	CHECK(spoiled(good.substr(0, good.size() - 5)));    // rows cut short
	CHECK(spoiled(good + std::string(12, '\0')));       // a row more than it says
	std::string bytes = good;
	bytes[0] ^= 1; // magic
	CHECK(spoiled(bytes));
	bytes = good;
	bytes[8] ^= 1; // version
	CHECK(spoiled(bytes));
	bytes = good;
	std::memset(&bytes[24], 'x', 32); // a source with no end
	CHECK(spoiled(bytes));
	bytes = good;
	std::memcpy(&bytes[24], ".text\0", 6); // a source no table has
	CHECK(spoiled(bytes));
	bytes = good;
	std::memcpy(&bytes[56], &good[56 + 12], 4); // the first row's pc is the second's
	CHECK(spoiled(bytes));
	bytes = good;
	bytes[56 + 10] = 9; // a CFA type there is not
	CHECK(spoiled(bytes));

	store_unwind_table(cache, key, table);
	CHECK(same_table(load_cached_unwind_table(cache, key), table));
}

} // TEST_SUITE("unit")
