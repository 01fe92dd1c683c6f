// hotspot/layout.cpp: a JVM's layout from its tables, by the names each JDK gives its
// fields (a field moved between classes, or renamed, is looked for under each name).
#include "hotspot/layout.h"

#include <initializer_list>

namespace {

// Looks fields up, remembering the first that none of its names finds.
class Lookup {
public:
	explicit Lookup(const HotSpotTables &tables) : tables_(tables) {}

	uint64_t field(std::initializer_list<const char *> types, std::initializer_list<const char *> names)
	{
		if (const auto value = first(types, names))
			return *value;
		return missing(std::string(*types.begin()) + "::" + *names.begin());
	}
	uint32_t offset(std::initializer_list<const char *> types, std::initializer_list<const char *> names)
	{
		const uint64_t value = field(types, names);
		return value < (1u << 16) ? uint32_t(value) : uint32_t(missing(std::string(*types.begin()) + "::" + *names.begin()));
	}
	uint32_t size(const char *type)
	{
		const auto value = tables_.size_of(type);
		return value && *value < (1u << 16) ? uint32_t(*value) : uint32_t(missing(std::string("sizeof ") + type));
	}
	// A static field's address some JDKs have: 0 when this one has none.
	uint64_t optional_static(const char *type, const char *name) const { return first({type}, {name}).value_or(0); }
	// A field some JDKs have: 0 when this one has none under any of its names.
	uint32_t optional(std::initializer_list<const char *> types, std::initializer_list<const char *> names)
	{
		const auto value = first(types, names);
		return value && *value < (1u << 16) ? uint32_t(*value) : 0;
	}
	int32_t constant(const char *name, int32_t otherwise)
	{
		const auto value = tables_.constant(name);
		return value ? int32_t(*value) : otherwise;
	}
	const std::string &first_missing() const { return missing_; }

private:
	// The field under the first of its names this JVM has.
	std::optional<uint64_t> first(std::initializer_list<const char *> types,
				      std::initializer_list<const char *> names) const
	{
		for (const char *type : types)
			for (const char *name : names)
				if (const auto value = tables_.field(type, name))
					return value;
		return std::nullopt;
	}
	uint64_t missing(const std::string &what)
	{
		if (missing_.empty())
			missing_ = what;
		return 0;
	}
	const HotSpotTables &tables_;
	std::string missing_;
};

} // namespace

