/* unwind/unwind.bpf.h: the kernel half of the table unwinder, included by profile.bpf.c:
 * the maps that hold files' objects and their tables, and the walk of a user stack from
 * those tables (walk_user_stack), through processes' mappings as unwind/mappings.bpf.h
 * keeps them. At each native frame it calls the language runtimes' walks
 * (runtimes/runtimes.bpf.h), which may show their own frames there. */
#ifndef UNWIND_BPF_H
#define UNWIND_BPF_H

/* The maps and the walk's state; finding a pc's mapping, object and row. */
#include "unwind/state.bpf.h"
#include "unwind/lookup.bpf.h"

#if defined(__TARGET_ARCH_x86)

/* Two 8-byte words of the user stack: a saved rbp and the return address above it. */
struct stack_pair {
	__u64 bp, ra;
};

/* A walk that records what it reads (walk.record) begins from pc, sp and bp. A global
 * function: a branch of its own in the walk's caller would have the verifier check the
 * whole walk twice. */
__noinline int record_start(__u64 pc, __u64 sp, __u64 bp)
{
	__u32 zero = 0;
	struct walk_reads *r = bpf_map_lookup_elem(&walk_reads, &zero);

	if (!r)
		return 0;
	r->pc = pc;
	r->sp = sp;
	r->bp = bp;
	r->mm = (__u64)bpf_get_current_task_btf()->mm;
	r->n = 0;
	r->same_again = false;
	hash_start(&r->values);
	return 0;
}

/* A walk that records (walk.record) read `len` (8 or 16) bytes, a (and b), at user address
 * `at`. A global function, given no pointer into the walk: the verifier checks it once, on
 * its own, and a walk that does not record never calls it. */
__noinline int record_read(__u64 at, __u32 len, __u64 a, __u64 b)
{
	__u32 zero = 0;
	struct walk_reads *r;

	r = bpf_map_lookup_elem(&walk_reads, &zero);
	if (!r)
		return 0;
	if (r->n < WALK_READS_MAX && !(at & 7)) {
		r->at[r->n & (WALK_READS_MAX - 1)] = at | (len == 16);
		hash_frame(&r->values, a);
		if (len == 16)
			hash_frame(&r->values, b);
		r->n++;
	} else {
		r->n = WALK_READS_MAX + 1;
	}
	return 0;
}

/* Reads the pair at user address `at` through the stack window (runtime_stack_read).
 * Inlined in the walk's step, which the verifier checks once on its own: a call and a
 * return a frame cost more than the verifier's work (on CPUs whose returns go through a
 * mitigation's thunk, most). */
static __always_inline int read_pair(struct walk *w, __u64 at, struct stack_pair *out)
{
	__u64 pair[2];

	if (runtime_stack_read(&w->regs, at, pair, 2))
		return -1;
	out->bp = pair[0];
	out->ra = pair[1];
	if (w->record)
		record_read(at, 16, out->bp, out->ra);
	return 0;
}

/* One frame-pointer step: the caller's rbp and return address are saved at rbp. */
static __always_inline void frame_pointer_step(struct walk *w)
{
	struct stack_pair saved = {};

	if (w->bp == 0) { /* the chain's end, as bpf_get_stackid ends it */
		w->done = true;
		return;
	}
	if (w->bp < w->sp || read_pair(w, w->bp, &saved)) {
		w->cut = true;
		return;
	}
	w->sp = w->bp + 16;
	w->bp = saved.bp;
	w->pc = saved.ra;
	if (w->pc == 0)
		w->done = true;
}

/* One step of the walk: records the frame at w->pc, then finds its caller's pc, sp and bp.
 * Returns 1 to stop. */
