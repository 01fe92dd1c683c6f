/* offcpu/offcpu.bpf.h: --off-cpu, time off the CPU summed per stack, included by profile.bpf.c.
 * At sched_switch the thread leaving the CPU keeps its stacks and the time in its task
 * storage; when it runs again (or at the run's end, by a task iterator) the time is added
 * to its key in that moment's generation. Nothing of it loads without --off-cpu. */
#ifndef OFFCPU_OFFCPU_BPF_H
#define OFFCPU_OFFCPU_BPF_H

#include "base/kernel.bpf.h"
#include "sampler/counts.bpf.h"
#include "unwind/unwind.bpf.h"
#include "sampler/budget.bpf.h"

#if defined(__TARGET_ARCH_x86)

/* --min-block and --max-block in nanoseconds (BCC offcputime's -m and -M): a time off the
 * CPU outside them is not counted. */
const volatile __u64 min_block_ns = 0;
const volatile __u64 max_block_ns = ~0ULL;
/* -C: only the times off the CPU that begin on this CPU; -1: every CPU. */
const volatile __s32 only_cpu = -1;

#define TASK_RUNNING 0
#define TASK_DEAD 0x80

/* The scheduler's text (the __sched functions: __schedule, schedule, schedule_timeout...),
 * which user space reads from kallsyms before load; 0 where kallsyms hides it. (Typeless
 * __ksym externs would make libbpf parse all of /proc/kallsyms at every load, with or
 * without --off-cpu.) */
const volatile __u64 sched_text_start = 0;
const volatile __u64 sched_text_end = 0;
/* How many frames a kernel stack taken at sched_switch has above __schedule: the
 * tracepoint's own path (this program, bpf_trace_run4, __traceiter_sched_switch), the same
 * at every switch. Found at the first one; ~0 until then. */
__u32 switch_frames = ~0u;

/* --wakers: each blocked time is joined with the stacks of the thread that woke it, taken at
 * sched_waking, where the waker is the current task (as BCC offwaketime's try_to_wake_up). */
const volatile bool wakers = false;

/* try_to_wake_up, from kallsyms before load (its end: the next symbol's address): a
 * waker's kernel stack starts there. */
const volatile __u64 wake_up_start = 0;
const volatile __u64 wake_up_end = 0;
/* How many frames a kernel stack taken at sched_waking has above try_to_wake_up, found at
 * the first one as switch_frames is; ~0 until then. */
__u32 waking_frames = ~0u;

/* The first of a kernel stack's n frames (return addresses) in [start, end): how many
 * frames the tracepoint's own path put above it; 0 when none is. */
static __always_inline __u32 frames_above(__u64 *ip, long n, __u64 start, __u64 end)
{
	for (__u32 i = 0; i < 8 && i < n; i++)
		if (ip[i] > start && ip[i] < end)
			return i;
	return 0;
}

/* A thread's comm and kernel stack as taken, before it is stored. */
struct thread_stacks {
	char comm[TASK_COMM_LEN];
	struct stack_hash kernel_hash; /* of the frames, before their number */
	struct stored_stack kernel;    /* n 0: none */
};

/* A user stack as walked, before it is stored. */
struct user_stack {
	struct stack_hash hash;     /* of the frames, before their number */
	struct stored_stack frames; /* n 0: none */
};

/* A user stack a thread keeps, with what its walk read. */
struct kept_user_stack {
	struct user_stack stack;
	struct walk_reads reads;
};

/* The user stacks a thread had the last two times it did one thing (left the CPU, or woke
 * another), at[now] the last: a thread that does it again from either place, the same way,
 * is not walked again. A thread often has two: a server's read, and its write where the
 * woken reader preempts it. */
struct user_stacks {
	struct kept_user_stack at[2];
	__u32 now;
};

/* A thread off the CPU: since when, in what state, and the stacks it left with, in the
 * thread's own storage (freed with the thread). Its stacks go into a generation's store
 * only when it runs again, in that moment's generation: a time off the CPU that spans a
 * drain is counted whole, in the batch after it. With --wakers, the thread that woke it
 * and its stacks, kept the same way. */
