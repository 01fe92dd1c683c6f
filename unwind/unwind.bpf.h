/* unwind/unwind.bpf.h: the kernel half of the table unwinder, included by profile.bpf.c:
 * the maps that hold processes' executable mappings, files' objects and their tables; the
 * walk of a user stack from those tables (walk_user_stack); and how the kernel keeps the
 * mappings: hooks at exec, fork and exit, a uprobe on ld.so, and the walk itself, which
 * asks for an area it does not know (learn_mapping).
 *
 * It uses what profile.bpf.c declares before including it: the rodata settings
 * (unwind_mode, max_depth, pid_namespace), struct stored_stack, hash_frame and the per-CPU
 * scratch the walk writes the user stack into. */
#ifndef UNWIND_BPF_H
#define UNWIND_BPF_H

#include "profile.bpf.h"
#include "python/python.bpf.h"

/* What the walk knows of processes' executable mappings, kept in the kernel: user space
 * sends those of processes already running when profile starts; from then on the exec and
 * fork hooks start each new process's list, and the walk adds the areas mapped later
 * (learn_mapping), so a new process of a known binary unwinds from its first samples with
 * no round trip through user space and no program on the mmap path. The walk looks a pc up
 * in this copy, and asks bpf_find_vma only for what it lacks: that takes the mmap lock and,
 * in the timer's interrupt, leaves its release to an irq_work that can be queued once per
 * interrupt (the task's VMA iterator is refused there outright). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct unwind_process);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} unwind_processes SEC(".maps");

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

/* Samples kept raw (struct raw_sample): RAW_SLOTS a generation, generation g's from
 * g * RAW_SLOTS on, claimed in turn through raw_claimed[g]; user space reads the complete
 * ones when it drains the generation, then zeroes its count. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct raw_sample);
	__uint(max_entries, 2 * RAW_SLOTS);
} raw_samples SEC(".maps");
__u32 raw_claimed[2] = {};

#if defined(__TARGET_ARCH_x86)

/* Where a walk stopped at code whose table was not in yet: what a raw sample keeps. n 0:
 * the walk did not stop so, or cannot be kept raw (it showed Python frames). */
struct raw_resume {
	__u64 pc, sp, bp;
	__u32 n;
};

/* ---- The mappings of processes, kept by the kernel (see unwind_processes) ---- */

#define VM_EXEC 0x00000004

/* Whether the hooks follow processes (they are attached for whole-machine runs alone).
 * Under a PID namespace of its own profile keys processes by that namespace's ids, which
 * these hooks do not translate: user space sends the mappings there. */
static __always_inline bool follows(void)
{
	return unwind_mode != UNWIND_FP && !pid_namespace;
}

/* A mapping being added: the mapping, the list it goes into, and where. */
struct insert {
	struct unwind_process *proc;
	struct unwind_mapping m;
	__u32 kept, at;
};

/* Keeps mapping i unless the new one overlaps it (an entry of what was mapped there
 * before), compacting the list in place. */
static long keep_step(__u32 i, struct insert *ins)
{
	struct unwind_process *proc = ins->proc;
	struct unwind_mapping *m;

	if (i >= proc->count || i >= UNWIND_MAX_MAPPINGS)
		return 1;
	m = &proc->mappings[i & (UNWIND_MAX_MAPPINGS - 1)];
	if (m->start < ins->m.end && ins->m.start < m->end)
		return 0;
	if (m->start < ins->m.start)
		ins->at = ins->kept + 1;
	if (ins->kept != i)
		proc->mappings[ins->kept & (UNWIND_MAX_MAPPINGS - 1)] = *m;
	ins->kept++;
	return 0;
}

/* Moves mapping (kept - 1 - i) one place up, from the end down to `at`. */
static long shift_step(__u32 i, struct insert *ins)
{
	struct unwind_process *proc = ins->proc;
	__u32 from = ins->kept - 1 - i;

	if (i >= ins->kept || from < ins->at || from + 1 >= UNWIND_MAX_MAPPINGS)
		return 1;
	proc->mappings[(from + 1) & (UNWIND_MAX_MAPPINGS - 1)] = proc->mappings[from & (UNWIND_MAX_MAPPINGS - 1)];
	return 0;
}

/* A zeroed list, the value an exec starts from (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_process);
	__uint(max_entries, 1);
} empty_process SEC(".maps");

extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task, __u64 addr) __weak __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __weak __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __weak __ksym;

/* The list's entry for an area of the mm. The pointers (file, inode, superblock) are read
 * with BPF_CORE_READ rather than followed as trusted BTF pointers: the verifier checks each
 * load of a BTF pointer field by a search of the kernel's BTF by name, and in the exec hook's
 * loop of areas those searches were most of the program's load time. */
