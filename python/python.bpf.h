/* python/python.bpf.h: the kernel's walk of CPython frames, registered in
 * runtimes/runtimes.bpf.h, through which the table walk (unwind/unwind.bpf.h) calls it at
 * each native frame. Where a native
 * frame is the interpreter's _PyEval_EvalFrameDefault, the Python frames that call ran are
 * recorded in its place, one per step of the table walk, from the sampled thread's own
 * PyThreadState (found through glibc's thread-specific data and _PyRuntime's autoTSSkey).
 * Each is a tagged value (python/python.h): the code object's id and the instruction. Code
 * objects met for the first time (or at an address another had, told apart by a
 * fingerprint) are sent to user space to be named while the process lives. */
#ifndef PYTHON_BPF_H
#define PYTHON_BPF_H

#include "base/kernel.bpf.h"
#include "python/python.h"
#include "runtime/runtime.bpf.h"

/* Processes as user space classified them, by pid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct python_process);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} python_processes SEC(".maps");

/* Processes sampled that user space has not classified yet, asked once each. */
RUNTIME_ASKED_MAP(python_wanted);

/* Code objects already sent to user space: their fingerprint and id. Preallocated, as
 * v8_codes: a walk meets a score of new ones at once, and a hash map that allocates as it
 * goes has four elements at hand per CPU in a context that cannot sleep (sched_switch, NMI)
 * until the kernel refills it: the rest failed, and their frames read [python]. LRU: one
 * evicted (a long run's exited processes first) is sent again, with a new id, the next
 * time the walk meets it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct python_code_key);
	__type(value, struct python_code);
	__uint(max_entries, 16384);
} python_codes SEC(".maps");

/* The last id given to a code object. */
__u64 python_last_id = 0;

/* The code objects met for the first time, to user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} python_seen SEC(".maps");

/* A frame read in one go, per CPU: the fields are taken from it at offsets the verifier
 * bounds. */
struct python_scratch {
	__u8 frame[PYTHON_FRAME_READ];
	__u8 code[256]; /* PYTHON_CODE_READ of them read */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct python_scratch);
	__uint(max_entries, 1);
} python_scratch SEC(".maps");

/* The Python side of one stack walk. The process's entry is copied in, so that the frame
 * step (a global function, verified once on its own) reads it as plain memory. */
struct python_walk {
	struct python_process py;
	__u64 frame;   /* the next interpreter frame, 0 at the chain's end */
	__u32 pid;
	__u16 shown;   /* Python frames shown for the eval frame at hand */
	__u8 active;   /* a CPython process whose thread has a frame */
	__u8 in_eval;  /* showing the Python frames of a native eval frame */
	__u8 replaced; /* that native frame was shown as its Python frames: not recorded again */
	__u8 pad[7];
};

/* Starts the Python side of a walk: the sampled thread's current interpreter frame, when
 * the process is CPython. A process not classified yet is asked about. Global, as
 * python_frame below. */
__noinline int python_start(struct python_walk *p, __u32 tgid)
{
	struct python_process *py;
	struct task_struct *task;
	__u64 tstate = 0, at, frame = 0;

	if (!p || !runtime_on(PYTHON_FRAME_TAG))
		return RUNTIME_NOT;
	py = bpf_map_lookup_elem(&python_processes, &tgid);
	if (!py || py->not_yet) {
		runtime_ask(&python_wanted, tgid);
		return RUNTIME_MAYBE;
	}
	if (!py->is_python || py->tss_key >= 32)
		return RUNTIME_NOT;
	/* glibc keeps the first 32 keys' values in struct pthread, which fsbase points at:
	 * specific_1stblock[key] = {seq, data}. */
	task = bpf_get_current_task_btf();
	at = task->thread.fsbase + py->tsd_offset + 16 * (__u64)py->tss_key + 8;
	if (bpf_probe_read_user(&tstate, sizeof(tstate), (void *)at) || !tstate)
		return RUNTIME_MAYBE;
	at = tstate + py->tstate_frame;
	if (py->cframe_frame >= 0) {
		__u64 cframe = 0;

		if (bpf_probe_read_user(&cframe, sizeof(cframe), (void *)at) || !cframe)
			return RUNTIME_MAYBE;
		at = cframe + py->cframe_frame;
	}
	if (bpf_probe_read_user(&frame, sizeof(frame), (void *)at) || !frame)
		return RUNTIME_MAYBE;
	p->py = *py;
	p->frame = frame;
	p->pid = tgid;
	p->active = 1;
	return RUNTIME_MAYBE;
}

/* A field of the frame read into scratch: offsets are 8-aligned (4 for an int), within
 * PYTHON_FRAME_READ. */
static __always_inline __u64 python_u64(struct python_scratch *s, __u16 offset)
{
	return *(__u64 *)&s->frame[offset & (PYTHON_FRAME_READ - 8)];
}

static __always_inline __s32 python_s32(struct python_scratch *s, __u16 offset)
{
	return *(__s32 *)&s->frame[offset & (PYTHON_FRAME_READ - 4)];
}

static __always_inline __u8 python_u8(struct python_scratch *s, __u16 offset)
{
	return s->frame[offset & (PYTHON_FRAME_READ - 1)];
}

/* A field of the code object read into scratch (PYTHON_CODE_READ bytes). */
static __always_inline __u64 python_code_u64(struct python_scratch *s, __u16 offset)
{
	return *(__u64 *)&s->code[offset & (256 - 8)];
}

