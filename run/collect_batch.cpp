// run/collect_batch.cpp: a drained batch read entry by entry into Collected.
#include "run/collect_batch.h"

#include <cstring>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtimes/runtimes.h"
#include "proc/process_history.h"

namespace {

// The key's THREAD_* (profile.h) as Collected has it.
Collected::ThreadState thread_state(uint32_t state)
{
	switch (state) {
	case THREAD_RUNNABLE:
		return Collected::ThreadState::Runnable;
	case THREAD_BLOCKED:
		return Collected::ThreadState::Blocked;
	default:
		return Collected::ThreadState::OnCpu;
	}
}

} // namespace

void collect_batch(const RawProfile &batch, Symbolizer &symbolizer, Collected &collected, const Runtimes *runtimes)
{
	auto batch_stack = [&](int32_t id) -> const std::vector<uint64_t> * {
		return id >= 0 && size_t(id) < batch.stacks.size() ? &batch.stacks[size_t(id)] : nullptr;
	};
	// Within a batch the history stands still: each stack of one image is located once.
	struct ImageStack {
		const ProcessImage *image;
		uint32_t pid;
		int32_t stack;
		bool operator==(const ImageStack &) const = default;
	};
	struct ImageStackHash {
		size_t operator()(const ImageStack &k) const
		{
			return std::hash<const void *>{}(k.image) ^ (size_t(k.pid) << 32 | uint32_t(k.stack));
		}
	};
	std::unordered_map<ImageStack, Collected::StackId, ImageStackHash> user_stacks;
	std::unordered_map<int32_t, Collected::StackId> timeless_kernel_stacks; // those with no BPF program frame
	// Processes share their labels: each is hashed once a batch.
	std::unordered_map<const CgroupLabels *, Collected::CgroupId> cgroup_ids;
	std::vector<Collected::FrameId> ids;

	// A batch's kernel stack (raw_id), each frame's BPF program as it was at `time`.
	auto kernel_stack = [&](int32_t raw_id, uint64_t time) {
		const auto *addresses = batch_stack(raw_id);
		if (!addresses)
			return Collected::kNoStack;
		auto known = timeless_kernel_stacks.find(raw_id);
		if (known != timeless_kernel_stacks.end())
			return known->second;
		bool timeless = true;
		const Collected::StackId stack = collected.kernel_stack(*addresses, time, symbolizer, timeless);
		if (timeless)
			timeless_kernel_stacks.emplace(raw_id, stack);
		return stack;
	};
	// A batch's user stack (raw_id) of process pid, located in its image.
	auto user_stack = [&](const ProcessImage *image, uint32_t pid, int32_t raw_id) {
		const auto *addresses = batch_stack(raw_id);
		if (!addresses)
			return Collected::kNoStack;
		auto [it, inserted] = user_stacks.try_emplace({image, pid, raw_id}, 0);
		if (!inserted)
			return it->second;
		ids.clear();
		for (size_t i = 0; i < addresses->size(); i++) {
			const uint64_t address = (*addresses)[i];
			if (const RuntimeRoom *room = runtime_room_of_frame(address)) {
				RuntimeFrameName name = runtimes ? runtimes->name(*room, pid, address)
								 : RuntimeFrameName{room->unnamed, "", 0};
				// Inlined by the runtime's compiler: frames of their own, as native
				// inlines are.
				for (RuntimeFrameName &inlined : name.inlined_here)
					ids.push_back(collected.runtime_frame(room->kind, std::move(inlined.function),
									      std::move(inlined.file), inlined.line, true,
									      std::move(inlined.detail)));
				ids.push_back(collected.runtime_frame(room->kind, std::move(name.function),
								      std::move(name.file), name.line, false,
								      std::move(name.detail)));
				continue;
			}
			// A stack that stopped early says so, rather than end on garbage: the walk's
			// mark, or a caller in no executable mapping of its process (what a
			// frame-pointer walk reads through code without frame pointers).
			if (address == TRUNCATED_FRAME || (i > 0 && image && !image->find(address - 1))) {
				ids.push_back(collected.truncated_frame());
				break;
			}
			ids.push_back(collected.user_frame(pid, image, address, i > 0, symbolizer));
		}
		// Every slot filled: the walk was cut at the depth limit.
		if (addresses->size() == batch.depth_limit && ids.size() == addresses->size())
			ids.push_back(collected.truncated_frame());
		it->second = collected.user_stack(ids);
		return it->second;
	};

	for (const RawProfile::Entry &raw : batch.entries) {
		const uint32_t pid = raw.key.pid;
		const uint64_t time = raw.value.first_ns;
		// The image also holds the process's cgroup, taken now: it may be gone by the end.
		const ProcessImage *image = symbolizer.image_at(pid, time);
		const CgroupLabels *labels = image ? image->cgroup.get() : nullptr;
		auto [cgroup, new_labels] = cgroup_ids.try_emplace(labels, 0);
		if (new_labels)
			cgroup->second = collected.cgroup(labels);
		std::optional<Collected::Waker> waker;
		if (raw.key.woken)
			waker = Collected::Waker{
				std::string_view(raw.key.waker_comm, strnlen(raw.key.waker_comm, sizeof(raw.key.waker_comm))),
				raw.key.waker_pid, kernel_stack(raw.key.waker_kernel_stack_id, time),
				user_stack(symbolizer.image_at(raw.key.waker_pid, time), raw.key.waker_pid,
					   raw.key.waker_user_stack_id)};
		collected.count(pid, raw.key.tid, std::string_view(raw.key.comm, strnlen(raw.key.comm, sizeof(raw.key.comm))),
				cgroup->second, kernel_stack(raw.key.kernel_stack_id, time),
				user_stack(image, pid, raw.key.user_stack_id), thread_state(raw.key.state), raw.value.count,
				waker ? &*waker : nullptr);
	}
	symbolizer.forget_live_processes();
}
