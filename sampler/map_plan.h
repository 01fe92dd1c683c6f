// sampler/map_plan.h: how big the sampler's maps are made, and how, on this kernel: decided
// once from the options and the machine, before anything loads.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "sampler/config.h"
#include "sampler/map_memory.h"

// How the sampler's maps are made on this kernel, decided once, before anything loads:
// the run judges their memory by it (judge_map_memory), and the sampler creates them by it.
struct MapPlan {
	// Stacks walked from unwind tables (not --unwind fp, and the kernel has what the walk
	// needs); frames per stack, as the kernel and the walk allow; two generations when
	// the maps can be drained while sampling (membarrier, and not PROFILE_NO_DRAIN).
	// Hash maps are taken as preallocated before Linux 6.1: the sampler falls back to
	// that when the kernel refuses maps allocated as keys arrive.
	MapSizes sizes;
	std::vector<std::string> warnings; // for stderr when the sampler loads, without "profile: "
	Status status;                     // not ok: the run cannot go on (--unwind dwarf here): the sampler throws it
};
MapPlan plan_maps(const SamplerConfig &options);
