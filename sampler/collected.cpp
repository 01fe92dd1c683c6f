// sampler/collected.cpp: batches of samples located while their processes are known,
// merged, and named at the end.
#include "sampler/collected.h"

#include <cstring>
#include <string_view>
#include <unordered_map>

#include "syms/process_history.h"

namespace {

uint64_t mix(uint64_t h, uint64_t value)
{
	return (h ^ value) * 0x100000001b3ull;
}

// A kernel frame: its address, and the BPF program that held it at the sample's time
// (1 + index into the copied programs; 0 when kallsyms names it).
struct KernelFrameRef {
	uint64_t address;
	uint32_t program;
	bool operator==(const KernelFrameRef &) const = default;
};

// A user frame: its object and offset, and where it was mapped (1 + index into the
// placements; 0 when the report shows no addresses).
struct UserFrameRef {
	uint32_t object;
	uint32_t placement;
	uint64_t offset;
	bool operator==(const UserFrameRef &) const = default;
};

uint64_t hash_frame(const KernelFrameRef &f)
{
	return mix(f.address, f.program);
}

uint64_t hash_frame(const UserFrameRef &f)
{
	return mix(mix(f.offset, f.object), f.placement);
}

// Distinct stacks by content, each given the next id.
template <typename FrameRef>
class StackTable {
public:
	int32_t intern(const std::vector<FrameRef> &frames)
	{
		uint64_t h = frames.size();
		for (const FrameRef &f : frames)
			h = mix(h, hash_frame(f));
		auto [first, last] = by_hash_.equal_range(h);
		for (auto it = first; it != last; ++it)
			if (stacks_[it->second] == frames)
				return it->second;
		const int32_t id = int32_t(stacks_.size());
		stacks_.push_back(frames);
		by_hash_.emplace(h, id);
		return id;
	}
	const std::vector<FrameRef> *find(int32_t id) const
	{
		return id >= 0 && size_t(id) < stacks_.size() ? &stacks_[size_t(id)] : nullptr;
	}
	size_t size() const { return stacks_.size(); }

private:
	std::vector<std::vector<FrameRef>> stacks_;
	std::unordered_multimap<uint64_t, int32_t> by_hash_;
};

struct Placement {
	uint64_t start, end, offset;
	bool operator==(const Placement &) const = default;
};

struct PlacementHash {
	size_t operator()(const Placement &p) const { return size_t(mix(mix(p.start, p.end), p.offset)); }
};

struct EntryKey {
	uint32_t pid; // 0 when the report does not show it
	int32_t kernel_stack, user_stack;
	char comm[TASK_COMM_LEN];
};

struct EntryKeyHash {
	size_t operator()(const EntryKey &k) const
	{
		uint64_t h = mix(mix(mix(0xcbf29ce484222325ull, k.pid), uint32_t(k.kernel_stack)), uint32_t(k.user_stack));
		for (char c : k.comm)
			h = mix(h, uint8_t(c));
		return size_t(h ^ h >> 29);
	}
};

struct EntryKeyEqual {
	bool operator()(const EntryKey &a, const EntryKey &b) const { return std::memcmp(&a, &b, sizeof(a)) == 0; }
};

struct Entry {
	EntryKey key;
	uint32_t pid; // the first process counted here
	uint64_t count;
};

} // namespace

struct Collected::Impl {
	CollectedDetail detail;
	StackTable<KernelFrameRef> kernel_stacks;
	StackTable<UserFrameRef> user_stacks;
	std::vector<KernelSymbolRecord> programs;
	std::unordered_map<uint64_t, uint32_t> program_ids; // record order -> 1 + index
	std::vector<Placement> placements;
	std::unordered_map<Placement, uint32_t, PlacementHash> placement_ids; // -> 1 + index
	std::vector<Entry> entries;
	std::unordered_map<EntryKey, size_t, EntryKeyHash, EntryKeyEqual> entry_index;

	uint32_t program_id(const KernelSymbolRecord *record);
	uint32_t placement_id(const UserLocation &where);
};

