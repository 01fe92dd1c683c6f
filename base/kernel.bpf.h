/* base/kernel.bpf.h: the kernel side's contract, what its rooms share (profile.bpf.c and every
 * folder's .bpf.h; one object): the settings user space writes before load, the current
 * task's ids as the program records them, the per-CPU stack being built, and its hash.
 * Each part includes it, and what else it uses; it includes no room (only profile.h, the
 * types the kernel and user space share). */
#ifndef BASE_KERNEL_BPF_H
#define BASE_KERNEL_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "profile.h"

#define ENOENT 2
#define EFAULT 14
#define ENOMEM 12
#define EEXIST 17

/* The inode of profile's PID namespace when it is not the initial one: the ids the program
 * records (filters, keys, sampled_pids) are then that namespace's, as -p and /proc give
 * them. 0: the initial namespace, whose ids bpf_get_current_pid_tgid gives. */
const volatile __u32 pid_namespace = 0;
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

/* The current task's process and thread ids as the program records them (in profile's PID
 * namespace): false when the task is outside that namespace, its ids then the initial
 * namespace's. The idle task (tid 0) is in every namespace. */
static __always_inline bool current_ids(__u32 *tgid, __u32 *tid)
{
	__u64 id = bpf_get_current_pid_tgid();

	*tgid = id >> 32;
	*tid = id;
	return !pid_namespace || *tid == 0 || ids_in_namespace(tgid, tid);
}

/* --unwind: UNWIND_FP runs do_sample; the others run do_sample_unwind. */
const volatile __u32 unwind_mode = UNWIND_FP;
/* Frames a stack keeps (--perf-max-stack-depth), at most UNWIND_MAX_DEPTH for the walk. */
const volatile __u32 max_depth = UNWIND_MAX_DEPTH;

/* The stack being built, per CPU ([0] kernel, [1] user), in the layout it is stored in. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct stored_stack);
	__uint(max_entries, 2);
} scratch SEC(".maps");

/* One frame into a stack's hash: two multiply-xorshift chains with different constants. */
static __always_inline void hash_frame(struct stack_hash *h, __u64 ip)
{
	h->a = (h->a ^ ip) * 0x9e3779b97f4a7c15ULL;
	h->a ^= h->a >> 31;
	h->b = (h->b + ip) * 0xc2b2ae3d27d4eb4fULL;
	h->b ^= h->b >> 29;
}

static __always_inline void hash_start(struct stack_hash *h)
{
	h->a = 0x243f6a8885a308d3ULL;
	h->b = 0x13198a2e03707344ULL;
}

#endif /* BASE_KERNEL_BPF_H */
