/* v8/v8.bpf.h: the kernel's walk of V8's JavaScript frames, registered in
 * runtimes/runtimes.bpf.h. V8's machine code (its JIT's, and the builtins embedded in node)
 * has no unwind tables: the table walk (unwind/unwind.bpf.h) steps through it by frame
 * pointers, which V8 keeps in every frame, and asks at each such frame whether it is a JS
 * function's. A JS frame holds its JSFunction and context below the frame pointer (a typed
 * frame, a stub's or an exit's, holds a small integer marker in the context's place: it
 * stays the native frame it is). The function's code is what ran: the BytecodeArray of an
 * interpreted frame (and the bytecode offset the frame saved), or the Code object whose
 * instructions hold the pc. Each is recorded as a tagged value (v8/v8.h): an id and the
 * offset. An object met for the first time (or at an address another had, told apart by a
 * fingerprint) is sent to user space to be named while the process lives. What the walk
 * read of a frame is kept per CPU for the samples after, while the process runs no GC
 * (struct v8_frame_kept; its GCs counted by uprobes, on_v8_gc). */
#ifndef V8_BPF_H
#define V8_BPF_H

#include "base/kernel.bpf.h"
#include "runtime/runtime.bpf.h"
#include "v8/v8.h"

/* Processes as user space classified them, by pid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct v8_process);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} v8_processes SEC(".maps");

/* Processes sampled that user space has not classified yet, asked once each. */
RUNTIME_ASKED_MAP(v8_wanted);

/* Code objects already sent to user space (shared = the SharedFunctionInfo, in extra). */
RUNTIME_CODES_MAP(v8);

/* The GCs of the processes whose entry says gc_counted, by pid: moved on by one where a
 * GC's pause starts, where it ends and where a heap is torn down (on_v8_gc), so that no object
 * the walk read can have moved or gone while it stays. User space makes a process's entry
 * here before it says gc_counted, and never writes it again (a write replaces the element:
 * a count the uprobe added meanwhile would be lost); an exec or an exit takes it out. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} v8_gcs SEC(".maps");

/* What the walk read of a JS frame, kept across samples while the process runs no GC: the
 * frame's function and what it ran are then the objects they were, where they were. Keyed by
 * the process's image (its start and its exec: a pid taken again, or an exec the kernel's
 * hooks did not see, never meets another's frames) and the frame's slots: its JSFunction and
 * its BytecodeArray, or 1 where the slot of the bytecode offset holds no small integer (the
 * frame is then not an interpreted one, whatever that slot holds; an optimized frame's
 * spill slots there change from call to call, and so does its key). A compiled frame's code
 * is the function's at the time it was read: it holds only while the frame's pc lies in its
 * instructions (a function tiers up and down without a GC). A frame named by its function
 * alone, as its pc lay outside its function's code (on-stack replacement) or that code could
 * not be read, holds while the function's code word is still the one it had then and the pc
 * still lies outside that code: one word read again, where the walk read the whole function,
 * its SharedFunctionInfo and its code (a loop's frame runs in its on-stack replacement sample
 * after sample). Where the walk never reads a function's code (Node 24), it holds for any pc. */
#define V8_KEPT_FRAMES 256
struct v8_frame_kept {
	__u64 function, bytecode;
	__u64 image;
	__u64 gcs, generation; /* the process's count in v8_gcs, the codes map's generation */
	__u64 id;              /* as runtime_code_id gave it; 0: an empty slot */
	__u64 code_start;      /* compiled code's instructions: the pcs it holds for; the function
				* alone: its code's, the pcs it holds outside (none where that code
				* could not be read) */
	__u64 function_code;   /* the function's code word, as the walk read it */
	__u32 code_size, pid, kind;
};

/* A frame's slots and a Code object's header, read in one go each, per CPU; and the frames
 * kept across samples. */
