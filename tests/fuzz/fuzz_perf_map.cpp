// tests/fuzz/fuzz_perf_map.cpp: PerfMap::parse on any text, then find around every line's range.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "proc/perf_map.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string_view text(reinterpret_cast<const char *>(data), size);
	PerfMap map = PerfMap::parse(text);

	std::vector<uint64_t> addresses = {0, UINT64_MAX, fuzz_tail_u64(data, size)};
	for (uint64_t start : fuzz_leading_hex(text, 64))
		addresses.insert(addresses.end(), {start - 1, start, start + 1, start + 0x40});
	for (uint64_t address : addresses)
		if (const PerfMap::Symbol *symbol = map.find(address)) {
			FUZZ_CHECK(symbol->start <= address && address < symbol->end);
			FUZZ_CHECK(!symbol->name.empty());
			fuzz_touch(symbol->name.data(), symbol->name.size());
		}
	return 0;
}
