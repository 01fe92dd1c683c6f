/* unwind/unwind.bpf.h: the kernel half of the table unwinder, included by profile.bpf.c:
 * the maps that hold files' objects and their tables, and the walk of a user stack from
 * those tables (walk_user_stack), through processes' mappings as unwind/mappings.bpf.h
 * keeps them. It calls the Python walk (python/python.bpf.h) at each native frame. */
#ifndef UNWIND_BPF_H
#define UNWIND_BPF_H

#include "sampler/profile.bpf.h"
#include "python/python.bpf.h"
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
 * the entries again. And whether the process is known not to be CPython's, good for the
 * list whatever its seq (an exec starts another list). */
#define RECENT_MAPPINGS 4
struct recent_mappings {
	__u32 pid, serial, seq, next;
	__u32 not_python;
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
	 * is not Python's (or with Python frames off): nothing else decides the walk. */
	bool same_again;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct walk_reads);
	__uint(max_entries, 1);
} walk_reads SEC(".maps");

/* Where a walk stopped at code whose table was not in yet: what a raw sample keeps. n 0:
 * the walk did not stop so, or cannot be kept raw (it showed Python frames). */
struct raw_resume {
	__u64 pc, sp, bp;
	__u32 n;
};

#define WAITED_PROCESS 1
#define WAITED_FILE 2
#define WAITED_BUILDING 3

struct walk {
	__u64 pc, sp, bp;
	/* The mapping the last pc was in (end 0: none yet), and its object. */
	__u64 map_start, map_end;
	__u32 map_offset, object;
	__u32 pid;
	__u32 n;
	__u32 seq; /* of the process's list when the walk began, and after its own changes */
	__u32 serial; /* of that list */
	struct stack_hash hash; /* of the frames so far */
	/* The user addresses the stack window holds: [window_start, window_end). */
	__u64 window_start, window_end;
	bool process_known;
	bool asked_area, learned_area; /* learn_mapping was tried (one area a sample); it added one */
	bool pending, fp_no_table, cut, done;
	bool record; /* keeps what it reads in walk_reads (a thread leaving the CPU) */
	__u8 waited; /* why it is pending: WAITED_* */
	struct python_walk py; /* python/python.bpf.h: interpreter frames in eval frames' places */
};

/* The object of a mapping's file: 0 for no file; when the file has none yet, user space is
 * asked for one (through the mapping, which it opens) and UNWIND_MAX_OBJECTS says "being
 * built". */
static __always_inline __u32 object_of_file(__u32 pid, struct unwind_mapping *m)
{
	struct unwind_file file = {};
	struct unwind_file_seen seen = {};
	__u32 *object;

	if (m->inode == 0)
		return 0;
	file.inode = m->inode;
	file.dev = m->dev;
	object = bpf_map_lookup_elem(&unwind_files, &file);
	if (object)
		return *object;
	seen.pid = pid;
	seen.start = m->start;
	seen.end = m->end;
	bpf_map_update_elem(&wanted_files, &file, &seen, BPF_NOEXIST);
	return UNWIND_MAX_OBJECTS;
}

/* A binary search for the last element starting at or before `at`, in [lo, hi): one
 * bpf_loop step each, so the verifier checks one step, not every path through the loop. */
struct search {
	__u64 at;
	__u32 lo, hi;
	struct unwind_process *proc; /* whose mappings */
};

static long search_step(__u32 index, struct search *s)
{
	__u32 mid;

	if (s->lo + 1 >= s->hi)
		return 1;
	mid = s->lo + (s->hi - s->lo) / 2;
	if (s->proc->mappings[mid & (UNWIND_MAX_MAPPINGS - 1)].start <= s->at)
		s->lo = mid;
	else
		s->hi = mid;
	return 0;
}

/* The walk's pcs are in mapping m from now on. */
static __always_inline void enter_mapping(struct walk *w, struct unwind_mapping *m)
{
	w->map_start = m->start;
	w->map_end = m->end;
	w->map_offset = m->offset;
	w->object = object_of_file(w->pid, m);
}

