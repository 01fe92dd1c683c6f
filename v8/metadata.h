// v8/metadata.h: V8's postmortem metadata in a node executable or a libnode.so: the v8dbg_
// symbols (frame slots, instance types, field offsets) and the version, turned into the
// layout the kernel's walk and the naming read. Fields the metadata of some versions lacks
// are filled from the version, as the OpenTelemetry profiler's nodev8 documents them.
#pragma once

#include <cstdint>
#include <map>
#include <vector>
#include <string>

#include <linux/types.h>

#include "base/error.h"
#include "v8/v8.h"

class ElfFile;

struct V8Layout {
	uint32_t major = 0, minor = 0, build = 0;
	v8_process walk{}; // what the kernel reads (is_v8 set)
	// The naming's, all offsets in bytes from an object's untagged address.
	uint16_t type_script = 0, type_scope_info = 0, type_fixed_array = 0, type_byte_array = 0,
		 type_trusted_byte_array = 0;
	uint16_t first_nonstring_type = 0, string_representation_mask = 0, string_encoding_mask = 0;
	uint16_t seq_string_tag = 0, cons_string_tag = 0, thin_string_tag = 0, sliced_string_tag = 0,
		 one_byte_string_tag = 0;
	uint16_t string_length = 0, seq_one_byte_chars = 0, seq_two_byte_chars = 0;
	uint16_t cons_first = 0, cons_second = 0, thin_actual = 0, sliced_parent = 0, sliced_offset = 0;
	// An external string's representation tag, and where it caches its characters' address
	// (0: not read; an uncached one, kUncachedExternalStringMask in its type, has none).
	uint16_t external_string_tag = 0, external_data = 0;
	uint16_t script_name = 0, script_line_ends = 0, script_source = 0;
	uint16_t array_length = 0, fixed_array_data = 0;
	uint16_t bytecode_positions = 0; // BytecodeArray's source position table
	// Code's is walk.code_positions.
	// Optimized code's inlining: Code's DeoptimizationData (a FixedArray: walk.code_deopt_data),
	// the indexes there of its InliningPositions and of its literals (where an inlined
	// function's SharedFunctionInfo is; wrapped from V8 13: type_shared_wrapper,
	// wrapper_shared). 0: this V8's metadata does not say, and inlined functions are not shown.
	uint16_t deopt_inlining_positions = 0, deopt_literals = 0;
	uint16_t type_shared_wrapper = 0, wrapper_shared = 0;
	uint16_t scope_info_data = 0;    // where a ScopeInfo's slots start
	uint16_t scope_first_vars = 0, scope_context_locals = 0; // its slots' indices
	bool scope_positions_fixed = false; // its start and end at slots 3 and 4 (V8 >= 12.8.44)
	// "12.4.254"
	std::string version() const;
	bool at_least(uint32_t a, uint32_t b, uint32_t c) const;
};

// The v8dbg_ symbols' values and V8's version, by symbol name, from a file's .dynsym and
// .symtab (Node 24 keeps some in .symtab only).
std::map<std::string, uint32_t> v8_symbols(const ElfFile &elf);

// Where a node file's V8 starts a GC's pause (Heap::PerformGarbageCollection), ends it
// (Heap::GarbageCollectionEpilogueInSafepoint) and tears a heap down (Heap::TearDown), as
// the file offsets of their entries: the uprobes that count its GCs go there (v8/v8.bpf.h's
// on_v8_gc). An entry is a function's symbol or a compiler's specialized copy of it
// ("name.constprop.0": Node 18's GCs all run through one), not a part split off to be
// jumped to ("name.cold"). From .dynsym and .symtab (Node 24 keeps them local); empty when
// one of the three has none.
std::vector<uint64_t> v8_gc_offsets(const ElfFile &elf);

// The layout of the V8 in the file whose symbols these are. An error says in one line why its
// JS frames cannot be named: no metadata, a version before 10.2, pointer compression, or a
// field missing or out of the range the walk reads.
Result<V8Layout> v8_layout(const std::map<std::string, uint32_t> &symbols);
