// cli/collect_batch.h: a batch the sampler drained, added to what the run collected:
// its processes' images and cgroups taken now, its marks (Python frames, stacks cut
// short) read, its Python frames named.
#pragma once

#include "python/names.h"
#include "sampler/sampler.h"
#include "syms/collected.h"

// Locates every user address of the batch in the image its process ran at the sample's
// first time, and takes each kernel frame's BPF program as it was then, from the history
// behind the symbolizer; then adds the counts to `collected`.
// Python frames are named from `python` (what was read of their processes' code objects
// while they lived); without it they show as "[python]".
void collect_batch(const RawProfile &batch, Symbolizer &symbolizer, Collected &collected,
		   const PythonNames *python = nullptr);
