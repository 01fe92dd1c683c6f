/* profile.h: the types the BPF program and user space share, and nothing else: it includes
 * no room. A room's own kernel/user types are in its folder (unwind/unwind.h, a language
 * runtime's own header), included where they are used. */
#ifndef PROFILE_H
#define PROFILE_H

#define TASK_COMM_LEN 16
#define DEFAULT_STACK_DEPTH 127

/* A stack id field holds this when that stack was not asked for or does not exist
 * (a user-mode sample has no kernel stack, a kernel thread no user stack). */
#define NO_STACK (-1)

/* --off-cpu: what a thread was doing when it left the CPU (stack_key's state). */
#define THREAD_ON_CPU 0   /* an on-CPU sample */
#define THREAD_RUNNABLE 1 /* preempted, or yielded: ready to run, waiting for a CPU */
#define THREAD_BLOCKED 2  /* asleep until an event: I/O, a lock, a timer, a child */

/* Key of the counts map: one entry per distinct (process, comm, user stack, kernel stack,
 * and off the CPU, the thread's state; with --wakers, the thread that woke it). */
struct stack_key {
	__u32 pid; /* the process (tgid) */
	__s32 user_stack_id;
	__s32 kernel_stack_id;
	__u32 state; /* THREAD_* */
	/* The thread, when the run keys counts by thread (key_threads: OTLP's thread.id), in
	 * profile's PID namespace; else 0, and a process's threads of one comm share keys. */
	__u32 tid;
	char comm[TASK_COMM_LEN];
	/* --wakers: 1 when a thread woke this one, whose process, stacks and comm follow. */
	__u32 woken;
	__u32 waker_pid;
	__s32 waker_user_stack_id;
	__s32 waker_kernel_stack_id;
	char waker_comm[TASK_COMM_LEN];
};

struct stack_count {
	/* Samples; with --off-cpu, nanoseconds off the CPU. */
	__u64 count;
	/* CLOCK_MONOTONIC time of the key's first sample: tells which image of a process
	 * (before or after an exec) the stacks belong to. Written once, on insert. */
	__u64 first_ns;
	/* With --off-cpu, the times off the CPU summed in count (0 for on-CPU samples). */
	__u64 blocks;
};

/* Per-CPU tally of what the program saw. Every sample that passed the filters is counted
 * in `seen`; one that could not be stored is counted once more, in the field of its cause.
 * So seen = stored (the sum of the counts map) + lost_counts_full + lost_stack_collision
 * + lost_stack_full + lost_stack_other + lost_thread_start + lost_budget holds exactly, and user space
 * checks it. With --off-cpu a sample is one time off the CPU (stored: the sum of the
 * counts' blocks). */
struct sample_stats {
	__u64 seen;
	__u64 lost_counts_full;     /* counts map full: raise --hash-storage-size */
	__u64 lost_stack_collision; /* stack map bucket taken by another stack */
	__u64 lost_stack_full;      /* stack map out of free entries */
	__u64 lost_stack_other;     /* any other bpf_get_stackid error */
	__u64 lost_thread_start;    /* --off-cpu: no memory to keep when a thread left the CPU */
	__u64 lost_budget;          /* this CPU's programs over their CPU budget (sampler/budget.bpf.h) */
	__u64 new_keys;             /* counts entries created: how fast the maps fill */
	/* How the user stacks of --unwind auto|dwarf were walked, one count per sample that
	 * has a user stack (not losses: every one of them may also be stored). */
	__u64 unwound_tables;       /* every step from unwind tables, to the stack's end */
	__u64 unwound_pending;      /* cut short at code whose table was not built yet */
	__u64 unwound_fp_no_table;  /* some frame-pointer steps: code with no table (JIT, no CFI) */
	__u64 unwound_cut;          /* cut short otherwise: no rule, a failed read, the depth limit */
	/* Met code whose table was not built yet and kept raw (struct raw_sample) for user
	 * space to finish: not in the counts map, and not in unwound_pending. */
	__u64 unwound_raw;
	/* Why the walks that waited for tables (pending or kept raw) waited, one each: the
	 * process's mappings were not known yet; a file had no object yet (user space was asked
	 * for it); its object's table was being built. */
	__u64 waited_process, waited_file, waited_building;
	/* Executable areas a walk met that its process's list lacked, and added
	 * (learn_mapping): the libraries a new process maps, dlopen, JIT code. */
	__u64 areas_learned;
	/* --off-cpu: user stacks of threads leaving the CPU taken again with no walk (also in
	 * unwound_tables): the same registers and stack words as the thread's last walk. */
	__u64 unwound_again;
};

/* One CPU's budget (sampler/budget.bpf.h): the time its programs took in the current
 * window, and since load, for user space to learn what a run costs here. */
struct budget_state {
	__u64 window_start; /* bpf_ktime_get_ns when the current window began */
	__u64 window_ns;    /* taken in it */
	__u64 ns, runs;     /* taken since load, by this many runs that did their work */
	__u64 exhausted;    /* windows whose budget was spent */
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

/* --unwind auto|dwarf keep stacks by content: a stack is stored under a 128-bit hash of its
 * frames and their number (two independent 64-bit chains), and the stored value holds the
 * frames themselves. A lookup then hashes 16 bytes, not a kilobyte of frames and zeros;
 * two different stacks share a key with odds near 2^-128 a pair. */
struct stack_hash {
	__u64 a, b;
};
/* A stored stack: its id (what the counts key names it by), its number of frames, and the
 * frames, leaf first. Only (depth + 1) frame slots are stored (the value size is set at
 * load); the slots past n are not part of the stack. */
struct stored_stack {
	__u32 id;
	__u32 n;
	__u64 ip[UNWIND_MAX_DEPTH + 1];
};
#define STORED_STACK_SIZE(depth) (8 + ((depth) + 1) * 8)

/* A sample whose user stack reached code with no table yet (the file's table still being
 * built), kept raw, as perf's --call-graph dwarf keeps every sample: the frames walked so
 * far, the registers where the walk stopped, and a copy of the stack from there up. User
 * space walks on once the table is in and adds the sample as a stored one. A few slots a
 * generation (RAW_SLOTS, claimed in turn; a generation whose slots are all taken is
 * drained soon after); with none free the stack stays cut short. */
#define RAW_SLOTS 64
#define RAW_STACK_BYTES 8192
/* The copy is read in pieces that never cross a page: the first fault ends it. */
#define RAW_PIECE 512
struct raw_sample {
	struct stack_key key; /* user_stack_id: NO_STACK */
	__u32 complete;       /* 1 once the sample is whole: user space reads only those */
	__u32 n;              /* frames walked in the kernel, the last the frame at pc (1: the
			       * leaf, pc where the sample was taken, not a return address) */
	__u32 stack_len;      /* bytes copied from stack_base on */
	__u64 time_ns;        /* CLOCK_MONOTONIC: which image of the process it ran */
	__u64 pc, sp, bp;
	__u64 stack_base;
	__u64 frames[UNWIND_MAX_DEPTH + 1];
	__u8 stack[RAW_STACK_BYTES];
};

/* The last frame of a user stack whose walk stopped early: user space prints it as
 * "[truncated]". No code lies at this address. */
#define TRUNCATED_FRAME 0xfffffffffffffffeULL

#endif /* PROFILE_H */
