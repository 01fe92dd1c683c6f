// SPDX-License-Identifier: GPL-2.0
/* profile.bpf.c: the per-sample path. Filter, take the stacks, count the key; nothing
 * leaves the kernel until user space reads the maps at the end. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "profile.h"

#define EFAULT 14
#define ENOMEM 12
#define EEXIST 17

const volatile bool kernel_stacks = true;
const volatile bool user_stacks = true;
const volatile bool include_idle = false;
const volatile bool filter_pids = false;
const volatile bool filter_tids = false;

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
/* Samples by (process, comm, user stack id, kernel stack id). */
#define COUNTS(name)                                                          \
	struct {                                                              \
		__uint(type, BPF_MAP_TYPE_HASH);                              \
		__type(key, struct stack_key);                                \
		__type(value, struct stack_count);                            \
		__uint(max_entries, 40960);                                   \
		__uint(map_flags, BPF_F_NO_PREALLOC);                         \
	} name SEC(".maps")

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

/* The processes that have at least one counts entry: user space keeps what it learned of
 * an exited process only if it is here. Never fuller than counts (one pid per key at most). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 40960);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} sampled_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct sample_stats);
	__uint(max_entries, 1);
} stats SEC(".maps");

/* Returns true when the stack is usable (stored, or absent as -EFAULT means);
 * false when the sample must be dropped, after counting the cause. */
static __always_inline bool take_stack(void *ctx, void *stacks, __u64 flags, __s32 *id, struct sample_stats *st)
{
	long ret = bpf_get_stackid(ctx, stacks, flags);

	if (ret >= 0) {
		*id = ret;
		return true;
	}
	if (ret == -EFAULT) /* no such stack: user-mode sample, kernel thread */
		return true;
	if (ret == -EEXIST)
		st->lost_stack_collision++;
	else if (ret == -ENOMEM)
		st->lost_stack_full++;
	else
		st->lost_stack_other++;
	return false;
}

/* Takes the stacks into `stacks` and counts the key in `counts`: the maps of one
 * generation, constants in each of the two inlined copies. */
static __always_inline int count_sample(void *ctx, void *stacks, void *counts, __u32 tgid,
					struct sample_stats *st)
{
	struct stack_key key = {};
	struct stack_count *count, first;
	long err;

	key.pid = tgid;
	key.user_stack_id = NO_STACK;
	key.kernel_stack_id = NO_STACK;
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	if (kernel_stacks && !take_stack(ctx, stacks, 0, &key.kernel_stack_id, st))
		return 0;
	if (user_stacks && !take_stack(ctx, stacks, BPF_F_USER_STACK, &key.user_stack_id, st))
		return 0;

	count = bpf_map_lookup_elem(counts, &key);
	if (count) {
		__sync_fetch_and_add(&count->count, 1);
		return 0;
	}
	first.count = 1;
	first.first_ns = bpf_ktime_get_ns();
	err = bpf_map_update_elem(counts, &key, &first, BPF_NOEXIST);
	if (!err) {
		__u8 one = 1;

		st->new_keys++;
		bpf_map_update_elem(&sampled_pids, &tgid, &one, BPF_ANY);
		return 0;
	}
	if (err == -EEXIST) { /* another CPU inserted the same key just now */
		count = bpf_map_lookup_elem(counts, &key);
		if (count) {
			__sync_fetch_and_add(&count->count, 1);
			return 0;
		}
	}
	/* Full (-E2BIG), or out of memory for a new entry: either way the counts map is what
	 * a larger --hash-storage-size would fix. */
	st->lost_counts_full++;
	return 0;
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = id;
	struct sample_stats *st;
	__u32 zero = 0;

	if (tid == 0 && !include_idle)
		return 0;
	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return 0;
	if (filter_tids && !bpf_map_lookup_elem(&tids, &tid))
		return 0;

	/* A per-CPU array: the verifier inlines this lookup, and no other CPU shares the line. */
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return 0;
	st->seen++;

	if (generation & 1)
		return count_sample(ctx, &stacks1, &counts1, tgid, st);
	return count_sample(ctx, &stacks0, &counts0, tgid, st);
}

char LICENSE[] SEC("license") = "GPL";
