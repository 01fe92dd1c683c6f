// hotspot/metadata_pages.cpp: a JVM's metadata read a page at a time.
#include "hotspot/metadata_pages.h"

#include <algorithm>
#include <cstring>
#include <utility>

void MetadataPages::start(uint32_t pid, uint64_t unloaded)
{
	if (pid != pid_ || unloaded != unloaded_)
		pages_.clear();
	pid_ = pid;
	unloaded_ = unloaded;
}

ReadMemory MetadataPages::reader(ReadMemory direct)
{
	return [this, direct = std::move(direct)](uint64_t address, void *out, size_t size) {
		return read(direct, address, out, size);
	};
}

bool MetadataPages::read(const ReadMemory &direct, uint64_t address, void *out, size_t size)
{
	if (size > kPage || address + size < address)
		return direct(address, out, size);
	auto *to = static_cast<uint8_t *>(out);
	for (uint64_t at = address; at < address + size;) {
		const uint64_t page = at & ~(kPage - 1), upto = at + std::min(address + size - at, kPage - (at - page));
		auto found = pages_.find(page);
		if (found == pages_.end()) {
			if (pages_.size() >= kMaxPages)
				return direct(address, out, size);
			std::vector<uint8_t> bytes(kPage);
			if (!direct(page, bytes.data(), kPage))
				return direct(address, out, size); // a page not readable whole: as asked
			found = pages_.emplace(page, std::move(bytes)).first;
		}
		std::memcpy(to + (at - address), found->second.data() + (at - page), upto - at);
		at = upto;
	}
	return true;
}
