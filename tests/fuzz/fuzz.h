// tests/fuzz/fuzz.h: what every fuzz target shares: a check that crashes where libFuzzer
// sees it, and helpers that turn input bytes into things to look up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

// An invariant the parser promises; a broken one is a crash libFuzzer keeps the input of.
#define FUZZ_CHECK(condition)                                                                      \
	do {                                                                                       \
		if (!(condition)) {                                                                \
			std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", __FILE__, __LINE__, \
				     #condition);                                                  \
			std::abort();                                                              \
		}                                                                                  \
	} while (0)

// Reads every byte of a range the parser handed back, so ASan sees it if the range lies
// outside the memory it came from.
inline void fuzz_touch(const void *data, size_t size)
{
	const volatile unsigned char *p = static_cast<const unsigned char *>(data);
	unsigned char sum = 0;
	for (size_t i = 0; i < size; i++)
		sum += p[i];
	(void)sum;
}

// The input's last 8 bytes as a number: lets the fuzzer choose an address to look up.
inline uint64_t fuzz_tail_u64(const uint8_t *data, size_t size)
{
	uint64_t value = 0;
	if (size >= sizeof(value))
		std::memcpy(&value, data + size - sizeof(value), sizeof(value));
	return value;
}

// The hex number each of the first `lines` lines starts with (kallsyms addresses).
inline std::vector<uint64_t> fuzz_leading_hex(std::string_view text, size_t lines)
{
	std::vector<uint64_t> numbers;
	while (!text.empty() && numbers.size() < lines) {
		uint64_t value = 0;
		size_t i = 0;
		for (; i < text.size() && i < 16; i++) {
			char c = text[i];
			int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
			if (digit < 0)
				break;
			value = value << 4 | uint64_t(digit);
		}
		if (i)
			numbers.push_back(value);
		size_t eol = text.find('\n');
		if (eol == std::string_view::npos)
			break;
		text.remove_prefix(eol + 1);
	}
	return numbers;
}
