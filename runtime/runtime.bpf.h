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

#endif /* RUNTIME_RUNTIME_BPF_H */
