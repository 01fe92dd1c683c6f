/* unwind/unwind.h: the types the table walk in the kernel (unwind/unwind.bpf.h) and its
 * user half (unwind/feeder.cpp, unwind/builder.cpp, unwind/table.cpp) share: rows, objects, their page
 * index, processes' mappings and files. Included by profile.h. */
#ifndef UNWIND_UNWIND_H
#define UNWIND_UNWIND_H

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

/* An object's array holds its rows, then its page index, in 8-byte slots grouped in chunks
 * of UNWIND_CHUNK_SLOTS: one lookup in the array gives the walk a whole chunk, which it
 * then searches as plain memory, where a lookup a slot would cost a helper call each step
 * of the search (lookups in an inner map are not inlined). Through an mmap the array is
 * one flat run of slots, so user space writes rows and index as they are. */
#define UNWIND_CHUNK_SHIFT 9
#define UNWIND_CHUNK_SLOTS (1u << UNWIND_CHUNK_SHIFT)
union unwind_slot {
	struct unwind_row row;
	struct unwind_page page;
};
struct unwind_chunk {
	union unwind_slot slots[UNWIND_CHUNK_SLOTS];
};

/* One executable mapping of a process: [start, end) maps the file (dev, inode) from
 * `offset`. The file's table is found by its identity in unwind_files, so every process
 * that maps a file shares its one table. inode 0 is no file: anonymous code (JIT), or an
 * offset past 4 GiB; UNWIND_VDSO_INODE is the vDSO. dev is the kernel's encoding,
 * major << 20 | minor. */
struct unwind_mapping {
	__u64 start;
	__u64 end;
	__u64 inode;
	__u32 offset;
	__u32 dev;
};

/* The executable mappings of a process, sorted by start. User space sends those of a
 * process that was running before profile started; from then on the kernel keeps them
 * (exec starts them, fork copies them, a sample in an area the list lacks adds it). seq is
 * odd while the kernel rewrites the list. Those past UNWIND_MAX_MAPPINGS are left out. */
#define UNWIND_MAX_MAPPINGS 256
struct unwind_process {
	__u32 count;
	__u32 seq;
	/* Which list this is: no other list of the run has the same, not a pid's next
	 * process's, not one sent again. Lists the kernel starts count from 1, those user
	 * space sends from UNWIND_SENT_SERIAL. The walk's recent mappings name a list by it. */
	__u32 serial;
	__u32 pad;
	struct unwind_mapping mappings[UNWIND_MAX_MAPPINGS];
};
#define UNWIND_SENT_SERIAL 0x80000000u

/* The vDSO's inode in a mapping (no file has it), with its size in pages as dev: the vDSO
 * is nowhere on disk, and every 64-bit process maps the same one, so user space builds its
 * table from its own. */
#define UNWIND_VDSO_INODE 0xffffffffffffffffULL

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

#endif /* UNWIND_UNWIND_H */
