// tests/test_unwind_cache.cpp: unwind tables kept on disk between runs, their names,
// pruning, every file or directory the cache must refuse, and writers racing.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "base/fd.h"
#include "unwind/cache.h"
#include "unwind/table.h"
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

// The table kept under key in dir: nothing for a miss, nor for a file that does not check
// out (load_cached_unwind_table says why).
std::optional<UnwindTable> cached(const std::string &dir, const std::string &key)
{
	Result<std::optional<UnwindTable>> loaded = load_cached_unwind_table(dir, key);
	return loaded.ok() ? std::move(loaded).value() : std::nullopt;
}

bool same_table(const std::optional<UnwindTable> &a, const UnwindTable &b)
{
	return a && a->source == b.source &&
	       std::equal(a->rows.begin(), a->rows.end(), b.rows.begin(), b.rows.end(), [](const auto &x, const auto &y) {
		       return x.pc == y.pc && same_unwind_rule(x, y);
	       });
}

// A table of `rows` rows as a compiler's would be: alternating rules, a gap row last.
UnwindTable synthetic_table(size_t rows)
{
	UnwindTable table;
	table.source = ".eh_frame";
	for (size_t i = 0; i + 1 < rows; i++) {
		unwind_row row{};
		row.pc = uint32_t(i * 16);
		row.cfa_type = UNWIND_CFA_RSP;
		row.cfa_offset = uint16_t(1 + i % 2);
		row.rbp_type = UNWIND_RBP_SAME;
		table.rows.push_back(row);
	}
	unwind_row end{};
	end.pc = uint32_t(rows * 16);
	end.cfa_type = UNWIND_CFA_NONE;
	table.rows.push_back(end);
	return table;
}

// The file key's table is kept in.
std::string entry(const std::string &cache, const std::string &key)
{
	return cache + "/" + unwind_cache_file_name(key);
}

size_t files_in(const std::string &dir)
{
	return size_t(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
}

// Sets a file's mtime (what pruning takes for its last use) to `seconds` ago.
void set_age(const std::string &path, int64_t seconds)
{
	struct timespec times[2] = {{0, UTIME_OMIT}, {time(nullptr) - seconds, 0}};
	REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}

// A file system mounted for the test, unmounted at its end.
struct Mount {
	std::string at;
	bool mounted = false;
	~Mount()
	{
		if (mounted)
			umount2(at.c_str(), MNT_DETACH);
	}
};

mode_t mode_of(const std::string &path)
{
	struct stat st;
	REQUIRE(lstat(path.c_str(), &st) == 0);
	return st.st_mode & 07777;
}

// The work of the tests' children (ChildWork: they run in the runner execed anew, with no
// test around them, so they say what went wrong by their exit status alone).

// The table compiled from the file at path; nothing when it does not compile.
std::optional<UnwindTable> table_of(const std::string &path)
{
	UniqueFd fd = open_read_only(path.c_str());
	return fd.valid() ? compile_unwind_table(fd.get()) : std::nullopt;
}

// As the agent's user: PRIVATE_DIR (root's) refuses the table of FIXTURE, and OWN_DIR (its
// own) takes it and gives it back. Exit 0 when both hold.
const ChildWork store_as_agent("unwind cache: store as the agent's user", [](const std::vector<std::string> &args) {
	const std::optional<UnwindTable> table = args.size() == 3 ? table_of(args[2]) : std::nullopt;
	if (!table)
		return 2;
	const bool refused = !store_unwind_table(args[0], "u3-b-1111", *table).ok();
	const bool own = store_unwind_table(args[1], "u3-b-1111", *table).ok() && cached(args[1], "u3-b-1111");
	return refused && own ? 0 : 1;
});

// A second profiler: stores under CACHE's KEY, COUNT times, the tables of FIXTURE_A and
// FIXTURE_B in turn.
const ChildWork store_in_turn("unwind cache: store in turn", [](const std::vector<std::string> &args) {
	if (args.size() != 5)
		return 2;
	const std::optional<UnwindTable> a = table_of(args[3]), b = table_of(args[4]);
	if (!a || !b)
		return 2;
	for (int i = 0, n = std::stoi(args[2]); i < n; i++)
		(void)store_unwind_table(args[0], args[1], i % 2 ? *a : *b);
	return 0;
});

} // namespace