#define V8_CODE_READ 64
struct v8_scratch {
	__u64 slots[V8_FRAME_SLOTS]; /* the words below the frame pointer */
	__u8 code[V8_CODE_READ];
	/* The frame's JSFunction's and SharedFunctionInfo's first words: their map and the
	 * fields the walk reads (user space checks they lie there). */
	__u8 function[V8_CODE_READ], shared[V8_CODE_READ];
	/* The walk's process, copied from v8_processes at its first frame the walk asks about:
	 * its next frames look nothing up. With it, where its GCs are counted (struct
	 * v8_walk's counted), their count then, the process's image and the codes map's
	 * generation: what a kept frame is checked against. */
	struct v8_process proc;
	__u64 gcs, image, generation;
	struct v8_frame_kept frames[V8_KEPT_FRAMES];
};
_Static_assert(sizeof(struct v8_scratch) <= 32768, "a per-CPU map's value is at most 32 KiB");
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct v8_scratch);
	__uint(max_entries, 1);
} v8_scratch SEC(".maps");

/* The V8 side of one stack walk: the process's entry is looked up at the first frame that
 * needs it and copied per CPU, so that the walk's state stays small. What one frame's reads
 * proved holds for the walk's next frames: the thread stands still while its stack is
 * walked, and a GC that would move its objects is the thread's own. So the JSFunction maps
 * met (a context's functions share a few) and the ids of the scripts met (a module's
 * functions call each other) are read once a walk, two of each kept (struct v8_kept). */
struct v8_kept {
	__u64 key[2], value[2]; /* key 0: none (no heap object's tagged address) */
	__u8 next;              /* the entry the next one met replaces */
};
struct v8_walk {
	__u32 pid;
	__u8 active;  /* a process with V8 that the walk can read */
	__u8 copied;  /* its entry is copied into v8_scratch */
	__u8 counted; /* 0: not looked up yet; 1: its GCs are counted (v8_scratch's gcs); 2: not */
	struct v8_kept function_maps, script_ids;
};

/* Starts the V8 side of a walk. A process not classified yet is asked about. */
static __always_inline int v8_start(struct v8_walk *v, __u32 tgid)
{
	struct v8_process *proc;

	if (!runtime_on(V8_FRAME_TAG))
		return RUNTIME_NOT;
	proc = bpf_map_lookup_elem(&v8_processes, &tgid);
	if (!proc) {
		runtime_ask(&v8_wanted, tgid);
		return RUNTIME_MAYBE;
	}
	if (!proc->is_v8)
		return RUNTIME_NOT;
	*v = (struct v8_walk){.pid = tgid, .active = 1};
	return RUNTIME_MAYBE;
}

/* Whether the process is known to have no V8 the walk reads. */
static __always_inline bool v8_none_in(__u32 tgid)
{
	struct v8_process *proc = bpf_map_lookup_elem(&v8_processes, &tgid);

	return !runtime_on(V8_FRAME_TAG) | (proc && !proc->is_v8);
}

/* The instance type a map gives its objects; 0 when it is no map. The maps of
 * SharedFunctionInfo, BytecodeArray and Code are V8's read-only roots, which never move nor
 * go: once user space has seen them (struct v8_process), an object with one of them is of
 * its type without a read of its map. */
static __always_inline __u16 v8_map_type(const struct v8_process *proc, __u64 map)
{
	__u16 type = 0;

	if ((map & 3) != 1)
		return 0;
	if (map == proc->map_shared)
		return proc->type_shared;
	if (map == proc->map_bytecode)
		return proc->type_bytecode;
	if (map == proc->map_code)
		return proc->type_code;
	if (bpf_probe_read_user(&type, sizeof(type), (void *)(map - 1 + proc->map_instance_type)))
		return 0;
	return type;
}

/* The instance type of the heap object a tagged pointer points at; 0 when it is none. V8's
 * objects start with their map (HeapObject.map at 0, user space checks). */
static __always_inline __u16 v8_type_of(const struct v8_process *proc, __u64 tagged)
{
	__u64 map = 0;

	if ((tagged & 3) != 1 || bpf_probe_read_user(&map, sizeof(map), (void *)(tagged - 1)))
		return 0;
	return v8_map_type(proc, map);
}