/* This CPU's recent mappings; null when the walk has no list to name them by. */
static __always_inline struct recent_mappings *recent_here(struct walk *w)
{
	__u32 zero = 0;

	return w->process_known ? bpf_map_lookup_elem(&recent_mappings, &zero) : NULL;
}

/* This CPU's recent mappings, made the walk's list's: started again when they were
 * another list's. */
static __always_inline struct recent_mappings *recent_list(struct walk *w)
{
	struct recent_mappings *r = recent_here(w);

	if (r && (r->pid != w->pid || r->serial != w->serial)) {
		r->pid = w->pid;
		r->serial = w->serial;
		r->seq = w->seq + 1; /* never a list's: no entries yet */
		r->not_python = 0;
	}
	return r;
}

/* This CPU's recent mappings when they are of the walk's list (its pid and serial, whatever
 * its seq), else null. */
static __always_inline struct recent_mappings *recent_of(struct walk *w)
{
	struct recent_mappings *r = recent_here(w);

	return r && r->pid == w->pid && r->serial == w->serial ? r : NULL;
}

/* Enters the recent mapping holding pc; false when none does. */
static __always_inline bool recent_mapping(struct walk *w, __u64 pc)
{
	struct recent_mappings *r = recent_of(w);

	if (!r || r->seq != w->seq)
		return false;
	for (__u32 i = 0; i < RECENT_MAPPINGS; i++) {
		if (pc >= r->m[i].start && pc < r->m[i].end) {
			w->map_start = r->m[i].start;
			w->map_end = r->m[i].end;
			w->map_offset = r->m[i].offset;
			w->object = r->m[i].object;
			return true;
		}
	}
	return false;
}

/* Keeps the mapping the walk has entered among the recent ones, in place of the oldest
 * (all of them, when they were another list's). Not one whose file has no object yet:
 * the next walk asks again. */
static __always_inline void remember_mapping(struct walk *w)
{
	struct recent_mappings *r;
	__u32 slot;

	if (w->object == UNWIND_MAX_OBJECTS)
		return;
	r = recent_list(w);
	if (!r)
		return;
	if (r->seq != w->seq) {
		r->seq = w->seq;
		r->next = 0;
		for (__u32 i = 0; i < RECENT_MAPPINGS; i++)
			r->m[i].end = 0;
	}
	slot = r->next++ & (RECENT_MAPPINGS - 1);
	r->m[slot].start = w->map_start;
	r->m[slot].end = w->map_end;
	r->m[slot].offset = w->map_offset;
	r->m[slot].object = w->object;
}

/* Whether this CPU's walks of the walk's list found its process is not CPython's. */
static __always_inline bool recent_says_not_python(struct walk *w)
{
	struct recent_mappings *r = recent_of(w);

	return r && r->not_python;
}

static __always_inline void remember_not_python(struct walk *w)
{
	struct recent_mappings *r = recent_list(w);

	if (r)
		r->not_python = 1;
}

/* Finds the executable mapping of the process holding pc; false when none does. */
static __always_inline bool find_mapping(struct walk *w, __u64 pc)
{
	struct unwind_process *proc = bpf_map_lookup_elem(&unwind_processes, &w->pid);
	struct search s = {};
	struct unwind_mapping *m;

	if (!proc || proc->count == 0)
		return false;
	s.at = pc;
	s.hi = proc->count < UNWIND_MAX_MAPPINGS ? proc->count : UNWIND_MAX_MAPPINGS;
	s.proc = proc;
	bpf_loop(9, search_step, &s, 0);
	m = &proc->mappings[s.lo & (UNWIND_MAX_MAPPINGS - 1)];
	if (pc < m->start || pc >= m->end)
		return false;
	enter_mapping(w, m);
	remember_mapping(w);
	return true;
}

/* The search for the chunk of an object's array that holds a row, between chunks first and
 * last: one bpf_loop step each, so that the verifier checks one step. */
struct chunk_search {
	void *rows;
	__u64 at;
	__u32 first, last;
};

