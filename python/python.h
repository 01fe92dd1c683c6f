/* python/python.h: what the kernel's walk of CPython frames (python/python.bpf.h) and its
 * user half (python/runtime.cpp, python/names.cpp) share: a CPython process as the walk
 * needs it, and how a Python frame sits in a stored stack. */
#ifndef PYTHON_PYTHON_H
#define PYTHON_PYTHON_H

#include "runtime/runtime.h"

/* A Python frame in a user stack: the tag in the top four bits (runtime/runtime.h), the code object's id (struct python_code) in the
 * next 44, and the instruction's index in code units in the low 16 (PYTHON_NO_INDEX when it
 * lies past them). An id, not the code object's address: an address freed and taken by
 * another code object is another id, so each keeps its own name. */
#define PYTHON_FRAME_TAG 0xa000000000000000ULL
#define PYTHON_NO_INDEX 0xffff
#define PYTHON_ID_MASK 0xfffffffffffULL
#define PYTHON_FRAME(id, index) (PYTHON_FRAME_TAG | (((id) & PYTHON_ID_MASK) << 16) | ((index) & 0xffff))
#define PYTHON_IS_FRAME(value) (RUNTIME_TAG_OF(value) == PYTHON_FRAME_TAG)
#define PYTHON_FRAME_ID(value) (((value) >> 16) & PYTHON_ID_MASK)
#define PYTHON_FRAME_INDEX(value) ((value) & 0xffff)

/* How the interpreter chains its frames, by minor version. */
enum python_chain {
	/* 3.8-3.10: PyFrameObject by f_back; each _PyEval_EvalFrameDefault runs one frame. */
	PYTHON_CHAIN_FRAME_OBJECT = 0,
	/* 3.11: _PyInterpreterFrame by previous; the byte at frame_entry (is_entry) marks the
	 * first frame an eval call ran. */
	PYTHON_CHAIN_IS_ENTRY = 1,
	/* 3.12, 3.13: the same chain; each eval call first pushes a shim frame, owned by the C
	 * stack (the byte at frame_entry, owner, is PYTHON_OWNED_BY_CSTACK). */
	PYTHON_CHAIN_SHIM = 2,
};
#define PYTHON_OWNED_BY_CSTACK 3

/* How a frame says which instruction it runs. */
enum python_instr {
	PYTHON_INSTR_LASTI_BYTES = 0, /* int f_lasti, in bytes (3.8, 3.9) */
	PYTHON_INSTR_LASTI_UNITS = 1, /* int f_lasti, in code units (3.10) */
	PYTHON_INSTR_POINTER = 2,     /* a pointer into the code object's co_code_adaptive */
};

/* Struct reads go through this many bytes of per-CPU scratch: offsets past it are refused. */
#define PYTHON_FRAME_READ 128
/* The bytes of a code object read, by the walk and by user space: every field either takes
 * lies within. */
#define PYTHON_CODE_READ 160

/* A process as the walk knows it (python_processes, by pid). User space writes one for every
 * process the walk asks about: is_python 0 for one that is not CPython, or one whose version
 * it does not know. Addresses are the process's own. */
struct python_process {
	__u64 eval_start, eval_end; /* _PyEval_EvalFrameDefault */
	__u64 cold_start, cold_end; /* its .cold part, when the symbols name one (else 0, 0) */
	__u64 code_type;            /* &PyCode_Type: what a frame's code object must be */
	__u32 tss_key;              /* the pthread key of _PyRuntime's autoTSSkey */
	__u16 tsd_offset;           /* glibc: struct pthread's specific_1stblock */
	__u8 is_python;
	__u8 chain;                 /* enum python_chain */
	__u8 instr;                 /* enum python_instr */
	__u8 not_yet; /* a runtime not initialized yet: not Python's for now, asked about again */
	__u8 pad[2];
	__u16 tstate_frame;         /* PyThreadState: frame, cframe or current_frame */
	__s16 cframe_frame;         /* _PyCFrame's current_frame; -1: tstate_frame is the frame */
	__u16 frame_previous;       /* f_back / previous */
	__u16 frame_code;           /* f_code / f_executable */
	__u16 frame_instr;          /* f_lasti / prev_instr / instr_ptr */
	__u16 frame_entry;          /* is_entry / owner */
	__u16 code_units;           /* where co_code_adaptive starts (PYTHON_INSTR_POINTER) */
	/* The code object's fields its fingerprint is made of (python_fingerprint). */
	__u16 code_name;            /* co_qualname, else co_name */
	__u16 code_filename;
	__u16 code_firstlineno;
	__u16 pad2[2];
};

/* What tells a code object from another that later took its address: the pointers to its
 * name and file name, its first line, and its name's length and hash (read at the name
 * plus 16, in every version's str; an interned name's hash is set when it is interned).
 * Made alike by the walk and by user space. */
static inline __u64 python_fingerprint(__u64 name, __u64 filename, __s32 first_line, __u64 name_length,
				       __u64 name_hash)
{
	__u64 parts[5] = {name, filename, (__u64)(__u32)first_line, name_length, name_hash};

	return runtime_fingerprint(parts, 5);
}

/* A code object the walk met in a process: the key of python_codes. */
struct python_code_key {
	__u32 pid;
	__u32 pad;
	__u64 code;
};

/* What python_codes keeps of it, and what the walk sends user space (python_seen) for each
 * new id, so that it is named while the process lives: a code object met again at the same
 * address with another fingerprint is another, with an id of its own. */
struct python_code {
	__u32 pid;
	__u32 pad;
	__u64 code;
	__u64 fingerprint;
	__u64 id; /* from 1, unique in the run */
};

#endif /* PYTHON_PYTHON_H */
