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

/* Written by user space before load (doc/how-it-works.md, "Rates and the CPU budget").
 * budget_ns 0: no budget, at rates that cannot run out of it (see budget_end); the
 * verifier then drops its code, clock reads and all, from every program. */
const volatile __u64 budget_window_ns = 10000000;
const volatile __u64 budget_ns = 2500000;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct budget_state);
	__uint(max_entries, 1);
} budget SEC(".maps");

/* When a program's work starts: the time to charge from (0 without a budget). */
static __always_inline __u64 budget_now(void)
{
	return budget_ns ? bpf_ktime_get_ns() : 0;
}

/* Whether a program's work may start at `now` (budget_now): false when this CPU's window
 * has spent its budget, and the caller drops its work and counts it. *b is what to charge
 * when it is done (null: nothing, without a budget). */
static __always_inline bool budget_allows(__u64 now, struct budget_state **b)
{
	__u32 zero = 0;

	*b = NULL;
	if (!budget_ns)
		return true;
	*b = bpf_map_lookup_elem(&budget, &zero);
	if (!*b)
		return true;
	if (now - (*b)->window_start >= budget_window_ns) {
		(*b)->window_start = now;
		(*b)->window_ns = 0;
	} else if ((*b)->window_ns >= budget_ns) {
		return false;
	}
	return true;
}

/* budget_allows for work that counts in `st`, from *now on: work over the budget is
 * counted there as lost (sample_stats.lost_budget). */
static __always_inline bool budget_take(struct sample_stats *st, __u64 *now, struct budget_state **b)
{
	*now = budget_now();
	if (budget_allows(*now, b))
		return true;
	st->lost_budget++;
	return false;
}

/* The work begun at `start` is done: its time goes to the window and the totals. A run
 * charges at most a tenth of the window's budget: one that took longer was interrupted (an
 * NMI, the hypervisor taking the vCPU), and the ten samples a window of -f 999 must never
 * run out of it. Real work that costs more is still held to about ten runs a window. */
static __always_inline void budget_end(struct budget_state *b, __u64 start)
{
	__u64 took;

	if (!budget_ns || !b)
		return;
	took = bpf_ktime_get_ns() - start;
	if (took > budget_ns / 10)
		took = budget_ns / 10;
	if (b->window_ns < budget_ns && b->window_ns + took >= budget_ns)
		b->exhausted++;
	b->window_ns += took;
	b->ns += took;
	b->runs++;
}

#endif /* SAMPLER_BUDGET_BPF_H */