static long chunk_step(__u32 index, struct chunk_search *c)
{
	struct unwind_chunk *chunk;
	__u32 mid;

	if (c->first >= c->last)
		return 1;
	mid = c->first + (c->last - c->first + 1) / 2;
	chunk = bpf_map_lookup_elem(c->rows, &mid);
	if (!chunk) {
		c->last = 0;
		c->first = 1;
		return 1;
	}
	if (chunk->slots[0].row.pc <= c->at)
		c->first = mid;
	else
		c->last = mid - 1;
	return 0;
}

/* The search for the last row at or before `at` in [lo, hi) of one chunk, one bpf_loop
 * step each. */
struct row_search {
	struct unwind_chunk *chunk;
	__u64 at;
	__u32 lo, hi;
};

static long row_step(__u32 index, struct row_search *r)
{
	__u32 mid;

	if (r->lo + 1 >= r->hi)
		return 1;
	mid = r->lo + (r->hi - r->lo) / 2;
	if (r->chunk->slots[mid & (UNWIND_CHUNK_SLOTS - 1)].row.pc <= r->at)
		r->lo = mid;
	else
		r->hi = mid;
	return 0;
}

/* The row of the object's table that holds offset, or null. Tables of up to 2^24 rows. */
static __always_inline struct unwind_row *find_row(__u32 object, struct unwind_object *obj, __u64 offset)
{
	struct unwind_chunk *chunk;
	struct unwind_row *row;
	struct chunk_search c;
	struct row_search r;
	__u32 lo = 0, hi, page, base;
	void *rows;

	if (obj->row_count == 0 || offset > 0xffffffffULL)
		return NULL;
	rows = bpf_map_lookup_elem(&unwind_tables, &object);
	if (!rows)
		return NULL;
	hi = obj->row_count;
	/* The page's entry of the index after the rows narrows the search to the rows a pc in
	 * that page can need. */
	if ((offset >> UNWIND_PAGE_SHIFT) < obj->page_base)
		return NULL;
	page = (offset >> UNWIND_PAGE_SHIFT) - obj->page_base;
	if (page < obj->page_count) {
		__u32 slot = obj->row_count + page, at = slot >> UNWIND_CHUNK_SHIFT;
		struct unwind_page *entry;

		chunk = bpf_map_lookup_elem(rows, &at);
		if (!chunk)
			return NULL;
		entry = &chunk->slots[slot & (UNWIND_CHUNK_SLOTS - 1)].page;
		if (entry->first >= entry->end || entry->end > obj->row_count)
			return NULL;
		lo = entry->first;
		hi = entry->end;
	} else if (obj->page_count) {
		lo = obj->row_count - 1; /* past the last row's page: the last row holds */
	}
	/* First the chunk: while [lo, hi) spans chunks, the first row of a chunk between them
	 * says on which side the row is (a page's rows rarely span two). */
	c.rows = rows;
	c.at = offset;
	c.first = lo >> UNWIND_CHUNK_SHIFT;
	c.last = (hi - 1) >> UNWIND_CHUNK_SHIFT;
	if (c.first < c.last) {
		bpf_loop(16, chunk_step, &c, 0);
		if (c.first != c.last)
			return NULL;
	}
	chunk = bpf_map_lookup_elem(rows, &c.first);
	if (!chunk)
		return NULL;
	/* Then the row, in the chunk's memory: no lookup a step. */
	base = c.first << UNWIND_CHUNK_SHIFT;
	r.chunk = chunk;
	r.at = offset;
	r.lo = lo > base ? lo - base : 0;
	r.hi = hi - base < UNWIND_CHUNK_SLOTS ? hi - base : UNWIND_CHUNK_SLOTS;
	if (r.lo + 1 < r.hi)
		bpf_loop(UNWIND_CHUNK_SHIFT + 1, row_step, &r, 0);
	lo = r.lo;
	row = &chunk->slots[lo & (UNWIND_CHUNK_SLOTS - 1)].row;
	if (row->pc > offset)
		return NULL;
	return row;
}

