/* python/python.h: what the kernel's walk of CPython frames (python/python.bpf.h) and its
 * user half (python/runtime.cpp, python/names.cpp) share: a CPython process as the walk
 * needs it, and how a Python frame sits in a stored stack. Included by profile.h. */
#ifndef PYTHON_PYTHON_H
#define PYTHON_PYTHON_H

/* A Python frame in a user stack: the tag in the top four bits (no user address has them,
 * and the walk's TRUNCATED_FRAME has 0xf), the code object's address over 8 (heap addresses
 * are 8-aligned and below 2^47) in the next 44, and the instruction's index in code units
 * in the low 16 (PYTHON_NO_INDEX when it lies past them). */
#define PYTHON_FRAME_TAG 0xa000000000000000ULL
#define PYTHON_FRAME_TAG_MASK 0xf000000000000000ULL
#define PYTHON_NO_INDEX 0xffff
#define PYTHON_FRAME(code, index) (PYTHON_FRAME_TAG | (((code) >> 3) << 16) | ((index) & 0xffff))
#define PYTHON_IS_FRAME(value) (((value) & PYTHON_FRAME_TAG_MASK) == PYTHON_FRAME_TAG)
#define PYTHON_FRAME_CODE(value) ((((value) >> 16) & 0xfffffffffffULL) << 3)
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
	__u8 pad[3];
	__u16 tstate_frame;         /* PyThreadState: frame, cframe or current_frame */
	__s16 cframe_frame;         /* _PyCFrame's current_frame; -1: tstate_frame is the frame */
	__u16 frame_previous;       /* f_back / previous */
	__u16 frame_code;           /* f_code / f_executable */
	__u16 frame_instr;          /* f_lasti / prev_instr / instr_ptr */
	__u16 frame_entry;          /* is_entry / owner */
	__u16 code_units;           /* where co_code_adaptive starts (PYTHON_INSTR_POINTER) */
	__u16 pad2;
};

/* A code object the walk met in a process: the key of python_codes, and what the walk sends
 * user space (python_seen) the first time, so that it is named while the process lives. */
struct python_code {
	__u32 pid;
	__u32 pad;
	__u64 code;
};

#endif /* PYTHON_PYTHON_H */
