// v8/metadata.cpp: V8's layout from its postmortem metadata, per version.
#include "v8/metadata.h"

#include <elf.h>

#include <cstring>
#include <initializer_list>
#include <optional>
#include <set>
#include <string_view>

#include "elf/elf.h"

namespace {

constexpr std::string_view kVersionMajor = "_ZN2v88internal7Version6major_E";
constexpr std::string_view kVersionMinor = "_ZN2v88internal7Version6minor_E";
constexpr std::string_view kVersionBuild = "_ZN2v88internal7Version6build_E";
constexpr uint16_t kPointer = 8;

bool wanted_symbol(std::string_view name)
{
	return name.starts_with("v8dbg_") || name == kVersionMajor || name == kVersionMinor || name == kVersionBuild;
}

// The metadata's names for one value, by version: the first one the file has.
class Names {
public:
	explicit Names(const std::map<std::string, uint32_t> &symbols) : symbols_(symbols) {}

	std::optional<uint32_t> find(std::initializer_list<std::string_view> names) const
	{
		for (std::string_view name : names)
			if (auto it = symbols_.find("v8dbg_" + std::string(name)); it != symbols_.end())
				return it->second;
		return std::nullopt;
	}
	uint16_t get(std::initializer_list<std::string_view> names) const { return uint16_t(find(names).value_or(0)); }

private:
	const std::map<std::string, uint32_t> &symbols_;
};

// A frame slot's byte offset from fp (-8 to -8 * V8_FRAME_SLOTS) as the walk's slot index;
// nothing when it lies outside what the walk reads.
std::optional<uint8_t> frame_slot(std::optional<uint32_t> offset)
{
	if (!offset)
		return std::nullopt;
	const int32_t bytes = int32_t(*offset);
	if (bytes >= 0 || bytes < -8 * V8_FRAME_SLOTS || bytes % 8)
		return std::nullopt;
	return uint8_t(V8_FRAME_SLOTS + bytes / 8);
}

Status fill_walk(const Names &names, V8Layout &layout)
{
	v8_process &walk = layout.walk;
	const auto function = frame_slot(names.find({"off_fp_function"}));
	const auto context = frame_slot(names.find({"off_fp_context_or_frame_type", "off_fp_context"}));
	// Not in the metadata before V8 9.5: below the function, the array then the offset.
	auto bytecode_array = frame_slot(names.find({"off_fp_bytecode_array"}));
	if (!bytecode_array && function && *function >= 2)
		bytecode_array = uint8_t(*function - 2);
	auto bytecode_offset = frame_slot(names.find({"off_fp_bytecode_offset"}));
	if (!bytecode_offset && bytecode_array && *bytecode_array >= 1)
		bytecode_offset = uint8_t(*bytecode_array - 1);
	if (!function || !context || !bytecode_array || !bytecode_offset)
		return Error("its frame layout is not one this profiler reads");
	walk.slot_function = *function;
	walk.slot_context = *context;
	walk.slot_bytecode_array = *bytecode_array;
	walk.slot_bytecode_offset = *bytecode_offset;

	walk.type_shared = names.get({"type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE"});
	walk.type_code = names.get({"type_Code__CODE_TYPE"});
	walk.type_bytecode = names.get({"type_BytecodeArray__BYTECODE_ARRAY_TYPE"});
	walk.type_function_first = names.get({"FirstJSFunctionType"});
	walk.type_function_last = names.get({"LastJSFunctionType"});
	if (!walk.type_function_first) {
		// Since V8 9.6.138 JSFunction is a range of 15 types (class constructors' kinds).
		walk.type_function_first = names.get({"type_JSFunction__JS_FUNCTION_TYPE"});
		walk.type_function_last = walk.type_function_first + 14;
	}
	walk.map_instance_type = names.get({"class_Map__instance_type__uint16_t"});
	walk.function_shared = names.get({"class_JSFunction__shared__SharedFunctionInfo",
					  "class_JSFunction__shared__Tagged_SharedFunctionInfo_"});
	walk.function_code = names.get({"class_JSFunction__code__Code", "class_JSFunction__code__Tagged_Code_",
					"class_JSFunction__code__CodeT"});
	if (!walk.function_code && walk.function_shared && !layout.at_least(13, 0, 0))
		walk.function_code = layout.at_least(11, 7, 368) ? walk.function_shared - kPointer
								 : walk.function_shared + 3 * kPointer;
	// From V8 13 (leaptiering) a function reaches its code through a dispatch table: its
	// frames are named by their function alone, unless interpreted.

	walk.code_start = names.get({"class_Code__instruction_start__uintptr_t", "class_Code__instruction_start__Address"});
	walk.code_size = names.get({"class_Code__instruction_size__int"});
	walk.code_flags = names.get({"class_Code__flags__uint32_t"});
	walk.code_positions = names.get({"class_Code__source_position_table__ByteArray",
					 "class_Code__source_position_table__Tagged_ByteArray_"});
	if (walk.code_size && !walk.code_positions && names.get({"type_CodeWrapper__CODE_WRAPPER_TYPE"}))
		walk.code_positions = walk.code_start - 3 * kPointer;
	else if (!walk.code_size && walk.code_positions) {
		// V8 11.x lost Code's metadata: its fields follow the position table.
		walk.code_start = walk.code_positions + 2 * kPointer;
		walk.code_flags = walk.code_start + kPointer;
		walk.code_size = walk.code_flags + 4 + (layout.at_least(11, 4, 59) ? 0 : 4);
	}
	// The DeoptimizationData's field: named up to V8 11; from V8 12 the one before the
	// position table (code.h's kDeoptimizationDataOrInterpreterDataOffset).
	walk.code_deopt_data = names.get({"class_Code__deoptimization_data__FixedArray"});
	if (!walk.code_deopt_data && walk.code_positions && names.get({"type_CodeWrapper__CODE_WRAPPER_TYPE"}))
		walk.code_deopt_data = walk.code_positions - kPointer;
	layout.deopt_inlining_positions = names.get({"DeoptimizationDataInliningPositionsIndex"});
	layout.deopt_literals = names.get({"DeoptimizationDataLiteralArrayIndex"});
	layout.type_shared_wrapper = names.get({"type_SharedFunctionInfoWrapper__SHARED_FUNCTION_INFO_WRAPPER_TYPE"});
	layout.wrapper_shared = names.get({"class_SharedFunctionInfoWrapper__shared_info__Tagged_SharedFunctionInfo_"});
	walk.code_start_pointer = layout.at_least(11, 1, 204);
	const auto kind_mask = names.find({"CodeKindFieldMask"});
	walk.code_kind_mask = kind_mask.value_or(0xf);
	walk.code_kind_shift = uint8_t(names.get({"CodeKindFieldShift"}));
	walk.code_kind_baseline = uint8_t(names.get({"CodeKindBaseline"}));

	walk.shared_name = names.get({"class_SharedFunctionInfo__name_or_scope_info__Object",
				      "class_SharedFunctionInfo__name_or_scope_info__Tagged_Object_",
				      "class_SharedFunctionInfo__name_or_scope_info__Tagged_NameOrScopeInfoT_"});
	walk.shared_script = names.get({"class_SharedFunctionInfo__script_or_debug_info__HeapObject",
					"class_SharedFunctionInfo__script_or_debug_info__Object",
					"class_SharedFunctionInfo__script__Tagged_HeapObject_"});
	walk.bytecode_data = names.get({"class_BytecodeArray__data__uintptr_t"});
	walk.shared_function_data = names.get({"class_SharedFunctionInfo__function_data__Object"});
	// From V8 12 the bytecode is in trusted_function_data, a trusted pointer the metadata
	// leaves out; without a sandbox a plain pointer, still right after the map (read in
	// Node 22's and 24's heaps). The walk only compares it with the frame's bytecode.
	if (!walk.shared_function_data && layout.at_least(12, 0, 0))
		walk.shared_function_data = kPointer;

	if (!walk.type_shared || !walk.type_code || !walk.type_bytecode || !walk.type_function_first ||
	    !walk.map_instance_type || !walk.function_shared || !walk.shared_name || !walk.shared_script ||
	    !walk.bytecode_data)
		return Error("its V8 metadata lacks what names a JS function");
	// Where the instructions start is read from Code's header from V8 11.1; before, they
	// follow the header, code_start bytes in.
	if ((walk.code_start_pointer && walk.code_start >= 64 - 8) || walk.code_size >= 64 - 4 ||
	    walk.code_flags >= 64 - 4 || walk.code_positions > 64 - 8 || walk.code_positions % 8 ||
	    walk.code_deopt_data > 64 - 8 || walk.code_deopt_data % 8)
		return Error("its Code layout is not one this profiler reads");
	// The walk reads a JSFunction's and a SharedFunctionInfo's first 64 bytes (V8_CODE_READ).
	for (const uint16_t field :
	     {walk.function_shared, walk.function_code, walk.shared_name, walk.shared_script, walk.shared_function_data})
		if (field > 64 - 8 || field % 8)
			return Error("its JSFunction or SharedFunctionInfo layout is not one this profiler reads");
	return {};
}

Status fill_naming(const Names &names, V8Layout &layout)
{
	layout.type_script = names.get({"type_Script__SCRIPT_TYPE"});
	layout.type_scope_info = names.get({"type_ScopeInfo__SCOPE_INFO_TYPE"});
	layout.type_fixed_array = names.get({"type_FixedArray__FIXED_ARRAY_TYPE"});
	layout.type_byte_array = names.get({"type_ByteArray__BYTE_ARRAY_TYPE"});
	layout.type_trusted_byte_array = names.get({"type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE"});
	layout.first_nonstring_type = names.get({"FirstNonstringType"});
	layout.string_representation_mask = names.get({"StringRepresentationMask"});
	layout.string_encoding_mask = names.get({"StringEncodingMask"});
	layout.seq_string_tag = names.get({"SeqStringTag"});
	layout.cons_string_tag = names.get({"ConsStringTag"});
	layout.thin_string_tag = names.get({"ThinStringTag"});
	layout.sliced_string_tag = names.get({"SlicedStringTag"});
	layout.one_byte_string_tag = names.get({"OneByteStringTag"});
	layout.string_length = names.get({"class_String__length__int32_t"});
	layout.seq_one_byte_chars = names.get({"class_SeqOneByteString__chars__char"});
	layout.seq_two_byte_chars = names.get({"class_SeqTwoByteString__chars__char"});
	layout.cons_first = names.get({"class_ConsString__first__String"});
	layout.cons_second = names.get({"class_ConsString__second__String"});
	layout.thin_actual = names.get({"class_ThinString__actual__String"});
	layout.sliced_parent = names.get({"class_SlicedString__parent__String"});
	layout.sliced_offset = names.get({"class_SlicedString__offset__SMI"});
	// An external string's characters are outside V8's heap (node's own scripts are in its
	// binary): the address, cached, follows the resource (V8 10.2 to 13.6, no sandbox).
	const auto external = names.find({"ExternalStringTag"});
	const uint16_t resource = names.get({"class_ExternalString__resource__Object"});
	if (external && resource && *external != layout.seq_string_tag) {
		layout.external_string_tag = uint16_t(*external);
		layout.external_data = resource + kPointer;
	}
	layout.script_name = names.get({"class_Script__name__Object"});
	layout.script_line_ends = names.get({"class_Script__line_ends__Object"});
	layout.script_source = names.get({"class_Script__source__Object"});
	if (!layout.script_source && layout.script_name)
		layout.script_source = layout.script_name - kPointer;
	// A Script's id (a small integer the isolate gives each script in turn) is not in the
	// metadata: it lies between line_ends and eval_from_shared_or_wrapped_arguments (V8 10.2
	// to 13.6), which the walk checks.
	const uint16_t after_id = names.get({"class_Script__eval_from_shared_or_wrapped_arguments__Object",
					     "class_Script__eval_from_shared_or_wrapped_arguments__Tagged_Object_",
					     "class_Script__eval_from_shared_or_wrapped_arguments_or_sfi_table__Object"});
	if (layout.script_line_ends && after_id == layout.script_line_ends + 2 * kPointer)
		layout.walk.script_id = layout.script_line_ends + kPointer;
	layout.array_length = names.get({"class_FixedArrayBase__length__SMI"});
	layout.fixed_array_data = names.get({"class_FixedArray__data__uintptr_t"});
	// Not in the metadata since V8 9.4; moved with the array to trusted space in 12.
	layout.bytecode_positions = layout.at_least(12, 0, 0) ? 0 : layout.array_length + 3 * kPointer;
	// A ScopeInfo is a heap object of its own since V8 9.1: its slots follow the map.
	layout.scope_info_data = kPointer;
	layout.scope_first_vars = names.get({"scopeinfo_idx_first_vars"});
	layout.scope_context_locals = names.get({"scopeinfo_idx_ncontextlocals"});
	layout.scope_positions_fixed = layout.at_least(12, 8, 44);
	if (!layout.type_script || !layout.script_name || !layout.string_length || !layout.seq_one_byte_chars ||
	    !layout.first_nonstring_type || !layout.array_length || !layout.fixed_array_data)
		return Error("its V8 metadata lacks what names a script");
	if (!layout.walk.script_id)
		return Error("its V8 metadata does not place a Script's id, which tells a script from another");
	return {};
}

// Calls f(symbol, strings) for each defined symbol of .dynsym, then of .symtab, whose name
// lies in its string table (a name is read from strings at st_name by symbol_name).
template <typename F>
void each_symbol(const ElfFile &elf, F f)
{
	for (auto [table_name, strings_name] : {std::pair{".dynsym", ".dynstr"}, std::pair{".symtab", ".strtab"}}) {
		const auto table = elf.section_data(table_name), strings = elf.section_data(strings_name);
		if (!table || !strings)
			continue;
		const std::string_view text(reinterpret_cast<const char *>(strings->data()), strings->size());
		for (size_t at = 0; at + sizeof(Elf64_Sym) <= table->size(); at += sizeof(Elf64_Sym)) {
			Elf64_Sym symbol;
			std::memcpy(&symbol, table->data() + at, sizeof(symbol));
			if (symbol.st_shndx != SHN_UNDEF && symbol.st_name < text.size())
				f(symbol, text);
		}
	}
}

std::string_view symbol_name(std::string_view strings, const Elf64_Sym &symbol)
{
	return strings.substr(symbol.st_name, strings.find('\0', symbol.st_name) - symbol.st_name);
}

} // namespace