/* Two 8-byte words of the user stack: a saved rbp and the return address above it. */
struct stack_pair {
	__u64 bp, ra;
};

/* A walk that records what it reads (walk.record) begins from pc, sp and bp. A global
 * function: a branch of its own in the walk's caller would have the verifier check the
 * whole walk twice. */
__noinline int record_start(__u64 pc, __u64 sp, __u64 bp)
{
	__u32 zero = 0;
	struct walk_reads *r = bpf_map_lookup_elem(&walk_reads, &zero);

	if (!r)
		return 0;
	r->pc = pc;
	r->sp = sp;
	r->bp = bp;
	r->mm = (__u64)bpf_get_current_task_btf()->mm;
	r->n = 0;
	r->same_again = false;
	hash_start(&r->values);
	return 0;
}

/* A walk that records (walk.record) read `len` (8 or 16) bytes, a (and b), at user address
 * `at`. A global function, given no pointer into the walk: the verifier checks it once, on
 * its own, and a walk that does not record never calls it. */
__noinline int record_read(__u64 at, __u32 len, __u64 a, __u64 b)
{
	__u32 zero = 0;
	struct walk_reads *r;

	r = bpf_map_lookup_elem(&walk_reads, &zero);
	if (!r)
		return 0;
	if (r->n < WALK_READS_MAX && !(at & 7)) {
		r->at[r->n & (WALK_READS_MAX - 1)] = at | (len == 16);
		hash_frame(&r->values, a);
		if (len == 16)
			hash_frame(&r->values, b);
		r->n++;
	} else {
		r->n = WALK_READS_MAX + 1;
	}
	return 0;
}

/* Reads the pair at user address `at` from the stack window, loading the window from `at`
 * first when the pair is not in it; 0, or an error. The window never crosses a page
 * boundary: the page holding `at` is mapped, the next may not be. Inlined in the walk's
 * step, which the verifier checks once on its own: a call and a return a frame cost more
 * than the verifier's work (on CPUs whose returns go through a mitigation's thunk, most). */
static __always_inline int read_pair(struct walk *w, __u64 at, struct stack_pair *out)
{
	__u32 zero = 0;
	struct stack_window *window = bpf_map_lookup_elem(&stack_window, &zero);
	__u64 index, room;

	if (!window || (at & 7))
		goto direct;
	if (at < w->window_start || at + sizeof(*out) > w->window_end) {
		room = 4096 - (at & 4095);
		if (room > sizeof(window->words))
			room = sizeof(window->words);
		if (room < sizeof(*out) || bpf_probe_read_user(window->words, room, (void *)at)) {
			w->window_end = 0;
			goto direct;
		}
		w->window_start = at;
		w->window_end = at + room;
	}
	index = (at - w->window_start) / 8;
	if (index > STACK_WINDOW_WORDS - 2)
		goto direct;
	out->bp = window->words[index];
	out->ra = window->words[index + 1];
	if (w->record)
		record_read(at, 16, out->bp, out->ra);
	return 0;
direct:
	if (bpf_probe_read_user(out, sizeof(*out), (void *)at))
		return -1;
	if (w->record)
		record_read(at, 16, out->bp, out->ra);
	return 0;
}

/* One frame-pointer step: the caller's rbp and return address are saved at rbp. */
static __always_inline void frame_pointer_step(struct walk *w)
{
	struct stack_pair saved = {};

	if (w->bp == 0) { /* the chain's end, as bpf_get_stackid ends it */
		w->done = true;
		return;
	}
	if (w->bp < w->sp || read_pair(w, w->bp, &saved)) {
		w->cut = true;
		return;
	}
	w->sp = w->bp + 16;
	w->bp = saved.bp;
	w->pc = saved.ra;
	if (w->pc == 0)
		w->done = true;
}

/* One step of the walk: records the frame at w->pc, then finds its caller's pc, sp and bp.
 * Returns 1 to stop. */
