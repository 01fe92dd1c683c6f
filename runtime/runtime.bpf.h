/* runtime/runtime.bpf.h: what every runtime's kernel walk may use of the walk's settings:
 * whether its frames are walked at all. */
#ifndef RUNTIME_RUNTIME_BPF_H
#define RUNTIME_RUNTIME_BPF_H

#include "base/kernel.bpf.h"
#include "runtime/runtime.h"

/* The runtimes whose frames the walk shows, RUNTIME_BIT(tag) each: set by user space at
 * load (none without the table walk; --no-NAME clears one). */
const volatile __u32 runtimes_on = 0;

static __always_inline bool runtime_on(__u64 tag)
{
	return runtimes_on & RUNTIME_BIT(tag);
}

#endif /* RUNTIME_RUNTIME_BPF_H */