static __always_inline long walk_step_of(__u32 index, struct walk *w, const bool record)
{
	__u32 user = 1;
	struct stored_stack *frames = bpf_map_lookup_elem(&scratch, &user);
	struct unwind_object *obj;
	struct unwind_row row, *found;
	struct row_cache *cache;
	__u64 lookup, offset, key, cfa, ra;
	__u32 zero = 0, slot;

	if (!frames)
		return 1;
	if (w->n >= max_depth || w->n >= UNWIND_MAX_DEPTH) {
		w->cut = true; /* the depth limit */
		return 1;
	}
	/* A runtime's frames, one a step, in a native frame's place (an interpreter's eval frame
	 * shown as the functions it ran) or before it. */
	int shown = runtimes_frame(&w->rt, &w->regs, index, w->n);

	if (shown != RUNTIME_NATIVE) {
		if (shown == RUNTIME_SHOWN || shown == RUNTIME_STEPPED) {
			hash_frame(&w->hash, frames->ip[w->n & UNWIND_MAX_DEPTH]);
			w->n++;
		}
		if (shown == RUNTIME_STEPPED && w->pc == 0) {
			w->done = true;
			return 1;
		}
		return 0;
	}
	if (!runtimes_take_replaced(&w->rt)) {
		frames->ip[w->n & UNWIND_MAX_DEPTH] = w->pc;
		hash_frame(&w->hash, w->pc);
		w->n++;
	}

	/* A caller's pc is a return address: the call is the byte before it, which may
	 * belong to another function's rules (a call that ends a function). */
	lookup = index == 0 ? w->pc : w->pc - 1;
	if ((lookup < w->map_start || lookup >= w->map_end) && !recent_mapping(w, lookup) &&
	    !find_mapping(w, lookup)) {
		struct unwind_mapping learned;
		enum learned how = LATER;

		w->map_end = 0;
		if (w->process_known && !w->asked_area) {
			w->asked_area = true;
			how = learn_mapping(w->pid, lookup, &w->seq, &learned);
		}
		if (how == LEARNED) {
			w->learned_area = true;
			enter_mapping(w, &learned);
		} else if (!w->process_known || how == LATER) {
			w->waited = WAITED_PROCESS;
			goto pending;
		} else if (index > 0) {
			/* Not code this process has mapped executable: what a frame-pointer walk
			 * through code without frame pointers reads. */
			w->cut = true;
			return 1;
		} else {
			/* A leaf outside every executable area: the vsyscall page, code unmapped
			 * since the sample was taken. */
			goto fp;
		}
	}
	if (w->object == 0)
		goto fp;
	if (w->object == UNWIND_MAX_OBJECTS) {
		w->waited = WAITED_FILE;
		goto pending;
	}
	obj = bpf_map_lookup_elem(&unwind_objects, &w->object);
	if (!obj)
		goto fp;
	if (obj->state == UNWIND_OBJECT_BUILDING) {
		w->waited = WAITED_BUILDING;
		goto pending;
	}
	if (obj->state != UNWIND_OBJECT_READY)
		goto fp;
	offset = lookup - w->map_start + w->map_offset;
	key = (__u64)w->object << 32 | (offset & 0xffffffff);
	slot = (key * 0x9e3779b97f4a7c15ULL) >> (64 - ROW_CACHE_SHIFT);
	cache = bpf_map_lookup_elem(&row_cache, &zero);
	if (cache && cache->entries[slot & (ROW_CACHE_SIZE - 1)].key == key && offset <= 0xffffffffULL) {
		row = cache->entries[slot & (ROW_CACHE_SIZE - 1)].row;
	} else {
		found = find_row(w->object, obj, offset);
		if (!found)
			goto fp;
		row = *found;
		if (cache) {
			cache->entries[slot & (ROW_CACHE_SIZE - 1)].key = key;
			cache->entries[slot & (ROW_CACHE_SIZE - 1)].row = row;
		}
	}
	switch (row.cfa_type) {
	case UNWIND_CFA_END:
		w->done = true;
		return 1;
	case UNWIND_CFA_RSP:
		cfa = w->sp + row.cfa_offset * UNWIND_SLOT;
		break;
	case UNWIND_CFA_RBP:
		if (w->bp == 0) {
			w->cut = true;
			return 1;
		}
		cfa = w->bp + row.cfa_offset * UNWIND_SLOT;
		break;
	case UNWIND_CFA_PLT:
		cfa = w->sp + 8 + ((w->pc & 15) >= (__u64)row.cfa_offset ? 8 : 0);
		break;
	default:
		goto fp;
	}
	if (cfa <= w->sp) {
		w->cut = true;
		return 1;
	}
	if (row.rbp_type == UNWIND_RBP_AT_CFA && row.rbp_offset == -2) {
		/* rbp saved just below the return address, as every frame-pointer prologue and
		 * most others leave it: one read for both. */
		struct stack_pair saved = {};

		if (read_pair(w, cfa - 16, &saved)) {
			w->cut = true;
			return 1;
		}
		w->bp = saved.bp;
		ra = saved.ra;
	} else {
		if (bpf_probe_read_user(&ra, 8, (void *)(cfa - 8))) {
			w->cut = true;
			return 1;
		}
		if (record)
			record_read(cfa - 8, 8, ra, 0);
		if (row.rbp_type == UNWIND_RBP_AT_CFA) {
			if (bpf_probe_read_user(&w->bp, 8, (void *)(cfa + row.rbp_offset * UNWIND_SLOT))) {
				w->cut = true;
				return 1;
			}
			if (record)
				record_read(cfa + row.rbp_offset * UNWIND_SLOT, 8, w->bp, 0);
		} else if (row.rbp_type == UNWIND_RBP_UNDEFINED) {
			w->bp = 0;
		}
	}
	w->sp = cfa;
	w->pc = ra;
	if (ra == 0) {
		w->done = true;
		return 1;
	}
	return 0;

pending:
	/* Code whose table is not in yet: frame pointers would guess through code that has
	 * CFI. The stack stops here, marked truncated, and counted as waiting for tables. */
	w->pending = true;
	w->cut = true;
	return 1;

fp:
	if (unwind_mode == UNWIND_DWARF) {
		w->cut = true;
		return 1;
	}
	/* A runtime's frame in the place of the native one just recorded: a JIT's code has no
	 * table. */
	__u64 runtime_frame = runtimes_frame_at_fp(&w->rt, &w->regs, w->n == 1);

	if (runtime_frame && frames->ip[(w->n - 1) & UNWIND_MAX_DEPTH] == w->pc) {
		frames->ip[(w->n - 1) & UNWIND_MAX_DEPTH] = runtime_frame;
		hash_frame(&w->hash, runtime_frame);
	}
	/* A frame with rbp 0 ends the stack (ld.so's _start, the first frame of a new process,
	 * has no CFI): no frame-pointer step is taken, none is counted. */
	w->fp_no_table |= w->bp != 0;
	frame_pointer_step(w);
	if (w->cut || w->done)
		return 1;
	return 0;
}

