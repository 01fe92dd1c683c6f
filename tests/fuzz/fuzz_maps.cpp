// tests/fuzz/fuzz_maps.cpp: ProcessMaps::parse on any text, then find around every entry.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "proc/maps.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string text(reinterpret_cast<const char *>(data), size);
	ProcessMaps maps = ProcessMaps::parse(text);

	std::vector<uint64_t> addresses = {0, UINT64_MAX, fuzz_tail_u64(data, size)};
	const MapEntry *previous = nullptr;
	for (const MapEntry &entry : maps.entries()) {
		FUZZ_CHECK(entry.start < entry.end);
		FUZZ_CHECK(!previous || previous->start <= entry.start);
		previous = &entry;
		fuzz_touch(entry.path.data(), entry.path.size());
		(void)entry.executable();
		(void)entry.file_backed();
		(void)entry.pseudo();
		if (addresses.size() < 256)
			addresses.insert(addresses.end(), {entry.start - 1, entry.start, entry.end - 1, entry.end});
	}
	for (uint64_t address : addresses)
		if (const MapEntry *entry = maps.find(address))
			FUZZ_CHECK(entry->start <= address && address < entry->end);
	return 0;
}
