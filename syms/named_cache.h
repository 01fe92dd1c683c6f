// syms/named_cache.h: what user_frames named from files' DWARF, by device, inode, offset
// in the file and whether it is a return address, kept across windows within a bound in
// bytes (SymbolizerOptions::kept_named_bytes), the least recently used dropped first, and
// while one of the last kept_named_windows windows named it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "report/model.h"
#include "syms/lru_cache.h"
#include "syms/symbolizer_options.h"

class NamedCache {
public:
	struct Key {
		uint32_t dev_major, dev_minor;
		uint64_t inode, offset;
		bool return_address;
		auto operator<=>(const Key &) const = default;
	};

	NamedCache(const SymbolizerOptions &options, SymbolizerStats &stats) : options_(options), stats_(stats) {}

	bool enabled() const { return options_.kept_named_bytes > 0; }
	// The frames kept for key (without module, address and mapping, which are each
	// process's own), or null.
	const std::vector<Frame> *find(const Key &key);
	// Keeps frames for key, then drops the least recently used past the bound.
	void keep(const Key &key, std::vector<Frame> frames);
	// Drops what was named from files of build_id: a debug file for it came since.
	void forget_build_id(const std::string &build_id);
	// A window's end: drops what none of the last kept_named_windows windows named.
	void end_window();

	size_t size() const { return named_.size(); }
	size_t bytes() const { return bytes_; }

private:
	struct Named {
		std::vector<Frame> frames;
		size_t bytes = 0;    // what it takes, as frame_bytes counts
		uint64_t window = 0; // the last window that named it
	};
	const SymbolizerOptions &options_;
	SymbolizerStats &stats_;
	LruCache<Key, Named> named_{SIZE_MAX};
	size_t bytes_ = 0;
	uint64_t window_ = 0; // the window now, counted by end_window
};