/* Whether a heap object (tagged) is kept, and what with. */
static __always_inline bool v8_kept_find(const struct v8_kept *k, __u64 key, __u64 *value)
{
	for (__u32 i = 0; i < 2; i++)
		if (key && k->key[i] == key) {
			*value = k->value[i];
			return true;
		}
	return false;
}

static __always_inline void v8_kept_add(struct v8_kept *k, __u64 key, __u64 value)
{
	k->key[k->next & 1] = key;
	k->value[k->next++ & 1] = value;
}

/* Whether map is a JSFunction's: met before in the walk, or read so (and kept). */
static __always_inline bool v8_function_map(struct v8_walk *v, const struct v8_process *proc, __u64 map)
{
	__u64 known;
	__u16 type;

	if ((map & 3) != 1)
		return false;
	if (v8_kept_find(&v->function_maps, map, &known))
		return true;
	type = v8_map_type(proc, map);
	if (type < proc->type_function_first || type > proc->type_function_last)
		return false;
	v8_kept_add(&v->function_maps, map, 1);
	return true;
}

/* A script's id (0 when it cannot be read): met before in the walk, or read so (and kept). */
static __always_inline __u64 v8_script_id(struct v8_walk *v, const struct v8_process *proc, __u64 script)
{
	__u64 id = 0;

	if ((script & 3) != 1 || v8_kept_find(&v->script_ids, script, &id))
		return id;
	if (bpf_probe_read_user(&id, sizeof(id), (void *)(script - 1 + proc->script_id)))
		return 0;
	v8_kept_add(&v->script_ids, script, id);
	return id;
}

/* A heap object's first V8_CODE_READ bytes, read at once into out: false when it is no heap
 * object or cannot be read. */
static __always_inline bool v8_read_object(__u8 *out, __u64 tagged)
{
	return (tagged & 3) == 1 && !bpf_probe_read_user(out, V8_CODE_READ, (void *)(tagged - 1));
}

/* A word of an object read so, at offset (under V8_CODE_READ). */
static __always_inline __u64 v8_word(const __u8 *object, __u16 offset)
{
	return *(const __u64 *)&object[offset & (V8_CODE_READ - 8)];
}

/* Whether the frame's bytecode slot holds a BytecodeArray: the one its SharedFunctionInfo
 * (read into shared) holds, the array of a function compiled and not tiered up to baseline
 * code; else by the map it has. */
static __always_inline bool v8_is_bytecode(const struct v8_process *proc, const __u8 *shared, __u64 bytecode)
{
	if (proc->shared_function_data && (bytecode & 3) == 1 && v8_word(shared, proc->shared_function_data) == bytecode)
		return true;
	return v8_type_of(proc, bytecode) == proc->type_bytecode;
}

/* An interpreted frame's bytecode offset, from the slot where it saved it (a small integer
 * counting from the array's tagged address); V8_NO_OFFSET when it lies outside. */
static __always_inline __u64 v8_bytecode_offset(const struct v8_process *proc, __u64 saved)
{
	__s64 at = (__s64)saved >> 32;

	if (at >= proc->bytecode_data - 1 && at - (proc->bytecode_data - 1) < V8_NO_OFFSET)
		return at - (proc->bytecode_data - 1);
	return V8_NO_OFFSET;
}

/* The current process's image: its start time and its exec's number, mixed. */
static __always_inline __u64 v8_image(void)
{
	/* Loads through the task's trusted pointers: no helper call each. */
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 parts[2] = {task->group_leader->start_time, task->self_exec_id};

	return runtime_fingerprint(parts, 2);
}

/* The slot of the frames kept across samples where a frame with these slots is kept. */
static __always_inline struct v8_frame_kept *v8_kept_slot(struct v8_scratch *s, __u64 function, __u64 bytecode)
{
	__u64 parts[2] = {function, bytecode};

	return &s->frames[runtime_fingerprint(parts, 2) % V8_KEPT_FRAMES];
}