std::string V8Layout::version() const
{
	return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(build);
}

bool V8Layout::at_least(uint32_t a, uint32_t b, uint32_t c) const
{
	return major != a ? major > a : minor != b ? minor > b : build >= c;
}

std::map<std::string, uint32_t> v8_symbols(const ElfFile &elf)
{
	std::map<std::string, uint32_t> found;
	each_symbol(elf, [&](const Elf64_Sym &symbol, std::string_view strings) {
		if (symbol.st_size != 4)
			return;
		const std::string_view name = symbol_name(strings, symbol);
		if (!wanted_symbol(name) || found.contains(std::string(name)))
			return;
		if (const auto bytes = elf.bytes_at_address(symbol.st_value, 4)) {
			uint32_t value;
			std::memcpy(&value, bytes->data(), 4);
			found.emplace(name, value);
		}
	});
	return found;
}

std::vector<uint64_t> v8_gc_offsets(const ElfFile &elf)
{
	// Mangled, up to their parameters (which change between versions). A name is read whole
	// only past the prefix they share: a node file has some 100,000 functions.
	static constexpr std::string_view kHeap = "_ZN2v88internal4Heap";
	static constexpr std::string_view kFunctions[] = {
		"_ZN2v88internal4Heap24PerformGarbageCollectionE",
		"_ZN2v88internal4Heap36GarbageCollectionEpilogueInSafepointE",
		"_ZN2v88internal4Heap8TearDownE",
	};
	std::set<uint64_t> found[std::size(kFunctions)];
	each_symbol(elf, [&](const Elf64_Sym &symbol, std::string_view strings) {
		if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC || strings.compare(symbol.st_name, kHeap.size(), kHeap) != 0)
			return;
		const std::string_view name = symbol_name(strings, symbol);
		if (name.find(".cold") != std::string_view::npos)
			return;
		for (size_t i = 0; i < std::size(kFunctions); i++)
			if (name.starts_with(kFunctions[i]))
				if (const std::optional<uint64_t> offset = elf.file_offset_of_address(symbol.st_value))
					found[i].insert(*offset);
	});
	std::vector<uint64_t> offsets;
	for (const std::set<uint64_t> &entries : found) {
		if (entries.empty())
			return {};
		offsets.insert(offsets.end(), entries.begin(), entries.end());
	}
	return offsets;
}