struct off_cpu_thread {
	__u64 start_ns; /* when it left the CPU; 0: on a CPU, or not followed */
	__u32 tgid;
	__u32 state; /* THREAD_RUNNABLE or THREAD_BLOCKED */
	__u32 tid;   /* its key's (wanted_task's key_tid): 0 unless counts are keyed by thread */
	__u32 pad;
	struct thread_stacks left;
	struct user_stacks left_user; /* left_user.at[now], this time's */
	__u32 woken; /* 1: waker and waker_tgid are this time's */
	__u32 waker_tgid;
	struct thread_stacks waker;
	struct user_stack waker_user;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct off_cpu_thread);
} off_cpu_threads SEC(".maps");

/* --wakers: the user stacks of a thread when it woke others, in the waker's own storage. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct user_stacks);
} waker_threads SEC(".maps");

/* The tally a waker's user walk counts its steps in: a wake-up is no sample, and the run's
 * tally (stats) counts the walks of samples and of threads leaving the CPU only. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct sample_stats);
	__uint(max_entries, 1);
} waker_walks SEC(".maps");

/* Stores a thread's stacks in `store` and writes their ids; false when one could not be. */
static __always_inline bool store_thread_stacks(void *store, __u32 generation_now, struct thread_stacks *s,
						struct user_stack *u, __s32 *kernel_id, __s32 *user_id,
						struct sample_stats *st)
{
	struct stack_hash h;

	if (s->kernel.n) {
		h = s->kernel_hash;
		if (!store_stack(store, generation_now, &s->kernel, s->kernel.n, &h, kernel_id, st))
			return false;
	}
	if (u->frames.n) {
		h = u->hash;
		if (!store_stack(store, generation_now, &u->frames, u->frames.n, &h, user_id, st))
			return false;
	}
	return true;
}

/* Stores the thread's stacks (and its waker's) in `store` and adds its time off the CPU,
 * ns, to its key in `counts`: the maps of one generation, constants in each of the two
 * inlined copies. */
