/* unwind/lookup.bpf.h: where the table walk finds a pc's rule: the mapping it lies in (among
 * this CPU's recent mappings, else by a search of its process's list), that mapping's
 * file's object, and the object's row for it (through the row cache, else by a search of
 * the table's chunks and rows). */
#ifndef UNWIND_LOOKUP_BPF_H
#define UNWIND_LOOKUP_BPF_H

#include "unwind/state.bpf.h"

#if defined(__TARGET_ARCH_x86)

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
		r->no_runtime = 0;
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

/* Whether this CPU's walks of the walk's list found its process shows no runtime's frames. */
static __always_inline bool recent_says_no_runtime(struct walk *w)
{
	struct recent_mappings *r = recent_of(w);

	return r && r->no_runtime;
}

static __always_inline void remember_no_runtime(struct walk *w)
{
	struct recent_mappings *r = recent_list(w);

	if (r)
		r->no_runtime = 1;
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

#endif /* __TARGET_ARCH_x86 */

#endif /* UNWIND_LOOKUP_BPF_H */
