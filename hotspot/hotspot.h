/* hotspot/hotspot.h: what the kernel's walk of HotSpot frames (hotspot/hotspot.bpf.h) and
 * its user half (hotspot/reader.cpp) share: a JVM as the walk needs it, and how a Java frame
 * sits in a stored stack. */
#ifndef HOTSPOT_HOTSPOT_H
#define HOTSPOT_HOTSPOT_H

#include "runtime/runtime.h"

/* A Java frame in a user stack: the tag in the top four bits (0xc: 0xa is taken, and a
 * runtime added later takes another), its kind in the next two, then 14 bits of an offset
 * (HOTSPOT_NO_BCI when there is none or it lies past them) and 44 of an address divided by
 * 8 or of an id:
 * - by id (HOTSPOT_BY_ID): the id of what the walk met (struct runtime_code), named while
 *   the JVM lives, and an offset into it:
 *   - a compiled method (HOTSPOT_CODE_NMETHOD: object the nmethod, extra its Method*): the
 *     offset of its pc in the code, which gives its lines and inlined methods;
 *   - an interpreted method (HOTSPOT_CODE_METHOD: object the Method*): the bytecode index;
 *   - a stub (HOTSPOT_CODE_STUB: object its code blob): none;
 * - its id not had (the map or ring full), named at the end: an interpreted or compiled
 *   method, with the bytecode index (an interpreted frame's) or none, and the Method*; a
 *   stub, with none, and its code blob. */
#define HOTSPOT_FRAME_TAG 0xc000000000000000ULL
#define HOTSPOT_INTERPRETED 0ULL
#define HOTSPOT_COMPILED 1ULL
#define HOTSPOT_STUB 2ULL
#define HOTSPOT_BY_ID 3ULL
#define HOTSPOT_NO_BCI 0x3fffULL
#define HOTSPOT_ADDRESS_MASK 0xfffffffffffULL
#define HOTSPOT_FRAME(kind, bci, address)                                                                  \
	(HOTSPOT_FRAME_TAG | ((kind) & 3) << 58 | ((bci) & HOTSPOT_NO_BCI) << 44 |                         \
	 (((address) >> 3) & HOTSPOT_ADDRESS_MASK))
#define HOTSPOT_ID_FRAME(offset, id) HOTSPOT_FRAME(HOTSPOT_BY_ID, offset, (id) << 3)
#define HOTSPOT_FRAME_KIND(value) (((value) >> 58) & 3)
#define HOTSPOT_FRAME_BCI(value) (((value) >> 44) & HOTSPOT_NO_BCI)
#define HOTSPOT_FRAME_ADDRESS(value) (((value) & HOTSPOT_ADDRESS_MASK) << 3)
#define HOTSPOT_FRAME_ID(value) ((value) & HOTSPOT_ADDRESS_MASK)

/* What the walk met of a JVM's, by id (struct runtime_code's kind). */
enum hotspot_code_kind {
	HOTSPOT_CODE_NMETHOD = 0, /* a compiled method */
	HOTSPOT_CODE_METHOD = 1,  /* an interpreted method */
	HOTSPOT_CODE_STUB = 2,    /* a stub, named by its code blob */
};

/* What tells one from another that later took its address: a compiled method's Method* and
 * compile id (a running number of the JVM's); a method's Method* and ConstMethod*; a stub's
 * code blob and the first 8 bytes of its name. And for a method, compiled or not, the JVM's
 * count of classes unloaded when the walk met it (its perf data's java.cls.unloadedClasses;
 * 0 without): a class unloaded frees its methods, and a class loaded after it may take
 * their very addresses, Method* and ConstMethod* alike (a class loader's metadata is laid
 * out again in the same chunks). A method met before an unloading is met again as new. */
static inline __u64 hotspot_fingerprint(__u64 method, __u64 second, __u64 unloaded)
{
	__u64 parts[3] = {method, second, unloaded};

	return runtime_fingerprint(parts, 3);
}

#define HOTSPOT_MAX_HEAPS 4
/* A code block's header and its blob's are read at once, up to this many bytes: through the
 * last field the walk reads of the blob (struct hotspot_process's block_size + header_read). */
#define HOTSPOT_HEADER_READ 512
/* An interpreted frame's words read below its rbp: its method's and bcp's slots lie there. */
#define HOTSPOT_FRAME_WORDS 10
/* Code blobs that never move or go (the interpreter's, the call stub's), found by range. */
#define HOTSPOT_FIXED_BLOBS 2
/* Bytes of a segment map read at once, up to a pc's segment. */
#define HOTSPOT_SEGMAP_READ 128
/* Steps back through a segment map (each up to 254 segments) before a blob is given up. */
#define HOTSPOT_SEGMAP_STEPS 16
#define HOTSPOT_KEPT_BLOCKS 4

/* A process as user space classified it, with what the walk reads of a JVM: its code heaps
 * and the offsets of the fields it reads (hotspot/layout.h says what each is). */
struct hotspot_process {
	__u64 low[HOTSPOT_MAX_HEAPS], high[HOTSPOT_MAX_HEAPS], segmap[HOTSPOT_MAX_HEAPS];
	__u8 is_java;  /* a JVM the walk follows */
	__u8 not_yet;  /* a JVM still starting: asked about again */
	__u8 heaps;    /* how many of low, high, segmap are set */
	__u8 log2_segment;
	__u8 code_begin_is_offset;
	__u8 frame_complete_is_short; /* an int16_t, not an int */
	__u8 fixed_frameless[HOTSPOT_FIXED_BLOBS]; /* below: a fixed blob of frame size 0 */
	__u16 block_used, block_size;
	__u16 blob_name, blob_frame_size, blob_code_begin, blob_frame_complete;
	__u16 nmethod_method, nmethod_compile_id, method_const, const_size;
	__s16 interpreter_method, interpreter_bcp; /* bytes from the frame pointer */
	__u16 header_read; /* bytes of a blob read at once, with its block's header (block_size) at most HOTSPOT_HEADER_READ */
	__u16 block_length; /* the block's length in segments, in its header */
	__u64 unloaded; /* where its count of classes unloaded is (hotspot_fingerprint); 0: none */
	/* Blobs the walk takes by their range, not through the segment map: from the blob's
	 * start to its end (0, 0: none), and its name's first 8 bytes. */
	__u64 fixed_low[HOTSPOT_FIXED_BLOBS], fixed_high[HOTSPOT_FIXED_BLOBS], fixed_name[HOTSPOT_FIXED_BLOBS];
	/* libjvm's image that is never written (its text, its read-only data): blob names read
	 * there are kept; and this classification's number, unique in the run. */
	__u64 image_low, image_high;
	__u64 serial;
};

#endif /* HOTSPOT_HOTSPOT_H */