static __always_inline void describe_mapping(struct unwind_mapping *m, struct vm_area_struct *vma)
{
	struct file *file = BPF_CORE_READ(vma, vm_file);
	__u64 offset = vma->vm_pgoff << 12;

	m->start = vma->vm_start;
	m->end = vma->vm_end;
	m->inode = 0;
	m->dev = 0;
	m->offset = 0;
	if (!file && (__u64)BPF_CORE_READ(vma, vm_mm, context.vdso) == vma->vm_start) {
		m->inode = UNWIND_VDSO_INODE;
		m->dev = (vma->vm_end - vma->vm_start) >> 12;
	} else if (file && offset <= 0xffffffffULL) {
		m->inode = BPF_CORE_READ(file, f_inode, i_ino);
		m->dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
		m->offset = offset;
	}
}

/* What bpf_find_vma found at an address: the area, when it is executable. */
struct found_area {
	struct unwind_mapping m;
	bool exec;
};

static long found_area_step(struct task_struct *task, struct vm_area_struct *vma, struct found_area *found)
{
	found->exec = (vma->vm_flags & VM_EXEC) != 0;
	if (found->exec)
		describe_mapping(&found->m, vma);
	return 0;
}

/* How learn_mapping went. */
enum learned {
	LEARNED,  /* the area is code: in the list now, and in *m */
	NOT_CODE, /* no area, or not executable */
	LATER,    /* not now: the list is being rewritten, or the lookup is taken this interrupt */
};

/* Puts the executable area of the sampled task at `at` into process tgid's list, which
 * lacks it, when the list is still at `*seq` (the sequence the walk began with): JIT code,
 * libraries mapped by an ld.so the uprobe is not on (below), those of processes user space
 * follows (-p). The first sample that runs a new area asks for it. bpf_find_vma takes the
 * mmap lock by a trylock, and in the timer's interrupt leaves its release to an irq_work
 * that can be queued once an interrupt: one area a sample; the next waits as when tables
 * are built (kept raw, walked in user space). */
static __always_inline enum learned learn_mapping(__u32 tgid, __u64 at, __u32 *seq, struct unwind_mapping *m)
{
	struct found_area found = {};
	struct insert ins = {};
	struct unwind_process *proc = bpf_map_lookup_elem(&unwind_processes, &tgid);
	long err;

	if (!proc || proc->seq != *seq)
		return LATER;
	err = bpf_find_vma(bpf_get_current_task_btf(), at, found_area_step, &found, 0);
	if (err == -ENOENT || (err == 0 && !found.exec))
		return NOT_CODE;
	if (err)
		return LATER;
	/* One writer at a time: seq odd while the list changes, and a walk that began before
	 * (on another CPU) does not trust what it found in it. */
	if (__sync_val_compare_and_swap(&proc->seq, *seq, *seq + 1) != *seq)
		return LATER;
	ins.proc = proc;
	ins.m = found.m;
	bpf_loop(UNWIND_MAX_MAPPINGS, keep_step, &ins, 0);
	if (ins.kept < UNWIND_MAX_MAPPINGS) {
		bpf_loop(UNWIND_MAX_MAPPINGS, shift_step, &ins, 0);
		if (ins.at < UNWIND_MAX_MAPPINGS)
			proc->mappings[ins.at & (UNWIND_MAX_MAPPINGS - 1)] = ins.m;
		ins.kept++;
	}
	proc->count = ins.kept;
	*seq += 2;
	proc->seq = *seq;
	*m = found.m;
	return LEARNED;
}

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
	struct stack_hash hash; /* of the frames so far */
	/* The user addresses the stack window holds: [window_start, window_end). */
	__u64 window_start, window_end;
	bool process_known;
	bool asked_area, learned_area; /* learn_mapping was tried (one area a sample); it added one */
	bool pending, fp_no_table, cut, done;
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

/* Reads the pair at user address `at` from the stack window, loading the window from `at`
 * first when the pair is not in it; 0, or an error. The window never crosses a page
 * boundary: the page holding `at` is mapped, the next may not be. A global function, so
 * that the verifier checks it once, on its own, and not every window along every walk. */
