// sampler/drain.cpp: reads the maps back in batches: when they fill while sampling (two
// generations, flipped), at a window's cut, and at the end.
#include "sampler/sampler.h"

#include <bpf/bpf.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "base/fd.h"
#include "sampler/loaded.h"

bool Sampler::has_samples(uint32_t pid) const
{
	if (impl_->sampled_until_drain.count(pid))
		return true;
	uint8_t value;
	if (bpf_map__lookup_elem(impl_->skel->maps.sampled_pids, &pid, sizeof(pid), &value, sizeof(value), 0) != 0)
		return false;
	impl_->sampled_until_drain.insert(pid);
	return true;
}

namespace {

// Reads every counts-map entry, in batches where the kernel allows it.
void read_counts(int fd, uint32_t max_entries, std::vector<RawProfile::Entry> &out)
{
	const uint32_t batch = std::min<uint32_t>(max_entries, 4096);
	std::vector<stack_key> keys(batch);
	std::vector<stack_count> values(batch);
	stack_key out_batch{};
	void *in = nullptr;
	bool batched = true;
	while (batched) {
		uint32_t count = batch;
		int err = bpf_map_lookup_batch(fd, in, &out_batch, keys.data(), values.data(), &count, nullptr);
		if (err && errno != ENOENT) {
			batched = false; // old kernel or odd map: fall back to key by key
			out.clear();
			break;
		}
		for (uint32_t i = 0; i < count; i++)
			out.push_back({keys[i], values[i]});
		if (err) // ENOENT: that was the last batch
			return;
		in = &out_batch;
	}

	stack_key key{}, next{};
	void *prev = nullptr;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		stack_count value{};
		if (bpf_map_lookup_elem(fd, &next, &value) == 0)
			out.push_back({next, value});
		key = next;
		prev = &key;
	}
}

// Every key of a map, read before any is deleted: a stack map's get_next_key starts over
// from the first bucket when the key it is given is gone.
template <typename Key>
std::vector<Key> all_keys(int fd)
{
	std::vector<Key> keys;
	Key key{}, next{};
	void *prev = nullptr;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		keys.push_back(next);
		key = next;
		prev = &key;
	}
	return keys;
}

} // namespace

void add_stats(sample_stats &sum, const sample_stats &s)
{
	sum.seen += s.seen;
	sum.lost_counts_full += s.lost_counts_full;
	sum.lost_stack_collision += s.lost_stack_collision;
	sum.lost_stack_full += s.lost_stack_full;
	sum.lost_stack_other += s.lost_stack_other;
	sum.lost_thread_start += s.lost_thread_start;
	sum.lost_budget += s.lost_budget;
	sum.new_keys += s.new_keys;
	sum.unwound_tables += s.unwound_tables;
	sum.unwound_pending += s.unwound_pending;
	sum.unwound_fp_no_table += s.unwound_fp_no_table;
	sum.unwound_cut += s.unwound_cut;
	sum.unwound_raw += s.unwound_raw;
	sum.waited_process += s.waited_process;
	sum.waited_file += s.waited_file;
	sum.waited_building += s.waited_building;
	sum.areas_learned += s.areas_learned;
	sum.unwound_again += s.unwound_again;
}

sample_stats Sampler::Impl::tally(uint32_t generation, bool reset) const
{
	sample_stats sum{};
	int ncpus = libbpf_num_possible_cpus();
	std::vector<sample_stats> per_cpu(ncpus > 0 ? ncpus : 1);
	const uint32_t key = generation & 1;
	const int fd = bpf_map__fd(skel->maps.stats);
	if (bpf_map_lookup_elem(fd, &key, per_cpu.data()) == 0)
		for (const sample_stats &s : per_cpu)
			add_stats(sum, s);
	if (reset) {
		std::fill(per_cpu.begin(), per_cpu.end(), sample_stats{});
		bpf_map_update_elem(fd, &key, per_cpu.data(), BPF_ANY);
	}
	return sum;
}

