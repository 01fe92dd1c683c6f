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
		let_dwarf_go(std::max<size_t>(options_.kept_dwarf_files, 1));
	trim();
	return kept;
}

SourceLines *FileCache::lines_of(SymbolFile &file)
{
	const bool held = file.holds_lines();
	SourceLines *lines = file.lines(stats_);
	if (lines && !held)
		let_dwarf_go(std::max<size_t>(options_.kept_dwarf_files, 1));
	return lines;
}

// Walked from the most recently used: a file keeps its DWARF while it is among the newest
// `files` that hold some, or while all kept so far take kept_dwarf_bytes at most.
void FileCache::let_dwarf_go(size_t files)
{
	size_t held = 0, bytes = 0;
	for_each([&](SymbolFile &file) {
		if (!file.holds_lines())
			return;
		bytes += file.lines_bytes();
		if (++held > files && bytes > options_.kept_dwarf_bytes)
			file.release_lines();
	});
}

std::pair<size_t, size_t> FileCache::dwarf_held()
{
	size_t files = 0, bytes = 0;
	for_each([&](const SymbolFile &file) {
		if (file.holds_lines()) {
			files++;
			bytes += file.lines_bytes();
		}
	});
	return {files, bytes};
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
	let_dwarf_go(0);
	trim();
}
