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
};

#endif /* PROFILE_H */