static __always_inline long walk_step_of(__u32 index, struct walk *w, const bool record)
{
	__u32 user = 1;
	struct stored_stack *frames = bpf_map_lookup_elem(&scratch, &user);
	struct unwind_object *obj;
	struct unwind_row row, *found;
	struct row_cache *cache;
	__u64 lookup, offset, key, cfa, ra;
	__u32 zero = 0, slot;

	if (!frames)
		return 1;
	if (w->n >= max_depth || w->n >= UNWIND_MAX_DEPTH) {
		w->cut = true; /* the depth limit */
		return 1;
	}
	/* An eval frame of CPython is shown as the Python frames it ran, one a step. */
	if (w->py.active && !w->py.replaced) {
		int shown = python_frame(&w->py, w->pc, index, w->n);

		if (shown != PYTHON_NATIVE) {
			if (shown == PYTHON_SHOWN) {
				hash_frame(&w->hash, frames->ip[w->n & UNWIND_MAX_DEPTH]);
				w->n++;
			}
			return 0;
		}
	}
	if (!w->py.replaced) {
		frames->ip[w->n & UNWIND_MAX_DEPTH] = w->pc;
		hash_frame(&w->hash, w->pc);
		w->n++;
	}
	w->py.replaced = 0;

	/* A caller's pc is a return address: the call is the byte before it, which may
	 * belong to another function's rules (a call that ends a function). */
	lookup = index == 0 ? w->pc : w->pc - 1;
	if ((lookup < w->map_start || lookup >= w->map_end) && !recent_mapping(w, lookup) &&
	    !find_mapping(w, lookup)) {
		struct unwind_mapping learned;
		enum learned how = LATER;

		w->map_end = 0;
		if (w->process_known && !w->asked_area) {
			w->asked_area = true;
			how = learn_mapping(w->pid, lookup, &w->seq, &learned);
		}
		if (how == LEARNED) {
			w->learned_area = true;
			enter_mapping(w, &learned);
		} else if (!w->process_known || how == LATER) {
			w->waited = WAITED_PROCESS;
			goto pending;
		} else if (index > 0) {
			/* Not code this process has mapped executable: what a frame-pointer walk
			 * through code without frame pointers reads. */
			w->cut = true;
			return 1;
		} else {
			/* A leaf outside every executable area: the vsyscall page, code unmapped
			 * since the sample was taken. */
			goto fp;
		}
	}
	if (w->object == 0)
		goto fp;
	if (w->object == UNWIND_MAX_OBJECTS) {
		w->waited = WAITED_FILE;
		goto pending;
	}
	obj = bpf_map_lookup_elem(&unwind_objects, &w->object);
	if (!obj)
		goto fp;
	if (obj->state == UNWIND_OBJECT_BUILDING) {
		w->waited = WAITED_BUILDING;
		goto pending;
	}
	if (obj->state != UNWIND_OBJECT_READY)
		goto fp;
	offset = lookup - w->map_start + w->map_offset;
	key = (__u64)w->object << 32 | (offset & 0xffffffff);
	slot = (key * 0x9e3779b97f4a7c15ULL) >> (64 - ROW_CACHE_SHIFT);
	cache = bpf_map_lookup_elem(&row_cache, &zero);
	if (cache && cache->entries[slot & (ROW_CACHE_SIZE - 1)].key == key && offset <= 0xffffffffULL) {
		row = cache->entries[slot & (ROW_CACHE_SIZE - 1)].row;
	} else {
		found = find_row(w->object, obj, offset);
		if (!found)
			goto fp;
		row = *found;
		if (cache) {
			cache->entries[slot & (ROW_CACHE_SIZE - 1)].key = key;
			cache->entries[slot & (ROW_CACHE_SIZE - 1)].row = row;
		}
	}
	switch (row.cfa_type) {
	case UNWIND_CFA_END:
		w->done = true;
		return 1;
	case UNWIND_CFA_RSP:
		cfa = w->sp + row.cfa_offset * UNWIND_SLOT;
		break;
	case UNWIND_CFA_RBP:
		if (w->bp == 0) {
			w->cut = true;
			return 1;
		}
		cfa = w->bp + row.cfa_offset * UNWIND_SLOT;
		break;
	case UNWIND_CFA_PLT:
		cfa = w->sp + 8 + ((w->pc & 15) >= (__u64)row.cfa_offset ? 8 : 0);
		break;
	default:
		goto fp;
	}
	if (cfa <= w->sp) {
		w->cut = true;
		return 1;
	}
	if (row.rbp_type == UNWIND_RBP_AT_CFA && row.rbp_offset == -2) {
		/* rbp saved just below the return address, as every frame-pointer prologue and
		 * most others leave it: one read for both. */
		struct stack_pair saved = {};

		if (read_pair(w, cfa - 16, &saved)) {
			w->cut = true;
			return 1;
		}
		w->bp = saved.bp;
		ra = saved.ra;
	} else {
		if (bpf_probe_read_user(&ra, 8, (void *)(cfa - 8))) {
			w->cut = true;
			return 1;
		}
		if (record)
			record_read(cfa - 8, 8, ra, 0);
		if (row.rbp_type == UNWIND_RBP_AT_CFA) {
			if (bpf_probe_read_user(&w->bp, 8, (void *)(cfa + row.rbp_offset * UNWIND_SLOT))) {
				w->cut = true;
				return 1;
			}
			if (record)
				record_read(cfa + row.rbp_offset * UNWIND_SLOT, 8, w->bp, 0);
		} else if (row.rbp_type == UNWIND_RBP_UNDEFINED) {
			w->bp = 0;
		}
	}
	w->sp = cfa;
	w->pc = ra;
	if (ra == 0) {
		w->done = true;
		return 1;
	}
	return 0;

pending:
	/* Code whose table is not in yet: frame pointers would guess through code that has
	 * CFI. The stack stops here, marked truncated, and counted as waiting for tables. */
	w->pending = true;
	w->cut = true;
	return 1;

fp:
	if (unwind_mode == UNWIND_DWARF) {
		w->cut = true;
		return 1;
	}
	/* A frame with rbp 0 ends the stack (ld.so's _start, the first frame of a new process,
	 * has no CFI): no frame-pointer step is taken, none is counted. */
	w->fp_no_table |= w->bp != 0;
	frame_pointer_step(w);
	if (w->cut || w->done)
		return 1;
	return 0;
}