static __always_inline void count_off_cpu(void *store, void *counts, __u32 generation_now, struct off_cpu_thread *t,
					  __u64 ns, struct sample_stats *st)
{
	struct stack_key key = {};

	key.pid = t->tgid;
	key.tid = t->tid;
	key.state = t->state;
	key.user_stack_id = NO_STACK;
	key.kernel_stack_id = NO_STACK;
	key.waker_user_stack_id = NO_STACK;
	key.waker_kernel_stack_id = NO_STACK;
	__builtin_memcpy(key.comm, t->left.comm, sizeof(key.comm));
	if (!store_thread_stacks(store, generation_now, &t->left, &t->left_user.at[t->left_user.now & 1].stack,
				 &key.kernel_stack_id, &key.user_stack_id, st))
		return;
	if (wakers && t->woken) {
		key.woken = 1;
		key.waker_pid = t->waker_tgid;
		__builtin_memcpy(key.waker_comm, t->waker.comm, sizeof(key.waker_comm));
		if (!store_thread_stacks(store, generation_now, &t->waker, &t->waker_user, &key.waker_kernel_stack_id,
					 &key.waker_user_stack_id, st))
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
	__u32 generation_now = generation, gen = generation_now & 1;
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
		count_off_cpu(&store1, &counts1, generation_now, t, ns, st);
	else
		count_off_cpu(&store0, &counts0, generation_now, t, ns, st);
	return 0;
}

/* 1 when the current thread, leaving the CPU again, would walk to the same user stack as
 * last time (`last`, what that walk read): the same registers, the same words where the
 * walk read them, and its process's list of areas unchanged; else 0. A global function:
 * the verifier checks its loop once, not in each place that calls it. */
__noinline int same_user_stack(struct walk_reads *last, __u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct unwind_process *proc;
	struct pt_regs *regs;
	struct runtime_regs window = {}; /* only its window's bounds */
	struct stack_hash h;

	if (!last || !last->same_again || last->n > WALK_READS_MAX || !task->mm || (__u64)task->mm != last->mm)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (regs->ip != last->pc || regs->sp != last->sp || regs->bp != last->bp)
		return 0;
	proc = bpf_map_lookup_elem(&unwind_processes, &tgid);
	if (!proc || proc->seq != last->seq)
		return 0;
	/* Found to be a runtime's since (a runtime initialized): a walk now shows its frames. */
	if (!runtimes_none_in(tgid))
		return 0;
	/* The words, read through the stack window as the walk read them: most frames are near
	 * the one below, and one read serves several. */
	hash_start(&h);
	for (__u32 i = 0; i < WALK_READS_MAX && i < last->n; i++) {
		__u64 at = last->at[i] & ~1ULL, len = last->at[i] & 1 ? 16 : 8;
		__u64 words[2] = {};

		if (len == 16 ? runtime_stack_read(&window, at, words, 2) : runtime_stack_read(&window, at, words, 1))
			return 0;
		hash_frame(&h, words[0]);
		if (len == 16)
			hash_frame(&h, words[1]);
	}
	return h.a == last->values.a && h.b == last->values.b ? 1 : 0;
}

/* The current thread's comm and kernel stack, less `skip` frames of the tracepoint's path,
 * into s. */
static __always_inline void take_kernel_stack(void *ctx, __u32 skip, struct thread_stacks *s)
{
	long n;

	bpf_get_current_comm(s->comm, sizeof(s->comm));
	s->kernel.n = 0;
	if (kernel_stacks) {
		n = bpf_get_stack(ctx, s->kernel.ip, UNWIND_MAX_DEPTH * sizeof(__u64), skip & BPF_F_SKIP_FIELD_MASK);
		s->kernel.n = hash_kernel_stack(s->kernel.ip, n, &s->kernel_hash);
	}
}

/* The current thread's user stack, walked as a sample's is, into kept, with what the walk
 * read. */
static __always_inline void walk_thread_stack(__u32 tgid, struct sample_stats *st, struct kept_user_stack *kept)
{
	struct user_stack *u = &kept->stack;
	struct raw_resume resume = {};
	struct stored_stack *frames;
	struct walk_reads *walked;
	struct stack_hash hash;
	__u32 user = 1, zero = 0;
	long n;

	u->frames.n = 0;
	kept->reads.same_again = false;
	if (!user_stacks)
		return;
	n = walk_user_stack((struct bpf_perf_event_data *)0, tgid, st, &hash, &resume, true);
	/* Stopped at code whose table is being built: nothing is kept raw off the CPU. */
	if (resume.n)
		st->unwound_pending++;
	frames = bpf_map_lookup_elem(&scratch, &user);
	if (n <= 0 || !frames)
		return;
	if (n > UNWIND_MAX_DEPTH + 1)
		n = UNWIND_MAX_DEPTH + 1;
	if (bpf_probe_read_kernel(u->frames.ip, n * sizeof(__u64), frames->ip))
		return;
	u->hash = hash;
	u->frames.n = n;
	walked = bpf_map_lookup_elem(&walk_reads, &zero);
	if (walked && walked->same_again)
		kept->reads = *walked;
}

/* The current thread's user stack into us->at[us->now]: one of the last two, if the thread
 * is where it was then, the same way; else walked, in place of the older. */
static __always_inline struct user_stack *take_user_stack(struct user_stacks *us, __u32 tgid,
							  struct sample_stats *st)
{
	for (__u32 i = 0; i < 2; i++) {
		__u32 k = (us->now + i) & 1;

		if (us->at[k].stack.frames.n && same_user_stack(&us->at[k].reads, tgid)) {
			us->now = k;
			st->unwound_tables++;
			st->unwound_again++;
			return &us->at[k].stack;
		}
	}
	us->now = (us->now + 1) & 1;
	walk_thread_stack(tgid, st, &us->at[us->now & 1]);
	return &us->at[us->now & 1].stack;
}

/* How many frames of the tracepoint's path a kernel stack taken now has above the function
 * in [start, end): *found, once found at the first call; s->kernel.ip is its scratch. */
static __always_inline __u32 tracepoint_frames(void *ctx, __u32 *found, __u64 start, __u64 end,
					       struct thread_stacks *s)
{
	long n;

	if (*found == ~0u) {
		n = bpf_get_stack(ctx, s->kernel.ip, UNWIND_MAX_DEPTH * sizeof(__u64), 0);
		*found = frames_above(s->kernel.ip, n / sizeof(__u64), start, end);
	}
	return *found;
}

/* The tally of the current thread, leaving the CPU, when the filters (-p, -L, --cgroup, -C
 * for the CPU it leaves) follow it; null otherwise. */
static __always_inline struct sample_stats *leaving_tally(__u32 *tgid, __u32 *key_tid)
{
	if (!wanted_task(tgid, key_tid))
		return NULL;
	if (only_cpu >= 0 && bpf_get_smp_processor_id() != only_cpu)
		return NULL;
	return tally_of(generation & 1);
}

/* The current thread, `prev`, leaves the CPU in `state`: its kernel stack, its user stack
 * walked as a sample's is, and the time, into its storage. */
static __always_inline void start_off_cpu(void *ctx, struct task_struct *prev, __u32 state, __u64 now)
{
	struct off_cpu_thread *t;
	struct sample_stats *st;
	__u32 tgid, tid, skip = 0;

	st = leaving_tally(&tgid, &tid);
	if (!st)
		return;
	t = bpf_task_storage_get(&off_cpu_threads, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		st->seen++;
		st->lost_thread_start++;
		return;
	}
	t->tgid = tgid;
	t->tid = tid;
	t->state = state;
	t->woken = 0;
	if (kernel_stacks)
		skip = tracepoint_frames(ctx, &switch_frames, sched_text_start - 1, sched_text_end, &t->left);
	take_kernel_stack(ctx, skip, &t->left);
	if (user_stacks)
		take_user_stack(&t->left_user, tgid, st);
	t->start_ns = now;
}

/* Over the CPU budget, the current thread leaves the CPU unfollowed: that time off it is
 * counted lost, if the filters wanted it. */
static __always_inline void drop_off_cpu(void)
{
	struct sample_stats *st;
	__u32 tgid, tid;

	st = leaving_tally(&tgid, &tid);
	if (!st)
		return;
	st->seen++;
	st->lost_budget++;
}

/* --wakers: a thread wakes `p`. When p is blocked and followed, the waker (the current task,
 * whatever the filters say of it: the wake-up is p's) leaves its stacks in p's storage. */
SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	struct off_cpu_thread *t = bpf_task_storage_get(&off_cpu_threads, p, 0, 0);
	struct user_stacks *waker;
	struct task_struct *task;
	struct user_stack *u;
	__u32 tgid, tid, skip = 0, zero = 0;
	struct budget_state *b;
	struct sample_stats *st;
	__u64 now;

	if (!t || !t->start_ns || t->state != THREAD_BLOCKED || t->woken)
		return 0;
	st = bpf_map_lookup_elem(&waker_walks, &zero);
	if (!st)
		return 0;
	/* Over this CPU's budget: the time is counted all the same, with no waker. */
	if (!budget_take(st, &now, &b))
		return 0;
	/* A waker outside profile's PID namespace has no pid in it: 0, as the idle task. */
	if (!current_ids(&tgid, &tid))
		tgid = 0;
	if (kernel_stacks)
		skip = tracepoint_frames(ctx, &waking_frames, wake_up_start, wake_up_end, &t->waker);
	take_kernel_stack(ctx, skip, &t->waker);
	t->waker_user.frames.n = 0;
	task = bpf_get_current_task_btf();
	if (user_stacks && task->mm) {
		/* The waker's own storage keeps its last two: a writer wakes its reader from the
		 * same place, time after time. */
		/* No memory for it: the waker's kernel stack only (one inlined walk, not two). */
		waker = bpf_task_storage_get(&waker_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (waker) {
			u = take_user_stack(waker, tgid, st);
			bpf_probe_read_kernel(&t->waker_user, sizeof(t->waker_user), u);
		}
	}
	t->waker_tgid = tgid;
	t->woken = 1;
	budget_end(b, now);
	return 0;
}

/* Every context switch: the thread coming in ends its time off the CPU, the one going out
 * (unless it is exiting) begins one. Preempted, or yielding with nothing to wait for, it is
 * runnable; else blocked. */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	/* Over this CPU's budget, a thread that comes back still ends its time off the CPU (its
	 * start was paid for, and ends are no more than starts); none begins one. */
	struct budget_state *b;
	const bool allowed = budget_allows(now, &b);
	struct off_cpu_thread *t;

	if (next->pid) {
		t = bpf_task_storage_get(&off_cpu_threads, next, 0, 0);
		if (t && t->start_ns)
			end_off_cpu(t, now);
	}
	if (prev->pid == 0 || (prev_state & TASK_DEAD))
		goto out;
	if (allowed)
		start_off_cpu(ctx, prev, preempt || prev_state == TASK_RUNNING ? THREAD_RUNNABLE : THREAD_BLOCKED, now);
	else
		drop_off_cpu();
out:
	budget_end(b, now);
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

#endif /* __TARGET_ARCH_x86 */

#endif /* OFFCPU_OFFCPU_BPF_H */
