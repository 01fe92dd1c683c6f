/* hotspot/hotspot.bpf.h: the kernel's walk of HotSpot frames, registered in
 * runtimes/runtimes.bpf.h. HotSpot's compiled code has no unwind tables and, by default, no
 * frame pointers: where the table walk meets a pc in a JVM's code heaps, this walk finds the
 * code blob (the interpreter's and the call stub's by their ranges, any other through the
 * heap's segment map), records the frame (a method and its bytecode
 * index, a compiled method, a stub) and steps the registers past it itself: an interpreted
 * frame by its fixed layout from rbp, a compiled frame or a stub by its blob's frame size.
 * The table walk then goes on from the caller (JVM code, or more Java). */
#ifndef HOTSPOT_BPF_H
#define HOTSPOT_BPF_H

#include "base/kernel.bpf.h"
#include "hotspot/hotspot.h"
#include "runtime/runtime.bpf.h"

/* Processes as user space classified them, by pid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct hotspot_process);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} hotspot_processes SEC(".maps");

/* Processes sampled that user space has not classified yet, asked once each. */
RUNTIME_ASKED_MAP(hotspot_wanted);

/* Compiled methods already told to user space (struct runtime_code). */
RUNTIME_CODES_MAP(hotspot);

/* A code block's header and its blob's, and an interpreted frame's words (HOTSPOT_FRAME_WORDS
 * below its rbp, then its saved rbp and return address), each read at once, per CPU. */
struct hotspot_scratch {
	__u8 header[HOTSPOT_HEADER_READ + 8];
	__u64 words[16];
	__u8 segmap[HOTSPOT_SEGMAP_READ]; /* a run of a segment map */
	/* The last blob name read in a JVM's libjvm image (immutable text there), by the JVM's
	 * serial and the name's address: every compiled method's is the same "nmethod". */
	__u64 name_serial, name_at, name_value;
	/* The walk's JVM, copied from hotspot_processes at its first frame in the code heaps:
	 * the walk's next Java frames look nothing up. */
	struct hotspot_process jvm;
	/* Blocks the segment map found lately (struct hotspot_kept), the next one replacing
	 * kept[next_kept % HOTSPOT_KEPT_BLOCKS]. */
	struct hotspot_kept {
		__u64 serial, low, high; /* a JVM's block, from its header to its end */
		__u64 check;             /* hotspot_check of its header then */
	} kept[HOTSPOT_KEPT_BLOCKS];
	__u32 next_kept;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hotspot_scratch);
	__uint(max_entries, 1);
} hotspot_scratch SEC(".maps");

static __always_inline int hotspot_read(void *out, __u32 size, __u64 at)
{
	return bpf_probe_read_user(out, size, (void *)at);
}

/* "Interpre": the first 8 bytes of the interpreter's blob's name. */
#define HOTSPOT_INTERPRETER_NAME 0x6572707265746e49ULL

/* A field of the blob's header read (after its block's header), by its offset in the blob
 * (the two under HOTSPOT_HEADER_READ: user space checks). */
static __always_inline __u64 hotspot_u64(const struct hotspot_scratch *s, const struct hotspot_process *jvm,
					 __u16 offset)
{
	return *(const __u64 *)&s->header[(jvm->block_size + offset) & (HOTSPOT_HEADER_READ - 1)];
}

static __always_inline __s32 hotspot_s32(const struct hotspot_scratch *s, const struct hotspot_process *jvm,
					 __u16 offset)
{
	return *(const __s32 *)&s->header[(jvm->block_size + offset) & (HOTSPOT_HEADER_READ - 1)];
}

/* The first 8 bytes of the blob's name, at `at`: kept per CPU when libjvm's image holds it. */
static __always_inline int hotspot_name(struct hotspot_scratch *s, const struct hotspot_process *jvm, __u64 at,
					__u64 *name)
{
	if (at && s->name_at == at && s->name_serial == jvm->serial) {
		*name = s->name_value;
		return 0;
	}
	if (hotspot_read(name, 8, at))
		return -1;
	if (at >= jvm->image_low && at < jvm->image_high && jvm->image_high - at >= 8) {
		s->name_serial = jvm->serial;
		s->name_at = at;
		s->name_value = *name;
	}
	return 0;
}