/* The step of a sample's walk, and of one that records what it reads: two functions, so
 * that the verifier never weighs recording in a sample's walk. Global functions: the
 * verifier checks each once, on its own, with nothing known of the walk. Inlined in the
 * walk's loop (bpf_loop's callback then), the step was checked again for each state the
 * walk could be in (which fields were known 0, which cause it waited for, ...) until those
 * converged, and the walk's end and the rest of the sample once for each. */
__noinline long walk_frame(__u32 index, struct walk *w)
{
	if (!w)
		return 1;
	return walk_step_of(index, w, false);
}

__noinline long walk_frame_recording(__u32 index, struct walk *w)
{
	if (!w)
		return 1;
	return walk_step_of(index, w, true);
}

/* Walks the user stack of the sampled task into scratch[1]: from the sample's registers
 * when it was taken in user mode, else (or with no ctx: a thread leaving the CPU, for
 * --off-cpu) from those the task saved entering the kernel. Returns the frames written
 * (with the TRUNCATED_FRAME mark), 0 when there is no user stack (a kernel thread). */
static __always_inline __u32 walk_user_stack(struct bpf_perf_event_data *ctx, __u32 tgid, struct sample_stats *st,
					     struct stack_hash *hash, struct raw_resume *resume, const bool record)
{
	struct walk w = {};
	__u32 user = 1;
	struct stored_stack *frames;
	struct unwind_process *proc;

