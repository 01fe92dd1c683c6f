// syms/collected.cpp: samples located while their processes are known, merged, and
// named at the end.
#include "syms/collected.h"

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "proc/process_history.h"

namespace {

uint64_t mix(uint64_t h, uint64_t value)
{
	return (h ^ value) * 0x100000001b3ull;
}

uint64_t text_hash(std::string_view text)
{
	uint64_t h = text.size();
	for (char c : text)
		h = mix(h, uint8_t(c));
	return h;
}

// Ids of items kept elsewhere (0, 1, 2... in the order added), found by content: open
// addressing, at most half full, 4 bytes a slot and 4 per item for its hash. A long run
// keeps tens of thousands of distinct stacks: node-based maps would cost several times more.
class IdIndex {
public:
	// The id of the item hashed to `hash` that equal(id) accepts; else make() adds it
	// (returning size() as its id) and that id.
	template <typename Equal, typename Make>
	uint32_t find_or_add(uint64_t hash, Equal equal, Make make)
	{
		if ((hashes_.size() + 1) * 2 > slots_.size())
			grow();
		// Every bit of the hash reaches the low bits that pick the slot (murmur3's finalizer).
		hash = (hash ^ hash >> 33) * 0xff51afd7ed558ccdull;
		hash = (hash ^ hash >> 33) * 0xc4ceb9fe1a85ec53ull;
		const uint32_t h = uint32_t(hash ^ hash >> 33), mask = uint32_t(slots_.size() - 1);
		uint32_t i = h & mask;
		for (; slots_[i]; i = (i + 1) & mask) {
			const uint32_t id = slots_[i] - 1;
			if (hashes_[id] == h && equal(id))
				return id;
		}
		const uint32_t id = make();
		hashes_.push_back(h);
		slots_[i] = id + 1;
		return id;
	}
	size_t size() const { return hashes_.size(); }

private:
	void grow()
	{
		slots_.assign(std::max<size_t>(64, slots_.size() * 2), 0);
		const uint32_t mask = uint32_t(slots_.size() - 1);
		for (uint32_t id = 0; id < hashes_.size(); id++) {
			uint32_t i = hashes_[id] & mask;
			while (slots_[i])
				i = (i + 1) & mask;
			slots_[i] = id + 1;
		}
	}

	std::vector<uint32_t> slots_; // id + 1; 0: empty
	std::vector<uint32_t> hashes_; // by id
};

// Distinct sequences of frame ids, each kept once in one array.
class StackTable {
public:
	int32_t intern(const std::vector<uint32_t> &ids)
	{
		uint64_t h = ids.size();
		for (uint32_t id : ids)
			h = mix(h, id);
		return int32_t(index_.find_or_add(
			h,
			[&](uint32_t stack) {
				const Span &span = spans_[stack];
				return span.size == ids.size() &&
				       std::equal(ids.begin(), ids.end(), frames_.begin() + span.first);
			},
			[&] {
				spans_.push_back({uint32_t(frames_.size()), uint32_t(ids.size())});
				frames_.insert(frames_.end(), ids.begin(), ids.end());
				return uint32_t(spans_.size() - 1);
			}));
	}
	// The frame ids of a stack, leaf first; empty for kNoStack.
	std::span<const uint32_t> operator[](int32_t stack) const
	{
		if (stack < 0 || size_t(stack) >= spans_.size())
			return {};
		const Span &span = spans_[size_t(stack)];
		return {frames_.data() + span.first, span.size};
	}
	size_t size() const { return spans_.size(); }

private:
	struct Span {
		uint32_t first, size;
	};
	std::vector<uint32_t> frames_;
	std::vector<Span> spans_;
	IdIndex index_;
};

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
	uint64_t offset;
	uint32_t object;
	uint32_t placement;
	bool operator==(const UserFrameRef &) const = default;
};
// The frame that ends a stack whose walk stopped early: "[truncated]".
constexpr UserFrameRef kTruncated{0, UINT32_MAX, 0};
// A language runtime's frame: offset is its index in the table of runtime frames.
constexpr uint32_t kRuntimeObject = UINT32_MAX - 1;

// Distinct values of T, each given the next id.
template <typename T>
class ValueTable {
public:
	uint32_t intern(const T &value, uint64_t hash)
	{
		return index_.find_or_add(
			hash, [&](uint32_t id) { return values_[id] == value; },
			[&] {
				values_.push_back(value);
				return uint32_t(values_.size() - 1);
			});
	}
	const T &operator[](uint32_t id) const { return values_[id]; }
	size_t size() const { return values_.size(); }

private:
	std::vector<T> values_;
	IdIndex index_;
};

