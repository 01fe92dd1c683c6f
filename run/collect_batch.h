// run/collect_batch.h: a batch the sampler drained, added to what the run collected:
// its processes' images and cgroups taken now, its marks (a runtime's frames, stacks cut
// short) read, its runtimes' frames named.
#pragma once

#include "runtimes/runtimes.h"
#include "sampler/sampler.h"
#include "syms/collected.h"

// Locates every user address of the batch in the image its process ran at the sample's
// first time, and takes each kernel frame's BPF program as it was then, from the history
// behind the symbolizer; then adds the counts to `collected`.
// A language runtime's frames are named by its reader in `runtimes` (what it read of their
// processes while they lived); without one they show as its room's `unnamed`.
void collect_batch(const RawProfile &batch, Symbolizer &symbolizer, Collected &collected,
		   const Runtimes *runtimes = nullptr);
