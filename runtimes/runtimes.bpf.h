/* runtimes/runtimes.bpf.h: the language runtimes whose frames the table walk shows, and the
 * one dispatch from the walk into them. Each runtime's walk is a room of its own
 * (python/python.bpf.h), behind the same hooks:
 *   NAME_start(state, tgid)            at a walk's start: RUNTIME_NOT when the process is
 *                                      known to be none of the runtime's;
 *   NAME_frame(state, pc, index, n)    at each native frame: RUNTIME_NATIVE, _SHOWN or
 *                                      _REPLACED (runtime/runtime.h); a runtime whose code
 *                                      has no unwind tables and keeps no frame pointer takes
 *                                      the registers (state, regs, index, n) and may answer
 *                                      _STEPPED: its frame recorded, the registers moved past
 *                                      it (hotspot/hotspot.bpf.h);
 *   NAME_forget(tgid)                  an exec or an exit: the process is asked about again.
 * A runtime whose JIT code keeps frame pointers shows its frames where the walk steps
 * through them by those, through runtimes_frame_at_fp: its hook NAME_frame(state, regs, leaf)
 * gives the value to record in the native frame's place, or 0 (v8/v8.bpf.h).
 * A runtime added is its include, its state in struct runtime_walk and a line in each
 * function below. */
#ifndef RUNTIMES_RUNTIMES_BPF_H
#define RUNTIMES_RUNTIMES_BPF_H

#include "runtime/runtime.bpf.h"
#include "python/python.bpf.h"
#include "v8/v8.bpf.h"
#include "hotspot/hotspot.bpf.h"

/* The runtimes' side of one stack walk. */
struct runtime_walk {
	struct python_walk python;
	struct v8_walk v8;
	struct hotspot_walk hotspot;
};

/* At a walk's start: RUNTIME_NOT when no runtime can show frames in process tgid (the walk
 * remembers it while the process's list of areas is the same). */
static __always_inline int runtimes_start(struct runtime_walk *r, __u32 tgid)
{
	int python = python_start(&r->python, tgid), v8 = v8_start(&r->v8, tgid);
	int hotspot = hotspot_start(&r->hotspot, tgid);

	return python == RUNTIME_NOT && v8 == RUNTIME_NOT && hotspot == RUNTIME_NOT ? RUNTIME_NOT : RUNTIME_MAYBE;
}

/* Whether a runtime shows frames in this walk: its state then reaches past the native
 * frames (a walk that cannot be finished in user space, or taken again as it was). */
static __always_inline bool runtimes_active(const struct runtime_walk *r)
{
	return r->python.active | r->v8.active | r->hotspot.active;
}

/* At each native frame: a runtime's frame recorded in its place or before it (and the
 * registers stepped past it), or nothing. */
static __always_inline int runtimes_frame(struct runtime_walk *r, struct runtime_regs *regs, __u32 index, __u32 n)
{
	int shown = RUNTIME_NATIVE;

	if (r->python.active && !r->python.replaced)
		shown = python_frame(&r->python, regs->pc, index, n);
	if (shown == RUNTIME_NATIVE && hotspot_may_own(&r->hotspot, regs->pc))
		shown = hotspot_frame(&r->hotspot, regs, index, n);
	return shown;
}

/* At a native frame the walk steps through by its frame pointer (regs: its pc, sp and bp,
 * and the stack window): a runtime's frame to record in its place, or 0. leaf: the stack's
 * first frame, whose pc is where it ran (any other's is a return address). */
static __always_inline __u64 runtimes_frame_at_fp(struct runtime_walk *r, struct runtime_regs *regs, bool leaf)
{
	return r->v8.active ? v8_frame(&r->v8, regs, leaf) : 0;
}

/* Whether the native frame at hand was shown as a runtime's frames, and is not recorded
 * itself; the next frame is the walk's again. */
static __always_inline bool runtimes_take_replaced(struct runtime_walk *r)
{
	bool replaced = r->python.replaced;

	r->python.replaced = 0;
	return replaced;
}

/* Whether a walk of process tgid's stack shows no runtime's frames now, and will show none
 * while its list of areas is the same: user space classified it as none of theirs (or every
 * runtime is off). */
static __always_inline bool runtimes_none_in(__u32 tgid)
{
	struct python_process *py = bpf_map_lookup_elem(&python_processes, &tgid);
	struct hotspot_process *jvm = bpf_map_lookup_elem(&hotspot_processes, &tgid);

	return (!runtime_on(PYTHON_FRAME_TAG) | (py && !py->is_python)) & v8_none_in(tgid) &
	       (!runtime_on(HOTSPOT_FRAME_TAG) | (jvm && !jvm->is_java));
}

/* An exec or an exit of process tgid: each runtime asks about it again. */
static __always_inline void runtimes_forget(__u32 tgid)
{
	python_forget(tgid);
	v8_forget(tgid);
	hotspot_forget(tgid);
}

#endif /* RUNTIMES_RUNTIMES_BPF_H */
