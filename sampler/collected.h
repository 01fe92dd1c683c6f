// sampler/collected.h: what the run collected, batch after batch, in terms that outlive
// the processes sampled: user addresses located in files, BPF programs copied out of the
// history. Once a batch is added, nothing of it needs the history of its processes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "report/model.h"
#include "python/names.h"
#include "sampler/sampler.h"
#include "syms/symbolizer.h"

class Collected {
public:
	// Samples that differ only in what the report does not show are merged as they are
	// added, so memory follows the report's size, not the number of processes a long
	// run meets.
	explicit Collected(ReportDetail detail = {});
	~Collected();
	Collected(const Collected &) = delete;
	Collected &operator=(const Collected &) = delete;

	// Locates every user address of the batch in the image its process ran at the
	// sample's first time, and takes each kernel frame's BPF program as it was then, from
	// the history behind the symbolizer; then adds the counts.
	// Python frames are named from `python` (what was read of their processes' code
	// objects while they lived); without it they show as "[python]".
	void add(const RawProfile &batch, Symbolizer &symbolizer, const PythonNames *python = nullptr);

	// Names every distinct frame once.
	Profile name(Symbolizer &symbolizer) const;

	size_t entry_count() const;
	size_t stack_count() const; // distinct kernel and user stacks

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};