Result<HotSpotLayout> hotspot_layout(const HotSpotTables &tables)
{
	Lookup find(tables);
	HotSpotLayout l;
	l.code_heaps = find.field({"CodeCache"}, {"_heaps"});
	l.major = find.field({"Abstract_VM_Version"}, {"_vm_major_version"});
	l.minor = find.field({"Abstract_VM_Version"}, {"_vm_minor_version"});
	l.security = find.field({"Abstract_VM_Version"}, {"_vm_security_version"});
	l.array_len = find.offset({"GrowableArrayBase", "GenericGrowableArray"}, {"_len"});
	l.array_data = find.offset({"GrowableArray<int>"}, {"_data"});
	l.heap_memory = find.offset({"CodeHeap"}, {"_memory"});
	l.heap_segmap = find.offset({"CodeHeap"}, {"_segmap"});
	l.heap_log2_segment = find.offset({"CodeHeap"}, {"_log2_segment_size"});
	l.space_low = find.offset({"VirtualSpace"}, {"_low_boundary"});
	l.space_high = find.offset({"VirtualSpace"}, {"_high_boundary"});
	l.heap_block_size = find.size("HeapBlock");
	l.block_length = find.offset({"HeapBlock::Header"}, {"_length"});
	l.block_used = find.offset({"HeapBlock::Header"}, {"_used"});
	l.blob_name = find.offset({"CodeBlob"}, {"_name"});
	l.blob_size = find.offset({"CodeBlob"}, {"_size"});
	l.blob_frame_size = find.offset({"CodeBlob"}, {"_frame_size"});
	l.blob_frame_complete = find.offset({"CodeBlob"}, {"_frame_complete_offset"});
	l.frame_complete_is_short = tables.field_type("CodeBlob", "_frame_complete_offset") == "int16_t";
	l.code_begin_is_offset = !tables.field("CodeBlob", "_code_begin");
	l.blob_code_begin = find.offset({"CodeBlob"}, {"_code_begin", "_code_offset"});
	l.nmethod_method = find.offset({"nmethod", "CompiledMethod"}, {"_method"});
	l.nmethod_compile_id = find.offset({"nmethod"}, {"_compile_id"});
	l.nmethod_metadata = find.optional({"nmethod"}, {"_metadata_offset"});
	l.nmethod_scopes_pcs = find.optional({"nmethod"}, {"_scopes_pcs_offset"});
	l.nmethod_scopes_data = find.optional({"nmethod", "CompiledMethod"}, {"_scopes_data_offset", "_scopes_data_begin"});
	l.nmethod_dependencies = find.optional({"nmethod"}, {"_dependencies_offset"});
	l.nmethod_immutable = find.optional({"nmethod"}, {"_immutable_data"});
	l.nmethod_immutable_size = find.optional({"nmethod"}, {"_immutable_data_size"});
	l.blob_data_offset = find.optional({"CodeBlob"}, {"_data_offset"});
	l.blob_mutable = find.optional({"CodeBlob"}, {"_mutable_data"});
	l.blob_mutable_size = find.optional({"CodeBlob"}, {"_mutable_data_size"});
	l.blob_relocation_size = find.optional({"CodeBlob"}, {"_relocation_size"});
	l.pc_desc_pc = find.optional({"PcDesc"}, {"_pc_offset"});
	l.pc_desc_scope = find.optional({"PcDesc"}, {"_scope_decode_offset"});
	l.pc_desc_size = uint32_t(tables.size_of("PcDesc").value_or(0));
	const bool old_layout = l.nmethod_dependencies && l.nmethod_metadata && !l.nmethod_immutable;
	const bool immutable_layout = l.nmethod_immutable && l.nmethod_immutable_size &&
				      (l.blob_mutable ? l.blob_mutable_size && l.blob_relocation_size
						      : l.nmethod_metadata && l.blob_data_offset);
	l.scopes = (old_layout || immutable_layout) && l.nmethod_scopes_pcs && l.nmethod_scopes_data &&
		   l.pc_desc_scope && l.pc_desc_pc + 4 <= l.pc_desc_size && l.pc_desc_scope + 4 <= l.pc_desc_size;
	l.const_flags = find.optional({"ConstMethod"}, {"_flags", "_flags._flags"});
	l.method_const = find.offset({"Method"}, {"_constMethod"});
	l.const_constants = find.offset({"ConstMethod"}, {"_constants"});
	l.const_name_index = find.offset({"ConstMethod"}, {"_name_index"});
	l.const_signature_index = find.offset({"ConstMethod"}, {"_signature_index"});
	l.const_code_size = find.offset({"ConstMethod"}, {"_code_size"});
	l.const_size = find.size("ConstMethod");
	l.pool_holder = find.offset({"ConstantPool"}, {"_pool_holder"});
	l.pool_source_file = find.offset({"ConstantPool"}, {"_source_file_name_index"});
	l.pool_size = find.size("ConstantPool");
	l.klass_name = find.offset({"Klass"}, {"_name"});
	l.symbol_length = find.offset({"Symbol"}, {"_length"});
	l.symbol_body = find.offset({"Symbol"}, {"_body"});
	l.interpreter_code = find.optional_static("AbstractInterpreter", "_code");
	l.queue_buffer = find.optional({"StubQueue"}, {"_stub_buffer"});
	l.call_stub_return = find.optional_static("StubRoutines", "_call_stub_return_address");
	// x86-64's interpreter frame (frame_x86.hpp), where the tables do not state it.
	l.interpreter_method = find.constant("frame::interpreter_frame_method_offset", -3);
	l.interpreter_bcp = find.constant("frame::interpreter_frame_bcp_offset", -8);
	if (!find.first_missing().empty())
		return Error("its VM tables lack " + find.first_missing());
	return l;
}

std::string hotspot_version(const HotSpotLayout &layout, const ReadMemory &read)
{
	int32_t major = 0, minor = 0, security = 0;
	if (!read_value(read, layout.major, major) || !read_value(read, layout.minor, minor) ||
	    !read_value(read, layout.security, security) || major <= 0 || major > 1000)
		return "";
	return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(security);
}

Result<HotSpotHeaps> hotspot_heaps(const HotSpotLayout &layout, const ReadMemory &read)
{
	uint64_t array = 0, data = 0;
	int32_t count = 0;
	if (!read_value(read, layout.code_heaps, array) || array == 0 ||
	    !read_value(read, array + layout.array_len, count) || !read_value(read, array + layout.array_data, data) ||
	    count <= 0 || data == 0)
		return Error("its code heaps are not set up yet");
	if (size_t(count) > kMaxHotSpotHeaps)
		return Error("it has " + std::to_string(count) + " code heaps, more than this profiler follows");
	HotSpotHeaps out;
	for (int32_t i = 0; i < count; i++) {
		uint64_t heap = 0;
		HotSpotHeap h;
		int32_t log2_segment = 0;
		if (!read_value(read, data + 8 * uint64_t(i), heap) ||
		    !read_value(read, heap + layout.heap_memory + layout.space_low, h.low) ||
		    !read_value(read, heap + layout.heap_memory + layout.space_high, h.high) ||
		    !read_value(read, heap + layout.heap_segmap + layout.space_low, h.segmap_low) ||
		    !read_value(read, heap + layout.heap_segmap + layout.space_high, h.segmap_high) ||
		    !read_value(read, heap + layout.heap_log2_segment, log2_segment))
			return Error("its code heaps cannot be read");
		if (h.low == 0 || h.high <= h.low || log2_segment < 4 || log2_segment > 16 ||
		    (out.log2_segment && out.log2_segment != uint32_t(log2_segment)))
			return Error("its code heaps are not set up yet");
		out.log2_segment = uint32_t(log2_segment);
		out.heaps.push_back(h);
	}
	return out;
}