uint32_t Collected::Impl::program_id(const KernelSymbolRecord *record)
{
	if (!record)
		return 0;
	auto [it, inserted] = program_ids.try_emplace(record->order, uint32_t(programs.size() + 1));
	if (inserted)
		programs.push_back(*record);
	return it->second;
}

uint32_t Collected::Impl::placement_id(const UserLocation &where)
{
	if (!detail.addresses || !where.map_end)
		return 0;
	const Placement p{where.map_start, where.map_end, where.map_offset};
	auto [it, inserted] = placement_ids.try_emplace(p, uint32_t(placements.size() + 1));
	if (inserted)
		placements.push_back(p);
	return it->second;
}

Collected::Collected(CollectedDetail detail) : impl_(std::make_unique<Impl>())
{
	impl_->detail = detail;
}

Collected::~Collected() = default;

void Collected::add(const RawProfile &batch, Symbolizer &symbolizer)
{
	Impl &d = *impl_;
	auto batch_stack = [&](int32_t id) -> const std::vector<uint64_t> * {
		return id >= 0 && size_t(id) < batch.stacks.size() ? &batch.stacks[size_t(id)] : nullptr;
	};
	// Within a batch the history stands still: each mapping's object, and each stack of
	// one image, is worked out once.
	std::unordered_map<const MapEntry *, uint32_t> objects;
	std::unordered_map<uint32_t, uint32_t> unmapped_objects; // by pid
	struct ImageStack {
		const ProcessImage *image;
		uint32_t pid;
		int32_t stack;
		bool operator==(const ImageStack &) const = default;
	};
	struct ImageStackHash {
		size_t operator()(const ImageStack &k) const
		{
			return size_t(mix(mix(uint64_t(uintptr_t(k.image)), k.pid), uint32_t(k.stack)));
		}
	};
	std::unordered_map<ImageStack, int32_t, ImageStackHash> user_ids;
	std::unordered_map<int32_t, int32_t> timeless_kernel_ids; // stacks with no BPF program frame
	std::vector<KernelFrameRef> kernel;
	std::vector<UserFrameRef> user;

	for (const RawProfile::Entry &entry : batch.entries) {
		const uint32_t pid = entry.key.pid;
		const uint64_t time = entry.value.first_ns;
		EntryKey key{};
		key.pid = d.detail.pids ? pid : 0;
		std::memcpy(key.comm, entry.key.comm, sizeof(key.comm));
		key.kernel_stack = key.user_stack = NO_STACK;

		if (const auto *addresses = batch_stack(entry.key.kernel_stack_id)) {
			auto known = timeless_kernel_ids.find(entry.key.kernel_stack_id);
			if (known != timeless_kernel_ids.end()) {
				key.kernel_stack = known->second;
			} else {
				kernel.clear();
				bool timeless = true;
				for (size_t i = 0; i < addresses->size(); i++) {
					const uint64_t address = (*addresses)[i];
					const uint32_t program =
						d.program_id(symbolizer.loaded_kernel_symbol(address, i > 0, time));
					timeless &= program == 0;
					kernel.push_back({address, program});
				}
				key.kernel_stack = d.kernel_stacks.intern(kernel);
				if (timeless)
					timeless_kernel_ids.emplace(entry.key.kernel_stack_id, key.kernel_stack);
			}
		}

		if (const auto *addresses = batch_stack(entry.key.user_stack_id)) {
			const ProcessImage *image = symbolizer.image_at(pid, time);
			auto [it, inserted] = user_ids.try_emplace({image, pid, entry.key.user_stack_id}, 0);
			if (inserted) {
				user.clear();
				for (size_t i = 0; i < addresses->size(); i++) {
					const uint64_t address = (*addresses)[i];
					const uint64_t back = i > 0 && address ? 1 : 0;
					const MapEntry *mapping = image ? image->find(address - back) : nullptr;
					uint32_t object;
					if (mapping) {
						auto [o, first] = objects.try_emplace(mapping, 0);
						if (first)
							o->second = symbolizer.object_of(pid, mapping);
						object = o->second;
					} else {
						auto [o, first] = unmapped_objects.try_emplace(pid, 0);
						if (first)
							o->second = symbolizer.object_of(pid, nullptr);
						object = o->second;
					}
					UserLocation where = symbolizer.locate(object, mapping, address);
					// "[unknown]" whatever the address: without addresses shown, one frame.
					if (object == 0 && !d.detail.addresses)
						where.offset = 0;
					user.push_back({object, d.placement_id(where), where.offset});
				}
				it->second = d.user_stacks.intern(user);
			}
			key.user_stack = it->second;
		}

		auto [at, inserted] = d.entry_index.try_emplace(key, d.entries.size());
		if (inserted)
			d.entries.push_back({key, pid, 0});
		d.entries[at->second].count += entry.value.count;
	}
	symbolizer.forget_live_processes();
}

