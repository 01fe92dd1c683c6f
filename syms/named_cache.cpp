// syms/named_cache.cpp: names read from DWARF, kept within their bytes.
#include "syms/named_cache.h"

#include <optional>

namespace {

// The heap a frame takes: itself and its strings past the short-string buffer.
size_t frame_bytes(const Frame &frame)
{
	size_t bytes = sizeof(Frame);
	for (const std::string *text : {&frame.name, &frame.module, &frame.build_id, &frame.source_file})
		if (text->capacity() > std::string().capacity())
			bytes += text->capacity() + 1;
	return bytes;
}

// What an LruCache entry takes beyond its value and its key's two copies (the list's and
// the map's): the list node's two links, the map node's three and its color, the map's
// iterator into the list.
constexpr size_t kLruEntryBytes = 7 * sizeof(void *);

} // namespace

const std::vector<Frame> *NamedCache::find(const Key &key)
{
	Named *named = named_.find(key);
	if (!named)
		return nullptr;
	named->window = window_;
	return &named->frames;
}

void NamedCache::keep(const Key &key, std::vector<Frame> frames)
{
	Named named;
	named.bytes = 2 * sizeof(Key) + sizeof(Named) + kLruEntryBytes;
	for (const Frame &frame : frames)
		named.bytes += frame_bytes(frame);
	named.frames = std::move(frames);
	named.window = window_;
	bytes_ += named.bytes;
	named_.insert(key, std::move(named));
	while (bytes_ > options_.kept_named_bytes)
		if (std::optional<Named> dropped = named_.pop_oldest()) {
			bytes_ -= dropped->bytes;
			stats_.named_dropped++;
		}
}

void NamedCache::end_window()
{
	window_++;
	if (!options_.kept_named_windows)
		return;
	named_.erase_if([&](const Key &, const Named &named) {
		const bool aged = named.window + options_.kept_named_windows < window_;
		if (aged) {
			bytes_ -= named.bytes;
			stats_.named_aged++;
		}
		return aged;
	});
}

void NamedCache::forget_build_id(const std::string &build_id)
{
	named_.erase_if([&](const Key &, const Named &named) {
		const bool stale = named.frames.front().build_id == build_id;
		if (stale)
			bytes_ -= named.bytes;
		return stale;
	});
}
