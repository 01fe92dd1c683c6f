/* runtime/runtime.bpf.h: what every runtime's kernel walk may use of the walk's settings:
 * whether its frames are walked at all, and the registers it may step. */
#ifndef RUNTIME_RUNTIME_BPF_H
#define RUNTIME_RUNTIME_BPF_H

#include "base/kernel.bpf.h"
#include "runtime/runtime.h"

/* The runtimes whose frames the walk shows, RUNTIME_BIT(tag) each: set by user space at
 * load (none without the table walk; --no-NAME clears one). */
const volatile __u32 runtimes_on = 0;

/* The walk's registers at a frame, which a runtime's hook moves past code that has no
 * unwind table (RUNTIME_STEPPED). */
struct runtime_regs {
	__u64 pc, sp, bp;
};

static __always_inline bool runtime_on(__u64 tag)
{
	return runtimes_on & RUNTIME_BIT(tag);
}

/* A runtime's map of the processes sampled that user space has not classified yet, by pid
 * (runtime/kernel_asks.h answers them), and the asking, once each. */
#define RUNTIME_ASKED_MAP(name)                                                                    \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_HASH);                                                   \
		__type(key, __u32);                                                                \
		__type(value, __u8);                                                               \
		__uint(max_entries, 1024);                                                         \
	} name SEC(".maps")

static __always_inline void runtime_ask(void *asked, __u32 tgid)
{
	__u8 one = 1;

	bpf_map_update_elem(asked, &tgid, &one, BPF_NOEXIST);
}

#endif /* RUNTIME_RUNTIME_BPF_H */