// Samples of one comm, process and cgroup (when the report shows them) and pair of stacks.
struct Entry {
	uint32_t pid;    // the process; without PIDs shown, the first one counted here
	uint32_t tid;    // the thread, when the counts were keyed by thread; else 0
	uint32_t comm;   // into the comm table
	uint32_t cgroup; // 1 + index into the cgroup table; 0: not known
	int32_t kernel_stack, user_stack;
	Collected::ThreadState state;
	uint64_t count;
	// --wakers: the thread that woke this one (waker_comm: 1 + index into the comm table;
	// 0: none), and its stacks.
	uint32_t waker_comm = 0, waker_pid = 0;
	int32_t waker_kernel_stack = Collected::kNoStack, waker_user_stack = Collected::kNoStack;

	bool same_waker(const Entry &o) const
	{
		return waker_comm == o.waker_comm && waker_pid == o.waker_pid &&
		       waker_kernel_stack == o.waker_kernel_stack && waker_user_stack == o.waker_user_stack;
	}
};

} // namespace

struct Collected::Impl {
	ReportDetail detail;
	ValueTable<KernelFrameRef> kernel_frames;
	ValueTable<UserFrameRef> user_frames;
	StackTable stacks; // of kernel frame ids or of user frame ids, as the entry says
	ValueTable<std::string> comms;
	ValueTable<CgroupLabels> cgroups;
	std::vector<KernelSymbolRecord> programs;
	std::unordered_map<uint64_t, uint32_t> program_ids; // record order -> 1 + index
	ValueTable<MapPlacement> placements;
	struct RuntimeFrame {
		FrameKind kind;
		std::string function, file;
		uint32_t line;
		bool inlined;
		std::string detail;
		bool operator==(const RuntimeFrame &) const = default;
	};
	ValueTable<RuntimeFrame> runtime_frames;
	std::vector<Entry> entries;
	IdIndex entry_index;

	uint32_t program_id(const KernelSymbolRecord *record);
	uint32_t placement_id(const UserLocation &where);
	void count(const Entry &entry);
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
	const MapPlacement &p = where.mapped;
	if (!detail.addresses || !p.end)
		return 0;
	return 1 + placements.intern(p, mix(mix(p.start, p.end), p.offset));
}

void Collected::Impl::count(const Entry &e)
{
	// A process's cgroup is shown with it: a process that moved is two.
	const bool by_pid = detail.pids;
	uint64_t h = mix(mix(mix(mix(mix(0xcbf29ce484222325ull, by_pid ? uint64_t(e.tid) << 32 | e.pid : 0),
					 by_pid ? e.cgroup : 0),
				     e.comm),
			     uint64_t(uint32_t(e.kernel_stack)) << 32 | uint32_t(e.user_stack)),
			 uint64_t(e.state));
	if (e.waker_comm)
		h = mix(mix(h, uint64_t(e.waker_comm) << 32 | (by_pid ? e.waker_pid : 0)),
			uint64_t(uint32_t(e.waker_kernel_stack)) << 32 | uint32_t(e.waker_user_stack));
	const uint32_t id = entry_index.find_or_add(
		h,
		[&](uint32_t i) {
			const Entry &k = entries[i];
			return (!by_pid || (k.pid == e.pid && k.tid == e.tid && k.cgroup == e.cgroup)) && k.comm == e.comm &&
			       k.kernel_stack == e.kernel_stack && k.user_stack == e.user_stack && k.state == e.state &&
			       k.same_waker(e);
		},
		[&] {
			entries.push_back(e);
			entries.back().count = 0;
			return uint32_t(entries.size() - 1);
		});
	entries[id].count += e.count;
}

Collected::Collected(ReportDetail detail) : impl_(std::make_unique<Impl>())
{
	impl_->detail = detail;
}

Collected::~Collected() = default;

Collected::StackId Collected::kernel_stack(std::span<const uint64_t> addresses, uint64_t time,
					   Symbolizer &symbolizer, bool &timeless)
{
	Impl &d = *impl_;
	std::vector<uint32_t> ids;
	timeless = true;
	for (size_t i = 0; i < addresses.size(); i++) {
		const uint64_t address = addresses[i];
		const uint32_t program = d.program_id(symbolizer.loaded_kernel_symbol(address, i > 0, time));
		timeless &= program == 0;
		ids.push_back(d.kernel_frames.intern({address, program}, mix(address, program)));
	}
	return d.stacks.intern(ids);
}

