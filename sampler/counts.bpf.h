/* sampler/counts.bpf.h: where the kernel side counts, for samples (profile.bpf.c) and
 * times off the CPU (offcpu/offcpu.bpf.h) alike: which tasks are wanted (the filters), the two
 * generations of stacks and counts the sampler drains in turn, storing a stack by its hash
 * and adding to a key. */
#ifndef SAMPLER_COUNTS_BPF_H
#define SAMPLER_COUNTS_BPF_H

#include "base/kernel.bpf.h"

const volatile bool kernel_stacks = true;
const volatile bool user_stacks = true;
const volatile bool include_idle = false;
const volatile bool filter_pids = false;
const volatile bool filter_tids = false;
const volatile bool filter_cgroups = false;
/* Counts keyed by thread too (stack_key.tid): an output that names each sample's thread. */
const volatile bool key_threads = false;

/* Which of the two sets of maps below samples go to. User space flips it and, once no
 * program can still be using the other set, moves that set's stacks and counts into its
 * own memory and empties it: a long run is not stopped by a full stack map (see
 * Sampler::drain). Read once per sample. */
volatile __u32 generation = 0;

/* Stacks by id, one set per generation. */
#define STACKS(name)                                                          \
	struct {                                                              \
		__uint(type, BPF_MAP_TYPE_STACK_TRACE);                       \
		__uint(key_size, sizeof(__u32));                              \
		__uint(value_size, DEFAULT_STACK_DEPTH * sizeof(__u64));     \
		__uint(max_entries, 16384);                                   \
	} name SEC(".maps")
/* A hash map of one generation (sizes are set at load). */
#define HASH(name, key_type, value_type, entries, flags)                      \
	struct {                                                              \
		__uint(type, BPF_MAP_TYPE_HASH);                              \
		__type(key, key_type);                                        \
		__type(value, value_type);                                    \
		__uint(max_entries, entries);                                 \
		__uint(map_flags, flags);                                     \
	} name SEC(".maps")
/* Samples by (process, comm, user stack id, kernel stack id). */
#define COUNTS(name) HASH(name, struct stack_key, struct stack_count, 40960, BPF_F_NO_PREALLOC)

STACKS(stacks0);
STACKS(stacks1);
COUNTS(counts0);
COUNTS(counts1);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1024);
} pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1024);
} tids SEC(".maps");

/* --cgroup's groups, one slot each (max_entries is their number, set at load). A task is
 * wanted when bpf_current_task_under_cgroup says it is in one of them or below: the kernel
 * answers from the task's cgroup v2 group and the group's ancestors array, in constant
 * time, and the map holds the groups themselves (opened by path), so no id can name
 * another group later. The other way, bpf_get_current_ancestor_cgroup_id at each level
 * against a hash of ids, takes a helper call and a lookup per level. Both helpers are
 * offered to perf_event programs (bpf_tracing_func_proto); this one since Linux 4.9. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1);
} cgroups SEC(".maps");

/* The processes that have at least one counts entry, or woke a thread of one (--wakers):
 * user space keeps what it learned of an exited process only if it is here. A key names
 * one pid, two with a waker; pids are far fewer than keys. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 40960);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} sampled_pids SEC(".maps");

/* The tally, one per generation like the maps: a sample is counted in the tally of the
 * generation it is stored in, so a drain's batch carries exactly its own samples' account
 * (the windows of --interval add up to the whole run). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct sample_stats);
	__uint(max_entries, 2);
} stats SEC(".maps");

/* Adds to a count found in the map. */
static __always_inline void add_to_count(struct stack_count *count, __u64 amount, __u64 blocks)
{
	__sync_fetch_and_add(&count->count, amount);
	if (blocks)
		__sync_fetch_and_add(&count->blocks, blocks);
}

/* Adds `amount` to key's count in `counts`: one sample, or (blocks 1) the nanoseconds of
 * one time off the CPU. */
static __always_inline int add_to_key(void *counts, struct stack_key *key, __u64 amount, __u64 blocks,
				      struct sample_stats *st)
{
	struct stack_count *count, first;
	long err;

	count = bpf_map_lookup_elem(counts, key);
	if (count) {
		add_to_count(count, amount, blocks);
		return 0;
	}
	first.count = amount;
	first.first_ns = bpf_ktime_get_ns();
	first.blocks = blocks;
	err = bpf_map_update_elem(counts, key, &first, BPF_NOEXIST);
	if (!err) {
		__u8 one = 1;

		st->new_keys++;
		bpf_map_update_elem(&sampled_pids, &key->pid, &one, BPF_ANY);
		if (key->woken)
			bpf_map_update_elem(&sampled_pids, &key->waker_pid, &one, BPF_ANY);
		return 0;
	}
	if (err == -EEXIST) { /* another CPU inserted the same key just now */
		count = bpf_map_lookup_elem(counts, key);
		if (count) {
			add_to_count(count, amount, blocks);
			return 0;
		}
	}
	/* Full (-E2BIG), or out of memory for a new entry: either way the counts map is what
	 * a larger --hash-storage-size would fix. */
	st->lost_counts_full++;
	return 0;
}

