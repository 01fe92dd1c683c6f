/* unwind/mappings.bpf.h: how the kernel keeps processes' executable mappings for the table
 * walk (unwind/unwind.bpf.h): the list of each process, started at exec, copied at fork,
 * read again when ld.so says its libraries changed, dropped at exit, and added to by the
 * walk itself for an area it meets that the list lacks (learn_mapping). */
#ifndef UNWIND_MAPPINGS_BPF_H
#define UNWIND_MAPPINGS_BPF_H

#include "base/kernel.bpf.h"
#include "unwind/unwind.h"

/* What the walk knows of processes' executable mappings, kept in the kernel: user space
 * sends those of processes already running when profile starts; from then on the exec and
 * fork hooks start each new process's list, ld.so's uprobe reads it again when libraries
 * come or go, and the walk adds areas mapped otherwise (learn_mapping), so a new process of a known binary unwinds from its first samples with
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

#if defined(__TARGET_ARCH_x86)

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

/* The serial of the next list the kernel starts (unwind_process.serial). */
__u32 next_list_serial = 1;

/* A serial for a list the kernel starts, below those user space gives. */
static __always_inline __u32 new_list_serial(void)
{
	return __sync_fetch_and_add(&next_list_serial, 1) & (UNWIND_SENT_SERIAL - 1);
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
	if (!proc)
		return;
	proc->serial = new_list_serial();
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
	if (!proc)
		return 0;
	if (proc->seq & 1)
		bpf_map_delete_elem(&unwind_processes, &child_tgid);
	else
		proc->serial = new_list_serial(); /* the child's list, not its parent's */
	return 0;
}

/* The last thread of a process exited (profile.bpf.c's hook calls it): its list goes (its
 * pid may come back as another). */
static __always_inline void unwind_exit(__u32 tgid)
{
	bpf_map_delete_elem(&unwind_processes, &tgid);
}

#endif /* __TARGET_ARCH_x86 */

#endif /* UNWIND_MAPPINGS_BPF_H */