Collected::FrameId Collected::user_frame(uint32_t pid, const ProcessImage *image, uint64_t address, bool caller,
					 Symbolizer &symbolizer)
{
	Impl &d = *impl_;
	UserLocation where = symbolizer.locate(pid, image, address, caller);
	// "[unknown]" whatever the address: without addresses shown, one frame.
	if (where.object == 0 && !d.detail.addresses)
		where.offset = 0;
	const UserFrameRef frame{where.offset, where.object, d.placement_id(where)};
	return d.user_frames.intern(frame, mix(mix(frame.offset, frame.object), frame.placement));
}

Collected::FrameId Collected::runtime_frame(FrameKind kind, std::string function, std::string file,
					   uint32_t line, bool inlined, std::string detail)
{
	Impl &d = *impl_;
	if (!d.detail.addresses)
		detail.clear();
	const uint64_t h = mix(mix(mix(mix(text_hash(function), text_hash(file)), line), text_hash(detail)),
			       uint64_t(kind) << 1 | inlined);
	const UserFrameRef frame{
		d.runtime_frames.intern({kind, std::move(function), std::move(file), line, inlined, std::move(detail)}, h),
				 kRuntimeObject, 0};
	return d.user_frames.intern(frame, mix(mix(frame.offset, frame.object), 0));
}

Collected::FrameId Collected::truncated_frame()
{
	return impl_->user_frames.intern(kTruncated, mix(kTruncated.offset, kTruncated.object));
}

Collected::StackId Collected::user_stack(const std::vector<FrameId> &frames)
{
	return impl_->stacks.intern(frames);
}

Collected::CgroupId Collected::cgroup(const CgroupLabels *labels)
{
	if (!labels)
		return 0;
	return 1 + impl_->cgroups.intern(*labels, text_hash(labels->path));
}

void Collected::count(uint32_t pid, uint32_t tid, std::string_view comm, CgroupId cgroup, StackId kernel,
		      StackId user, ThreadState state, uint64_t count, const Waker *waker)
{
	Impl &d = *impl_;
	Entry entry{pid, tid, d.comms.intern(std::string(comm), text_hash(comm)), cgroup, kernel, user, state, count};
	if (waker) {
		entry.waker_comm = 1 + d.comms.intern(std::string(waker->comm), text_hash(waker->comm));
		entry.waker_pid = waker->pid;
		entry.waker_kernel_stack = waker->kernel;
		entry.waker_user_stack = waker->user;
	}
	d.count(entry);
}

