// SPDX-License-Identifier: GPL-2.0
/* profile.bpf.c: the per-sample path. Filter, take the stacks, count the key, all in the
 * kernel: nothing crosses to user space per sample. User space reads the maps when it
 * drains a generation (a window's end, maps filling) and at the end; the rare sample kept
 * raw (unwind/raw.bpf.h) and code objects met for the first time (python/python.bpf.h)
 * wait in maps of their own for the same reads. And the hooks of a process's life: exec
 * and exit, one program each, calling the table walk's half and the Python walk's. */
#include "profile.bpf.h"
/* CPython's frames, which the table walk shows in place of the interpreter's. */
#include "python/python.bpf.h"
/* The table walk, the maps it reads and how the kernel keeps processes' mappings. */
#include "unwind/unwind.bpf.h"
/* Walks stopped at code whose table is being built, kept raw for user space to finish. */
#include "unwind/raw.bpf.h"

const volatile bool kernel_stacks = true;
const volatile bool user_stacks = true;
const volatile bool include_idle = false;
const volatile bool filter_pids = false;
const volatile bool filter_tids = false;
const volatile bool filter_cgroups = false;

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

/* The processes that have at least one counts entry: user space keeps what it learned of
 * an exited process only if it is here. Never fuller than counts (one pid per key at most). */
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

/* The key of this sample's process and comm, with no stack yet. */
static __always_inline void start_key(struct stack_key *key, __u32 tgid)
{
	key->pid = tgid;
	key->user_stack_id = NO_STACK;
	key->kernel_stack_id = NO_STACK;
	bpf_get_current_comm(&key->comm, sizeof(key->comm));
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
		__sync_fetch_and_add(&count->count, amount);
		if (blocks)
			__sync_fetch_and_add(&count->blocks, blocks);
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
		return 0;
	}
	if (err == -EEXIST) { /* another CPU inserted the same key just now */
		count = bpf_map_lookup_elem(counts, key);
		if (count) {
			__sync_fetch_and_add(&count->count, amount);
			if (blocks)
				__sync_fetch_and_add(&count->blocks, blocks);
			return 0;
		}
	}
	/* Full (-E2BIG), or out of memory for a new entry: either way the counts map is what
	 * a larger --hash-storage-size would fix. */
	st->lost_counts_full++;
	return 0;
}

/* Counts one sample under key in `counts`. */
static __always_inline int count_key(void *counts, struct stack_key *key, struct sample_stats *st)
{
	return add_to_key(counts, key, 1, 0, st);
}

/* Takes the stacks into `stacks` and counts the key in `counts`: the maps of one
 * generation, constants in each of the two inlined copies. */
static __always_inline int count_sample(void *ctx, void *stacks, void *counts, __u32 tgid,
					struct sample_stats *st)
{
	struct stack_key key = {};

	start_key(&key, tgid);
	if (kernel_stacks && !take_stack(ctx, stacks, 0, &key.kernel_stack_id, st))
		return 0;
	if (user_stacks && !take_stack(ctx, stacks, BPF_F_USER_STACK, &key.user_stack_id, st))
		return 0;

	return count_key(counts, &key, st);
}

/* ---- --unwind auto|dwarf: stacks kept by content, user stacks walked from tables ---- */

/* Stacks by content (their hash) -> the stack and the id the counts key names it by. A
 * stack is stored once. Preallocated: entries of a kilobyte come from an allocator that
 * keeps only a few per CPU between refills, and a burst of new stacks in one interrupt
 * found it empty. The value size is set at load to hold depth + 1 frames. */
#define STORE(name)                                                           \
	struct {                                                              \
		__uint(type, BPF_MAP_TYPE_HASH);                              \
		__type(key, struct stack_hash);                               \
		__type(value, struct stored_stack);                           \
		__uint(max_entries, 16384);                                   \
	} name SEC(".maps")
STORE(store0);
STORE(store1);

/* Ids for new stacks in the stores; both generations draw from it, so an id is never
 * reused within a run (user space maps them to its own when it drains). */
__u32 next_stack_id = 0;

/* Stores the n frames of `stack` under their hash `h` (their number mixed in last) and sets
 * *id to the stack's id; false, after counting the cause, when the store is full. */