/* The HotSpot side of one stack walk. */
struct hotspot_walk {
	__u32 pid;
	__u8 active;        /* a JVM's thread */
	__u8 unloaded_read; /* unloaded is read */
	__u8 copied;        /* its process's entry is copied into hotspot_scratch */
	__u8 pad;
	__u64 code_low, code_high; /* from the lowest code heap's start to the highest's end */
	__u64 unloaded;            /* its count of classes unloaded, from its first blob met */
};

/* Starts the HotSpot side of a walk; a process not classified yet is asked about. */
static __always_inline int hotspot_start(struct hotspot_walk *h, __u32 tgid)
{
	struct hotspot_process *jvm;

	if (!runtime_on(HOTSPOT_FRAME_TAG))
		return RUNTIME_NOT;
	jvm = bpf_map_lookup_elem(&hotspot_processes, &tgid);
	if (!jvm || jvm->not_yet) {
		runtime_ask(&hotspot_wanted, tgid);
		return RUNTIME_MAYBE;
	}
	if (!jvm->is_java)
		return RUNTIME_NOT;
	h->pid = tgid;
	h->active = 1;
	h->unloaded_read = 0;
	h->copied = 0;
	h->unloaded = 0;
	h->code_low = ~0ULL;
	for (__u32 i = 0; i < HOTSPOT_MAX_HEAPS; i++)
		if (i < jvm->heaps) {
			h->code_low = jvm->low[i] < h->code_low ? jvm->low[i] : h->code_low;
			h->code_high = jvm->high[i] > h->code_high ? jvm->high[i] : h->code_high;
		}
	return RUNTIME_MAYBE;
}

/* Whether pc may be in the JVM's code heaps: only then is hotspot_frame called, which
 * finds the heap and its blob (a walk through libjvm and libc pays nothing more). */
static __always_inline bool hotspot_may_own(const struct hotspot_walk *h, __u64 pc)
{
	return h->active && pc >= h->code_low && pc < h->code_high;
}

/* The JVM's count of classes unloaded (hotspot_fingerprint), read at the walk's first frame
 * in the code heaps: a sample of its threads in native code alone reads none. */
static __always_inline __u64 hotspot_unloaded(struct hotspot_walk *h, const struct hotspot_process *jvm)
{
	if (!h->unloaded_read) {
		h->unloaded_read = 1;
		if (jvm->unloaded)
			hotspot_read(&h->unloaded, sizeof(h->unloaded), jvm->unloaded);
	}
	return h->unloaded;
}

/* The block holding pc in heap i (its header, the code blob after it), through the heap's
 * segment map: 0 when none (a free block, a map longer than the steps taken). The map's
 * bytes up to pc's segment are read at once, up to HOTSPOT_SEGMAP_READ of them in its page
 * (a blob that long, a step or two), those before one a step. Whether the block is used is
 * read with the blob's header. */
static __always_inline __u64 hotspot_block(struct hotspot_scratch *s, const struct hotspot_process *jvm, __u32 i,
					   __u64 pc)
{
	__u64 low = jvm->low[i & (HOTSPOT_MAX_HEAPS - 1)], map = jvm->segmap[i & (HOTSPOT_MAX_HEAPS - 1)];
	__u64 segment, first, room;
	__u8 back = 0;
	__u32 step;

	segment = (pc - low) >> (jvm->log2_segment & 31);
	room = ((map + segment) & 4095) + 1;
	if (room > segment + 1)
		room = segment + 1;
	if (room > HOTSPOT_SEGMAP_READ)
		room = HOTSPOT_SEGMAP_READ;
	if (room == 0)
		return 0;
	first = segment + 1 - room;
	if (hotspot_read(s->segmap, room, map + first))
		return 0;
	for (step = 0; step < HOTSPOT_SEGMAP_STEPS; step++) {
		if (segment >= first)
			back = s->segmap[(segment - first) & (HOTSPOT_SEGMAP_READ - 1)];
		else if (hotspot_read(&back, 1, map + segment))
			return 0;
		if (back == 0xff)
			return 0;
		if (back == 0)
			break;
		if (back > segment)
			return 0;
		segment -= back;
	}
	if (back != 0)
		return 0;
	return low + (segment << (jvm->log2_segment & 31));
}