/* The step of a sample's walk, and of one that records what it reads: two functions, so
 * that the verifier never weighs recording in a sample's walk. Global functions: the
 * verifier checks each once, on its own, with nothing known of the walk. Inlined in the
 * walk's loop (bpf_loop's callback then), the step was checked again for each state the
 * walk could be in (which fields were known 0, which cause it waited for, ...) until those
 * converged, and the walk's end and the rest of the sample once for each. */
__noinline long walk_frame(__u32 index, struct walk *w)
{
	if (!w)
		return 1;
	return walk_step_of(index, w, false);
}

__noinline long walk_frame_recording(__u32 index, struct walk *w)
{
	if (!w)
		return 1;
	return walk_step_of(index, w, true);
}

/* Walks the user stack of the sampled task into scratch[1]: from the sample's registers
 * when it was taken in user mode, else (or with no ctx: a thread leaving the CPU, for
 * --off-cpu) from those the task saved entering the kernel. Returns the frames written
 * (with the TRUNCATED_FRAME mark), 0 when there is no user stack (a kernel thread). */
static __always_inline __u32 walk_user_stack(struct bpf_perf_event_data *ctx, __u32 tgid, struct sample_stats *st,
					     struct stack_hash *hash, struct raw_resume *resume, const bool record)
{
	struct walk w = {};
	__u32 user = 1;
	struct stored_stack *frames;
	struct unwind_process *proc;