static __always_inline bool store_stack(void *store, struct stored_stack *stack, __u32 n, struct stack_hash *h,
					__s32 *id, struct sample_stats *st)
{
	struct stored_stack *known;
	long err;

	hash_frame(h, n);
	known = bpf_map_lookup_elem(store, h);
	if (known) {
		*id = known->id;
		return true;
	}
	stack->id = __sync_fetch_and_add(&next_stack_id, 1) & 0x7fffffff;
	stack->n = n;
	err = bpf_map_update_elem(store, h, stack, BPF_NOEXIST);
	if (!err) {
		*id = stack->id;
		return true;
	}
	if (err == -EEXIST) { /* another CPU stored the same stack just now */
		known = bpf_map_lookup_elem(store, h);
		if (known) {
			*id = known->id;
			return true;
		}
	}
	st->lost_stack_full++;
	return false;
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

/* The sample's stacks as taken, before they are stored: each one's frames are in its
 * scratch slot ([0] kernel, [1] user), n of them (0: none), with their hash. */
struct taken_stacks {
	__u32 kernel_n, user_n;
	struct stack_hash kernel_hash, user_hash;
	__u32 raw; /* kept raw in this slot of raw_samples, + 1; 0: not */
};

/* Kernel stack by bpf_get_stack, user stack by the table walk. Outside the two inlined
 * copies of each generation's maps: the verifier checks the walk once. */
static __always_inline void take_stacks(struct bpf_perf_event_data *ctx, __u32 gen, __u32 tgid,
					struct sample_stats *st, struct taken_stacks *taken)
{
	struct raw_resume resume = {};
	struct stored_stack *frames;
	__u32 which = 0;
	long n;

	/* The walk first: the verifier then follows what it leaves through no more than the
	 * kernel stack's few lines, rather than every count of kernel frames through the walk. */
	if (user_stacks) {
		taken->user_n = walk_user_stack(ctx, tgid, st, &taken->user_hash, &resume);
		/* Stopped at code whose table is being built: kept raw while a slot is free,
		 * else counted cut short as it is. */
		if (resume.n && !(taken->raw = keep_raw(gen, &resume)))
			st->unwound_pending++;
	}
	if (kernel_stacks) {
		frames = bpf_map_lookup_elem(&scratch, &which);
		if (!frames)
			return;
		n = bpf_get_stack(ctx, frames->ip, UNWIND_MAX_DEPTH * sizeof(__u64), 0);
		taken->kernel_n = hash_kernel_stack(frames->ip, n, &taken->kernel_hash);
	}
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
 * generation, constants in each of the two inlined copies. */
static __always_inline int count_unwound(void *store, void *counts, __u32 tgid, struct taken_stacks *taken,
					 struct sample_stats *st)
{
	struct stack_key key = {};
	struct stored_stack *frames;
	__u32 which;

	start_key(&key, tgid);
	if (taken->kernel_n) {
		which = 0;
		frames = bpf_map_lookup_elem(&scratch, &which);
		if (!frames || !store_stack(store, frames, taken->kernel_n, &taken->kernel_hash, &key.kernel_stack_id, st)) {
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
		if (!frames || !store_stack(store, frames, taken->user_n, &taken->user_hash, &key.user_stack_id, st))
			return 0;
	}
	return count_key(counts, &key, st);
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

/* The number of pid (a task's struct pid) in profile's PID namespace, by CO-RE reads:
 * the namespaces a pid has a number in are levels 0 (the initial one) to pid->level, and
 * profile's is found at its level by its inode. A nested namespace is seen by no helper
 * (bpf_get_ns_current_pid_tgid answers only for tasks directly in the one namespace), so
 * the levels are walked, the task's own first. Writes *level; false when the task is
 * outside the namespace (in an ancestor, or a sibling). */
static __always_inline bool pid_in_namespace(struct pid *pid, __u32 *nr, __u32 *level)
{
	int top = BPF_CORE_READ(pid, level);

	for (int i = 0; i <= 32; i++) { /* MAX_PID_NS_LEVEL */
		int at = top - i;
		struct upid upid;

		if (at < 0)
			return false;
		if (bpf_core_read(&upid, sizeof(upid), &pid->numbers[at]))
			return false;
		if (BPF_CORE_READ(upid.ns, ns.inum) == pid_namespace) {
			*nr = upid.nr;
			*level = at;
			return true;
		}
	}
	return false;
}

/* The current task's process and thread ids in profile's PID namespace; false when it is
 * not in it. Only run with pid_namespace set. */
static __always_inline bool ids_in_namespace(__u32 *tgid, __u32 *tid)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct pid *leader = BPF_CORE_READ(task, group_leader, thread_pid);
	__u32 level, nr;

	if (!pid_in_namespace(BPF_CORE_READ(task, thread_pid), tid, &level))
		return false;
	/* Every thread of a process is in the same namespaces. */
	if (bpf_core_read(&nr, sizeof(nr), &leader->numbers[level].nr))
		return false;
	*tgid = nr;
	return true;
}

/* The filters every program applies to the current task (-I, -p, -L, --cgroup): false
 * when it is not wanted. Writes its process id, in profile's PID namespace. */
static __always_inline bool wanted_task(__u32 *tgid_out)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = id;

	if (tid == 0 && !include_idle)
		return false;
	if (pid_namespace && tid != 0 && !ids_in_namespace(&tgid, &tid))
		return false;
	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return false;
	if (filter_tids && !bpf_map_lookup_elem(&tids, &tid))
		return false;
	if (filter_cgroups && !in_cgroups())
		return false;
	*tgid_out = tgid;
	return true;
}

/* The per-CPU tally of a generation. A per-CPU array: the verifier inlines this lookup,
 * and no other CPU shares the line. */
static __always_inline struct sample_stats *tally_of(__u32 gen)
{
	return bpf_map_lookup_elem(&stats, &gen);
}

/* The filters, then the per-CPU tally of the sample's generation: null when the sample is
 * not wanted. */
static __always_inline struct sample_stats *wanted_sample(__u32 gen, __u32 *tgid_out)
{
	struct sample_stats *st;

	if (!wanted_task(tgid_out))
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
	__u32 gen = generation & 1;
	struct sample_stats *st;
	__u32 tgid;

	st = wanted_sample(gen, &tgid);
	if (!st)
		return 0;
#if defined(__TARGET_ARCH_x86)
	if (tables) {
		struct taken_stacks taken = {};

		take_stacks(ctx, gen, tgid, st, &taken);
		if (gen)
			return count_unwound(&store1, &counts1, tgid, &taken, st);
		return count_unwound(&store0, &counts0, tgid, &taken, st);
	}
#endif
	if (gen)
		return count_sample(ctx, &stacks1, &counts1, tgid, st);
	return count_sample(ctx, &stacks0, &counts0, tgid, st);
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

/* An exec: a new image, whose mappings the table walk starts again and which the Python
 * walk classifies again. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!follows())
		return 0;
	unwind_exec(tgid);
	python_forget(tgid);
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
	python_forget(tgid);
	return 0;
}

/* ---- --off-cpu: time off the CPU, summed per stack ---- */

/* --min-block and --max-block in nanoseconds (BCC offcputime's -m and -M): a time off the
 * CPU outside them is not counted. */
const volatile __u64 min_block_ns = 0;
const volatile __u64 max_block_ns = ~0ULL;
/* -C: only the times off the CPU that begin on this CPU; -1: every CPU. */
const volatile __s32 only_cpu = -1;

#define TASK_RUNNING 0
#define TASK_DEAD 0x80

/* The scheduler's text (the __sched functions: __schedule, schedule, schedule_timeout...),
 * from kallsyms at load; 0 where kallsyms hides it. */
extern const void __sched_text_start __ksym __weak;
extern const void __sched_text_end __ksym __weak;
/* How many frames a kernel stack taken at sched_switch has above __schedule: the
 * tracepoint's own path (this program, bpf_trace_run4, __traceiter_sched_switch), the same
 * at every switch. Found at the first one; ~0 until then. */
__u32 switch_frames = ~0u;

/* The frames above the scheduler's text in the kernel stack just taken, n of them. */
static __always_inline __u32 frames_above_schedule(__u64 *ip, long n)
{
	__u64 start = (__u64)&__sched_text_start, end = (__u64)&__sched_text_end;

	for (__u32 i = 0; i < 8 && i < n; i++)
		if (ip[i] >= start && ip[i] < end)
			return i;
	return 0;
}

/* A thread off the CPU: since when, in what state, and the stacks it left with, in the
 * thread's own storage (freed with the thread). Its stacks go into a generation's store
 * only when it runs again, in that moment's generation: a time off the CPU that spans a
 * drain is counted whole, in the batch after it. */
struct off_cpu_thread {
	__u64 start_ns; /* when it left the CPU; 0: on a CPU, or not followed */
	__u32 tgid;
	__u32 state; /* THREAD_RUNNABLE or THREAD_BLOCKED */
	char comm[TASK_COMM_LEN];
	struct stack_hash kernel_hash, user_hash; /* of the frames, before their number */
	struct stored_stack kernel, user;         /* n 0: none */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct off_cpu_thread);
} off_cpu_threads SEC(".maps");

/* Stores the thread's stacks in `store` and adds its time off the CPU, ns, to its key in
 * `counts`: the maps of one generation, constants in each of the two inlined copies. */
static __always_inline void count_off_cpu(void *store, void *counts, struct off_cpu_thread *t, __u64 ns,
					  struct sample_stats *st)
{
	struct stack_key key = {};
	struct stack_hash h;

	key.pid = t->tgid;
	key.state = t->state;
	key.user_stack_id = NO_STACK;
	key.kernel_stack_id = NO_STACK;
	__builtin_memcpy(key.comm, t->comm, sizeof(key.comm));
	if (t->kernel.n) {
		h = t->kernel_hash;
		if (!store_stack(store, &t->kernel, t->kernel.n, &h, &key.kernel_stack_id, st))
			return;
	}
	if (t->user.n) {
		h = t->user_hash;
		if (!store_stack(store, &t->user, t->user.n, &h, &key.user_stack_id, st))
			return;
	}
	add_to_key(counts, &key, ns, 1, st);
}

/* The thread runs again, or the run ends with it off the CPU: its time off the CPU until
 * now is counted, when --min-block and --max-block let it. A global function: the
 * verifier checks it once, on its own. */
__noinline int end_off_cpu(struct off_cpu_thread *t, __u64 now)
{
	/* Read once: the tally and the maps are of the same generation. */
	__u32 gen = generation & 1;
	struct sample_stats *st;
	__u64 start, ns;

	if (!t)
		return 0;
	start = t->start_ns;
	t->start_ns = 0;
	if (!start || now <= start)
		return 0;
	ns = now - start;
	if (ns < min_block_ns || ns > max_block_ns)
		return 0;
	st = tally_of(gen);
	if (!st)
		return 0;
	st->seen++;
	if (gen)
		count_off_cpu(&store1, &counts1, t, ns, st);
	else
		count_off_cpu(&store0, &counts0, t, ns, st);
	return 0;
}

/* The current thread, `prev`, leaves the CPU in `state`: its kernel stack, its user stack
 * walked as a sample's is, and the time, into its storage. */
static __always_inline void start_off_cpu(void *ctx, struct task_struct *prev, __u32 state, __u64 now)
{
	struct raw_resume resume = {};
	struct off_cpu_thread *t;
	struct stored_stack *frames;
	struct sample_stats *st;
	struct stack_hash hash;
	__u32 tgid, user = 1;
	long n;

	if (!wanted_task(&tgid))
		return;
	if (only_cpu >= 0 && bpf_get_smp_processor_id() != only_cpu)
		return;
	st = tally_of(generation & 1);
	if (!st)
		return;
	t = bpf_task_storage_get(&off_cpu_threads, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		st->seen++;
		st->lost_thread_start++;
		return;
	}
	t->tgid = tgid;
	t->state = state;
	bpf_get_current_comm(t->comm, sizeof(t->comm));
	t->kernel.n = 0;
	t->user.n = 0;
	if (kernel_stacks) {
		__u32 skip = switch_frames;

		if (skip == ~0u) {
			n = bpf_get_stack(ctx, t->kernel.ip, UNWIND_MAX_DEPTH * sizeof(__u64), 0);
			skip = switch_frames = frames_above_schedule(t->kernel.ip, n / sizeof(__u64));
		}
		n = bpf_get_stack(ctx, t->kernel.ip, UNWIND_MAX_DEPTH * sizeof(__u64), skip & BPF_F_SKIP_FIELD_MASK);
		t->kernel.n = hash_kernel_stack(t->kernel.ip, n, &t->kernel_hash);
	}
	if (user_stacks) {
		n = walk_user_stack((struct bpf_perf_event_data *)0, tgid, st, &hash, &resume);
		/* Stopped at code whose table is being built: nothing is kept raw off the CPU. */
		if (resume.n)
			st->unwound_pending++;
		frames = bpf_map_lookup_elem(&scratch, &user);
		if (n > 0 && frames) {
			if (n > UNWIND_MAX_DEPTH + 1)
				n = UNWIND_MAX_DEPTH + 1;
			if (!bpf_probe_read_kernel(t->user.ip, n * sizeof(__u64), frames->ip)) {
				t->user_hash = hash;
				t->user.n = n;
			}
		}
	}
	t->start_ns = now;
}

/* Every context switch: the thread coming in ends its time off the CPU, the one going out
 * (unless it is exiting) begins one. Preempted, or yielding with nothing to wait for, it is
 * runnable; else blocked. */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	struct off_cpu_thread *t;

	if (next->pid) {
		t = bpf_task_storage_get(&off_cpu_threads, next, 0, 0);
		if (t && t->start_ns)
			end_off_cpu(t, now);
	}
	if (prev->pid == 0 || (prev_state & TASK_DEAD))
		return 0;
	start_off_cpu(ctx, prev, preempt || prev_state == TASK_RUNNING ? THREAD_RUNNABLE : THREAD_BLOCKED, now);
	return 0;
}

/* At the end of a run, once: the threads still off the CPU count their time until now. */
SEC("iter/task")
int off_cpu_end(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct off_cpu_thread *t;

	if (!task)
		return 0;
	t = bpf_task_storage_get(&off_cpu_threads, task, 0, 0);
	if (t && t->start_ns)
		end_off_cpu(t, bpf_ktime_get_ns());
	return 0;
}
#endif

char LICENSE[] SEC("license") = "GPL";