// Names every frame once: kernel frames by (address, program), user frames by
// (object, placement, offset). Every frame but a stack's leaf is a return address, named
// as the call before it. With -v one user address may give several frames (inlined calls).
Profile Collected::name(Symbolizer &symbolizer) const
{
	const Impl &d = *impl_;
	struct FrameKey {
		uint64_t offset;
		uint32_t object_or_program, placement;
		bool leaf;
		bool operator==(const FrameKey &) const = default;
	};
	struct FrameKeyHash {
		size_t operator()(const FrameKey &k) const
		{
			uint64_t h = mix(mix(mix(k.offset, k.object_or_program), k.placement), k.leaf);
			return size_t(h ^ h >> 29);
		}
	};
	struct Span {
		uint32_t first, count;
	};
	Profile profile;
	std::unordered_map<FrameKey, uint32_t, FrameKeyHash> kernel_index;
	std::unordered_map<FrameKey, Span, FrameKeyHash> user_index;
	std::vector<Frame> named;

	profile.samples.reserve(d.entries.size());
	for (const Entry &entry : d.entries) {
		Sample sample;
		sample.pid = entry.pid;
		sample.comm.assign(entry.key.comm, strnlen(entry.key.comm, sizeof(entry.key.comm)));
		sample.count = entry.count;
		if (const auto *frames = d.kernel_stacks.find(entry.key.kernel_stack))
			for (size_t i = 0; i < frames->size(); i++) {
				const KernelFrameRef &f = (*frames)[i];
				auto [it, inserted] = kernel_index.try_emplace({f.address, f.program, 0, i == 0},
									      uint32_t(profile.frames.size()));
				if (inserted) {
					const KernelSymbolRecord *program = f.program ? &d.programs[f.program - 1] : nullptr;
					profile.frames.push_back(symbolizer.kernel_frame(f.address, i > 0, program));
				}
				sample.kernel.push_back(it->second);
			}
		if (const auto *frames = d.user_stacks.find(entry.key.user_stack))
			for (size_t i = 0; i < frames->size(); i++) {
				const UserFrameRef &f = (*frames)[i];
				auto [it, inserted] = user_index.try_emplace({f.offset, f.object, f.placement, i == 0});
				if (inserted) {
					UserLocation where;
					where.object = f.object;
					where.offset = f.offset;
					if (f.placement) {
						const Placement &p = d.placements[f.placement - 1];
						where.map_start = p.start;
						where.map_end = p.end;
						where.map_offset = p.offset;
					}
					named.clear();
					symbolizer.user_frames(where, i > 0, named);
					it->second = Span{uint32_t(profile.frames.size()), uint32_t(named.size())};
					for (Frame &frame : named)
						profile.frames.push_back(std::move(frame));
				}
				for (uint32_t n = 0; n < it->second.count; n++)
					sample.user.push_back(it->second.first + n);
			}
		profile.samples.push_back(std::move(sample));
	}
	return profile;
}

size_t Collected::entry_count() const
{
	return impl_->entries.size();
}

size_t Collected::stack_count() const
{
	return impl_->kernel_stacks.size() + impl_->user_stacks.size();
}
