// report/locations.h: a sample's frames as the locations of pprof and OTLP: leaf first, the
// kernel's on top of user space's, and the frames inlined at one address one location.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "report/model.h"

// Calls at(stack, begin, end) for each location of sample, leaf first: stack[begin, end)
// are its frames, the innermost first (inlined into the next), its caller last.
template <typename At>
void for_each_location(const Profile &profile, const Sample &sample, At &&at)
{
	for (const std::vector<uint32_t> *stack : {&sample.kernel, &sample.user})
		for (size_t i = 0; i < stack->size();) {
			const uint64_t address = profile.frames[(*stack)[i]].address;
			size_t end = i + 1;
			while (profile.frames[(*stack)[end - 1]].inlined && end < stack->size() &&
			       profile.frames[(*stack)[end]].address == address)
				end++;
			at(*stack, i, end);
			i = end;
		}
}
