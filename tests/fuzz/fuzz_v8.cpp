// tests/fuzz/fuzz_v8.cpp: what the naming of JS frames reads from a Node process: source
// position tables (VLQ deltas) and the lines they lead to, V8's strings (sequential, cons,
// thin, sliced, external), arrays of small integers and bytes, and a code object's
// function, script and ScopeInfo as V8Names::learn reads them; and a node file's v8dbg_
// symbols.
//
// The input is the process's memory: it is written to a memfd read as /proc/PID/mem is, so
// that an address is an offset in the input, and a read past its end fails as an unmapped
// one does. The layout is V8's shape with small offsets, so that objects fit in an input.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/fd.h"
#include "elf/elf.h"
#include "tests/fuzz/fuzz.h"
#include "v8/metadata.h"
#include "v8/names.h"

namespace {

// Every object's fields within its first 48 bytes; instance types below 0x80 are strings.
V8Layout small_layout()
{
	V8Layout l;
	l.walk.is_v8 = 1;
	l.walk.map_instance_type = 8;
	l.walk.type_shared = 0x90, l.walk.type_code = 0x91, l.walk.type_bytecode = 0x92;
	l.walk.shared_name = 8, l.walk.shared_script = 16, l.walk.script_id = 32;
	l.walk.code_size = 16, l.walk.code_flags = 24, l.walk.code_kind_mask = 0xf, l.walk.code_kind_baseline = 3;
	l.type_script = 0x93, l.type_scope_info = 0x94, l.type_fixed_array = 0x95, l.type_byte_array = 0x96;
	l.type_trusted_byte_array = 0x97;
	l.first_nonstring_type = 0x80, l.string_representation_mask = 7, l.string_encoding_mask = 8;
	l.seq_string_tag = 0, l.cons_string_tag = 1, l.thin_string_tag = 5, l.sliced_string_tag = 3;
	l.one_byte_string_tag = 8;
	l.string_length = 12, l.seq_one_byte_chars = 16, l.seq_two_byte_chars = 16;
	l.cons_first = 16, l.cons_second = 24, l.thin_actual = 16, l.sliced_parent = 16, l.sliced_offset = 24;
	l.external_string_tag = 2, l.external_data = 24;
	l.script_name = 8, l.script_line_ends = 16, l.script_source = 24;
	l.array_length = 8, l.fixed_array_data = 16;
	l.bytecode_positions = 32, l.walk.code_positions = 32, l.walk.code_deopt_data = 40;
	l.scope_info_data = 16, l.scope_first_vars = 5, l.scope_context_locals = 2;
	return l;
}

// A tagged pointer into the input, chosen by the fuzzer.
uint64_t tagged_at(uint64_t choice, size_t size)
{
	return (size ? choice % size : 0) | 1;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	// The bytes as a position table, exactly sized: a read past its end is an ASan report.
	const std::vector<uint8_t> table(data, data + size);
	const auto positions = v8_positions(table, 4096);
	FUZZ_CHECK(positions.size() <= 4096 && positions.size() <= size);
	for (size_t i = 1; i < positions.size(); i++)
		FUZZ_CHECK(positions[i].code_offset >= positions[i - 1].code_offset);
	const uint64_t tail = fuzz_tail_u64(data, size);
	std::vector<uint32_t> line_ends;
	for (size_t i = 0; i + 4 <= size && line_ends.size() < 64; i += 4)
		line_ends.push_back(uint32_t(data[i]) | uint32_t(data[i + 1]) << 8);
	std::sort(line_ends.begin(), line_ends.end());
	{
		std::vector<uint64_t> inlinings;
		for (const V8Position &p : positions)
			inlinings.push_back(p.position);
		FUZZ_CHECK(v8_inlined_chain(positions, inlinings, uint32_t(tail)).size() <= kMaxV8Inlining);
	}
	if (const auto offset = v8_script_offset(positions, uint32_t(tail)))
		FUZZ_CHECK(v8_line(line_ends, *offset) <= line_ends.size() + 1);

	// The bytes as a process's memory.
	UniqueFd mem(memfd_create("fuzz_v8", 0));
	if (!mem || (size && write(mem.get(), data, size) != ssize_t(size)))
		return 0;
	const V8Layout layout = small_layout();
	const V8Memory memory(mem.get(), layout);
	for (int i = 0; i < 4; i++) {
		const uint64_t at = tagged_at(tail >> (16 * i), size);
		if (const auto text = memory.string(at, 64))
			FUZZ_CHECK(text->size() <= 3 * 64);
		if (const auto values = memory.small_integers(at, 256))
			FUZZ_CHECK(values->size() <= 256);
		if (const auto bytes = memory.bytes(at, 256))
			FUZZ_CHECK(bytes->size() <= 256);
	}
	// A code object the walk met there, named as the walk would have fingerprinted it.
	for (uint32_t kind : {V8_CODE_BYTECODE, V8_CODE_MACHINE, V8_CODE_FUNCTION}) {
		runtime_code seen{};
		seen.pid = 1, seen.kind = kind, seen.id = 1 + kind;
		seen.extra = tagged_at(tail, size), seen.object = tagged_at(tail >> 32, size); // extra: the SFI
		uint64_t name = 0, script = 0, script_id = 0, code_size = 0, flags = 0;
		v8_code_words words{};
		(void)pread(mem.get(), &name, 8, off_t(seen.extra - 1 + layout.walk.shared_name));
		(void)pread(mem.get(), &script, 8, off_t(seen.extra - 1 + layout.walk.shared_script));
		if ((script & 3) == 1)
			(void)pread(mem.get(), &script_id, 8, off_t(script - 1 + layout.walk.script_id));
		if (kind == V8_CODE_MACHINE) {
			(void)pread(mem.get(), &code_size, 8, off_t(seen.object - 1 + layout.walk.code_size));
			(void)pread(mem.get(), &flags, 8, off_t(seen.object - 1 + layout.walk.code_flags));
			(void)pread(mem.get(), &words.positions, 8, off_t(seen.object - 1 + layout.walk.code_positions));
			(void)pread(mem.get(), &words.deopt_data, 8, off_t(seen.object - 1 + layout.walk.code_deopt_data));
			words.size_kind = uint64_t(uint32_t(code_size)) << 8 | (uint32_t(flags) & 0xf);
		}
		seen.fingerprint = v8_fingerprint(seen.extra, name, script, script_id, &words);
		V8Names names;
		if (names.learn(seen, layout, mem.get())) {
			RuntimeFrameName out;
			FUZZ_CHECK(names.name(1, seen.id, uint32_t(tail), out));
			FUZZ_CHECK(!out.function.empty());
		}
	}

	// The bytes as a node file: its v8dbg_ symbols, and the layout they give.
	std::unique_ptr<ElfFile> elf = ElfFile::from_bytes(std::vector<uint8_t>(data, data + size));
	if (elf)
		(void)v8_layout(v8_symbols(*elf));
	return 0;
}
