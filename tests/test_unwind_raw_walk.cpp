// tests/test_unwind_raw_walk.cpp: the user-space end of a raw stack's walk, on fixture rows
// and a synthetic stack: each CFA rule, reads outside the copied bytes, the depth limit, and
// code whose table is not there.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "unwind/raw_walk.h"

namespace {

constexpr uint64_t kBase = 0x7ffe0000;

unwind_row row(uint32_t pc, unwind_cfa_type cfa, uint16_t cfa_offset, unwind_rbp_type rbp = UNWIND_RBP_SAME,
	       int8_t rbp_offset = 0)
{
	unwind_row r{};
	r.pc = pc;
	r.cfa_type = cfa;
	r.cfa_offset = cfa_offset;
	r.rbp_type = rbp;
	r.rbp_offset = rbp_offset;
	return r;
}

// One file mapped at its own offsets: a leaf that pushed nothing (CFA = rsp + 8) at 0x1000,
// a caller with a frame pointer (CFA = rbp + 16, rbp saved at CFA - 16) at 0x2000, a PLT
// stub at 0x2800, the outermost frame at 0x3000, no rule from 0x4000.
const std::vector<unwind_row> kRows = {
	row(0x1000, UNWIND_CFA_RSP, 1),
	row(0x2000, UNWIND_CFA_RBP, 2, UNWIND_RBP_AT_CFA, -2),
	row(0x2800, UNWIND_CFA_PLT, 11),
	row(0x3000, UNWIND_CFA_END, 0),
	row(0x4000, UNWIND_CFA_NONE, 0),
};

CodeRows in_file(uint64_t address)
{
	if (address < 0x1000 || address >= 0x5000)
		return {};
	return {CodeRows::Rows, kRows, address};
}

void put(RawUserStack &stack, uint64_t at, uint64_t value)
{
	std::memcpy(stack.bytes.data() + (at - stack.base), &value, 8);
}

// Sampled in the leaf at 0x1010, called from 0x2020 (return address 0x2025), itself called
// from the outermost frame (return address 0x3007). The saved rbp of 0x2020's frame is 0.
RawUserStack three_frames()
{
	RawUserStack stack;
	stack.pc = 0x1010;
	stack.leaf = true;
	stack.sp = kBase + 0x10;
	stack.bp = kBase + 0x40;
	stack.base = kBase;
	stack.bytes.assign(0x100, 0);
	put(stack, kBase + 0x10, 0x2025);
	put(stack, kBase + 0x40, 0);
	put(stack, kBase + 0x48, 0x3007);
	return stack;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("raw walk: rsp and rbp rules reach the outermost frame")
{
	const RawWalk walk = walk_raw_stack(three_frames(), 100, true, in_file);
	CHECK(walk.frames == std::vector<uint64_t>{0x2025, 0x3007});
	CHECK_FALSE(walk.truncated);
	CHECK_FALSE(walk.waiting);
}

TEST_CASE("raw walk: a read past the copied bytes, or below them, stops the walk as truncated")
{
	RawUserStack stack = three_frames();
	stack.bytes.resize(0x48); // the caller's return address is not in the copy
	RawWalk walk = walk_raw_stack(stack, 100, true, in_file);
	CHECK(walk.frames == std::vector<uint64_t>{0x2025});
	CHECK(walk.truncated);

	stack = three_frames();
	stack.base = kBase + 0x18; // the leaf's return address lies below the copy
	stack.bytes.resize(0x40);
	walk = walk_raw_stack(stack, 100, true, in_file);
	CHECK(walk.frames.empty());
	CHECK(walk.truncated);
}

TEST_CASE("raw walk: code whose table is not there, the depth limit, and rbp 0 under an rbp rule")
{
	RawWalk walk = walk_raw_stack(three_frames(), 100, true, [](uint64_t a) {
		return a >= 0x2000 ? CodeRows{} : in_file(a);
	});
	CHECK(walk.frames == std::vector<uint64_t>{0x2025});
	CHECK(walk.truncated);
	CHECK_FALSE(walk.waiting);
	walk = walk_raw_stack(three_frames(), 100, true, [](uint64_t a) {
		return a >= 0x2000 ? CodeRows{CodeRows::Building, {}, 0} : in_file(a);
	});
	CHECK(walk.frames == std::vector<uint64_t>{0x2025});
	CHECK(walk.truncated);
	CHECK(walk.waiting);

	walk = walk_raw_stack(three_frames(), 1, true, in_file);
	CHECK(walk.frames == std::vector<uint64_t>{0x2025});
	CHECK(walk.truncated);

	RawUserStack stack = three_frames();
	stack.bp = 0;
	walk = walk_raw_stack(stack, 100, true, in_file);
	CHECK(walk.frames == std::vector<uint64_t>{0x2025});
	CHECK(walk.truncated);
}

TEST_CASE("raw walk: a return address is looked up at the call before it, the leaf at itself")
{
	// At 0x2000 the leaf's own row is the rbp rule; a return address 0x2000 is a call in
	// 0x1000's code (its rsp rule).
	RawUserStack stack = three_frames();
	stack.pc = 0x2000;
	stack.sp = kBase + 0x38;
	stack.bytes.assign(0x100, 0);
	put(stack, kBase + 0x38, 0x3001); // the rsp rule's return address
	put(stack, kBase + 0x40, 0);
	put(stack, kBase + 0x48, 0x3002); // the rbp rule's
	stack.leaf = false;
	CHECK(walk_raw_stack(stack, 100, true, in_file).frames == std::vector<uint64_t>{0x3001});
	stack.leaf = true;
	CHECK(walk_raw_stack(stack, 100, true, in_file).frames == std::vector<uint64_t>{0x3002});
}

TEST_CASE("raw walk: PLT stubs, and code without a rule by frame pointers only where allowed")
{
	// A PLT stub: CFA = rsp + 8, + 8 more past its push (pc & 15 >= 11).
	RawUserStack stack = three_frames();
	stack.pc = 0x280b;
	stack.leaf = true;
	stack.sp = kBase + 0x20;
	put(stack, kBase + 0x20, 0x3004);
	put(stack, kBase + 0x28, 0x3005);
	CHECK(walk_raw_stack(stack, 100, true, in_file).frames == std::vector<uint64_t>{0x3005});
	stack.pc = 0x2804;
	CHECK(walk_raw_stack(stack, 100, true, in_file).frames == std::vector<uint64_t>{0x3004});

	// No rule at 0x4010: rbp's chain (saved rbp 0 then return address 0x3006 at bp).
	stack = three_frames();
	stack.pc = 0x4010;
	stack.sp = kBase + 0x60;
	stack.bp = kBase + 0x80;
	put(stack, kBase + 0x80, 0);
	put(stack, kBase + 0x88, 0x3006);
	RawWalk walk = walk_raw_stack(stack, 100, true, in_file);
	CHECK(walk.frames == std::vector<uint64_t>{0x3006});
	CHECK_FALSE(walk.truncated);
	walk = walk_raw_stack(stack, 100, false, in_file);
	CHECK(walk.frames.empty());
	CHECK(walk.truncated);
}

} // TEST_SUITE