void RawProfile::add_account(const RawProfile &other)
{
	add_stats(totals, other.totals);
	taken += other.taken;
	stored += other.stored;
	truncated += other.truncated;
	raw_unwound += other.raw_unwound;
	raw_cut += other.raw_cut;
	depth_limit = std::max(depth_limit, other.depth_limit);
}

void RawProfile::add_unwound(const RawSample &sample, const std::vector<uint64_t> &more, bool truncated_walk)
{
	std::vector<uint64_t> user = sample.frames;
	user.insert(user.end(), more.begin(), more.end());
	if (truncated_walk)
		user.push_back(TRUNCATED_FRAME);
	Entry entry{sample.key, {1, sample.time_ns, 0}};
	if (sample.kernel.size() == depth_limit || user.size() == depth_limit)
		truncated++;
	entry.key.kernel_stack_id = NO_STACK;
	if (!sample.kernel.empty()) {
		entry.key.kernel_stack_id = int32_t(stacks.size());
		stacks.push_back(sample.kernel);
	}
	entry.key.user_stack_id = int32_t(stacks.size());
	stacks.push_back(std::move(user));
	entries.push_back(entry);
	stored++;
	raw_unwound++;
	raw_cut += truncated_walk;
}

void Sampler::Impl::wait_for_programs() const
{
	if (can_drain())
		syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

// Moves one generation's counts and the stacks they name into a batch, then empties both
// maps. Only called when no program can be writing them.
RawProfile Sampler::Impl::drain(uint32_t generation)
{
	bpf_map *counts = generation & 1 ? skel->maps.counts1 : skel->maps.counts0;
	bpf_map *stacks = generation & 1 ? skel->maps.stacks1 : skel->maps.stacks0;
	bpf_map *store = generation & 1 ? skel->maps.store1 : skel->maps.store0;
	const int counts_fd = bpf_map__fd(counts), stacks_fd = bpf_map__fd(stacks), store_fd = bpf_map__fd(store);

	RawProfile batch;
	batch.depth_limit = depth();
	read_counts(counts_fd, bpf_map__max_entries(counts), batch.entries);
	std::unordered_map<int32_t, int32_t> ids; // the map's stack id -> the batch's
	std::vector<uint64_t> frames(depth() + 1);
	// Stacks kept by content: every one is read now, by its id (the map's value).
	std::unordered_map<int32_t, std::vector<uint64_t>> stored_stacks;
	std::vector<stack_hash> store_keys;
	if (unwinding()) {
		std::vector<uint8_t> value(STORED_STACK_SIZE(depth()));
		for (const stack_hash &key : all_keys<stack_hash>(store_fd)) {
			if (bpf_map_lookup_elem(store_fd, &key, value.data()) == 0) {
				stored_stack stack;
				std::memcpy(&stack, value.data(), std::min(value.size(), sizeof(stack)));
				const size_t n = std::min<size_t>(stack.n, depth() + 1);
				stored_stacks.try_emplace(int32_t(stack.id), stack.ip, stack.ip + n);
			}
			store_keys.push_back(key);
		}
	}
	// Turns a stack id of the map into the batch's, reading the stack the first time;
	// true when the stack filled every frame slot (likely cut).
	auto batch_id = [&](int32_t &id) {
		if (id < 0)
			return false;
		auto [it, inserted] = ids.try_emplace(id, int32_t(batch.stacks.size()));
		if (inserted) {
			if (unwinding()) {
				auto found = stored_stacks.find(id);
				batch.stacks.push_back(found != stored_stacks.end() ? std::move(found->second)
										  : std::vector<uint64_t>{});
			} else {
				size_t n = 0;
				if (bpf_map_lookup_elem(stacks_fd, &id, frames.data()) == 0)
					while (n < depth() && frames[n])
						n++;
				batch.stacks.emplace_back(frames.begin(), frames.begin() + n);
			}
		}
		id = it->second;
		return batch.stacks[size_t(id)].size() == depth();
	};
	sampled_until_drain.clear();
	for (RawProfile::Entry &entry : batch.entries) {
		const stack_key key = entry.key;
		const bool kernel_full = batch_id(entry.key.kernel_stack_id);
		const bool user_full = batch_id(entry.key.user_stack_id);
		if (key.woken) { // --wakers: the waker's stacks, in the same batch
			batch_id(entry.key.waker_kernel_stack_id);
			batch_id(entry.key.waker_user_stack_id);
		}
		// Off the CPU, a count is nanoseconds: the account is of times off the CPU.
		const uint64_t samples = options.off_cpu ? entry.value.blocks : entry.value.count;
		batch.stored += samples;
		if (kernel_full || user_full)
			batch.truncated += samples;
		sampled_until_drain.insert(key.pid);
		if (key.woken)
			sampled_until_drain.insert(key.waker_pid);
		// Emptied as read: a stack's sample may have been lost after its stack was
		// stored (the other stack collided, the counts map was full), so the stack map
		// is emptied key by key below.
		bpf_map_delete_elem(counts_fd, &key);
	}
	if (unwinding()) {
		read_raw(generation, batch, batch_id);
		for (const stack_hash &key : store_keys)
			bpf_map_delete_elem(store_fd, &key);
	} else {
		for (uint32_t id : all_keys<uint32_t>(stacks_fd))
			bpf_map_delete_elem(stacks_fd, &id);
	}
	const int sampled_fd = bpf_map__fd(skel->maps.sampled_pids);
	for (uint32_t pid : sampled_until_drain)
		bpf_map_delete_elem(sampled_fd, &pid);
	batch.totals = tally(generation, true);
	batch.taken = batch.totals.seen;
	return batch;
}

// The generation's samples kept raw (complete ones), into the batch; their slots freed.
template <typename BatchId>
void Sampler::Impl::read_raw(uint32_t generation, RawProfile &batch, BatchId &batch_id)
{
	const uint32_t g = generation & 1;
	const uint32_t claimed = std::min<uint32_t>(__atomic_load_n(&skel->bss->raw_claimed[g], __ATOMIC_RELAXED), RAW_SLOTS);
	const int fd = bpf_map__fd(skel->maps.raw_samples);
	auto raw = std::make_unique<raw_sample>();
	const raw_sample empty{};
	for (uint32_t i = 0; i < claimed; i++) {
		const uint32_t slot = g * RAW_SLOTS + i;
		if (bpf_map_lookup_elem(fd, &slot, raw.get()) != 0 || !raw->complete)
			continue;
		RawProfile::RawSample sample;
		sample.key = raw->key;
		sample.key.user_stack_id = NO_STACK;
		if (int32_t id = sample.key.kernel_stack_id; id >= 0) {
			batch_id(id);
			sample.kernel = batch.stacks[size_t(id)];
		}
		sample.key.kernel_stack_id = NO_STACK;
		sample.time_ns = raw->time_ns;
		sample.frames.assign(raw->frames, raw->frames + std::min<uint32_t>(raw->n, depth()));
		sample.stack.pc = raw->pc;
		sample.stack.sp = raw->sp;
		sample.stack.bp = raw->bp;
		sample.stack.leaf = raw->n == 1;
		sample.stack.base = raw->stack_base;
		sample.stack.bytes.assign(raw->stack, raw->stack + std::min<uint32_t>(raw->stack_len, RAW_STACK_BYTES));
		sampled_until_drain.insert(sample.key.pid);
		batch.raw.push_back(std::move(sample));
		bpf_map_update_elem(fd, &slot, &empty, BPF_ANY);
	}
	skel->bss->raw_claimed[g] = 0;
}

// Sends new samples to the other generation, waits until no program still writes this
// one, and moves it out.
RawProfile Sampler::Impl::flip_and_drain()
{
	const uint32_t old = skel->bss->generation;
	__atomic_store_n(&skel->bss->generation, old + 1, __ATOMIC_SEQ_CST);
	wait_for_programs();
	last_drain_ns = clocks::monotonic_ns();
	return drain(old);
}

bool maps_filling(const sample_stats &t, const MapSizes &sizes, int64_t since_drain_ns)
{
	// The maps as loaded: a run of known length has smaller stores than the option says.
	const uint64_t capacity = std::min(sizes.stack_entries, sizes.count_entries);
	// A new stack collides with the odds of the stack map's fill, so drain early: a
	// sixteenth full. Stores keyed by content do not collide: drained when they may be half
	// full (a key may bring two new stacks), which spares most of the drains' work of
	// deleting kilobyte keys. Losing samples with few new stacks coming: every 5 s at most.
	const bool filling = sizes.unwinding ? t.new_keys * 4 >= capacity : t.new_keys * 16 >= capacity;
	// (Samples lost over the CPU budget are not the maps': a drain brings none back.)
	const bool losing = lost_samples(t) > t.lost_budget &&
			    (t.new_keys * 64 >= capacity || since_drain_ns >= 5000000000);
	return filling || losing;
}

std::optional<RawProfile> Sampler::tick()
{
	Impl &d = *impl_;
	if (!d.can_drain() || d.links.empty())
		return std::nullopt;
	const int64_t now = clocks::monotonic_ns();
	// A drain at most every second; the fill looked at ten times a second at most (a read
	// of every CPU's tally, which 50 ticks a second would make a good part of an idle
	// agent's CPU). When every slot for samples kept raw is taken (the next would stay cut
	// short), four times a second at first (raw_wait_ns).
	const int64_t since_drain = now - d.last_drain_ns;
	const bool raw_full = d.unwinding() && __atomic_load_n(&d.skel->bss->raw_claimed[d.skel->bss->generation & 1],
							      __ATOMIC_RELAXED) >= RAW_SLOTS;
	if (!raw_full && since_drain >= d.raw_wait_ns)
		d.raw_wait_ns = 250000000;
	if (raw_full && since_drain >= d.raw_wait_ns) {
		d.raw_wait_ns = std::min<int64_t>(d.raw_wait_ns * 2, 4000000000);
		d.drains++;
		return d.flip_and_drain();
	}
	if (since_drain < 1000000000 || now - d.last_fill_check_ns < 100000000)
		return std::nullopt;
	d.last_fill_check_ns = now;
	// The generation in use counts from its last drain.
	const sample_stats t = d.tally(d.skel->bss->generation);
	if (!maps_filling(t, d.sizes, now - d.last_drain_ns))
		return std::nullopt;
	d.drains++;
	return d.flip_and_drain();
}

bool Sampler::can_cut() const
{
	return impl_->can_drain();
}

RawProfile Sampler::cut()
{
	return impl_->flip_and_drain();
}

uint64_t Sampler::drains() const
{
	return impl_->drains;
}

// --off-cpu, once detached: the threads still off the CPU count their time until now, through
// a task iterator run once. Says so when they cannot.
void Sampler::Impl::end_off_cpu() const
{
	bpf_program *program = (sampling ? *sampling : *skel).progs.off_cpu_end;
	Link link(bpf_program__attach_iter(program, nullptr));
	UniqueFd iter(link ? bpf_iter_create(bpf_link__fd(link.get())) : -1);
	char text[64];
	ssize_t got = iter ? 0 : -1;
	while (iter && (got = ::read(iter.get(), text, sizeof(text))) > 0)
		;
	if (got < 0)
		diagnostics::say("threads still off the CPU at the end are left out (the kernel's task iterator: %s)",
				 std::strerror(errno));
}

RawProfile Sampler::read()
{
	Impl &d = *impl_;
	// Detached: once the programs still running are done, both generations are still.
	// The other generation was emptied by the drain that left it.
	d.wait_for_programs();
	if (d.options.off_cpu)
		d.end_off_cpu();
	return d.drain(d.skel->bss->generation);
}
