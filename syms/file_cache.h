// syms/file_cache.h: the files kept for naming, by device and inode, the least recently
// used dropped first past the options' bounds (kept_files, kept_file_bytes), and kept
// from window to window; their DWARF held by kept_dwarf_files of them at most, and by none
// past a window's end; those whose DWARF is compressed keep a decompressed copy, the most
// recently used within kept_decompressed_bytes.
#pragma once

#include <cstddef>
#include <memory>

#include "syms/lru_cache.h"
#include "proc/maps.h"
#include "syms/symbol_file.h"
#include "syms/symbolizer_options.h"

class FileCache {
public:
	FileCache(const SymbolizerOptions &options, SymbolizerStats &stats);

	// key's file, now the most recently used: null inside when it could not be read (so
	// that it is not tried for every frame); null when it is not kept.
	std::unique_ptr<SymbolFile> *find(const FileKey &key) { return files_.find(key); }
	// Keeps file (null: it could not be read) as the most recently used, and drops the
	// least recently used past the bounds.
	SymbolFile *insert(const FileKey &key, std::unique_ptr<SymbolFile> file);
	// file's DWARF, read again if it was let go; the least recently used of the other
	// files that hold theirs let it go past kept_dwarf_files.
	SourceLines *lines_of(SymbolFile &file);
	// A window's end: every file lets its DWARF go (keeping a decompressed copy, see above),
	// and those that could not be read go (another process may map them readably next);
	// the others stay within the bounds.
	void end_window();

	template <typename F>
	void for_each(F f)
	{
		files_.for_each([&](const FileKey &, std::unique_ptr<SymbolFile> &file) {
			if (file)
				f(*file);
		});
	}
	size_t size() const { return files_.size(); }
	size_t held_bytes();

private:
	void trim();
	void keep_dwarf_of_newest();

	const SymbolizerOptions &options_;
	SymbolizerStats &stats_;
	LruCache<FileKey, std::unique_ptr<SymbolFile>> files_;
};
