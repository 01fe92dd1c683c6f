// SPDX-License-Identifier: GPL-2.0
/* profile.bpf.c: the per-sample path. Filter, take the stacks, count the key, all in the
 * kernel: nothing crosses to user space per sample. User space reads the maps when it
 * drains a generation (a window's end, maps filling) and at the end; the rare sample kept
 * raw (unwind/raw.bpf.h) and what a language runtime's walk met for the first time (a
 * code object) wait in maps of their own for the same reads. And the hooks of a process's
 * life: exec and exit, one program each, calling the table walk's half and the runtimes'.
 * --off-cpu's programs are offcpu/offcpu.bpf.h's, counted in the same maps
 * (sampler/counts.bpf.h). */
#include "base/kernel.bpf.h"
/* The table walk, the maps it reads, how the kernel keeps processes' mappings, and the
 * language runtimes' walks it calls (runtimes/runtimes.bpf.h). */
#include "unwind/unwind.bpf.h"
/* Walks stopped at code whose table is being built, kept raw for user space to finish. */
#include "unwind/raw.bpf.h"
/* Which tasks are wanted, the generations' maps, storing stacks and adding to keys. */
#include "sampler/counts.bpf.h"
/* Each CPU's budget: what comes once its programs took their share of it is dropped. */
#include "sampler/budget.bpf.h"

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

/* The key of this sample's process (and thread: wanted_task's key_tid) and comm, with no
 * stack yet. */
static __always_inline void start_key(struct stack_key *key, __u32 tgid, __u32 tid)
{
	key->pid = tgid;
	key->tid = tid;
	key->user_stack_id = NO_STACK;
	key->kernel_stack_id = NO_STACK;
	key->waker_user_stack_id = NO_STACK;
	key->waker_kernel_stack_id = NO_STACK;
	bpf_get_current_comm(&key->comm, sizeof(key->comm));
}

/* Counts one sample under key in `counts`. */
static __always_inline int count_key(void *counts, struct stack_key *key, struct sample_stats *st)
{
	return add_to_key(counts, key, 1, 0, st);
}

/* Takes the stacks into `stacks` and counts the key in `counts`: the maps of one
 * generation, constants in each of the two inlined copies. */
static __always_inline int count_sample(void *ctx, void *stacks, void *counts, __u32 tgid, __u32 tid,
					struct sample_stats *st)
{
	struct stack_key key = {};

	start_key(&key, tgid, tid);
	if (kernel_stacks && !take_stack(ctx, stacks, 0, &key.kernel_stack_id, st))
		return 0;
	if (user_stacks && !take_stack(ctx, stacks, BPF_F_USER_STACK, &key.user_stack_id, st))
		return 0;

	return count_key(counts, &key, st);
}

/* ---- --unwind auto|dwarf: stacks kept by content, user stacks walked from tables ---- */


#if defined(__TARGET_ARCH_x86)


/* The sample's stacks as taken, before they are stored: each one's frames are in its
 * scratch slot ([0] kernel, [1] user), n of them (0: none), with their hash. */
struct taken_stacks {
	__u32 kernel_n, user_n;
	struct stack_hash kernel_hash, user_hash;
	__u32 raw; /* kept raw in this slot of raw_samples, + 1; 0: not */
};

/* The sample's kernel stack, into scratch[0], hashed into h: its frames, 0 for none. A
 * global function, verified once on its own: inlined, each count of frames its loop can end
 * with was a state of its own to the verifier, and the rest of the sample's path (both
 * generations' count_unwound) was checked again for each. */
__noinline __u32 sample_kernel_stack(struct bpf_perf_event_data *ctx, struct stack_hash *h)
{
	struct stored_stack *frames;
	__u32 which = 0;
	long n;

	if (!h)
		return 0;
	frames = bpf_map_lookup_elem(&scratch, &which);
	if (!frames)
		return 0;
	n = bpf_get_stack(ctx, frames->ip, UNWIND_MAX_DEPTH * sizeof(__u64), 0);
	return hash_kernel_stack(frames->ip, n, h);
}

/* Kernel stack by bpf_get_stack, user stack by the table walk. Outside the two inlined
 * copies of each generation's maps: the verifier checks the walk once. */
static __always_inline void take_stacks(struct bpf_perf_event_data *ctx, __u32 gen, __u32 tgid,
					struct sample_stats *st, struct taken_stacks *taken)
{
	struct raw_resume resume = {};

	/* The walk first: the verifier then follows what it leaves through no more than the
	 * kernel stack's few lines, rather than every count of kernel frames through the walk. */
	if (user_stacks) {
		taken->user_n = walk_user_stack(ctx, tgid, st, &taken->user_hash, &resume, false);
		/* Stopped at code whose table is being built: kept raw while a slot is free,
		 * else counted cut short as it is. */
		if (resume.n && !(taken->raw = keep_raw(gen, &resume)))
			st->unwound_pending++;
	}
	if (kernel_stacks)
		taken->kernel_n = sample_kernel_stack(ctx, &taken->kernel_hash);
}

