/* runtime/runtime.h: what the table walk and every language runtime's walk share, kernel
 * side and user side: how a runtime's frame sits in a stored stack, and what a runtime's
 * hooks answer the walk. A runtime is a room of its own (a folder named for it),
 * registered in runtimes/: runtimes.bpf.h on the kernel side, runtimes.cpp on the user
 * side. */
#ifndef RUNTIME_RUNTIME_H
#define RUNTIME_RUNTIME_H

#ifndef __VMLINUX_H__ /* user space: the kernel side has vmlinux.h's types */
#include <linux/types.h>
#endif

/* A runtime's frame in a user stack has its runtime's tag in the top four bits: no user
 * address has them, and the walk's TRUNCATED_FRAME (profile.h) has 0xf. What the other 60
 * bits hold is the runtime's own (say, an id of the code it ran and an instruction). */
#define RUNTIME_TAG_MASK 0xf000000000000000ULL
#define RUNTIME_TAG_OF(value) ((value) & RUNTIME_TAG_MASK)
/* A runtime's bit in the kernel's runtimes_on (runtime/runtime.bpf.h) and in user space's
 * sets of runtimes: its tag's number. */
#define RUNTIME_BIT(tag) (1u << (unsigned)((tag) >> 60))

/* What a runtime's start at a walk found of the sampled process. */
#define RUNTIME_MAYBE 0 /* the runtime's, or not classified yet: asked again at the next walk */
#define RUNTIME_NOT 1   /* classified, and no process whose frames the runtime can show */

/* What a runtime's frame hook did at a native frame of the walk. */
#define RUNTIME_NATIVE 0   /* nothing: the native frame is recorded as it is */
#define RUNTIME_SHOWN 1    /* one of the runtime's frames recorded at ip[n]; the native frame waits */
#define RUNTIME_REPLACED 2 /* nothing more: the native frame is not recorded, only stepped past */
#define RUNTIME_STEPPED 3  /* its frame recorded at ip[n] in the native frame's place, and the walk's
			    * registers moved to the caller's: code with no unwind table (a JIT's) */

/* A fingerprint of a runtime's object, to tell it from another that later took its address:
 * its n parts mixed (each runtime says which parts). Made alike by the walk and by user
 * space. */
static inline __u64 runtime_fingerprint(const __u64 *parts, int n)
{
	__u64 h = 0x9e3779b97f4a7c15ULL;

	for (int i = 0; i < n; i++) {
		h ^= parts[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 33;
	}
	return h;
}

/* A runtime's object the walk met in a process (a code object, a compiled method): the key
 * of the runtime's map of those already told to user space (RUNTIME_CODES_MAP). kind is the
 * runtime's own (what the object is). */
struct runtime_code_key {
	__u32 pid;
	__u32 kind;
	__u64 object;
};

/* What that map keeps of each, and what the walk sends user space for each new id, so that
 * it is named while the process lives. The fingerprint tells the object from another that
 * later took its address; extra is the runtime's own (the object's function, its compile
 * id). */
struct runtime_code {
	__u32 pid;
	__u32 kind;
	__u64 object;
	__u64 extra;
	__u64 fingerprint;
	__u64 id; /* from 1, unique in the run */
};

#endif /* RUNTIME_RUNTIME_H */
