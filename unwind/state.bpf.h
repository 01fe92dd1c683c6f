/* unwind/state.bpf.h: what the table walk (unwind/unwind.bpf.h) reads and keeps: the maps
 * of files' objects and their tables, the per-CPU caches of rows, recent mappings and stack
 * words, and the walk's own state (struct walk). */
#ifndef UNWIND_STATE_BPF_H
#define UNWIND_STATE_BPF_H

#include "base/kernel.bpf.h"
#include "unwind/unwind.h"
#include "runtimes/runtimes.bpf.h"
#include "unwind/mappings.bpf.h"

/* Files -> their object ids, as user space registers them: a file's one table serves every
 * process that maps it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct unwind_file);
	__type(value, __u32);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} unwind_files SEC(".maps");

#define UNWIND_MAX_OBJECTS 16384
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_object);
	__uint(max_entries, UNWIND_MAX_OBJECTS);
} unwind_objects SEC(".maps");

/* Each object's rows, in an array of its own made by user space to fit them: table memory
 * grows with what is loaded, and no table waits for room in a shared one. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__type(key, __u32);
	__uint(max_entries, UNWIND_MAX_OBJECTS);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_ARRAY);
		__uint(key_size, sizeof(__u32));
		__uint(value_size, sizeof(struct unwind_chunk));
		__uint(max_entries, 1);
		/* Each its own size, and written by user space through a mapping of it. */
		__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	});
} unwind_tables SEC(".maps");

/* Asked of user space, once each until it answers: processes sampled whose mappings the
 * walk does not have (running before profile started, and not yet sent). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 4096);
} wanted_processes SEC(".maps");

/* Asked of user space too: files the walk met that have no object yet, with a mapping of
 * each through which user space opens it and builds its table. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct unwind_file);
	__type(value, struct unwind_file_seen);
	__uint(max_entries, 4096);
} wanted_files SEC(".maps");

/* Rows found lately, per CPU, by object and file offset: a profiler samples the same
 * stacks over and over, so most frames' rows are found here with no search and no lookup in
 * the object's own array (a helper call each). Direct-mapped; an entry is a copy of a row of
 * a READY object, whose rows never change (object ids are not reused within a run). */
#define ROW_CACHE_SHIFT 11
#define ROW_CACHE_SIZE (1u << ROW_CACHE_SHIFT)
struct row_cache {
	struct {
		__u64 key; /* object << 32 | offset; 0: empty (object 0 has no table) */
		struct unwind_row row;
	} entries[ROW_CACHE_SIZE];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct row_cache);
	__uint(max_entries, 1);
} row_cache SEC(".maps");

/* The mappings this CPU's walks found lately by searching a process's list, and their
 * objects: a process sampled again on the same CPU finds its frames' mappings here, with no
 * lookup of its list, no search of it and no lookup of each file's object. Good for one
 * list as it is (pid, serial, seq): a walk of another list, or of this one changed, starts
 * the entries again. And whether the process is known to show no runtime's frames (no
 * runtime's start claims it), good for the list whatever its seq (an exec starts another
 * list). */
#define RECENT_MAPPINGS 4
struct recent_mappings {
	__u32 pid, serial, seq, next;
	__u32 no_runtime;
	struct {
		__u64 start, end;
		__u32 offset, object;
	} m[RECENT_MAPPINGS];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct recent_mappings);
	__uint(max_entries, 1);
} recent_mappings SEC(".maps");

#if defined(__TARGET_ARCH_x86)

/* The stack memory a walk of a thread leaving the CPU read (--off-cpu), per CPU: the walk
 * is a function of its registers, the words it read and its process's list of areas, so
 * a thread that leaves again with the same registers, the same words at the same places and
 * the same list has the same stack, and offcpu.bpf.h takes it again without a walk. */
#define WALK_READS_MAX 32
struct walk_reads {
	__u64 pc, sp, bp;         /* the registers the walk began from */
	__u64 mm;                 /* the address space it walked: an exec makes another */
	__u64 at[WALK_READS_MAX]; /* user addresses read, 8-byte aligned; bit 0: 16 bytes, else 8 */
	struct stack_hash values; /* of the words read, in order */
	__u32 n;                  /* reads; past WALK_READS_MAX, too many to keep */
	__u32 seq;                /* of the process's list of areas */
	/* Tables only, to the stack's end, all reads kept, in a process user space has found
	 * shows no runtime's frames (runtimes_none_in): nothing else decides the walk. */
	bool same_again;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct walk_reads);
	__uint(max_entries, 1);
} walk_reads SEC(".maps");

/* Where a walk stopped at code whose table was not in yet: what a raw sample keeps. n 0:
 * the walk did not stop so, or cannot be kept raw (it showed a runtime's frames). */
struct raw_resume {
	__u64 pc, sp, bp;
	__u32 n;
};

#define WAITED_PROCESS 1
#define WAITED_FILE 2
#define WAITED_BUILDING 3

struct walk {
	union {
		struct {
			__u64 pc, sp, bp;
			/* The user addresses the stack window holds: [window_start, window_end). */
			__u64 window_start, window_end;
		};
		struct runtime_regs regs; /* as a runtime's hook steps them, and reads the stack */
	};
	/* The mapping the last pc was in (end 0: none yet), and its object. */
	__u64 map_start, map_end;
	__u32 map_offset, object;
	__u32 pid;
	__u32 n;
	__u32 seq; /* of the process's list when the walk began, and after its own changes */
	__u32 serial; /* of that list */
	struct stack_hash hash; /* of the frames so far */
	bool process_known;
	bool asked_area, learned_area; /* learn_mapping was tried (one area a sample); it added one */
	bool pending, fp_no_table, cut, done;
	bool record; /* keeps what it reads in walk_reads (a thread leaving the CPU) */
	__u8 waited; /* why it is pending: WAITED_* */
	struct runtime_walk rt; /* runtimes/runtimes.bpf.h: a runtime's frames among the native ones */
};

#endif /* __TARGET_ARCH_x86 */

#endif /* UNWIND_STATE_BPF_H */