/* Reads the block's header and its blob's into s->header (jvm->header_read bytes of the
 * blob): false when they cannot be read, or the block is not in use. */
static __always_inline bool hotspot_header(struct hotspot_scratch *s, const struct hotspot_process *jvm, __u64 block)
{
	__u32 size = jvm->block_size + jvm->header_read;

	return size >= 8 && size <= HOTSPOT_HEADER_READ && !hotspot_read(s->header, size, block) &&
	       s->header[jvm->block_used & (HOTSPOT_HEADER_READ - 1)];
}

/* The fields of the header read that the walk goes by: the block's length, the blob's name,
 * frame size, code start, frame_complete, and a compiled method's Method and compile id
 * (unique in the JVM's life). */
static __always_inline __u64 hotspot_check(const struct hotspot_scratch *s, const struct hotspot_process *jvm)
{
	__u64 parts[7] = {
		*(const __u64 *)&s->header[jvm->block_length & (HOTSPOT_HEADER_READ - 1)],
		hotspot_u64(s, jvm, jvm->blob_name),
		(__u32)hotspot_s32(s, jvm, jvm->blob_frame_size),
		hotspot_u64(s, jvm, jvm->blob_code_begin),
		(__u32)hotspot_s32(s, jvm, jvm->blob_frame_complete),
		hotspot_u64(s, jvm, jvm->nmethod_method),
		(__u32)hotspot_s32(s, jvm, jvm->nmethod_compile_id),
	};

	return runtime_fingerprint(parts, 7);
}

/* A block the segment map found lately that holds pc, its header read again into s->header
 * and the same in every field the walk goes by: 0 when there is none (one kept that is not
 * the same is dropped). Code blobs never move; one freed, its space may be another's: a block
 * starting there is then pc's all the same (pc is live), and the header's fields tell it from
 * the one kept (its compile id); one that starts elsewhere has no header where the kept one
 * had, but code or data, which would have to repeat the kept one's fields byte for byte. */
static __always_inline __u64 hotspot_kept_block(struct hotspot_scratch *s, const struct hotspot_process *jvm,
						__u64 pc)
{
	for (__u32 i = 0; i < HOTSPOT_KEPT_BLOCKS; i++) {
		struct hotspot_kept *kept = &s->kept[i];

		if (kept->serial != jvm->serial || pc < kept->low || pc >= kept->high)
			continue;
		if (hotspot_header(s, jvm, kept->low) && hotspot_check(s, jvm) == kept->check)
			return kept->low;
		kept->high = 0;
		return 0;
	}
	return 0;
}

/* Keeps the block the segment map found, its header in s->header. */
static __always_inline void hotspot_keep_block(struct hotspot_scratch *s, const struct hotspot_process *jvm,
					       __u64 block)
{
	__u64 length = *(const __u64 *)&s->header[jvm->block_length & (HOTSPOT_HEADER_READ - 1)];
	struct hotspot_kept *kept = &s->kept[s->next_kept++ % HOTSPOT_KEPT_BLOCKS];

	if (length > (1 << 24))
		return;
	kept->serial = jvm->serial;
	kept->low = block;
	kept->high = block + (length << (jvm->log2_segment & 31));
	kept->check = hotspot_check(s, jvm);
}

/* Where the return address is, from sp, at pc in a compiled frame's prologue (before
 * frame_complete): at sp until the stack moves; above rbp once C1 pushed it; at the frame's
 * top once its `sub rsp` ran (its rbp saved or not, rbp is still the caller's). A stack
 * bang (`mov [rsp - n], eax`) and the verified entry's 5-byte nop may come first. x86-64's
 * C1 and C2 prologues; another (a virtual method's inline cache check first) reads as
 * nothing pushed. */
