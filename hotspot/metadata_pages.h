// hotspot/metadata_pages.h: a JVM's memory read a page at a time, for naming its methods.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "hotspot/vmstructs.h"

// A JVM's metadata (methods, constant pools, classes, the symbols they name), read a page
// at a time through one tick: a method's name and line table lie in a few pages, shared with
// the other methods of its class, read once each rather than field by field (a system call
// each). Metadata changes under it only when classes are unloaded: the pages are kept only
// while the JVM's count of them stays what it was when they were read, and never past the
// tick. The code cache, swept without that count, is read directly.
class MetadataPages {
public:
	static constexpr uint64_t kPage = 4096;
	static constexpr size_t kMaxPages = 1024;

	// The pages of process pid, whose count of classes unloaded is `unloaded` now: those
	// kept are dropped when either differs from the last call's.
	void start(uint32_t pid, uint64_t unloaded);
	// Drops every page (the tick's end).
	void clear() { pages_.clear(); }
	size_t size() const { return pages_.size(); }
	// Reads through the pages kept, each page missing read whole by `direct` (once each, at
	// most kMaxPages); a read larger than a page, past the bound, or on a page `direct`
	// cannot read whole goes to `direct` as asked.
	ReadMemory reader(ReadMemory direct);

private:
	bool read(const ReadMemory &direct, uint64_t address, void *out, size_t size);

	uint32_t pid_ = 0;
	uint64_t unloaded_ = 0;
	std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;
};
