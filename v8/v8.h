/* v8/v8.h: what the kernel's walk of V8's JavaScript frames (v8/v8.bpf.h) and its user half
 * (v8/reader.cpp, v8/names.cpp) share: a Node.js process as the walk needs it (offsets read
 * from V8's postmortem metadata, the v8dbg_ symbols), and how a JS frame sits in a stored
 * stack. */
#ifndef V8_V8_H
#define V8_V8_H

#include "runtime/runtime.h"

/* A JS frame in a user stack: the tag in the top four bits (runtime/runtime.h), the id of
 * the function's code as the walk met it (struct runtime_code) in the next 36, and the offset of
 * what it ran (bytecode offset or machine-code offset, by the code's kind) in the low 24;
 * V8_NO_OFFSET when there is none or it lies past them. */
#define V8_FRAME_TAG 0xb000000000000000ULL
#define V8_NO_OFFSET 0xffffff
#define V8_ID_MASK 0xfffffffffULL
#define V8_FRAME(id, offset) (V8_FRAME_TAG | (((id) & V8_ID_MASK) << 24) | ((offset) & V8_NO_OFFSET))
#define V8_FRAME_ID(value) (((value) >> 24) & V8_ID_MASK)
#define V8_FRAME_OFFSET(value) ((value) & V8_NO_OFFSET)

/* What the walk found running in a JS frame. */
enum v8_code_kind {
	V8_CODE_BYTECODE = 0, /* interpreted: object is the BytecodeArray, offset a bytecode's */
	V8_CODE_MACHINE = 1,  /* compiled (baseline, Maglev, Turbofan): object is the Code */
	V8_CODE_FUNCTION = 2, /* the function alone (code not found): object is the SFI */
};

/* The frame slots the walk reads lie within this many bytes below the frame pointer. */
#define V8_FRAME_SLOTS 8

/* A process as the walk knows it (v8_processes, by pid). User space writes one for every
 * process the walk asks about: is_v8 0 for one without V8, or whose V8 it cannot read. */
struct v8_process {
	__u8 is_v8;
	__u8 not_yet;             /* reserved: a process asked about again */
	__u8 code_start_pointer;  /* Code holds a pointer to its instructions (V8 >= 11.1) */
	__u8 code_kind_shift;
	__u32 code_kind_mask;
	__u8 code_kind_baseline;
	/* Frame slots, by index: slot i is at fp - 8 * (V8_FRAME_SLOTS - i). */
	__u8 slot_function, slot_context, slot_bytecode_array, slot_bytecode_offset;
	/* The uprobes on this process's V8 (v8_gc) count its GCs in v8_gcs: the walk may keep
	 * what it read of a frame across samples (struct v8_frame_kept). */
	__u8 gc_counted;
	__u8 pad[2];
	__u16 type_function_first, type_function_last; /* JSFunction's instance types */
	__u16 type_shared, type_code, type_bytecode;   /* SharedFunctionInfo, Code, BytecodeArray */
	__u16 map_instance_type;                       /* Map: instance_type */
	__u16 function_shared, function_code;          /* JSFunction; code 0: none (Node 24) */
	__u16 code_start, code_size, code_flags;       /* Code */
	/* Code's source position table and DeoptimizationData (0: not known): tables made for
	 * each compilation, whose addresses tell one code object from another of the same
	 * function and size that a GC put at its address. */
	__u16 code_positions, code_deopt_data;
	__u16 shared_name, shared_script;              /* SharedFunctionInfo: its fingerprint's */
	__u16 script_id;                               /* Script: its id (a small integer) */
	__u16 bytecode_data;                           /* BytecodeArray: where its bytecodes start */
	/* SharedFunctionInfo: its function_data (trusted_function_data from V8 12), the
	 * BytecodeArray once compiled (0: not known) */
	__u16 shared_function_data;
	/* The maps of SharedFunctionInfo, BytecodeArray and Code (tagged), as user space met
	 * them; 0 until then. */
	__u64 map_shared, map_bytecode, map_code;
};

/* The code objects the walk met are runtime_code records (runtime/runtime.h): kind is an
 * enum v8_code_kind, object the code object, extra its SharedFunctionInfo (tagged). The
 * fingerprint tells it from another object that took its address after a GC. Addresses alone
 * do not: code that makes and drops functions of one shape allocates the same objects in the
 * same order, and after a GC a later function's SharedFunctionInfo, name, Script and
 * bytecode may each take the address of an earlier one's. So the fingerprint has, beside the
 * function's SharedFunctionInfo and its name and script words, the script's id (which the
 * isolate gives each script in turn) and, for machine code, the code's size and kind and its
 * tables (another compilation of the same function, even of the same size, has tables of its
 * own, and may have inlined other functions). */
struct v8_code_words {
	__u64 size_kind; /* size << 8 | kind */
	__u64 positions, deopt_data;
};

static inline __u64 v8_fingerprint(__u64 shared, __u64 name, __u64 script, __u64 script_id,
				   const struct v8_code_words *code)
{
	__u64 parts[7] = {shared, name, script, script_id, code->size_kind, code->positions, code->deopt_data};

	return runtime_fingerprint(parts, 7);
}

#endif /* V8_V8_H */