/* The id of the code object at `code` with this fingerprint in this process, told to user
 * space the first time the walk meets it there. 0 when the ring is full: the frame is then
 * unnamed, and the code object told at a later sample. */
static __always_inline __u64 python_code_id(__u32 pid, __u64 code, __u64 fingerprint)
{
	struct python_code_key key = {.pid = pid, .code = code};
	struct python_code *known, *sent;
	__u64 id;

	known = bpf_map_lookup_elem(&python_codes, &key);
	if (known && known->fingerprint == fingerprint)
		return known->id;
	sent = bpf_ringbuf_reserve(&python_seen, sizeof(*sent), 0);
	if (!sent)
		return 0;
	id = __sync_fetch_and_add(&python_last_id, 1) + 1;
	sent->pid = pid;
	sent->pad = 0;
	sent->code = code;
	sent->fingerprint = fingerprint;
	sent->id = id;
	/* Two CPUs meeting it at once each give it an id: both are named, alike. A full map
	 * evicts its least recently used entry; an update that fails all the same leaves the
	 * frame unnamed rather than telling user space of a new id at every sample of it. */
	if (bpf_map_update_elem(&python_codes, &key, sent, BPF_ANY)) {
		bpf_ringbuf_discard(sent, 0);
		return 0;
	}
	bpf_ringbuf_submit(sent, 0);
	return id;
}

/* At a native frame of the walk (pc; index 0 for the leaf) that is an eval frame: records
 * the next Python frame it ran at ip[n] of the user scratch stack, until every one of them
 * is shown. The native frame stands when there is no Python frame for it, or the chain
 * cannot be read (the Python frames stop there; what was read is never guessed past).
 * Global, so the verifier checks it once, apart from the walk's step. */
__noinline int python_frame(struct python_walk *p, __u64 pc, __u32 index, __u32 n)
{
	struct python_scratch *s;
	struct stored_stack *frames;
	__u64 code, previous, frame, name, id, name_head[2];
	__u32 zero = 0, user = 1, at_index;
	__u8 entry;

	if (!p || !p->active || p->replaced)
		return RUNTIME_NATIVE;
	frame = p->frame;
	if (!frame)
		goto done;
	if (!p->in_eval) {
		__u64 at = index ? pc - 1 : pc;

		if ((at < p->py.eval_start || at >= p->py.eval_end) && (at < p->py.cold_start || at >= p->py.cold_end))
			return RUNTIME_NATIVE;
		p->in_eval = 1;
		p->shown = 0;
	}
	s = bpf_map_lookup_elem(&python_scratch, &zero);
	frames = bpf_map_lookup_elem(&scratch, &user);
	if (!s || !frames || bpf_probe_read_user(s->frame, PYTHON_FRAME_READ, (void *)frame))
		goto stop;
	code = python_u64(s, p->py.frame_code);
	previous = python_u64(s, p->py.frame_previous);
	entry = python_u8(s, p->py.frame_entry);
	if (p->py.chain == PYTHON_CHAIN_SHIM && entry == PYTHON_OWNED_BY_CSTACK) {
		/* The shim the eval call pushed first: its frames end here. */
		p->frame = previous;
		goto done;
	}
	/* Anything but a code object (a frame freed and reused under the walk) ends it. */
	if (!code || bpf_probe_read_user(s->code, PYTHON_CODE_READ, (void *)code) ||
	    python_code_u64(s, 8) != p->py.code_type)
		goto stop;
	name = python_code_u64(s, p->py.code_name);
	if (bpf_probe_read_user(name_head, sizeof(name_head), (void *)(name + 16)))
		goto stop;
	id = python_code_id(p->pid, code,
			    python_fingerprint(name, python_code_u64(s, p->py.code_filename),
					       *(__s32 *)&s->code[p->py.code_firstlineno & (256 - 4)], name_head[0],
					       name_head[1]));
	if (p->py.instr == PYTHON_INSTR_POINTER) {
		__u64 pointer = python_u64(s, p->py.frame_instr), base = code + p->py.code_units;

		at_index = pointer >= base ? (pointer - base) / 2 : 0;
	} else {
		__s32 lasti = python_s32(s, p->py.frame_instr);

		at_index = lasti < 0 ? 0 : p->py.instr == PYTHON_INSTR_LASTI_BYTES ? lasti / 2 : lasti;
	}
	if (at_index > PYTHON_NO_INDEX)
		at_index = PYTHON_NO_INDEX;
	frames->ip[n & UNWIND_MAX_DEPTH] = PYTHON_FRAME(id, (__u64)at_index);
	p->shown++;
	p->frame = previous;
	if (p->py.chain == PYTHON_CHAIN_FRAME_OBJECT || (p->py.chain == PYTHON_CHAIN_IS_ENTRY && entry) || !previous) {
		p->in_eval = 0;
		p->replaced = 1;
	}
	return RUNTIME_SHOWN;

stop:
	p->frame = 0;
done:
	if (!p->in_eval)
		return RUNTIME_NATIVE;
	p->in_eval = 0;
	if (p->shown == 0)
		return RUNTIME_NATIVE;
	p->replaced = 1;
	return RUNTIME_REPLACED;
}

/* A process's image changes with exec, and its pid may come back as another's after its
 * exit: either way it is classified again. Called by profile.bpf.c's hooks, through
 * runtimes_forget. */
static __always_inline void python_forget(__u32 tgid)
{
	bpf_map_delete_elem(&python_processes, &tgid);
}

#endif /* PYTHON_BPF_H */
