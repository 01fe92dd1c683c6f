// syms/unwind_cache.h: compiled unwind tables kept on disk for the rest of the boot, one
// file per object.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>

#include "syms/unwind_table.h"

// Compiling a table costs 1 ms (liblzma) to 0.3 s (cc1plus) of CPU, and every run meets the
// same objects again: a run as root keeps each table in CACHE_DIR/KEY (/run/profile/unwind,
// a tmpfs, gone at reboot) for the runs after it. The directory must be ours and closed to
// others (mode 0700), and each file ours and private (0600), or neither is used; nothing is
// read or written through a symlink. Anything in a file that does not check out (size,
// magic, version, rows out of order) makes it a miss: the caller compiles and stores again.

// The file a table is kept in for the object open at fd: the cache format's version, then
// the object's build id, or without one its device, inode, size, mtime and ctime (a file's
// owner can set its mtime back, not its ctime). Letters, digits, '-' and '.' only; "" when
// fd cannot be read, and then nothing is cached. The key names the object alone: a caller
// that sometimes has a debug file for it, and sometimes not, decides what to store.
std::string unwind_table_key(int fd);
// The same from what the caller already knows: the build id as lowercase hex ("" for none)
// and the object's stat.
std::string unwind_table_key(const std::string &build_id, const struct stat &st);

// The table kept under key in dir; nothing when there is none that checks out, or dir is "".
std::optional<UnwindTable> load_cached_unwind_table(const std::string &dir, const std::string &key);
// Keeps table under key in dir (created, mode 0700, with its parent if missing): written
// beside, then renamed, so a reader sees the old file or the whole new one. Does nothing
// when dir or key is "", or dir is not ours and private.
void store_unwind_table(const std::string &dir, const std::string &key, const UnwindTable &table);