/* Whether a frame kept as named by its function alone (V8_CODE_FUNCTION) holds at pc. */
static __always_inline bool v8_function_kept(const struct v8_process *proc, const struct v8_frame_kept *kept,
					     __u64 function, __u64 pc)
{
	__u64 code = 0;

	if (!proc->function_code)
		return true;
	if (pc - kept->code_start < kept->code_size)
		return false;
	return !bpf_probe_read_user(&code, sizeof(code), (void *)(function - 1 + (proc->function_code & (V8_CODE_READ - 8)))) &&
	       code == kept->function_code;
}

/* A frame slot by its index (struct v8_process). */
static __always_inline __u64 v8_slot(const struct v8_scratch *s, __u8 index)
{
	return s->slots[index & (V8_FRAME_SLOTS - 1)];
}

/* At a native frame the walk steps through by its frame pointer (r's bp; r's pc: where it
 * runs, a return address unless it is the leaf): the JS frame to record in its place, or 0 when it
 * is none (a typed frame, native code, or objects that do not read as a function's). A
 * caller's offset into machine code is its call's, the byte before the return address, as
 * V8 looks its source positions up: the return address may already be the next inlined
 * function's. Global, so the verifier checks it once, apart from the walk's step. */
__noinline __u64 v8_frame(struct v8_walk *v, struct runtime_regs *r, bool leaf)
{
	struct runtime_code_key key = {};
	struct v8_process *proc;
	struct v8_scratch *s;
	struct v8_frame_kept *kept;
	struct v8_code_words words = {};
	__u64 pc, function, shared, script, bytecode, saved, kept_bytecode, code = 0, id, start = 0, offset = V8_NO_OFFSET;
	__u64 *generation, *gcs;
	__u32 zero = 0, size = 0;

	if (!v || !r || !v->active || r->bp < 8 * V8_FRAME_SLOTS)
		return 0;
	pc = leaf ? r->pc : r->pc - 1;
	s = bpf_map_lookup_elem(&v8_scratch, &zero);
	if (!s)
		return 0;
	proc = runtime_walk_entry(&v8_processes, v->pid, &s->proc, sizeof(s->proc), &v->copied);
	if (!proc)
		return 0;
	if (!v->counted) {
		gcs = proc->gc_counted ? bpf_map_lookup_elem(&v8_gcs, &v->pid) : NULL;
		generation = bpf_map_lookup_elem(&v8_generation, &zero);
		v->counted = gcs && generation ? 1 : 2;
		if (v->counted == 1) {
			s->gcs = *gcs;
			s->image = v8_image();
			s->generation = *generation;
		}
	}
	/* Through the stack window: the frame-pointer step after it reads the words above. */
	if (runtime_stack_read(r, r->bp - 8 * V8_FRAME_SLOTS, s->slots, V8_FRAME_SLOTS))
		return 0;
	/* A small integer (tag bit 0) in the context's slot marks a typed frame. */
	if (!(v8_slot(s, proc->slot_context) & 1))
		return 0;
	function = v8_slot(s, proc->slot_function);
	bytecode = v8_slot(s, proc->slot_bytecode_array);
	saved = v8_slot(s, proc->slot_bytecode_offset);
	/* Met in an earlier sample, with no GC since and the code's id still told. */
	kept_bytecode = saved & 1 ? 1 : bytecode;
	kept = v8_kept_slot(s, function, kept_bytecode);
	if (v->counted == 1 && kept->id && kept->function == function && kept->bytecode == kept_bytecode &&
	    kept->pid == v->pid && kept->image == s->image && kept->gcs == s->gcs && kept->generation == s->generation) {
		if (kept->kind == V8_CODE_BYTECODE)
			return V8_FRAME(kept->id, v8_bytecode_offset(proc, saved));
		if (kept->kind == V8_CODE_MACHINE && pc - kept->code_start < kept->code_size)
			return V8_FRAME(kept->id, pc - kept->code_start);
		if (kept->kind == V8_CODE_FUNCTION && v8_function_kept(proc, kept, function, pc))
			return V8_FRAME(kept->id, V8_NO_OFFSET);
	}
	if (!v8_read_object(s->function, function))
		return 0;
	if (!v8_function_map(v, proc, v8_word(s->function, 0)))
		return 0;
	shared = v8_word(s->function, proc->function_shared);
	if (!v8_read_object(s->shared, shared) || v8_map_type(proc, v8_word(s->shared, 0)) != proc->type_shared)
		return 0;
	key.pid = v->pid;
	if (!(saved & 1) && v8_is_bytecode(proc, s->shared, bytecode)) {
		/* Interpreted: the offset it saved counts from the array's tagged address. */
		key.kind = V8_CODE_BYTECODE;
		key.object = bytecode;
		offset = v8_bytecode_offset(proc, saved);
	} else if (proc->function_code && (code = v8_word(s->function, proc->function_code)) &&
		   v8_read_object(s->code, code) && v8_map_type(proc, v8_word(s->code, 0)) == proc->type_code) {
		__u32 flags = *(__u32 *)&s->code[proc->code_flags & (V8_CODE_READ - 4)];

		start = proc->code_start_pointer ? *(__u64 *)&s->code[proc->code_start & (V8_CODE_READ - 8)]
						 : code - 1 + proc->code_start;
		size = *(__u32 *)&s->code[proc->code_size & (V8_CODE_READ - 4)];

		key.kind = V8_CODE_MACHINE;
		key.object = code;
		words.size_kind = (__u64)size << 8 | ((flags & proc->code_kind_mask) >> (proc->code_kind_shift & 31));
		if (proc->code_positions)
			words.positions = v8_word(s->code, proc->code_positions);
		if (proc->code_deopt_data)
			words.deopt_data = v8_word(s->code, proc->code_deopt_data);
		if (pc - start < size && pc - start < V8_NO_OFFSET)
			offset = pc - start;
		else
			key.kind = V8_CODE_FUNCTION; /* another code's (on-stack replacement) */
	} else {
		key.kind = V8_CODE_FUNCTION;
	}
	if (key.kind == V8_CODE_FUNCTION) {
		key.object = shared;
		words = (struct v8_code_words){};
		offset = V8_NO_OFFSET;
	}
	script = v8_word(s->shared, proc->shared_script);
	id = runtime_code_id(RUNTIME_CODES(v8), &key, shared,
			     v8_fingerprint(shared, v8_word(s->shared, proc->shared_name), script,
					    v8_script_id(v, proc, script), &words));
	/* Kept for the samples after, where GCs are counted. */
	if (id && v->counted == 1)
		*kept = (struct v8_frame_kept){.function = function, .bytecode = kept_bytecode,
					       .image = s->image, .gcs = s->gcs, .generation = s->generation, .id = id,
					       .code_start = start, .code_size = size < V8_NO_OFFSET ? size : V8_NO_OFFSET,
					       .function_code = code,
					       .pid = v->pid, .kind = key.kind};
	return V8_FRAME(id, offset);
}

/* V8's GCs, counted by process (v8_gcs): the uprobe user space attaches to a Node file's
 * Heap::PerformGarbageCollection (a GC's pause starts), Heap::GarbageCollectionEpilogueInSafepoint
 * (it ends: everything moved, the dead found) and Heap::TearDown (a worker's heap goes whole),
 * at each entry of each. Memory a GC frees is taken again only after its pause: a frame kept
 * with the count before (struct v8_frame_kept), or read during the pause, answers nothing
 * after it. */
SEC("uprobe/runtime")
int on_v8_gc(void *ctx)
{
	__u32 tgid, tid;
	__u64 *gcs;

	if (!current_ids(&tgid, &tid))
		return 0;
	gcs = bpf_map_lookup_elem(&v8_gcs, &tgid);
	if (gcs)
		__sync_fetch_and_add(gcs, 1);
	return 0;
}

/* A process's image changes with exec, and its pid may come back as another's after its
 * exit: either way it is classified again. */
static __always_inline void v8_forget(__u32 tgid)
{
	bpf_map_delete_elem(&v8_processes, &tgid);
	bpf_map_delete_elem(&v8_gcs, &tgid);
}

#endif /* V8_BPF_H */