/* A sample kept raw is whole once its key (kernel stack stored) is in: not counted in the
 * counts map, its process marked sampled all the same (user space keeps its mappings).
 * Global, as keep_raw: checked once, not in each generation's copy of count_unwound. */
__noinline int keep_raw_key(struct stack_key *key, __u32 slot, struct sample_stats *st)
{
	struct raw_sample *raw = bpf_map_lookup_elem(&raw_samples, &slot);
	__u8 one = 1;

	if (!key || !st)
		return 0;
	if (!raw) {
		st->unwound_pending++;
		st->lost_stack_other++;
		return 0;
	}
	raw->key = *key;
	raw->complete = 1;
	st->unwound_raw++;
	bpf_map_update_elem(&sampled_pids, &key->pid, &one, BPF_ANY);
	return 0;
}

/* Stores the stacks taken in `store` and counts the key in `counts`: the maps of one
 * generation (`generation_now`), constants in each of the two inlined copies. */
static __always_inline int count_unwound(void *store, void *counts, __u32 generation_now, __u32 tgid, __u32 tid,
					 struct taken_stacks *taken, struct sample_stats *st)
{
	struct stack_key key = {};
	struct stored_stack *frames;
	__u32 which;

	start_key(&key, tgid, tid);
	if (taken->kernel_n) {
		which = 0;
		frames = bpf_map_lookup_elem(&scratch, &which);
		if (!frames || !store_stack(store, generation_now, frames, taken->kernel_n, &taken->kernel_hash,
					    &key.kernel_stack_id, st)) {
			if (taken->raw) /* lost (counted so): its user stack as waiting, like any */
				st->unwound_pending++;
			return 0;
		}
	}
	if (taken->raw)
		return keep_raw_key(&key, taken->raw - 1, st);
	if (taken->user_n) {
		which = 1;
		frames = bpf_map_lookup_elem(&scratch, &which);
		if (!frames || !store_stack(store, generation_now, frames, taken->user_n, &taken->user_hash,
					    &key.user_stack_id, st))
			return 0;
	}
	return count_key(counts, &key, st);
}

#endif /* __TARGET_ARCH_x86 */


/* The filters, then the per-CPU tally of the sample's generation: null when the sample is
 * not wanted. (Before the budget: a sample the filters drop costs next to nothing.) */
static __always_inline struct sample_stats *wanted_sample(__u32 gen, __u32 *tgid_out, __u32 *tid_out)
{
	struct sample_stats *st;

	if (!wanted_task(tgid_out, tid_out))
		return NULL;
	st = tally_of(gen);
	if (!st)
		return NULL;
	st->seen++;
	return st;
}

/* A sample's whole path, written once for both programs: `tables` is a constant in each,
 * so each holds its own way of taking stacks and nothing of the other. Two programs
 * rather than one that branches on unwind_mode: the verifier would drop the branch not
 * taken, but the load of unwind_mode and the jump would stay in every sample. */
static __always_inline int sample(struct bpf_perf_event_data *ctx, bool tables)
{
	/* Read once: the tally and the maps of one sample are of the same generation. */
	__u32 generation_now = generation, gen = generation_now & 1;
	struct sample_stats *st;
	struct budget_state *b;
	__u32 tgid, tid;
	__u64 now;

	st = wanted_sample(gen, &tgid, &tid);
	if (!st || !budget_take(st, &now, &b))
		return 0;
#if defined(__TARGET_ARCH_x86)
	if (tables) {
		struct taken_stacks taken = {};

		take_stacks(ctx, gen, tgid, st, &taken);
		if (gen)
			count_unwound(&store1, &counts1, generation_now, tgid, tid, &taken, st);
		else
			count_unwound(&store0, &counts0, generation_now, tgid, tid, &taken, st);
		budget_end(b, now);
		return 0;
	}
#endif
	if (gen)
		count_sample(ctx, &stacks1, &counts1, tgid, tid, st);
	else
		count_sample(ctx, &stacks0, &counts0, tgid, tid, st);
	budget_end(b, now);
	return 0;
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, false);
}

#if defined(__TARGET_ARCH_x86)
SEC("perf_event")
int do_sample_unwind(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, true);
}

/* ---- A process's life, for the walks: loaded where the kernel follows processes ---- */

/* An exec: a new image, whose mappings the table walk starts again and which the runtimes'
 * walks classify again. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!follows())
		return 0;
	unwind_exec(tgid);
	runtimes_forget(tgid);
	return 0;
}

/* The last thread of a process exits: what the walks kept of it goes (its pid may come back
 * as another process's). task->signal by BPF_CORE_READ, as in describe_mapping: a quicker
 * check at load. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;

	if (!follows() || BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	unwind_exit(tgid);
	runtimes_forget(tgid);
	return 0;
}

#endif

/* Time off the CPU (--off-cpu), counted in the same generations. */
#include "offcpu/offcpu.bpf.h"

char LICENSE[] SEC("license") = "GPL";
