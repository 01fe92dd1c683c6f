// syms/file_cache.cpp: files kept for naming, within their bounds.
#include "syms/file_cache.h"

#include <algorithm>

FileCache::FileCache(const SymbolizerOptions &options, SymbolizerStats &stats)
	: options_(options), stats_(stats), files_(options.kept_files)
{
}

SymbolFile *FileCache::insert(const FileKey &key, std::unique_ptr<SymbolFile> file)
{
	const uint64_t dropped = files_.dropped();
	SymbolFile *kept = files_.insert(key, std::move(file)).get();
	if (kept && kept->lines())
		files_.keep_newest(std::max<size_t>(options_.kept_dwarf_files, 1),
				   [](const FileKey &, const std::unique_ptr<SymbolFile> &f) { return f && f->lines(); });
	stats_.files_dropped += files_.dropped() - dropped;
	trim();
	return kept;
}

size_t FileCache::held_bytes()
{
	size_t bytes = 0;
	for_each([&](const SymbolFile &file) { bytes += file.held_bytes(); });
	return bytes;
}

// The newest file always stays, whatever it holds: it is the one being named from.
void FileCache::trim()
{
	size_t bytes = held_bytes();
	while (bytes > options_.kept_file_bytes && files_.size() > 1)
		if (std::optional<std::unique_ptr<SymbolFile>> oldest = files_.pop_oldest()) {
			stats_.files_dropped++;
			if (*oldest)
				bytes -= (*oldest)->held_bytes();
		}
}

void FileCache::end_window()
{
	const size_t before = files_.size();
	files_.erase_if([](const FileKey &, const std::unique_ptr<SymbolFile> &file) { return !file || file->lines(); });
	stats_.files_dropped += before - files_.size();
	trim();
}
