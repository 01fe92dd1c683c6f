/* unwind/raw.bpf.h: samples kept raw, included by profile.bpf.c: where the table walk
 * (unwind/unwind.bpf.h) stopped at code whose table was still being built, the frames
 * walked so far, the registers and a copy of the user stack are kept in a slot of
 * raw_samples, for user space to finish the walk once the table is in. */
#ifndef UNWIND_RAW_BPF_H
#define UNWIND_RAW_BPF_H

#include "base/kernel.bpf.h"
#include "unwind/unwind.bpf.h"

/* Samples kept raw (struct raw_sample): RAW_SLOTS a generation, generation g's from
 * g * RAW_SLOTS on, claimed in turn through raw_claimed[g]; user space reads the complete
 * ones when it drains the generation, then zeroes its count. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct raw_sample);
	__uint(max_entries, 2 * RAW_SLOTS);
} raw_samples SEC(".maps");
__u32 raw_claimed[2] = {};

#if defined(__TARGET_ARCH_x86)

/* Copies one piece of the user stack into a raw sample; the first that faults ends it. */
struct raw_copy {
	__u32 slot, len;
	__u64 base;
};

static long raw_copy_step(__u32 i, struct raw_copy *c)
{
	struct raw_sample *raw = bpf_map_lookup_elem(&raw_samples, &c->slot);

	if (!raw || i >= RAW_STACK_BYTES / RAW_PIECE)
		return 1;
	if (bpf_probe_read_user(&raw->stack[(i & (RAW_STACK_BYTES / RAW_PIECE - 1)) * RAW_PIECE], RAW_PIECE,
				(void *)(c->base + i * RAW_PIECE)))
		return 1;
	c->len = (i + 1) * RAW_PIECE;
	return 0;
}

/* Keeps the walk that stopped at `resume` raw in a free slot of generation gen: the frames
 * walked (scratch[1]), the registers, the stack from sp's piece up. Returns the slot + 1,
 * 0 when none is free; the sample is whole once its key is in (count_unwound). A global
 * function: the verifier checks it once, on its own, not along every path of the walk. */
__noinline __u32 keep_raw(__u32 gen, struct raw_resume *resume)
{
	struct raw_copy c = {};
	struct raw_sample *raw;
	struct stored_stack *frames;
	__u32 user = 1, claimed;

	if (!resume)
		return 0;
	claimed = __sync_fetch_and_add(&raw_claimed[gen & 1], 1);
	if (claimed >= RAW_SLOTS)
		return 0;
	c.slot = (gen & 1) * RAW_SLOTS + claimed;
	raw = bpf_map_lookup_elem(&raw_samples, &c.slot);
	frames = bpf_map_lookup_elem(&scratch, &user);
	if (!raw || !frames)
		return 0;
	raw->complete = 0;
	raw->n = resume->n;
	raw->pc = resume->pc;
	raw->sp = resume->sp;
	raw->bp = resume->bp;
	raw->time_ns = bpf_ktime_get_ns();
	if (bpf_probe_read_kernel(raw->frames, sizeof(raw->frames), frames->ip))
		return 0;
	c.base = resume->sp & ~(__u64)(RAW_PIECE - 1);
	raw->stack_base = c.base;
	bpf_loop(RAW_STACK_BYTES / RAW_PIECE, raw_copy_step, &c, 0);
	raw = bpf_map_lookup_elem(&raw_samples, &c.slot);
	if (!raw)
		return 0;
	raw->stack_len = c.len;
	return c.slot + 1;
}

#endif /* __TARGET_ARCH_x86 */

#endif /* UNWIND_RAW_BPF_H */