	/* User addresses are the lower half of the address space, kernel ones the upper. A
	 * sample taken in the kernel starts from the registers saved on entering it. */
	if (ctx) {
		w.pc = ctx->regs.ip;
		w.sp = ctx->regs.sp;
		w.bp = ctx->regs.bp;
	}
	if (!ctx || (__s64)w.pc < 0) {
		struct task_struct *task = bpf_get_current_task_btf();
		struct pt_regs *regs;

		if (!task->mm)
			return 0;
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		w.pc = regs->ip;
		w.sp = regs->sp;
		w.bp = regs->bp;
	}
	if (w.pc == 0)
		return 0;
	if (record)
		record_start(w.pc, w.sp, w.bp);
	w.record = record;
	w.pid = tgid;
	hash_start(&w.hash);
	proc = bpf_map_lookup_elem(&unwind_processes, &tgid);
	/* A list may be empty (user space could not read the process's: gone before it
	 * looked): the walk learns its areas as it meets them. */
	if (proc) {
		w.seq = proc->seq;
		w.serial = proc->serial;
		/* Odd: another CPU is rewriting the list; this sample waits like one whose tables
		 * are being built. */
		w.process_known = !(w.seq & 1);
	} else {
		__u8 one = 1;

		bpf_map_update_elem(&wanted_processes, &tgid, &one, BPF_NOEXIST);
	}
	/* A process found not to be CPython's is not asked again while its list is the same. */
	if (!recent_says_not_python(&w) && python_start(&w.py, tgid) == PYTHON_NOT)
		remember_not_python(&w);
	/* A plain loop of calls to the step: the verifier sees each call's result as unknown,
	 * so the iterations differ only in i. Through bpf_loop each frame cost a second call
	 * and return, the callback's. */
	for (__u32 i = 0; i < UNWIND_MAX_DEPTH; i++)
		if (record ? walk_frame_recording(i, &w) : walk_frame(i, &w))
			break;
	/* The list changed under the walk: what it found there may not hold. */
	if (w.process_known) {
		proc = bpf_map_lookup_elem(&unwind_processes, &tgid);
		if (!proc || proc->seq != w.seq)
			w.cut = true;
	}

	frames = bpf_map_lookup_elem(&scratch, &user);
	if (!frames)
		return 0;
	if (!w.done && !w.cut)
		w.cut = true; /* the loop ran out of steps: the depth limit */
	/* Native frames only: the Python walk's state does not carry over to user space. */
	if (w.pending && !w.py.active) {
		resume->pc = w.pc;
		resume->sp = w.sp;
		resume->bp = w.bp;
		resume->n = w.n;
	}
	if (w.cut) {
		frames->ip[w.n & UNWIND_MAX_DEPTH] = TRUNCATED_FRAME;
		hash_frame(&w.hash, TRUNCATED_FRAME);
		w.n++;
	}
	*hash = w.hash;
	if (record) {
		__u32 zero = 0;
		struct walk_reads *r = bpf_map_lookup_elem(&walk_reads, &zero);

		/* A process not classified yet may be Python's: its next walk would show frames
		 * that this one could not. (One whose runtime is not initialized yet is not
		 * Python's for now: same_user_stack checks again.) */
		struct python_process *py = bpf_map_lookup_elem(&python_processes, &tgid);
		bool not_python = !python_frames | (py && !py->is_python);

		if (r) {
			r->seq = w.seq;
			/* Bitwise: one path for the verifier, not one for each way to be false. */
			r->same_again = w.done & !w.cut & !w.fp_no_table & !w.learned_area & !w.py.active &
					w.process_known & (r->n <= WALK_READS_MAX) & not_python;
		}
	}
	if (w.learned_area)
		st->areas_learned++;
	/* A stack cut short while its tables were being built counts as waiting for them
	 * (or, kept raw, as such: take_stacks counts it). */
	if (w.pending) {
		if (!resume->n)
			st->unwound_pending++;
		if (w.waited == WAITED_PROCESS)
			st->waited_process++;
		else if (w.waited == WAITED_FILE)
			st->waited_file++;
		else
			st->waited_building++;
	} else if (w.cut) {
		st->unwound_cut++;
	} else if (w.fp_no_table) {
		st->unwound_fp_no_table++;
	} else {
		st->unwound_tables++;
	}
	return w.n;
}

#endif /* __TARGET_ARCH_x86 */

#endif /* UNWIND_BPF_H */