__noinline int read_pair(struct walk *w, __u64 at, struct stack_pair *out)
{
	__u32 zero = 0;
	struct stack_window *window = bpf_map_lookup_elem(&stack_window, &zero);
	__u64 index, room;

	if (!w || !out)
		return -1;
	if (!window || (at & 7))
		return bpf_probe_read_user(out, sizeof(*out), (void *)at);
	if (at < w->window_start || at + sizeof(*out) > w->window_end) {
		room = 4096 - (at & 4095);
		if (room > sizeof(window->words))
			room = sizeof(window->words);
		if (room < sizeof(*out) || bpf_probe_read_user(window->words, room, (void *)at)) {
			w->window_end = 0;
			return bpf_probe_read_user(out, sizeof(*out), (void *)at);
		}
		w->window_start = at;
		w->window_end = at + room;
	}
	index = (at - w->window_start) / 8;
	if (index > STACK_WINDOW_WORDS - 2)
		return bpf_probe_read_user(out, sizeof(*out), (void *)at);
	out->bp = window->words[index];
	out->ra = window->words[index + 1];
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

/* One step of the walk (bpf_loop's callback): records the frame at w->pc, then finds its
 * caller's pc, sp and bp. Returns 1 to stop. */
static long walk_step(__u32 index, struct walk *w)
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
	if ((lookup < w->map_start || lookup >= w->map_end) && !find_mapping(w, lookup)) {
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
		if (row.rbp_type == UNWIND_RBP_AT_CFA) {
			if (bpf_probe_read_user(&w->bp, 8, (void *)(cfa + row.rbp_offset * UNWIND_SLOT))) {
				w->cut = true;
				return 1;
			}
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

/* Walks the user stack of the sampled task into scratch[1]: from the sample's registers
 * when it was taken in user mode, else from those the task saved entering the kernel.
 * Returns the frames written (with the TRUNCATED_FRAME mark), 0 when there is no user
 * stack (a kernel thread). */
static __always_inline __u32 walk_user_stack(struct bpf_perf_event_data *ctx, __u32 tgid, struct sample_stats *st,
					     struct stack_hash *hash, struct raw_resume *resume)
{
	struct walk w = {};
	__u32 user = 1;
	struct stored_stack *frames;
	struct unwind_process *proc;

	/* User addresses are the lower half of the address space, kernel ones the upper. A
	 * sample taken in the kernel starts from the registers saved on entering it. */
	w.pc = ctx->regs.ip;
	w.sp = ctx->regs.sp;
	w.bp = ctx->regs.bp;
	if ((__s64)w.pc < 0) {
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
	w.pid = tgid;
	hash_start(&w.hash);
	proc = bpf_map_lookup_elem(&unwind_processes, &tgid);
	/* A list may be empty (user space could not read the process's: gone before it
	 * looked): the walk learns its areas as it meets them. */
	if (proc) {
		w.seq = proc->seq;
		/* Odd: another CPU is rewriting the list; this sample waits like one whose tables
		 * are being built. */
		w.process_known = !(w.seq & 1);
	} else {
		__u8 one = 1;

		bpf_map_update_elem(&wanted_processes, &tgid, &one, BPF_NOEXIST);
	}
	python_start(&w.py, tgid);
	bpf_loop(UNWIND_MAX_DEPTH, walk_step, &w, 0);
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
		w.cut = true; /* bpf_loop ran out of steps: the depth limit */
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

/* Copies one piece of the user stack into a raw sample; the first that faults ends it. */
struct raw_copy {
	__u32 slot, len;
	__u64 base;
};

static long raw_copy_step(__u32 i, struct raw_copy *c)
{
	struct raw_sample *raw = bpf_map_lookup_elem(&raw_samples, &c->slot);

	if (!raw || i >= RAW_STACK_BYTES / RAW_PIECE)
		return 1;
	if (bpf_probe_read_user(&raw->stack[(i & (RAW_STACK_BYTES / RAW_PIECE - 1)) * RAW_PIECE], RAW_PIECE,
				(void *)(c->base + i * RAW_PIECE)))
		return 1;
	c->len = (i + 1) * RAW_PIECE;
	return 0;
}

/* Keeps the walk that stopped at `resume` raw in a free slot of generation gen: the frames
 * walked (scratch[1]), the registers, the stack from sp's piece up. Returns the slot + 1,
 * 0 when none is free; the sample is whole once its key is in (count_unwound). A global
 * function: the verifier checks it once, on its own, not along every path of the walk. */
__noinline __u32 keep_raw(__u32 gen, struct raw_resume *resume)
{
	struct raw_copy c = {};
	struct raw_sample *raw;
	struct stored_stack *frames;
	__u32 user = 1, claimed;

	if (!resume)
		return 0;
	claimed = __sync_fetch_and_add(&raw_claimed[gen & 1], 1);
	if (claimed >= RAW_SLOTS)
		return 0;
	c.slot = (gen & 1) * RAW_SLOTS + claimed;
	raw = bpf_map_lookup_elem(&raw_samples, &c.slot);
	frames = bpf_map_lookup_elem(&scratch, &user);
	if (!raw || !frames)
		return 0;
	raw->complete = 0;
	raw->n = resume->n;
	raw->pc = resume->pc;
	raw->sp = resume->sp;
	raw->bp = resume->bp;
	raw->time_ns = bpf_ktime_get_ns();
	if (bpf_probe_read_kernel(raw->frames, sizeof(raw->frames), frames->ip))
		return 0;
	c.base = resume->sp & ~(__u64)(RAW_PIECE - 1);
	raw->stack_base = c.base;
	bpf_loop(RAW_STACK_BYTES / RAW_PIECE, raw_copy_step, &c, 0);
	raw = bpf_map_lookup_elem(&raw_samples, &c.slot);
	if (!raw)
		return 0;
	raw->stack_len = c.len;
	return c.slot + 1;
}


/* Rewrites proc's list from the current task's executable areas when the list is still at
 * seq (one writer at a time, as in learn_mapping). The areas come in order: appended as they
 * come. In process context, where the mmap lock can be taken; held once for the whole
 * walk. The count is kept in the list, not on the BPF stack, where it would be a new state
 * to the verifier at each step of the loop. */
static __always_inline void scan_areas(struct unwind_process *proc, __u32 seq)
{
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	__u32 n;

	if ((seq & 1) || __sync_val_compare_and_swap(&proc->seq, seq, seq + 1) != seq)
		return;
	proc->count = 0;
	bpf_iter_task_vma_new(&it, bpf_get_current_task_btf(), 0);
	while ((vma = bpf_iter_task_vma_next(&it))) {
		if (!(vma->vm_flags & VM_EXEC))
			continue;
		n = proc->count;
		if (n >= UNWIND_MAX_MAPPINGS)
			break;
		describe_mapping(&proc->mappings[n & (UNWIND_MAX_MAPPINGS - 1)], vma);
		proc->count = n + 1;
	}
	bpf_iter_task_vma_destroy(&it);
	proc->seq = seq + 2;
}

/* An exec (profile.bpf.c's hook calls it): the new image's binary and its interpreter are
 * mapped; its list starts from them (a dozen areas or so). The libraries ld.so maps come
 * when it says so (below). */
static __always_inline void unwind_exec(__u32 tgid)
{
	struct unwind_process *empty, *proc;
	__u32 zero = 0;

	empty = bpf_map_lookup_elem(&empty_process, &zero);
	if (!empty || bpf_map_update_elem(&unwind_processes, &tgid, empty, BPF_ANY))
		return;
	proc = bpf_map_lookup_elem(&unwind_processes, &tgid);
	if (proc)
		scan_areas(proc, proc->seq);
}

/* ld.so calls _dl_debug_state, the function debuggers break on, before and after it maps or
 * unmaps libraries: once the libraries a program needs are mapped, before main, and at each
 * dlopen and dlclose. A uprobe there (user space attaches it to the machine's ld.so) lists
 * a process's areas again: its code is known before it runs, at the cost of a trap a few
 * times a process, where a program on the mmap path would run at every syscall. Areas
 * mapped otherwise (JIT code, another ld.so) are learned by the walk. */
SEC("uprobe")
int on_libraries_changed(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct unwind_process *proc;

	if (!follows())
		return 0;
	proc = bpf_map_lookup_elem(&unwind_processes, &tgid);
	if (proc)
		scan_areas(proc, proc->seq);
	return 0;
}

/* A new process (not a thread) starts with its parent's mappings. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = parent->tgid, child_tgid = child->tgid;
	struct unwind_process *proc;

	if (child->pid != child->tgid || !follows())
		return 0;
	proc = bpf_map_lookup_elem(&unwind_processes, &parent_tgid);
	if (!proc)
		return 0;
	bpf_map_update_elem(&unwind_processes, &child_tgid, proc, BPF_ANY);
	/* Copied while another thread of the parent was adding a mapping: not to be trusted. */
	proc = bpf_map_lookup_elem(&unwind_processes, &child_tgid);
	if (proc && (proc->seq & 1))
		bpf_map_delete_elem(&unwind_processes, &child_tgid);
	return 0;
}

/* The last thread of a process exited (profile.bpf.c's hook calls it): its list goes (its
 * pid may come back as another). */
static __always_inline void unwind_exit(__u32 tgid)
{
	bpf_map_delete_elem(&unwind_processes, &tgid);
}

#endif /* __TARGET_ARCH_x86 */

#endif /* UNWIND_BPF_H */
