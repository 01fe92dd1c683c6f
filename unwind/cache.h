// unwind/cache.h: compiled unwind tables kept on disk across runs and boots, one file
// per object, pruned to a size.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/error.h"
#include "unwind/table.h"

// Compiling a table costs 1 ms (liblzma) to 0.3 s (cc1plus) of CPU, and every run meets the
// same objects again: a run keeps each table in CACHE_DIR/NAME (/var/cache/profile/unwind,
// or the agent's $CACHE_DIRECTORY/unwind) for the runs after it. NAME is short and fixed
// whatever the key: the format's version and 32 hex digits of a hash of the key, which the
// file holds whole and which is checked on load (a collision is a miss, never another
// object's table). The directory must be closed to others (mode 0700) and ours, or, for
// root, the agent's (its unit's user owns /var/cache/profile): each file is private (0600)
// to this run's user or to the directory's, and root's files in the agent's directory are
// given to the agent, so that the agent and root's runs share one cache. Otherwise neither
// is used; nothing is read or written through a symlink. Anything in a file that does not check out (size, magic, version, key, rows out
// of order) makes it a miss: the caller compiles and stores again.

// 256 MiB: a compiler's table is the largest there is (cc1plus: ~517k rows x 8 bytes =
// 4 MiB), a shared library's 10 to 400 KiB; a machine's whole set of running programs and
// libraries, compilers included, takes tens of MiB, so this keeps all of it and a few
// upgrades' worth of old builds.
constexpr uint64_t kDefaultUnwindCacheBytes = 256ull << 20;

// The file a table is kept in for the object open at fd: the cache format's version, then
// the object's build id, or without one its device, inode, size, mtime and ctime (a file's
// owner can set its mtime back, not its ctime). Letters, digits, '-' and '.' only; "" when
// fd cannot be read, and then nothing is cached. The key names the object alone: a caller
// that sometimes has a debug file for it, and sometimes not, decides what to store.
std::string unwind_table_key(int fd);
// The same from what the caller already knows: the build id as lowercase hex ("" for none)
// and the object's stat.
std::string unwind_table_key(const std::string &build_id, const struct stat &st);
// The name of key's file in the cache directory: "u3-" and 32 hex digits.
std::string unwind_cache_file_name(const std::string &key);

// Where a table came from, kept in its file so that pruning can tell whether the object
// still exists: the path it was opened from ("" when that path is not the object on this
// machine's root, as for a container's file) and the object's identity then.
struct UnwindCacheOrigin {
	std::string path;
	uint64_t dev = 0, ino = 0, size = 0;
	int64_t mtime_sec = 0, mtime_nsec = 0;
};
UnwindCacheOrigin unwind_cache_origin(const std::string &path, const struct stat &st);

// The table kept under key in dir; nothing when there is none (no file, a directory that
// cannot be used, or dir is ""). A file there that is not a whole table of this key and
// format is an error saying why (the caller says so, compiles and stores again). A hit
// marks the file used now (its mtime), for pruning.
Result<std::optional<UnwindTable>> load_cached_unwind_table(const std::string &dir, const std::string &key);
// Keeps table under key in dir (created, mode 0700, with its parent if missing): written to
// a name of its own beside, then renamed, so a reader sees the old file or the whole new
// one however many writers race. Ok when stored (or when dir or key is "", and nothing is
// to be done), else why the cache cannot be written (dir is not ours and private, a
// read-only file system, no space left).
Status store_unwind_table(const std::string &dir, const std::string &key, const UnwindTable &table,
			  const UnwindCacheOrigin &origin = {});

// A cache file, read whole (or, with rows false, its header, key and origin only; file_size
// is then the size the whole file has), or why it does not check out.
struct UnwindCacheFile {
	std::string key;
	UnwindCacheOrigin origin;
	UnwindTable table;
};
Result<UnwindCacheFile> parse_unwind_cache_file(std::span<const uint8_t> bytes, uint64_t file_size, bool rows);

// Bounds the cache in dir: drops temporary files a writer left (a minute old: it crashed),
// files of this format that do not check out, entries whose object's path is gone or names
// a file with another key, then the least recently used files (other versions' among
// them, which an older profile running beside may still use) until the rest take
// max_bytes at most. Once *stop turns true (checked between files) it returns at once,
// having removed nothing for the size (the total is not known yet); status stays ok.
struct UnwindCachePrune {
	uint32_t kept = 0;
	uint64_t kept_bytes = 0;
	uint32_t stale = 0;    // the object's file is gone, or replaced by one of another key
	uint32_t evicted = 0;  // over max_bytes, least recently used first
	uint32_t temporary = 0;
	uint32_t bad = 0;      // of this format's name but no whole cache file, or a symlink
	Status status;         // not ok when dir could not be used or written
	bool stopped = false;  // *stop cut it short
};
UnwindCachePrune prune_unwind_cache(const std::string &dir, uint64_t max_bytes,
				    const std::atomic<bool> *stop = nullptr);