// Names every distinct frame once, as a leaf or as a caller: every frame but a stack's
// leaf is a return address, named as the call before it. With -v one user address may
// give several frames (inlined calls).
Profile Collected::name(Symbolizer &symbolizer) const
{
	const Impl &d = *impl_;
	constexpr uint32_t kNotYet = UINT32_MAX;
	struct Span {
		uint32_t first = kNotYet, count = 0;
	};
	// [leaf][frame id]: where its frames are in profile.frames.
	std::vector<uint32_t> kernel_named[2] = {std::vector<uint32_t>(d.kernel_frames.size(), kNotYet),
						 std::vector<uint32_t>(d.kernel_frames.size(), kNotYet)};
	std::vector<Span> user_named[2] = {std::vector<Span>(d.user_frames.size()),
					   std::vector<Span>(d.user_frames.size())};
	Profile profile;
	std::vector<Frame> named;

	// User frames are named object by object, ahead of the samples: the symbolizer then
	// needs the DWARF of few files at once, and drops each file once it is done with it.
	// They come first in profile.frames; the kernel's, "[truncated]" and runtimes' follow
	// as the samples meet them.
	{
		struct Wanted {
			uint32_t object, frame;
			bool leaf;
		};
		std::vector<Wanted> wanted;
		for (const Entry &entry : d.entries)
			for (const int32_t stack : {entry.user_stack, entry.waker_user_stack}) {
				const std::span<const uint32_t> user = d.stacks[stack];
				for (size_t i = 0; i < user.size(); i++) {
					Span &at = user_named[i == 0][user[i]];
					if (at.first != kNotYet || d.user_frames[user[i]] == kTruncated ||
					    d.user_frames[user[i]].object == kRuntimeObject)
						continue;
					at.first = 0;
					wanted.push_back({d.user_frames[user[i]].object, user[i], i == 0});
				}
			}
		std::stable_sort(wanted.begin(), wanted.end(),
				 [](const Wanted &a, const Wanted &b) { return a.object < b.object; });
		for (const Wanted &w : wanted) {
			const UserFrameRef &f = d.user_frames[w.frame];
			UserLocation where;
			where.object = f.object;
			where.offset = f.offset;
			if (f.placement)
				where.mapped = d.placements[f.placement - 1];
			named.clear();
			symbolizer.user_frames(where, !w.leaf, named);
			user_named[w.leaf][w.frame] = Span{uint32_t(profile.frames.size()), uint32_t(named.size())};
			for (Frame &frame : named)
				profile.frames.push_back(std::move(frame));
		}
	}

	// A stack's frames, named once each, appended to out leaf first.
	auto kernel_frames = [&](int32_t stack, std::vector<uint32_t> &out) {
		const std::span<const uint32_t> kernel = d.stacks[stack];
		for (size_t i = 0; i < kernel.size(); i++) {
			uint32_t &at = kernel_named[i == 0][kernel[i]];
			if (at == kNotYet) {
				const KernelFrameRef &f = d.kernel_frames[kernel[i]];
				const KernelSymbolRecord *program = f.program ? &d.programs[f.program - 1] : nullptr;
				at = uint32_t(profile.frames.size());
				profile.frames.push_back(symbolizer.kernel_frame(f.address, i > 0, program));
			}
			out.push_back(at);
		}
	};
	auto user_frames = [&](int32_t stack, std::vector<uint32_t> &out) {
		const std::span<const uint32_t> user = d.stacks[stack];
		for (size_t i = 0; i < user.size(); i++) {
			Span &at = user_named[i == 0][user[i]];
			if (at.first == kNotYet && d.user_frames[user[i]] == kTruncated) {
				at = Span{uint32_t(profile.frames.size()), 1};
				Frame frame;
				frame.name = "[truncated]";
				profile.frames.push_back(std::move(frame));
			} else if (at.first == kNotYet && d.user_frames[user[i]].object == kRuntimeObject) {
				const Impl::RuntimeFrame &runtime = d.runtime_frames[uint32_t(d.user_frames[user[i]].offset)];
				at = Span{uint32_t(profile.frames.size()), 1};
				Frame frame;
				frame.name = runtime.function;
				frame.source_file = runtime.file;
				frame.line = runtime.line;
				frame.kind = runtime.kind;
				frame.inlined = runtime.inlined;
				frame.detail = runtime.detail;
				profile.frames.push_back(std::move(frame));
			}
			for (uint32_t n = 0; n < at.count; n++)
				out.push_back(at.first + n);
		}
	};
	// Frames named by text alone (a thread's state off the CPU, --wakers' "--" and wakers'
	// comms), once each.
	std::unordered_map<std::string, uint32_t> text_frames;
	auto text_frame = [&](const std::string &name) {
		auto [it, inserted] = text_frames.try_emplace(name, uint32_t(profile.frames.size()));
		if (inserted) {
			Frame frame;
			frame.name = name;
			profile.frames.push_back(std::move(frame));
		}
		return it->second;
	};
	std::vector<uint32_t> waker_kernel, waker_user;

	profile.samples.reserve(d.entries.size());
	for (const Entry &entry : d.entries) {
		Sample sample;
		sample.pid = entry.pid;
		sample.tid = entry.tid;
		sample.comm = d.comms[entry.comm];
		if (entry.cgroup) {
			sample.cgroup = d.cgroups[entry.cgroup - 1].path;
			sample.container = d.cgroups[entry.cgroup - 1].container;
		}
		sample.count = entry.count;
		if (entry.waker_comm) {
			// As offwaketime folds it: above the blocked leaf, "--", then the waker's stack
			// upside down, its comm at the top.
			sample.waker = d.comms[entry.waker_comm - 1];
			waker_kernel.clear();
			waker_user.clear();
			kernel_frames(entry.waker_kernel_stack, waker_kernel);
			user_frames(entry.waker_user_stack, waker_user);
			sample.kernel.push_back(text_frame(sample.waker));
			sample.kernel.insert(sample.kernel.end(), waker_user.rbegin(), waker_user.rend());
			sample.kernel.insert(sample.kernel.end(), waker_kernel.rbegin(), waker_kernel.rend());
			sample.kernel.push_back(text_frame("--"));
		}
		kernel_frames(entry.kernel_stack, sample.kernel);
		user_frames(entry.user_stack, sample.user);
		// Off the CPU, the thread's state is the stack's root.
		if (entry.state != ThreadState::OnCpu)
			sample.user.push_back(text_frame(entry.state == ThreadState::Runnable ? "[runnable]" : "[blocked]"));
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
	return impl_->stacks.size();
}
