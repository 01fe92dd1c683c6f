// hotspot/layout.h: what the walk and the names need of a JVM, taken from its own tables
// (hotspot/vmstructs.h): the offsets of the fields read, the sizes of the types whose data
// follows them, the statics that say its version and where its code heaps are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "hotspot/vmstructs.h"

// Offsets are bytes into an object; statics are addresses in the JVM's memory.
struct HotSpotLayout {
	uint64_t code_heaps = 0;                 // CodeCache::_heaps: a GrowableArray<CodeHeap*>*
	uint64_t major = 0, minor = 0, security = 0; // Abstract_VM_Version::_vm_*_version (ints)
	uint32_t array_len = 0, array_data = 0;  // GrowableArray's
	uint32_t heap_memory = 0, heap_segmap = 0, heap_log2_segment = 0; // CodeHeap's
	uint32_t space_low = 0, space_high = 0;  // VirtualSpace's _low_boundary, _high_boundary
	uint32_t heap_block_size = 0;            // sizeof(HeapBlock): a blob follows its header
	uint32_t block_length = 0, block_used = 0; // HeapBlock::Header's (in segments; a bool)
	uint32_t blob_name = 0, blob_size = 0, blob_frame_size = 0, blob_frame_complete = 0; // CodeBlob's
	uint32_t blob_code_begin = 0;            // CodeBlob::_code_begin, or _code_offset (JDK 23 on)
	bool code_begin_is_offset = false;       //   which of the two
	bool frame_complete_is_short = false;    // _frame_complete_offset an int16_t (JDK 23 on), not an int
	uint32_t nmethod_method = 0, nmethod_compile_id = 0;
	// Where a compiled method's debug information lies (hotspot/names.h reads it); each a
	// field's offset, 0 when this JVM has not that field:
	// - JDK 22 and before: metadata, scopes' pcs and dependencies at offsets from the
	//   nmethod, its scopes' data at an address (_scopes_data_begin);
	// - JDK 23 on: scopes' pcs and data at offsets into its immutable data; the metadata at
	//   an offset from the end of its code (JDK 23, 24) or in its mutable data, after the
	//   relocations (JDK 25 on).
	uint32_t nmethod_metadata = 0, nmethod_scopes_pcs = 0, nmethod_scopes_data = 0, nmethod_dependencies = 0;
	uint32_t nmethod_immutable = 0, nmethod_immutable_size = 0;
	uint32_t blob_data_offset = 0, blob_mutable = 0, blob_mutable_size = 0, blob_relocation_size = 0;
	uint32_t pc_desc_size = 0, pc_desc_pc = 0, pc_desc_scope = 0; // PcDesc's
	bool scopes = false;                     // whether the fields above can be read on this JVM
	uint32_t const_flags = 0;                // ConstMethod::_flags: bit 0, a line table after the bytecodes
	uint8_t unsigned5_excluded = 0;          // 1 from JDK 20 on (hotspot/scopes.h)
	uint32_t method_const = 0;               // Method::_constMethod
	uint32_t const_constants = 0, const_name_index = 0, const_signature_index = 0, const_code_size = 0;
	uint32_t const_size = 0;                 // sizeof(ConstMethod): the bytecodes follow it
	uint32_t pool_holder = 0, pool_source_file = 0; // ConstantPool's _pool_holder, _source_file_name_index
	uint32_t pool_size = 0;                  // sizeof(ConstantPool): its slots follow it
	uint32_t klass_name = 0;                 // Klass::_name
	uint32_t symbol_length = 0, symbol_body = 0; // Symbol's
	// Where the code that never moves is (hotspot_fixed_blobs), each 0 when not in the tables:
	// the interpreter's StubQueue* (a static field's address) and its buffer's start in it;
	// the call stub's return address (a static field's address).
	uint64_t interpreter_code = 0, call_stub_return = 0;
	uint32_t queue_buffer = 0;
	// An interpreted frame's slots, in words from its frame pointer.
	int32_t interpreter_method = 0, interpreter_bcp = 0;
};

// The layout of a JVM whose tables these are; an error names the first field missing.
Result<HotSpotLayout> hotspot_layout(const HotSpotTables &tables);

// "17.0.13": the version the JVM states, "" when it cannot be read.
std::string hotspot_version(const HotSpotLayout &layout, const ReadMemory &read);

// The code heaps: where compiled code, stubs and the interpreter lie, and their segment
// maps (one byte per segment: how many segments back its block starts, up to 0xff).
struct HotSpotHeap {
	uint64_t low = 0, high = 0;        // the code's reserved range
	uint64_t segmap_low = 0, segmap_high = 0;
};
struct HotSpotHeaps {
	std::vector<HotSpotHeap> heaps;
	uint32_t log2_segment = 0;
};
constexpr size_t kMaxHotSpotHeaps = 8;

// A code blob that never moves or goes: the walk finds a pc in it by its range, without
// the segment map (struct hotspot_process's fixed_*).
struct HotSpotFixedBlob {
	uint64_t low = 0, high = 0; // the blob, from its start (its header) to its end
	uint64_t name = 0;          // its name's first 8 bytes, as the walk reads them
	bool frameless = false;     // its frame size is 0 (the call stub's): stepped by rbp, no header read
};

// An error when the heaps are not set up yet (a JVM starting) or not readable.
Result<HotSpotHeaps> hotspot_heaps(const HotSpotLayout &layout, const ReadMemory &read);
