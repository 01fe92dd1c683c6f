// unwind/raw_walk.cpp: a raw user stack's walk from unwind rows, as the kernel's walk_step.
#include "unwind/raw_walk.h"

#include <cstring>

#include "unwind/table.h"

namespace {

// The 8 bytes at user address `at`, when the copy holds them.
bool read_word(const RawUserStack &stack, uint64_t at, uint64_t &out)
{
	if (at < stack.base || at - stack.base > stack.bytes.size() || stack.bytes.size() - (at - stack.base) < 8)
		return false;
	std::memcpy(&out, stack.bytes.data() + (at - stack.base), 8);
	return true;
}

enum class Step { Next, Done, Cut };

struct Registers {
	uint64_t pc, sp, bp;
};

// The caller's rbp and return address saved at rbp.
Step frame_pointer_step(const RawUserStack &stack, Registers &r)
{
	uint64_t saved_bp, ra;
	if (r.bp == 0)
		return Step::Done;
	if (r.bp < r.sp || !read_word(stack, r.bp, saved_bp) || !read_word(stack, r.bp + 8, ra))
		return Step::Cut;
	r.sp = r.bp + 16;
	r.bp = saved_bp;
	r.pc = ra;
	return ra == 0 ? Step::Done : Step::Next;
}

Step row_step(const RawUserStack &stack, const unwind_row &row, Registers &r)
{
	uint64_t cfa;
	switch (row.cfa_type) {
	case UNWIND_CFA_RSP:
		cfa = r.sp + uint64_t(row.cfa_offset) * UNWIND_SLOT;
		break;
	case UNWIND_CFA_RBP:
		if (r.bp == 0)
			return Step::Cut;
		cfa = r.bp + uint64_t(row.cfa_offset) * UNWIND_SLOT;
		break;
	case UNWIND_CFA_PLT:
		cfa = r.sp + 8 + ((r.pc & 15) >= uint64_t(row.cfa_offset) ? 8 : 0);
		break;
	default:
		return Step::Cut;
	}
	if (cfa <= r.sp)
		return Step::Cut;
	uint64_t ra;
	if (!read_word(stack, cfa - 8, ra))
		return Step::Cut;
	if (row.rbp_type == UNWIND_RBP_AT_CFA) {
		if (!read_word(stack, cfa + int64_t(row.rbp_offset) * UNWIND_SLOT, r.bp))
			return Step::Cut;
	} else if (row.rbp_type == UNWIND_RBP_UNDEFINED) {
		r.bp = 0;
	}
	r.sp = cfa;
	r.pc = ra;
	return ra == 0 ? Step::Done : Step::Next;
}

} // namespace

RawWalk walk_raw_stack(const RawUserStack &stack, size_t max_frames, bool frame_pointers, const FindCodeRows &find)
{
	RawWalk walk;
	Registers r{stack.pc, stack.sp, stack.bp};
	for (bool first = true;; first = false) {
		// A caller's pc is a return address: the call is the byte before it.
		const CodeRows code = find(first && stack.leaf ? r.pc : r.pc - 1);
		const unwind_row *row = nullptr;
		if (code.kind == CodeRows::Rows && code.offset <= UINT32_MAX)
			row = find_unwind_row(code.rows, code.offset);
		Step step;
		if (code.kind == CodeRows::Unknown || code.kind == CodeRows::Building) {
			walk.waiting = code.kind == CodeRows::Building;
			step = Step::Cut;
		}
		else if (row && row->cfa_type == UNWIND_CFA_END)
			step = Step::Done;
		else if (row && row->cfa_type != UNWIND_CFA_NONE)
			step = row_step(stack, *row, r);
		else if (frame_pointers)
			step = frame_pointer_step(stack, r);
		else
			step = Step::Cut;
		if (step != Step::Next) {
			walk.truncated = step == Step::Cut;
			return walk;
		}
		if (walk.frames.size() >= max_frames) {
			walk.truncated = true; // the depth limit
			return walk;
		}
		walk.frames.push_back(r.pc);
	}
}