TEST_SUITE("unit") {

TEST_CASE("unwind cache: a table stored is the table loaded, in a private file of a private directory")
{
	TempDir dir;
	const std::string cache = dir / "profile/unwind"; // neither exists yet
	const UnwindTable table = fixture_table("unwind-nofp");
	const std::string key = unwind_table_key(open_read_only(fixture_path("unwind-nofp").c_str()).get());
	CHECK(key == "u3-b-" + read_build_id("unwind-nofp"));

	CHECK(!cached(cache, key));
	CHECK(store_unwind_table(cache, key, table).ok());
	CHECK(mode_of(dir / "profile") == 0700);
	CHECK(mode_of(cache) == 0700);
	CHECK(mode_of(entry(cache, key)) == 0600);
	CHECK(same_table(cached(cache, key), table));
	// Nothing left beside it.
	CHECK(files_in(cache) == 1);

	// Stored again (another run, another table for the key): replaced whole.
	const UnwindTable other = fixture_table("unwind-fp");
	CHECK(store_unwind_table(cache, key, other).ok());
	CHECK(same_table(cached(cache, key), other));
	// An empty table is a table too.
	CHECK(store_unwind_table(cache, "u3-b-00", UnwindTable{}).ok());
	std::optional<UnwindTable> empty = cached(cache, "u3-b-00");
	REQUIRE(empty);
	CHECK(empty->rows.empty());
	CHECK(empty->source == "");
	// No directory, no cache.
	CHECK(store_unwind_table("", key, table).ok());
	CHECK(!cached("", key));
}

TEST_CASE("unwind cache: the key is the build id, else the file's identity, which changes with the file")
{
	TempDir dir;
	const std::string path = dir / "no-build-id";
	write_file(path, "not an ELF file\n");
	UniqueFd fd = open_read_only(path.c_str());
	const std::string key = unwind_table_key(fd.get());
	CHECK(key.rfind("u3-f-", 0) == 0);
	CHECK(key == unwind_table_key(fd.get()));
	CHECK(key.find('/') == std::string::npos);
	write_file(path, "not an ELF file either\n");
	CHECK(unwind_table_key(fd.get()) != key);
	CHECK(unwind_table_key(-1) == "");
	UniqueFd directory(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	CHECK(unwind_table_key(directory.get()) == "");

	struct stat st {};
	CHECK(unwind_table_key("0123abcd", st) == "u3-b-0123abcd");
	CHECK(unwind_table_key("../../etc", st).rfind("u3-f-", 0) == 0); // not hex: not a build id
}

TEST_CASE("unwind cache: a directory open to others, or a symlink, is not used")
{
	TempDir dir;
	const UnwindTable table = fixture_table("unwind-nofp");
	const std::string key = "u3-b-1234";

	REQUIRE(mkdir((dir / "open").c_str(), 0700) == 0);
	REQUIRE(chmod((dir / "open").c_str(), 0777) == 0);
	CHECK(store_unwind_table(dir / "open", key, table).error() == dir / "open is open to others (mode 0777, not 0700)");
	CHECK(files_in(dir / "open") == 0);

	// One that was private when the table went in, and is no longer.
	CHECK(store_unwind_table(dir / "private", key, table).ok());
	REQUIRE(cached(dir / "private", key));
	REQUIRE(chmod((dir / "private").c_str(), 0755) == 0);
	CHECK(!cached(dir / "private", key));
	REQUIRE(chmod((dir / "private").c_str(), 0700) == 0);

	// Another user's private directory, as the agent's unit (DynamicUser=) makes
	// /var/cache/profile: root uses it, reads the files of either user, and gives what it
	// stores to the directory's user; a third user's file is neither read nor kept.
	const std::string agents = "u3-b-9abc";
	REQUIRE(chown((dir / "private").c_str(), 65534, 65534) == 0);
	CHECK(same_table(cached(dir / "private", key), table)); // root's own
	CHECK(store_unwind_table(dir / "private", agents, table).ok());
	struct stat st {};
	REQUIRE(stat(entry(dir / "private", agents).c_str(), &st) == 0);
	CHECK(st.st_uid == 65534);
	CHECK((st.st_mode & 07777) == 0600);
	CHECK(same_table(cached(dir / "private", agents), table));
	REQUIRE(chown(entry(dir / "private", key).c_str(), 65533, 65533) == 0);
	const Result<std::optional<UnwindTable>> theirs = load_cached_unwind_table(dir / "private", key);
	CHECK(!theirs.ok());
	CHECK(contains(theirs.error(), "is not a private file of this run's user or the cache's"));
	const UnwindCachePrune pruned = prune_unwind_cache(dir / "private", kDefaultUnwindCacheBytes);
	CHECK(pruned.kept == 1);
	CHECK(pruned.bad == 1);
	REQUIRE(chown((dir / "private").c_str(), 0, 0) == 0);

	// The agent's user is not root: a directory of root's is not its cache, and its own is.
	REQUIRE(chmod(dir.path().c_str(), 0711) == 0);
	REQUIRE(mkdir((dir / "nobody").c_str(), 0700) == 0);
	REQUIRE(chown((dir / "nobody").c_str(), 65534, 65534) == 0);
	const CommandResult agent = run_command(
		child_work_argv("unwind cache: store as the agent's user",
				{dir / "private", dir / "nobody/unwind", fixture_path("unwind-nofp")}),
		60, -1, 0, 65534);
	CHECK_MESSAGE(agent.status == 0, agent.err);
	CHECK(!std::filesystem::exists(entry(dir / "private", "u3-b-1111")));

	// A symlink to a private directory of ours.
	REQUIRE(symlink((dir / "private").c_str(), (dir / "link").c_str()) == 0);
	CHECK(!cached(dir / "link", key));
	CHECK(store_unwind_table(dir / "link", "u3-b-5678", table).error() == dir / "link is a symlink");
	CHECK(!std::filesystem::exists(entry(dir / "private", "u3-b-5678")));
}

TEST_CASE("unwind cache: a file that is a symlink, open to others, or not ours is not read; a symlink is replaced, not written through")
{
	TempDir dir;
	const std::string cache = dir / "cache";
	const UnwindTable table = fixture_table("unwind-nofp");
	const std::string key = "u3-b-abcd";
	CHECK(store_unwind_table(cache, key, table).ok());
	const std::string file = entry(cache, key);
	REQUIRE(cached(cache, key));

	REQUIRE(chmod(file.c_str(), 0644) == 0);
	CHECK(!cached(cache, key));
	REQUIRE(chmod(file.c_str(), 0600) == 0);
	REQUIRE(chown(file.c_str(), 65534, 65534) == 0);
	CHECK(!cached(cache, key));
	REQUIRE(chown(file.c_str(), 0, 0) == 0);
	REQUIRE(cached(cache, key));

	// Planted: the key a symlink to a good table elsewhere.
	const std::string elsewhere = dir / "elsewhere";
	std::filesystem::rename(file, elsewhere);
	REQUIRE(symlink(elsewhere.c_str(), file.c_str()) == 0);
	CHECK(!cached(cache, key));
	const std::string before = read_file(elsewhere);
	CHECK(store_unwind_table(cache, key, fixture_table("unwind-fp")).ok());
	CHECK(read_file(elsewhere) == before);
	CHECK(!std::filesystem::is_symlink(file));
	CHECK(same_table(cached(cache, key), fixture_table("unwind-fp")));

	// Keys that would name another file are refused.
	for (const std::string bad : {"", "../escape", ".hidden", "a/b", "UPPER"}) {
		CAPTURE(bad);
		CHECK(store_unwind_table(cache, bad, table).ok());
		CHECK(!cached(cache, bad));
	}
	CHECK(!std::filesystem::exists(dir / "escape"));
	CHECK(files_in(cache) == 1);
}

TEST_CASE("unwind cache: a file that does not check out is a miss with a line saying why, and storing again mends it")
{
	TempDir dir;
	const std::string cache = dir / "cache";
	const UnwindTable table = fixture_table("unwind-nofp");
	const std::string key = "u3-b-feed";
	const std::string path = "/usr/bin/true";
	struct stat st {};
	CHECK(store_unwind_table(cache, key, table, unwind_cache_origin(path, st)).ok());
	const std::string file = entry(cache, key);
	const std::string good = read_file(file);
	REQUIRE(good.size() > 100);
	const size_t rows_at = 104 + key.size() + path.size();
	REQUIRE(good.size() == rows_at + table.rows.size() * sizeof(unwind_row));

	std::string problem;
	auto spoiled = [&](const std::string &bytes) {
		write_file(file, bytes);
		chmod(file.c_str(), 0600);
		const Result<std::optional<UnwindTable>> loaded = load_cached_unwind_table(cache, key);
		problem = loaded.error();
		return !loaded.ok() && problem.starts_with(file + " ");
	};
	CHECK(spoiled(""));
	CHECK(problem == file + " is cut short (0 bytes)");
	CHECK(spoiled(good.substr(0, 30)));                 // a header cut short
	CHECK(spoiled(good.substr(0, good.size() - 5)));    // rows cut short
	CHECK(spoiled(good.substr(0, rows_at - 3)));        // the path cut short
	CHECK(spoiled(good + std::string(8, '\0')));        // a row more than it says
	std::string bytes = good;
	bytes[0] ^= 1; // magic
	CHECK(spoiled(bytes));
	CHECK(problem == file + " is not an unwind cache file");
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
	bytes[56] = char(0xff); // a key longer than any
	CHECK(spoiled(bytes));
	bytes = good;
	bytes[104] = 'X'; // a key no writer gives
	CHECK(spoiled(bytes));
	bytes = good;
	bytes[104 + key.size()] = 'u'; // a relative path
	CHECK(spoiled(bytes));
	bytes = good;
	bytes[104 + key.size() - 1] ^= 1; // another key, as a hash collision would leave
	CHECK(spoiled(bytes));
	CHECK(contains(problem, "holds the table of another key"));
	bytes = good;
	std::memcpy(&bytes[rows_at], &good[rows_at + 8], 4); // the first row's pc is the second's
	CHECK(spoiled(bytes));
	bytes = good;
	bytes[rows_at + 7] = char(0x0f); // a CFA type there is not
	CHECK(spoiled(bytes));
	CHECK(problem == file + " is rows out of order or of unknown kinds");

	// A missing file is a miss and no problem.
	const Result<std::optional<UnwindTable>> missing = load_cached_unwind_table(cache, "u3-b-beef");
	CHECK(missing.ok());
	CHECK(!(missing.ok() && *missing));

	CHECK(store_unwind_table(cache, key, table).ok());
	CHECK(same_table(cached(cache, key), table));
}

TEST_CASE("unwind cache: names are short and fixed whatever the key, and the key in the file decides")
{
	std::set<std::string> names;
	for (const std::string &key : std::vector<std::string>{"u3-b-00", "u3-b-01", "u3-b-10", "u3-b-" + std::string(128, 'a'),
				      "u3-f-803-1234-100-1700000000.000000000-1700000000.000000000"}) {
		const std::string name = unwind_cache_file_name(key);
		CAPTURE(name);
		CHECK(name.size() == 35);
		CHECK(name.rfind("u3-", 0) == 0);
		CHECK(name.find_first_not_of("0123456789abcdef", 3) == std::string::npos);
		CHECK(name == unwind_cache_file_name(key));
		names.insert(name);
	}
	CHECK(names.size() == 5);

	// A file planted under another key's name is a miss for it.
	TempDir dir;
	const std::string cache = dir / "cache";
	const UnwindTable table = fixture_table("unwind-nofp");
	CHECK(store_unwind_table(cache, "u3-b-aa", table).ok());
	std::filesystem::rename(entry(cache, "u3-b-aa"), entry(cache, "u3-b-bb"));
	CHECK(!cached(cache, "u3-b-bb"));
	// And pruning drops it: its name is not its key's.
	CHECK(prune_unwind_cache(cache, kDefaultUnwindCacheBytes).bad == 1);
	CHECK(files_in(cache) == 0);
}

TEST_CASE("unwind cache: pruning keeps the most recently used within the size, and a hit counts as a use")
{
	TempDir dir;
	const std::string cache = dir / "cache";
	const UnwindTable table = fixture_table("unwind-nofp");
	std::vector<std::string> keys;
	for (int i = 0; i < 6; i++) {
		keys.push_back("u3-b-" + std::to_string(10 + i));
		REQUIRE(store_unwind_table(cache, keys.back(), table).ok());
		set_age(entry(cache, keys.back()), 600 - i * 60); // keys[0] oldest
	}
	const uint64_t size = std::filesystem::file_size(entry(cache, keys[0]));
	// keys[0], the oldest, used now.
	REQUIRE(cached(cache, keys[0]));

	UnwindCachePrune pruned = prune_unwind_cache(cache, 3 * size + size / 2);
	CHECK(pruned.status.ok());
	CHECK(pruned.kept == 3);
	CHECK(pruned.kept_bytes == 3 * size);
	CHECK(pruned.evicted == 3);
	CHECK(pruned.stale + pruned.temporary + pruned.bad == 0);
	for (int i : {0, 4, 5})
		CHECK(std::filesystem::exists(entry(cache, keys[size_t(i)])));
	for (int i : {1, 2, 3})
		CHECK(!std::filesystem::exists(entry(cache, keys[size_t(i)])));

	// Within the size: nothing goes.
	pruned = prune_unwind_cache(cache, 3 * size);
	CHECK(pruned.kept == 3);
	CHECK(pruned.evicted == 0);
	// A cache of 0 bytes keeps nothing; a directory that is not there is nothing to do.
	CHECK(prune_unwind_cache(cache, 0).evicted == 3);
	CHECK(files_in(cache) == 0);
	CHECK(prune_unwind_cache(dir / "none", 0).status.ok());
}

TEST_CASE("unwind cache: a prune told to stop returns at once and removes nothing")
{
	// The end of a run tells a prune under way to stop: at nice 19 on a busy machine it
	// would otherwise hold the run's end until the machine went idle.
	TempDir dir;
	const std::string cache = dir / "cache";
	const UnwindTable table = fixture_table("unwind-nofp");
	for (int i = 0; i < 3; i++)
		REQUIRE(store_unwind_table(cache, "u3-b-" + std::to_string(20 + i), table).ok());
	std::atomic<bool> stop{true};
	UnwindCachePrune pruned = prune_unwind_cache(cache, 0, &stop);
	CHECK(pruned.stopped);
	CHECK(pruned.status.ok());
	CHECK(pruned.kept + pruned.evicted + pruned.stale + pruned.temporary + pruned.bad == 0);
	CHECK(files_in(cache) == 3);
	// Not told: a cache of 0 bytes keeps nothing.
	stop = false;
	pruned = prune_unwind_cache(cache, 0, &stop);
	CHECK(!pruned.stopped);
	CHECK(pruned.evicted == 3);
	CHECK(files_in(cache) == 0);
}

TEST_CASE("unwind cache: pruning drops the entries of files that are gone or replaced by another, and keeps the rest")
{
	TempDir dir;
	const std::string cache = dir / "cache";
	const UnwindTable table = fixture_table("unwind-nofp");
	// Stores the table of the file at path, as the unwinder does: keyed by what the file
	// is, with where it was found.
	auto store_for = [&](const std::string &path) {
		UniqueFd fd = open_read_only(path.c_str());
		REQUIRE(fd);
		struct stat st;
		REQUIRE(fstat(fd.get(), &st) == 0);
		const std::string key = unwind_table_key(fd.get());
		REQUIRE(store_unwind_table(cache, key, table, unwind_cache_origin(path, st)).ok());
		return key;
	};
	const std::string nofp = read_file(fixture_path("unwind-nofp")), fp = read_file(fixture_path("unwind-fp"));
	write_file(dir / "kept", nofp);
	write_file(dir / "replaced", fp);
	write_file(dir / "plain", "no ELF\n");
	write_file(dir / "touched", "no ELF either\n");
	const std::string kept = store_for(dir / "kept");
	const std::string replaced = store_for(dir / "replaced");
	const std::string plain = store_for(dir / "plain");
	const std::string touched = store_for(dir / "touched");
	CHECK(plain.rfind("u3-f-", 0) == 0);
	// One of no path (a container's file): left to the size cap.
	REQUIRE(store_unwind_table(cache, "u3-b-c0ffee", table).ok());
	// A path of a file that was deleted.
	write_file(dir / "gone", "no ELF at all\n");
	const std::string gone = store_for(dir / "gone");
	std::filesystem::remove(dir / "gone");

	CHECK(prune_unwind_cache(cache, kDefaultUnwindCacheBytes).stale == 1);
	CHECK(!std::filesystem::exists(entry(cache, gone)));
	CHECK(files_in(cache) == 5);

	// An upgrade: the path now holds another build: dropped. The same build written anew
	// (another inode, the same build id): kept.
	std::filesystem::remove(dir / "replaced");
	write_file(dir / "replaced", nofp + "yy");
	std::filesystem::remove(dir / "kept");
	write_file(dir / "kept", nofp + "zz");
	// A file without a build id, changed in place: dropped.
	write_file(dir / "touched", "changed\n");
	UnwindCachePrune pruned = prune_unwind_cache(cache, kDefaultUnwindCacheBytes);
	CHECK(pruned.stale == 2);
	CHECK(pruned.kept == 3);
	CHECK(std::filesystem::exists(entry(cache, kept)));
	CHECK(std::filesystem::exists(entry(cache, plain)));
	CHECK(std::filesystem::exists(entry(cache, "u3-b-c0ffee")));
	CHECK(!std::filesystem::exists(entry(cache, replaced)));
	CHECK(!std::filesystem::exists(entry(cache, touched)));
}

TEST_CASE("unwind cache: pruning removes what a crashed writer left, files of other formats, and files that do not check out")
{
	TempDir dir;
	const std::string cache = dir / "cache";
	const UnwindTable table = fixture_table("unwind-nofp");
	REQUIRE(store_unwind_table(cache, "u3-b-01", table).ok());
	const std::string good = read_file(entry(cache, "u3-b-01"));
	auto plant = [&](const std::string &name, const std::string &bytes, int64_t age) {
		write_file(cache + "/" + name, bytes);
		chmod((cache + "/" + name).c_str(), 0600);
		set_age(cache + "/" + name, age);
	};
	plant(unwind_cache_file_name("u3-b-01") + ".123.0.tmp", good.substr(0, 80), 120); // crashed
	plant(unwind_cache_file_name("u3-b-01") + ".124.0.tmp", good.substr(0, 80), 5);   // still writing
	plant("u2-b-0123456789abcdef", good, 0);                                          // version 2's
	plant(unwind_cache_file_name("u3-b-02"), good.substr(0, good.size() - 1), 0);     // cut short
	plant(unwind_cache_file_name("u3-b-03"), "junk", 0);
	REQUIRE(symlink("/etc/passwd", (cache + "/" + unwind_cache_file_name("u3-b-04")).c_str()) == 0);
	REQUIRE(mkdir((cache + "/subdir").c_str(), 0700) == 0); // not ours to remove

	set_age(entry(cache, "u3-b-01"), 0);

	UnwindCachePrune pruned = prune_unwind_cache(cache, kDefaultUnwindCacheBytes);
	CHECK(pruned.status.ok());
	CHECK(pruned.temporary == 1);
	CHECK(pruned.bad == 3);
	CHECK(pruned.kept == 2); // version 2's file too: an older profile may run beside
	CHECK(pruned.kept_bytes == 2 * good.size());
	CHECK(files_in(cache) == 4);
	CHECK(std::filesystem::exists(cache + "/" + unwind_cache_file_name("u3-b-01") + ".124.0.tmp"));
	CHECK(std::filesystem::exists(cache + "/subdir"));
	CHECK(std::filesystem::exists("/etc/passwd"));
	CHECK(same_table(cached(cache, "u3-b-01"), table));

	// Over the size, the older version's file goes first once it is the least recently used.
	set_age(cache + "/u2-b-0123456789abcdef", 100);
	pruned = prune_unwind_cache(cache, good.size());
	CHECK(pruned.evicted == 1);
	CHECK(!std::filesystem::exists(cache + "/u2-b-0123456789abcdef"));
	CHECK(std::filesystem::exists(entry(cache, "u3-b-01")));
}

TEST_CASE("unwind cache: a read-only or full file system: store says why in one line, leaves nothing, and loads go on")
{
	TempDir dir;
	const UnwindTable table = synthetic_table(20000); // 160 KB

	// Read-only: a bind mount of a cache that holds one table.
	const std::string cache = dir / "cache";
	REQUIRE(store_unwind_table(cache, "u3-b-01", table).ok());
	Mount ro{cache};
	REQUIRE_MESSAGE(mount(cache.c_str(), cache.c_str(), nullptr, MS_BIND, nullptr) == 0, std::strerror(errno));
	ro.mounted = true;
	REQUIRE(mount(nullptr, cache.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0);
	CHECK(store_unwind_table(cache, "u3-b-02", table).error() == cache + ": Read-only file system");
	CHECK(same_table(cached(cache, "u3-b-01"), table));
	CHECK(prune_unwind_cache(cache, 0).status.error() == cache + ": Read-only file system");
	CHECK(files_in(cache) == 1);

	// Full: a tmpfs of 64 KiB.
	const std::string full = dir / "full";
	REQUIRE(mkdir(full.c_str(), 0700) == 0);
	Mount small{full};
	REQUIRE(mount("tmpfs", full.c_str(), "tmpfs", 0, "size=64k,mode=0700") == 0);
	small.mounted = true;
	CHECK(store_unwind_table(full, "u3-b-01", table).error() == full + ": No space left on device");
	CHECK(files_in(full) == 0); // no temporary file left
	CHECK(!cached(full, "u3-b-01"));
	CHECK(store_unwind_table(full, "u3-b-02", UnwindTable{}).ok()); // a small one still fits
}

TEST_CASE("unwind cache: writers racing on one key, in threads and processes, never leave a torn file")
{
	TempDir dir;
	const std::string cache = dir / "cache";
	const UnwindTable a = fixture_table("unwind-nofp"), b = fixture_table("unwind-fp");
	const std::string key = "u3-b-5ace";
	REQUIRE(store_unwind_table(cache, key, a).ok());
	constexpr int kStores = 150;

	// Another process, as a second profiler would be.
	PipedProcess child(child_work_argv("unwind cache: store in turn", {cache, key, std::to_string(kStores),
									   fixture_path("unwind-nofp"), fixture_path("unwind-fp")}));
	REQUIRE(child.pid() > 0);
	std::thread writers[2];
	for (int t = 0; t < 2; t++)
		writers[t] = std::thread([&, t] {
			for (int i = 0; i < kStores; i++)
				(void)store_unwind_table(cache, key, (i + t) % 2 ? a : b);
		});
	int loads = 0, torn = 0;
	bool child_done = false;
	std::string problem, child_err;
	while (!child_done || loads < 50) {
		const Result<std::optional<UnwindTable>> loaded = load_cached_unwind_table(cache, key);
		loads++;
		if (!loaded.ok())
			problem = loaded.error();
		if (!loaded.ok() || !(same_table(*loaded, a) || same_table(*loaded, b)))
			torn++;
		// Its pipes close at its exit.
		if (!child_done) {
			child.pump(0, nullptr, &child_err);
			child_done = !child.open();
		}
	}
	for (std::thread &t : writers)
		t.join();
	CHECK_MESSAGE(child.wait() == 0, child_err);
	CHECK(loads >= 50);
	CHECK_MESSAGE(torn == 0, problem);
	CHECK(files_in(cache) == 1); // every temporary file renamed or removed
	CHECK(prune_unwind_cache(cache, kDefaultUnwindCacheBytes).kept == 1);
}

} // TEST_SUITE("unit")