static __always_inline __u64 hotspot_prologue(__u64 begin, __u64 pc, __s32 frame_size)
{
	__u8 code[8] = {};
	__u64 at = begin, pushed = 0;

	if (pc <= at || hotspot_read(code, sizeof(code), at))
		return 0;
	if (code[0] == 0x0f && code[1] == 0x1f && code[2] == 0x44) { /* nopl 0(%rax,%rax,1) */
		at += 5;
		if (pc <= at || hotspot_read(code, sizeof(code), at))
			return 0;
	}
	if (code[0] == 0x89 && code[1] == 0x84 && code[2] == 0x24) { /* the stack bang */
		at += 7;
		if (pc <= at || hotspot_read(code, sizeof(code), at))
			return 0;
	}
	if (code[0] == 0x55) { /* push rbp */
		at += 1;
		pushed = 8;
		if (pc <= at || hotspot_read(code, sizeof(code), at))
			return pushed;
	}
	if (code[0] == 0x48 && (code[1] == 0x83 || code[1] == 0x81) && code[2] == 0xec) /* sub rsp, n */
		return pc <= at ? pushed : 8 * (__u64)frame_size - 8;
	return pushed;
}

/* What is left of a compiled frame's own at pc, when pc is in its epilogue, after the frame
 * was taken down: 16 at `pop rbp` (rbp, then the return address), 8 after it, in the return's
 * safepoint poll (`cmp rsp, [r15 + d]; ja` on JDK 16 on, `test eax, [r10]` before) or at the
 * `ret`; 0 elsewhere (the frame is whole). x86-64's C1 and C2 epilogues. */
static __always_inline __u32 hotspot_epilogue(__u64 pc)
{
	__u8 code[8] = {};

	if (hotspot_read(code, sizeof(code), pc))
		return 0;
	if (code[0] == 0x5d)
		return 16;
	if (code[0] == 0xc3 || (code[0] == 0x49 && code[1] == 0x3b && (code[2] == 0x67 || code[2] == 0xa7)) ||
	    (code[0] == 0x0f && code[1] == 0x87 && code[6] == 0xc3) ||
	    (code[0] == 0x41 && code[1] == 0x85 && code[2] == 0x02 && code[3] == 0xc3))
		return 8;
	return 0;
}

/* At a native frame of the walk whose pc (index 0 for the leaf) lies in a JVM's code heap:
 * records its Java frame at ip[n] and moves r to its caller (RUNTIME_STEPPED); anything
 * else is the table walk's (RUNTIME_NATIVE). Global, so the verifier checks it once. */
