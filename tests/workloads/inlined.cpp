// inlined.cpp: an -O2 C++ program whose hot code the compiler inlined. For DURATION seconds
// main calls mix_block (noinline), whose loop is workload::Mixer::mix and, inside it,
// workload::scramble, both always inlined, and sum_block (noinline), which is
// std::accumulate inlined: about 3:1. The tests and scripts/bench-inline.sh look for
// these names.
#include <cstdint>
#include <numeric>
#include <vector>

#include "workload.h"

namespace workload {

static volatile uint64_t sink;

static inline __attribute__((always_inline)) uint64_t scramble(uint64_t x)
{
	for (int i = 0; i < 64; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

struct Mixer {
	uint64_t state = 1;
	inline __attribute__((always_inline)) void mix(uint64_t value)
	{
		state = scramble(state + value) * 0x9e3779b97f4a7c15ull;
	}
};

__attribute__((noinline)) uint64_t mix_block(Mixer &mixer, int steps)
{
	for (int i = 0; i < steps; i++)
		mixer.mix(uint64_t(i));
	__asm__ volatile("" ::: "memory"); // keeps the call out of tail position
	return mixer.state;
}

__attribute__((noinline)) uint64_t sum_block(const std::vector<uint64_t> &values)
{
	uint64_t total = std::accumulate(values.begin(), values.end(), uint64_t(0));
	__asm__ volatile("" ::: "memory");
	return total;
}

} // namespace workload

int main(int argc, char **argv)
{
	const double end = end_of_run(argc, argv);
	workload::Mixer mixer;
	std::vector<uint64_t> values(1 << 16);
	for (size_t i = 0; i < values.size(); i++)
		values[i] = i * 7;
	while (now() < end) {
		workload::sink = workload::mix_block(mixer, 200);
		workload::sink = workload::sum_block(values);
	}
	return 0;
}