	/* User addresses are the lower half of the address space, kernel ones the upper. A
	 * sample taken in the kernel starts from the registers saved on entering it. */
	if (ctx) {
		w.pc = ctx->regs.ip;
		w.sp = ctx->regs.sp;
		w.bp = ctx->regs.bp;
	}
	if (!ctx || (__s64)w.pc < 0) {
		struct task_struct *task = bpf_get_current_task_btf();
		struct pt_regs *regs;

		if (!task->mm)
			return 0;
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		w.pc = regs->ip;
		w.sp = regs->sp;
		w.bp = regs->bp;
	}
	if (w.pc == 0)
		return 0;
	if (record)
		record_start(w.pc, w.sp, w.bp);
	w.record = record;
	w.pid = tgid;
	hash_start(&w.hash);
	proc = bpf_map_lookup_elem(&unwind_processes, &tgid);
	/* A list may be empty (user space could not read the process's: gone before it
	 * looked): the walk learns its areas as it meets them. */
	if (proc) {
		w.seq = proc->seq;
		w.serial = proc->serial;
		/* Odd: another CPU is rewriting the list; this sample waits like one whose tables
		 * are being built. */
		w.process_known = !(w.seq & 1);
	} else {
		__u8 one = 1;

		bpf_map_update_elem(&wanted_processes, &tgid, &one, BPF_NOEXIST);
	}
	/* A process found to show no runtime's frames is not asked again while its list is the
	 * same. */
	if (!recent_says_no_runtime(&w) && runtimes_start(&w.rt, tgid) == RUNTIME_NOT)
		remember_no_runtime(&w);
	/* A plain loop of calls to the step: the verifier sees each call's result as unknown,
	 * so the iterations differ only in i. Through bpf_loop each frame cost a second call
	 * and return, the callback's. */
	for (__u32 i = 0; i < UNWIND_MAX_DEPTH; i++)
		if (record ? walk_frame_recording(i, &w) : walk_frame(i, &w))
			break;
	/* The list changed under the walk: what it found there may not hold. */
	if (w.process_known) {
		proc = bpf_map_lookup_elem(&unwind_processes, &tgid);
		if (!proc || proc->seq != w.seq)
			w.cut = true;
	}

	frames = bpf_map_lookup_elem(&scratch, &user);
	if (!frames)
		return 0;
	if (!w.done && !w.cut)
		w.cut = true; /* the loop ran out of steps: the depth limit */
	/* Native frames only: a runtime's walk state does not carry over to user space. */
	if (w.pending && !runtimes_active(&w.rt)) {
		resume->pc = w.pc;
		resume->sp = w.sp;
		resume->bp = w.bp;
		resume->n = w.n;
	}
	if (w.cut) {
		frames->ip[w.n & UNWIND_MAX_DEPTH] = TRUNCATED_FRAME;
		hash_frame(&w.hash, TRUNCATED_FRAME);
		w.n++;
	}
	*hash = w.hash;
	if (record) {
		__u32 zero = 0;
		struct walk_reads *r = bpf_map_lookup_elem(&walk_reads, &zero);

		/* A process not classified yet may be a runtime's: its next walk would show
		 * frames that this one could not. (One whose runtime is not initialized yet is
		 * none of its for now: same_user_stack checks again.) */
		bool no_runtime = runtimes_none_in(tgid);

		if (r) {
			r->seq = w.seq;
			/* Bitwise: one path for the verifier, not one for each way to be false. */
			r->same_again = w.done & !w.cut & !w.fp_no_table & !w.learned_area & !runtimes_active(&w.rt) &
					w.process_known & (r->n <= WALK_READS_MAX) & no_runtime;
		}
	}
	if (w.learned_area)
		st->areas_learned++;
	/* A stack cut short while its tables were being built counts as waiting for them
	 * (or, kept raw, as such: take_stacks counts it). */
	if (w.pending) {
		if (!resume->n)
			st->unwound_pending++;
		if (w.waited == WAITED_PROCESS)
			st->waited_process++;
		else if (w.waited == WAITED_FILE)
			st->waited_file++;
		else
			st->waited_building++;
	} else if (w.cut) {
		st->unwound_cut++;
	} else if (w.fp_no_table) {
		st->unwound_fp_no_table++;
	} else {
		st->unwound_tables++;
	}
	return w.n;
}

#endif /* __TARGET_ARCH_x86 */

#endif /* UNWIND_BPF_H */
