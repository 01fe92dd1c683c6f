/* profile.h: the types the BPF program and user space share, and nothing else. */
#ifndef PROFILE_H
#define PROFILE_H

#define TASK_COMM_LEN 16
#define DEFAULT_STACK_DEPTH 127

/* A stack id field holds this when that stack was not asked for or does not exist
 * (a user-mode sample has no kernel stack, a kernel thread no user stack). */
#define NO_STACK (-1)

/* Key of the counts map: one entry per distinct (process, comm, user stack, kernel stack). */
struct stack_key {
	__u32 pid; /* the process (tgid) */
	__s32 user_stack_id;
	__s32 kernel_stack_id;
	char comm[TASK_COMM_LEN];
};

struct stack_count {
	__u64 count;
	/* CLOCK_MONOTONIC time of the key's first sample: tells which image of a process
	 * (before or after an exec) the stacks belong to. Written once, on insert. */
	__u64 first_ns;
};

/* Per-CPU tally of what the program saw. Every sample that passed the filters is counted
 * in `seen`; one that could not be stored is counted once more, in the field of its cause.
 * So seen = stored (the sum of the counts map) + lost_counts_full + lost_stack_collision
 * + lost_stack_full + lost_stack_other holds exactly, and user space checks it. */
struct sample_stats {
	__u64 seen;
	__u64 lost_counts_full;     /* counts map full: raise --hash-storage-size */
	__u64 lost_stack_collision; /* stack map bucket taken by another stack */
	__u64 lost_stack_full;      /* stack map out of free entries */
	__u64 lost_stack_other;     /* any other bpf_get_stackid error */
	__u64 new_keys;             /* counts entries created: how fast the maps fill */
	/* How the user stacks of --unwind auto|dwarf were walked, one count per sample that
	 * has a user stack (not losses: every one of them may also be stored). */
	__u64 unwound_tables;       /* every step from unwind tables, to the stack's end */
	__u64 unwound_pending;      /* cut short at code whose table was not built yet */
	__u64 unwound_fp_no_table;  /* some frame-pointer steps: code with no table (JIT, no CFI) */
	__u64 unwound_cut;          /* cut short otherwise: no rule, a failed read, the depth limit */
};

/* The most --cgroup groups the program checks a task against: one slot each in its
 * cgroup array, checked in turn. */
#define MAX_CGROUP_FILTERS 64

/* --unwind: how user stacks are walked. */
#define UNWIND_FP 0    /* bpf_get_stackid, frame pointers (BCC's path) */
#define UNWIND_AUTO 1  /* unwind tables where an object has one, frame pointers elsewhere */
#define UNWIND_DWARF 2 /* unwind tables only */

/* Deepest stack the table unwinder walks, and the size of a stack kept by content. */
#define UNWIND_MAX_DEPTH 127

/* The last frame of a user stack whose walk stopped early: user space prints it as
 * "[truncated]". No code lies at this address. */
#define TRUNCATED_FRAME 0xfffffffffffffffeULL

/* One row of an object's unwind table, compiled from its .eh_frame (or the .debug_frame of
 * its debug file): from `pc` up to the next row's pc, how to find the caller's frame.
 * `pc` is an offset in the object's file (what /proc/PID/maps' offset column counts), so
 * the kernel side needs no load bias: file offset = pc - mapping start + mapping offset. */
