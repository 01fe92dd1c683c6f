// tests/fuzz/fuzz_kallsyms.cpp: KernelSymbols::parse on any text, then find on what it held.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "proc/kallsyms.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	// A copy of exactly the input's size, so a read past the text is an ASan report.
	std::string text(reinterpret_cast<const char *>(data), size);
	KernelSymbols symbols = KernelSymbols::parse(text);
	FUZZ_CHECK(symbols.size() <= size / 5); // "A t N\n" is the shortest line kept

	// The addresses the lines state, their neighbours, and the edges of the address space.
	std::vector<uint64_t> addresses = fuzz_leading_hex(text, 64);
	addresses.insert(addresses.end(), {0, 1, UINT64_MAX, fuzz_tail_u64(data, size)});
	for (uint64_t base : addresses)
		for (uint64_t address : {base - 1, base, base + 1}) {
			auto match = symbols.find(address);
			if (!match)
				continue;
			FUZZ_CHECK(!match->name.empty());
			FUZZ_CHECK(match->offset <= address);
			fuzz_touch(match->name.data(), match->name.size());
			fuzz_touch(match->module.data(), match->module.size());
		}
	return 0;
}
