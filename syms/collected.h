// syms/collected.h: what the run collected, sample after sample, in terms that outlive
// the processes sampled: user addresses located in files, BPF programs copied out of the
// history, language runtimes' frames by name. Once a sample is added, nothing of it needs the history
// of its process. run/collect_batch.h feeds it the sampler's batches.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "report/model.h"
#include "syms/symbolizer.h"

struct CgroupLabels;

class Collected {
public:
	// Ids of distinct frames, stacks and cgroups, each kept once.
	using FrameId = uint32_t;
	using StackId = int32_t;
	static constexpr StackId kNoStack = -1;
	using CgroupId = uint32_t; // 0: not known

	// Samples that differ only in what the report does not show are merged as they are
	// added, so memory follows the report's size, not the number of processes a long
	// run meets.
	explicit Collected(ReportDetail detail = {});
	~Collected();
	Collected(const Collected &) = delete;
	Collected &operator=(const Collected &) = delete;

	// A kernel stack, leaf first, with each frame's BPF program as it was at `time`, from
	// the history behind the symbolizer. `timeless`: no frame was a BPF program's, so the
	// same addresses are the same stack at any time.
	StackId kernel_stack(std::span<const uint64_t> addresses, uint64_t time, Symbolizer &symbolizer,
			     bool &timeless);

	// A user stack is made of frames, leaf first, then kept by user_stack.
	// A user address, located in the image its process ran at the sample's time
	// (`caller`: every frame but the leaf, a return address).
	FrameId user_frame(uint32_t pid, const ProcessImage *image, uint64_t address, bool caller,
			   Symbolizer &symbolizer);
	// A language runtime's frame, as its reader named it (inlined: into the next frame, by
	// the runtime's optimizing compiler; detail: what -v adds, kept when the report shows
	// addresses).
	FrameId runtime_frame(FrameKind kind, std::string function, std::string file, uint32_t line, bool inlined,
			      std::string detail);
	// The frame that ends a stack whose walk stopped early: "[truncated]".
	FrameId truncated_frame();
	StackId user_stack(const std::vector<FrameId> &frames);

	CgroupId cgroup(const CgroupLabels *labels);
	// What a thread was doing: on a CPU (a sample), or off it (--off-cpu), where the state
	// is the stack's root frame, "[runnable]" or "[blocked]".
	enum class ThreadState : uint8_t { OnCpu, Runnable, Blocked };
	// --wakers: the thread that woke a blocked one, with its stacks (made as above, its
	// user stack located in its own process). The report puts them above the blocked leaf,
	// as BCC's offwaketime folds them.
	struct Waker {
		std::string_view comm;
		uint32_t pid = 0;
		StackId kernel = kNoStack, user = kNoStack;
	};
	// Adds `count` (samples, or nanoseconds off the CPU) to one process (its thread, when
	// the counts were keyed by thread, else 0; its comm and cgroup), pair of stacks and
	// state, and the thread that woke it where known.
	void count(uint32_t pid, uint32_t tid, std::string_view comm, CgroupId cgroup, StackId kernel, StackId user,
		   ThreadState state, uint64_t count, const Waker *waker = nullptr);

	// Names every distinct frame once.
	Profile name(Symbolizer &symbolizer) const;

	size_t entry_count() const;
	size_t stack_count() const; // distinct kernel and user stacks

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};
