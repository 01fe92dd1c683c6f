// syms/unwind_cache.h: unwind tables kept between the runs of one boot, one file each.
#pragma once

#include <optional>
#include <string>

#include "syms/unwind_table.h"

// What a table is kept under: the file's build id (which names the very build) when it has
// one, else its device, inode, size and modification time; and the table format's version.
// "" when fd cannot be read.
std::string unwind_table_key(int fd);

// CACHE_DIR (under /run: gone at reboot) is made 0700 if missing, and used only when it is
// ours and private; its parent must exist. Files are ours, 0600, never read through a
// symlink, and written whole under a temporary name, then renamed. A file that does not
// check out is ignored (and replaced by the next store).
std::optional<UnwindTable> load_cached_unwind_table(const std::string &cache_dir, const std::string &key);
void store_unwind_table(const std::string &cache_dir, const std::string &key, const UnwindTable &table);