Result<V8Layout> v8_layout(const std::map<std::string, uint32_t> &symbols)
{
	const Names names(symbols);
	if (!names.find({"off_fp_function"}))
		return Error("it has no V8 postmortem metadata (v8dbg_ symbols)");
	V8Layout layout;
	const auto major = symbols.find(std::string(kVersionMajor)), minor = symbols.find(std::string(kVersionMinor)),
		   build = symbols.find(std::string(kVersionBuild));
	if (major == symbols.end() || minor == symbols.end() || build == symbols.end())
		return Error("its V8 version cannot be read");
	layout.major = major->second, layout.minor = minor->second, layout.build = build->second;
	if (!layout.at_least(10, 2, 0))
		return Error("V8 " + layout.version() + " is older than 10.2 (Node 18)");
	if (names.get({"TaggedSize"}) != 8 || names.get({"HeapObjectTag"}) != 1 || names.get({"HeapObjectTagMask"}) != 3 ||
	    names.get({"SmiTagMask"}) != 1 || names.get({"SmiShiftSize"}) != 31)
		return Error("V8 " + layout.version() + " is built with pointer compression (or a sandbox)");
	if (names.get({"class_HeapObject__map__Map"}) != 0)
		return Error("V8 " + layout.version() + ": its objects do not start with their map");
	if (Status walk = fill_walk(names, layout); !walk.ok())
		return Error("V8 " + layout.version() + ": " + walk.error());
	if (Status naming = fill_naming(names, layout); !naming.ok())
		return Error("V8 " + layout.version() + ": " + naming.error());
	layout.walk.is_v8 = 1;
	return layout;
}