__noinline int hotspot_frame(struct hotspot_walk *h, struct runtime_regs *r, __u32 index, __u32 n)
{
	struct hotspot_process *jvm;
	struct stored_stack *frames;
	struct hotspot_scratch *s;
	struct runtime_code_key key = {};
	__u64 pc, block = 0, blob, name = 0, value, method = 0, caller_sp, next_sp, saved[2] = {}, id, unloaded;
	__s32 frame_size = 0;
	__u32 user = 1, zero = 0, i;
	__u8 keep_bp = 0;  /* the frame left rbp as its caller's */
	__u8 by_map = 0;   /* the block was found through the segment map */
	__u8 have_header = 0;
	__u8 frameless = 0; /* a fixed blob of frame size 0: its header is not read */

	if (!h || !r || !h->active)
		return RUNTIME_NATIVE;
	key.pid = h->pid;
	frames = bpf_map_lookup_elem(&scratch, &user);
	s = bpf_map_lookup_elem(&hotspot_scratch, &zero);
	if (!frames || !s)
		return RUNTIME_NATIVE;
	jvm = runtime_walk_entry(&hotspot_processes, h->pid, &s->jvm, sizeof(s->jvm), &h->copied);
	if (!jvm || !jvm->is_java)
		return RUNTIME_NATIVE;
	pc = r->pc;
	/* The interpreter and the call stub, in every Java thread's stack, by their ranges: the
	 * interpreter's blob is long, its segment map many steps. */
	for (i = 0; i < HOTSPOT_FIXED_BLOBS; i++)
		if (pc >= jvm->fixed_low[i] && pc < jvm->fixed_high[i]) {
			block = jvm->fixed_low[i] - jvm->block_size;
			name = jvm->fixed_name[i];
			frameless = jvm->fixed_frameless[i];
			break;
		}
	/* A block found lately, its header read with the check; else the segment map's. */
	if (!block && (block = hotspot_kept_block(s, jvm, pc)))
		have_header = 1;
	for (i = 0; !block && i < HOTSPOT_MAX_HEAPS; i++)
		if (i < jvm->heaps && pc >= jvm->low[i] && pc < jvm->high[i]) {
			block = hotspot_block(s, jvm, i, pc);
			by_map = 1;
			break;
		}
	/* The block's header and the blob's, in one read, unless it is the interpreter known by
	 * its range (its frame is read from rbp) or a frameless one so known (the call stub); the
	 * blob's name when not known. */
	if (!block || (name != HOTSPOT_INTERPRETER_NAME && !frameless &&
		       ((!have_header && !hotspot_header(s, jvm, block)) ||
			(!name && hotspot_name(s, jvm, hotspot_u64(s, jvm, jvm->blob_name), &name)))))
		return RUNTIME_NATIVE;
	if (by_map)
		hotspot_keep_block(s, jvm, block);
	blob = block + jvm->block_size;
	unloaded = hotspot_unloaded(h, jvm);
	if (name == HOTSPOT_INTERPRETER_NAME) { /* the interpreter: its frame from rbp */
		__u64 const_method = 0, bcp, bci = HOTSPOT_NO_BCI;

		/* words[i] is at rbp + 8 * (i - HOTSPOT_FRAME_WORDS): the method's and bcp's
		 * slots (user space checks they are within), the sender's sp, rbp, return. */
		if (r->bp < r->sp || r->bp - r->sp > (1 << 20) || r->bp < 8 * HOTSPOT_FRAME_WORDS ||
		    runtime_stack_read(r, r->bp - 8 * HOTSPOT_FRAME_WORDS, s->words, HOTSPOT_FRAME_WORDS + 2))
			return RUNTIME_NATIVE;
		method = s->words[(HOTSPOT_FRAME_WORDS + (jvm->interpreter_method >> 3)) & 15];
		bcp = s->words[(HOTSPOT_FRAME_WORDS + (jvm->interpreter_bcp >> 3)) & 15];
		if (!method || (method & 7) || hotspot_read(&const_method, 8, method + jvm->method_const))
			return RUNTIME_NATIVE;
		if (bcp >= const_method + jvm->const_size && bcp - const_method - jvm->const_size < HOTSPOT_NO_BCI)
			bci = bcp - const_method - jvm->const_size;
		key.kind = HOTSPOT_CODE_METHOD;
		key.object = method;
		id = runtime_code_id(RUNTIME_CODES(hotspot), &key, method,
				     hotspot_fingerprint(method, const_method, unloaded));
		value = id ? HOTSPOT_ID_FRAME(bci, id) : HOTSPOT_FRAME(HOTSPOT_INTERPRETED, bci, method);
		caller_sp = r->bp + 16;
		/* The caller's own sp, below the arguments an adapter may have pushed. */
		next_sp = s->words[(HOTSPOT_FRAME_WORDS - 1) & 15];
		if (next_sp < caller_sp || next_sp - caller_sp > (1 << 16))
			next_sp = caller_sp;
		saved[0] = s->words[HOTSPOT_FRAME_WORDS & 15];
		saved[1] = s->words[(HOTSPOT_FRAME_WORDS + 1) & 15];
	} else {
		frame_size = frameless ? 0 : hotspot_s32(s, jvm, jvm->blob_frame_size);
		__u64 begin = jvm->code_begin_is_offset ? blob + hotspot_s32(s, jvm, jvm->blob_code_begin)
						       : hotspot_u64(s, jvm, jvm->blob_code_begin);
		__s32 complete = 0;

		/* "nmethod\0", and "native n(method)": a native method's wrapper, compiled too. */
		if (name == 0x646f6874656d6eULL || name == 0x6e2065766974616eULL) {
			__u32 compile_id = (__u32)hotspot_s32(s, jvm, jvm->nmethod_compile_id);

			method = hotspot_u64(s, jvm, jvm->nmethod_method);
			if (!method)
				return RUNTIME_NATIVE;
			key.kind = HOTSPOT_CODE_NMETHOD;
			key.object = blob;
			id = runtime_code_id(RUNTIME_CODES(hotspot), &key, method,
					     hotspot_fingerprint(method, compile_id, unloaded));
			if (id)
				value = HOTSPOT_ID_FRAME(pc >= begin && pc - begin < HOTSPOT_NO_BCI ? pc - begin
													 : HOTSPOT_NO_BCI,
							      id);
			else
				value = HOTSPOT_FRAME(HOTSPOT_COMPILED, HOTSPOT_NO_BCI, method);
		} else {
			key.kind = HOTSPOT_CODE_STUB;
			key.object = blob;
			id = runtime_code_id(RUNTIME_CODES(hotspot), &key, 0,
					     hotspot_fingerprint(blob, name, 0));
			value = id ? HOTSPOT_ID_FRAME(HOTSPOT_NO_BCI, id) : HOTSPOT_FRAME(HOTSPOT_STUB, HOTSPOT_NO_BCI, blob);
		}
		if (frame_size <= 0 || frame_size > 4096) {
			/* "vtable c(hunks)", "itable c(hunks)": dispatch stubs jump on to the method
			 * found, never call: only the leaf's return address is theirs. */
			if (name == 0x6320656c62617476ULL || name == 0x6320656c62617469ULL) {
				if (index != 0)
					return RUNTIME_NATIVE;
				caller_sp = r->sp + 8;
				keep_bp = 1;
			} else if (name == 0x204932432f433249ULL) {
				/* "I2C/C2I adapters" move a call's arguments between the interpreter's
				 * places and compiled code's: where the return address is meanwhile is not
				 * known here, and the stack is cut there rather than guessed. */
				return RUNTIME_NATIVE;
			} else {
				/* A stub with no frame of its own here (the call stub's is rbp's). */
				caller_sp = r->bp + 16;
				if (r->bp < r->sp || r->bp - r->sp > (1 << 20))
					return RUNTIME_NATIVE;
			}
		} else {
			complete = hotspot_s32(s, jvm, jvm->blob_frame_complete);
			if (jvm->frame_complete_is_short)
				complete = (__s16)complete;
			/* The leaf before its frame is made (the return address where the prologue
			 * has got to), or in its epilogue once it is gone: only the return address is
			 * left (or rbp above it, at its pop). */
			__u32 left = 0;

			if (index == 0 && complete > 0 && pc < begin + complete) {
				caller_sp = r->sp + hotspot_prologue(begin, pc, frame_size) + 8;
				keep_bp = 1;
			} else if (index == 0 && (left = hotspot_epilogue(pc))) {
				caller_sp = r->sp + left;
				keep_bp = left != 16; /* at `pop rbp`, rbp is below the return address */
			} else {
				caller_sp = r->sp + 8 * (__u64)frame_size;
			}
		}
		next_sp = caller_sp;
	}
	/* The return address at the caller's sp, and rbp saved just below it, as every HotSpot
	 * frame keeps it (an interpreted frame's read with its words); a leaf whose frame is not
	 * made, or a dispatch stub, left rbp as the caller's. */
	if (!saved[1] && (keep_bp ? runtime_stack_read(r, caller_sp - 8, &saved[1], 1)
				  : runtime_stack_read(r, caller_sp - 16, saved, 2)))
		return RUNTIME_NATIVE;
	frames->ip[n & UNWIND_MAX_DEPTH] = value;
	if (!keep_bp)
		r->bp = saved[0];
	r->sp = next_sp;
	r->pc = saved[1];
	return RUNTIME_STEPPED;
}

/* An exec or an exit: the process is classified again. */
static __always_inline void hotspot_forget(__u32 tgid)
{
	bpf_map_delete_elem(&hotspot_processes, &tgid);
}

#endif /* HOTSPOT_BPF_H */