enum unwind_cfa_type {
	UNWIND_CFA_NONE = 0, /* no rule here (a gap between FDEs, or a rule we cannot follow) */
	UNWIND_CFA_RSP = 1,  /* CFA = rsp + cfa_offset */
	UNWIND_CFA_RBP = 2,  /* CFA = rbp + cfa_offset */
	UNWIND_CFA_PLT = 3,  /* CFA = rsp + 8, + 8 more when (rip & 15) >= cfa_offset (PLT stubs) */
	UNWIND_CFA_END = 4,  /* the outermost frame: the return address is undefined (_start) */
};
enum unwind_rbp_type {
	UNWIND_RBP_SAME = 0,      /* the caller's rbp is this frame's */
	UNWIND_RBP_AT_CFA = 1,    /* saved at CFA + rbp_offset */
	UNWIND_RBP_UNDEFINED = 2, /* lost (or a rule we cannot follow): unknown from here on */
};
struct unwind_row {
	__u32 pc;
	/* In 8-byte slots (x86-64 keeps its stack 8-aligned; a CFA that is not, or lies past
	 * 512 KiB, is compiled as UNWIND_CFA_NONE); UNWIND_CFA_PLT's threshold in bytes. */
	__u16 cfa_offset;
	__s8 rbp_offset;    /* in 8-byte slots from the CFA; else UNWIND_RBP_UNDEFINED */
	__u8 cfa_type : 4;  /* enum unwind_cfa_type */
	__u8 rbp_type : 4;  /* enum unwind_rbp_type */
};
/* Eight bytes a row: a compiler's table of half a million rows takes 4 MiB. */
#define UNWIND_SLOT 8
/* The return address is always at CFA - 8 on x86-64; a row whose CFI says otherwise is
 * compiled as UNWIND_CFA_NONE. */

/* An object (a file mapped executable) as the table walk sees it, by an id user space
 * gives it; its row_count rows are in unwind_tables[id], an array of their own. */
enum unwind_object_state {
	UNWIND_OBJECT_BUILDING = 0, /* being built (or not yet asked for) */
	UNWIND_OBJECT_READY = 1,    /* the rows are in place */
	UNWIND_OBJECT_NO_TABLE = 2, /* no CFI in the file, or it could not be read */
	UNWIND_OBJECT_NO_ROOM = 3,  /* the table did not fit in --unwind-table-size */
};
struct unwind_object {
	__u32 row_count;
	__u32 state; /* enum unwind_object_state */
	/* The page index after the rows: for each page of file offsets from page_base on, the
	 * rows [first, end) a pc in it can need (see struct unwind_page). 0 pages: none. */
	__u32 page_base;  /* the first row's pc >> UNWIND_PAGE_SHIFT */
	__u32 page_count;
};

/* A page's entry in the index, in the slot of an 8-byte row: the row that covers the page's
 * first byte, and one past the row that covers the next page's. The walk's binary search
 * then looks at a few rows, not at every row of a large table. */
#define UNWIND_PAGE_SHIFT 12
struct unwind_page {
	__u32 first;
	__u32 end;
};

/* One executable mapping of a process: [start, end) maps the file (dev, inode) from
 * `offset`. The file's table is found by its identity in unwind_files, so every process
 * that maps a file shares its one table. inode 0 is no file: anonymous code (JIT), the
 * vDSO, or an offset past 4 GiB. dev is the kernel's encoding, major << 20 | minor. */
struct unwind_mapping {
	__u64 start;
	__u64 end;
	__u64 inode;
	__u32 offset;
	__u32 dev;
};

/* The executable mappings of a process, sorted by start. User space sends those of a
 * process that was running before profile started; from then on the kernel keeps them
 * (exec empties them, fork copies them, mmap adds one). seq is odd while the kernel
 * rewrites the list. Those past UNWIND_MAX_MAPPINGS are left out. */
#define UNWIND_MAX_MAPPINGS 256
struct unwind_process {
	__u32 count;
	__u32 seq;
	struct unwind_mapping mappings[UNWIND_MAX_MAPPINGS];
};

/* A file as the kernel knows it: the key of unwind_files (-> its object id) and of
 * wanted_files. */
struct unwind_file {
	__u64 inode;
	__u32 dev;
	__u32 pad;
};

/* Where user space can open a file the walk met without a table: a mapping of it in a
 * live process (/proc/PID/map_files/START-END). */
struct unwind_file_seen {
	__u32 pid;
	__u32 pad;
	__u64 start;
	__u64 end;
};

#endif /* PROFILE_H */
