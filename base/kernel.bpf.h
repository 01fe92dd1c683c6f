/* base/kernel.bpf.h: the kernel side's contract, what its rooms share (profile.bpf.c and every
 * folder's .bpf.h; one object): the settings user space writes before load, the per-CPU
 * stack being built, and its hash. Each part includes it, and what else it uses; it
 * includes no room (only profile.h, the types the kernel and user space share). */
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
