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
	stats_.files_dropped += files_.dropped() - dropped;
	if (kept && kept->holds_lines())
		keep_dwarf_of_newest();
	trim();
	return kept;
}

SourceLines *FileCache::lines_of(SymbolFile &file)
{
	const bool held = file.holds_lines();
	SourceLines *lines = file.lines(stats_);
	if (lines && !held)
		keep_dwarf_of_newest();
	return lines;
}

void FileCache::keep_dwarf_of_newest()
{
	size_t held = 0;
	for_each([&](SymbolFile &file) {
		if (file.holds_lines() && ++held > std::max<size_t>(options_.kept_dwarf_files, 1))
			file.release_lines();
	});
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
	files_.erase_if([](const FileKey &, const std::unique_ptr<SymbolFile> &file) { return !file; });
	stats_.files_dropped += before - files_.size();
	// The decompressed copies of compressed DWARF: the most recently used within
	// kept_decompressed_bytes stay.
	size_t copies = 0;
	for_each([&](SymbolFile &file) {
		const size_t bytes = file.dwarf_copy_bytes();
		if (bytes && copies + bytes > options_.kept_decompressed_bytes)
			file.drop_dwarf_copy();
		else
			copies += bytes;
	});
	for_each([](SymbolFile &file) { file.release_lines(); });
	trim();
}
