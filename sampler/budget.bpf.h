/* sampler/budget.bpf.h: the CPU budget of the kernel side. A program that runs in an
 * interrupt (a sample) or at every context switch (--off-cpu) takes that CPU from whatever
 * was to run there; at a rate the CPU cannot carry, it takes all of it, and the machine
 * stalls (a 1-second run at -f 100000 once froze a 2-CPU machine for 8 minutes). So each
 * CPU keeps the time its programs took in the current window of budget_window_ns; once
 * that passes budget_ns, what comes until the window ends is dropped at once, and counted
 * by the caller (sample_stats.lost_budget).
 * The kernel throttles perf events by CPU time only for hardware counters
 * (kernel.perf_cpu_time_max_percent); user space sets the budget from the same share. */
#ifndef SAMPLER_BUDGET_BPF_H
#define SAMPLER_BUDGET_BPF_H

#include "base/kernel.bpf.h"

/* Written by user space before load (doc/how-it-works.md, "The CPU budget"). */
const volatile __u64 budget_window_ns = 10000000;
const volatile __u64 budget_ns = 2500000;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct budget_state);
	__uint(max_entries, 1);
} budget SEC(".maps");

/* This CPU's budget when a program's work may start at `now` (bpf_ktime_get_ns); null when
 * the window's budget is spent: the caller drops its work and counts it. */
static __always_inline struct budget_state *budget_start(__u64 now)
{
	struct budget_state *b;
	__u32 zero = 0;

	b = bpf_map_lookup_elem(&budget, &zero);
	if (!b)
		return NULL;
	if (now - b->window_start >= budget_window_ns) {
		b->window_start = now;
		b->window_ns = 0;
	} else if (b->window_ns >= budget_ns) {
		return NULL;
	}
	return b;
}

/* The work begun at `start` is done: its time goes to the window and the totals. */
static __always_inline void budget_end(struct budget_state *b, __u64 start)
{
	__u64 took = bpf_ktime_get_ns() - start;

	if (b->window_ns < budget_ns && b->window_ns + took >= budget_ns)
		b->exhausted++;
	b->window_ns += took;
	b->ns += took;
	b->runs++;
}

#endif /* SAMPLER_BUDGET_BPF_H */