/* Stacks by content (their hash) -> the stack and the id the counts key names it by. A
 * stack is stored once. Preallocated: entries of a kilobyte come from an allocator that
 * keeps only a few per CPU between refills, and a burst of new stacks in one interrupt
 * found it empty. The value size is set at load to hold depth + 1 frames. */
#define STORE(name) HASH(name, struct stack_hash, struct stored_stack, 16384, 0)
STORE(store0);
STORE(store1);

/* Ids for new stacks in the stores; both generations draw from it, so an id is never
 * reused within a run (user space maps them to its own when it drains). */
__u32 next_stack_id = 0;

/* The ids of stacks this CPU found or stored lately, by hash: a profiler samples the same
 * stacks over and over, and most find their id here, with no lookup in the store (a hash
 * of the key and a search of its bucket, in memory no other sample touched lately).
 * Direct-mapped. An entry holds for the generation it was made in, by the full counter:
 * the store of that parity is emptied only after the counter has moved on. */
#define STACK_IDS_SHIFT 8
struct stack_ids {
	struct {
		struct stack_hash h;
		__u32 generation;
		__u32 id_plus_one; /* 0: empty */
	} entries[1 << STACK_IDS_SHIFT];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct stack_ids);
	__uint(max_entries, 1);
} stack_ids SEC(".maps");

/* Stores the n frames of `stack` under their hash `h` (their number mixed in last) in
 * `store`, generation `generation_now`'s, and sets *id to the stack's id; false, after
 * counting the cause, when the store is full. */
static __always_inline bool store_stack(void *store, __u32 generation_now, struct stored_stack *stack, __u32 n,
					struct stack_hash *h, __s32 *id, struct sample_stats *st)
{
	struct stored_stack *known;
	struct stack_ids *ids;
	__u32 zero = 0, slot;
	long err;

	hash_frame(h, n);
	slot = (h->a >> (64 - STACK_IDS_SHIFT)) & ((1 << STACK_IDS_SHIFT) - 1);
	ids = bpf_map_lookup_elem(&stack_ids, &zero);
	if (ids && ids->entries[slot].id_plus_one && ids->entries[slot].generation == generation_now &&
	    ids->entries[slot].h.a == h->a && ids->entries[slot].h.b == h->b) {
		*id = ids->entries[slot].id_plus_one - 1;
		return true;
	}
	known = bpf_map_lookup_elem(store, h);
	if (known) {
		*id = known->id;
		goto found;
	}
	stack->id = __sync_fetch_and_add(&next_stack_id, 1) & 0x7fffffff;
	stack->n = n;
	err = bpf_map_update_elem(store, h, stack, BPF_NOEXIST);
	if (!err) {
		*id = stack->id;
		goto found;
	}
	if (err == -EEXIST) { /* another CPU stored the same stack just now */
		known = bpf_map_lookup_elem(store, h);
		if (known) {
			*id = known->id;
			goto found;
		}
	}
	st->lost_stack_full++;
	return false;
found:
	if (ids) {
		ids->entries[slot].h = *h;
		ids->entries[slot].generation = generation_now;
		ids->entries[slot].id_plus_one = *id + 1;
	}
	return true;
}

#if defined(__TARGET_ARCH_x86)

/* The frames of a kernel stack bpf_get_stack returned (`got`: its bytes, or an error),
 * at most max_depth of them, hashed into h: their number, 0 for none. */
static __always_inline __u32 hash_kernel_stack(__u64 *ip, long got, struct stack_hash *h)
{
	long n;

	if (got <= 0)
		return 0;
	n = got / sizeof(__u64);
	if (n > max_depth)
		n = max_depth;
	hash_start(h);
	for (__u32 i = 0; i < UNWIND_MAX_DEPTH && i < n; i++)
		hash_frame(h, ip[i]);
	return n;
}

#endif /* __TARGET_ARCH_x86 */

/* True when the current task is in one of --cgroup's groups or below one. A slot past
 * the map's end ends the loop (-E2BIG). */
static __always_inline bool in_cgroups(void)
{
	for (__u32 i = 0; i < MAX_CGROUP_FILTERS; i++) {
		long under = bpf_current_task_under_cgroup(&cgroups, i);

		if (under == 1)
			return true;
		if (under < 0)
			return false;
	}
	return false;
}

/* The filters every program applies to the current task (-I, -p, -L, --cgroup): false
 * when it is not wanted. Writes its process id, in profile's PID namespace, and its thread
 * id for its key (stack_key.tid): 0 unless counts are keyed by thread. */
static __always_inline bool wanted_task(__u32 *tgid_out, __u32 *key_tid_out)
{
	__u32 tgid, tid;

	if (!current_ids(&tgid, &tid) || (tid == 0 && !include_idle))
		return false;
	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return false;
	if (filter_tids && !bpf_map_lookup_elem(&tids, &tid))
		return false;
	if (filter_cgroups && !in_cgroups())
		return false;
	*tgid_out = tgid;
	*key_tid_out = key_threads ? tid : 0;
	return true;
}

/* The per-CPU tally of a generation. A per-CPU array: the verifier inlines this lookup,
 * and no other CPU shares the line. */
static __always_inline struct sample_stats *tally_of(__u32 gen)
{
	return bpf_map_lookup_elem(&stats, &gen);
}

#endif /* SAMPLER_COUNTS_BPF_H */
