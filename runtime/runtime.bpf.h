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
 * unwind table (RUNTIME_STEPPED); and the user addresses the stack window holds,
 * [window_start, window_end). */
struct runtime_regs {
	__u64 pc, sp, bp;
	__u64 window_start, window_end;
};

/* A copy of a run of the sampled stack, per CPU: one read of up to a kilobyte serves the
 * next frames' saved registers, where a read each costs a helper call and a user copy. */
#define STACK_WINDOW_WORDS 128
struct stack_window {
	__u64 words[STACK_WINDOW_WORDS];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct stack_window);
	__uint(max_entries, 1);
} stack_window SEC(".maps");

/* Reads `words` 8-byte words of the user stack at `at` into out, through the stack window,
 * loading the window from `at` first when they are not in it; 0, or an error. The window
 * never crosses a page boundary: the page holding `at` is mapped, the next may not be.
 * Inlined, `words` a constant at each call. */
static __always_inline int runtime_stack_read(struct runtime_regs *r, __u64 at, __u64 *out, const __u32 words)
{
	__u32 zero = 0;
	struct stack_window *window = bpf_map_lookup_elem(&stack_window, &zero);
	__u64 index, room;

	if (!window || (at & 7))
		goto direct;
	if (at < r->window_start || at + 8 * words > r->window_end) {
		room = 4096 - (at & 4095);
		if (room > sizeof(window->words))
			room = sizeof(window->words);
		if (room < 8 * words || bpf_probe_read_user(window->words, room, (void *)at)) {
			r->window_end = 0;
			goto direct;
		}
		r->window_start = at;
		r->window_end = at + room;
	}
	index = (at - r->window_start) / 8;
	if (index > STACK_WINDOW_WORDS - words)
		goto direct;
	for (__u32 k = 0; k < words; k++)
		out[k] = window->words[(index + k) & (STACK_WINDOW_WORDS - 1)];
	return 0;
direct:
	return bpf_probe_read_user(out, 8 * words, (void *)at);
}

/* A runtime's entry for the walk's process (its map `processes`, by pid), looked up at the
 * walk's first frame that needs it and copied into `copy` (its per-CPU scratch): the walk's
 * next frames look nothing up. *copied is the walk's, 0 at its start. Null when there is
 * no entry. Inlined, `size` a constant at each call. */
static __always_inline void *runtime_walk_entry(void *processes, __u32 pid, void *copy, const __u32 size,
						__u8 *copied)
{
	if (!*copied) {
		void *entry = bpf_map_lookup_elem(processes, &pid);

		if (!entry)
			return NULL;
		__builtin_memcpy(copy, entry, size);
		*copied = 1;
	}
	return copy;
}

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

/* A runtime's objects already told to user space (struct runtime_code), its ring of those met
 * for the first time, and the last id given. Preallocated: a walk meets a dozen new ones at
 * once, and a hash map that allocates as it goes has only a few elements at hand per CPU in
 * a context that cannot sleep (sched_switch, NMI) until the kernel refills it: the rest
 * failed, and their frames were left unnamed. LRU: one evicted is sent again, with a new
 * id, the next time the walk meets it.
 * Before the map, per CPU, a front of the objects a CPU met lately, each in the slot its
 * address gives: a frame met again (a stack's callers, sample after sample) is answered by an
 * index, where the hash costs as much as a read of the process. An entry holds the map's
 * generation, which user space moves on after it takes objects out of the map
 * (runtime/kernel_asks.h): the front's older entries then answer nothing. */
#define RUNTIME_FRONT_SLOTS 256
struct runtime_front_entry {
	struct runtime_code_key key;
	__u64 fingerprint, id, generation;
};
struct runtime_front {
	struct runtime_front_entry slots[RUNTIME_FRONT_SLOTS];
};

#define RUNTIME_CODES_MAP(runtime)                                                                 \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LRU_HASH);                                               \
		__type(key, struct runtime_code_key);                                              \
		__type(value, struct runtime_code);                                                \
		__uint(max_entries, 16384);                                                        \
	} runtime##_codes SEC(".maps");                                                            \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                           \
		__type(key, __u32);                                                                \
		__type(value, struct runtime_front);                                               \
		__uint(max_entries, 1);                                                            \
	} runtime##_front SEC(".maps");                                                            \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                                  \
		__type(key, __u32);                                                                \
		__type(value, __u64);                                                              \
		__uint(max_entries, 1);                                                            \
	} runtime##_generation SEC(".maps");                                                       \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_RINGBUF);                                                \
		__uint(max_entries, 256 * 1024);                                                   \
	} runtime##_seen SEC(".maps");                                                             \
	__u64 runtime##_last_id = 0

/* The maps RUNTIME_CODES_MAP(runtime) made, as runtime_code_id takes them. */
#define RUNTIME_CODES(runtime)                                                                     \
	&runtime##_codes, &runtime##_front, &runtime##_generation, &runtime##_seen, &runtime##_last_id

/* The id of the object `key` with this fingerprint, told to user space (the ring seen) the
 * first time the walk meets it. 0 when the ring is full or the map is: the frame then reads
 * as the runtime's unnamed frame. Two CPUs meeting it at once each give it an id: both are
 * named, alike. Called with RUNTIME_CODES(runtime) first. */
static __always_inline __u64 runtime_code_id(void *codes, void *front, void *generation, void *seen,
					     __u64 *last_id, const struct runtime_code_key *key, __u64 extra,
					     __u64 fingerprint)
{
	struct runtime_front_entry *slot = NULL;
	struct runtime_code *known, *sent;
	struct runtime_front *lately;
	__u64 id, *now;
	__u32 zero = 0;

	lately = bpf_map_lookup_elem(front, &zero);
	now = bpf_map_lookup_elem(generation, &zero);
	if (lately && now) {
		slot = &lately->slots[runtime_fingerprint(&key->object, 1) % RUNTIME_FRONT_SLOTS];
		if (slot->id && slot->generation == *now && slot->key.object == key->object &&
		    slot->key.pid == key->pid && slot->key.kind == key->kind && slot->fingerprint == fingerprint)
			return slot->id;
	}
	known = bpf_map_lookup_elem(codes, key);
	if (known && known->fingerprint == fingerprint) {
		id = known->id;
		goto front;
	}
	sent = bpf_ringbuf_reserve(seen, sizeof(*sent), 0);
	if (!sent)
		return 0;
	id = __sync_fetch_and_add(last_id, 1) + 1;
	sent->pid = key->pid;
	sent->kind = key->kind;
	sent->object = key->object;
	sent->extra = extra;
	sent->fingerprint = fingerprint;
	sent->id = id;
	if (bpf_map_update_elem(codes, key, sent, BPF_ANY)) {
		bpf_ringbuf_discard(sent, 0);
		return 0;
	}
	bpf_ringbuf_submit(sent, 0);
front:
	if (slot) {
		slot->key = *key;
		slot->fingerprint = fingerprint;
		slot->id = id;
		slot->generation = *now;
	}
	return id;
}

#endif /* RUNTIME_RUNTIME_BPF_H */
