// hotspot/names.cpp: code blobs and methods read from a JVM's memory.
#include "hotspot/names.h"

#include <cstring>

#include <algorithm>
#include <vector>

#include "hotspot/hotspot.h"

namespace {

// A constant pool's slot: a Symbol* (its low bit a flag) for the names a method refers to.
std::optional<std::string> pool_symbol(const HotSpotLayout &layout, const ReadMemory &read, uint64_t pool,
				       uint16_t index)
{
	uint64_t symbol = 0;
	if (index == 0 || !read_value(read, pool + layout.pool_size + 8 * uint64_t(index), symbol))
		return std::nullopt;
	return read_hotspot_symbol(layout, read, symbol & ~uint64_t(1));
}

} // namespace

std::optional<std::string> read_hotspot_symbol(const HotSpotLayout &layout, const ReadMemory &read, uint64_t symbol)
{
	uint16_t length = 0;
	if (!read_value(read, symbol + layout.symbol_length, length) || length > kMaxHotSpotSymbol)
		return std::nullopt;
	std::string text(length, '\0');
	if (length && !read(symbol + layout.symbol_body, text.data(), length))
		return std::nullopt;
	return text;
}

std::optional<HotSpotMethodName> read_hotspot_method(const HotSpotLayout &layout, const ReadMemory &read,
						     uint64_t method)
{
	uint64_t const_method = 0, pool = 0, holder = 0, klass_name = 0;
	uint16_t name_index = 0, signature_index = 0, file_index = 0;
	if (!read_value(read, method + layout.method_const, const_method) ||
	    !read_value(read, const_method + layout.const_constants, pool) ||
	    !read_value(read, const_method + layout.const_name_index, name_index) ||
	    !read_value(read, const_method + layout.const_signature_index, signature_index) ||
	    !read_value(read, pool + layout.pool_holder, holder) ||
	    !read_value(read, pool + layout.pool_source_file, file_index) ||
	    !read_value(read, holder + layout.klass_name, klass_name))
		return std::nullopt;
	HotSpotMethodName out;
	auto klass = read_hotspot_symbol(layout, read, klass_name);
	auto name = pool_symbol(layout, read, pool, name_index);
	auto signature = pool_symbol(layout, read, pool, signature_index);
	if (!klass || !name || !signature || klass->empty() || name->empty())
		return std::nullopt;
	std::replace(klass->begin(), klass->end(), '/', '.');
	out.klass = std::move(*klass);
	out.method = std::move(*name);
	out.signature = std::move(*signature);
	out.file = pool_symbol(layout, read, pool, file_index).value_or("");
	return out;
}

std::optional<uint64_t> find_hotspot_blob(const HotSpotHeaps &heaps, const HotSpotLayout &layout,
					  const ReadMemory &read, uint64_t pc)
{
	for (const HotSpotHeap &heap : heaps.heaps) {
		if (pc < heap.low || pc >= heap.high)
			continue;
		uint64_t segment = (pc - heap.low) >> heaps.log2_segment;
		for (int step = 0; step < kMaxSegmapSteps; step++) {
			uint8_t back = 0;
			if (heap.segmap_low + segment >= heap.segmap_high ||
			    !read_value(read, heap.segmap_low + segment, back) || back == 0xff)
				return std::nullopt;
			if (back == 0) {
				const uint64_t block = heap.low + (segment << heaps.log2_segment);
				uint8_t used = 0;
				if (!read_value(read, block + layout.block_used, used) || !used)
					return std::nullopt;
				return block + layout.heap_block_size;
			}
			if (back > segment)
				return std::nullopt;
			segment -= back;
		}
		return std::nullopt;
	}
	return std::nullopt;
}

std::vector<HotSpotFixedBlob> hotspot_fixed_blobs(const HotSpotHeaps &heaps, const HotSpotLayout &layout,
						  const ReadMemory &read, bool *generated)
{
	// A pc in each: the interpreter's first codelet, the call stub's return address. Not
	// generated yet: a field read as null (one that cannot be read is no sign of that).
	uint64_t queue = 0, interpreter = 0, call_stub = 0;
	bool pending = false;
	if (layout.interpreter_code && layout.queue_buffer && read_value(read, layout.interpreter_code, queue))
		pending |= !queue || (read_value(read, queue + layout.queue_buffer, interpreter) && !interpreter);
	if (layout.call_stub_return && read_value(read, layout.call_stub_return, call_stub))
		pending |= !call_stub;
	if (generated)
		*generated = !pending;
	std::vector<HotSpotFixedBlob> out;
	for (const uint64_t pc : {interpreter, call_stub}) {
		const std::optional<uint64_t> blob = pc ? find_hotspot_blob(heaps, layout, read, pc) : std::nullopt;
		int32_t size = 0, frame_size = -1;
		HotSpotFixedBlob fixed;
		if (!blob || !read_value(read, *blob + layout.blob_size, size) || size <= 0 ||
		    uint64_t(size) > kMaxFixedBlob || pc - *blob >= uint64_t(size) ||
		    !read_hotspot_blob_name(layout, read, *blob, &fixed.name))
			continue;
		fixed.low = *blob;
		fixed.high = *blob + uint64_t(size);
		fixed.frameless = layout.blob_frame_size && read_value(read, *blob + layout.blob_frame_size, frame_size) &&
				  frame_size == 0;
		out.push_back(fixed);
	}
	return out;
}

std::optional<std::string> read_hotspot_blob_name(const HotSpotLayout &layout, const ReadMemory &read, uint64_t blob,
						  uint64_t *first_bytes)
{
	uint64_t name = 0;
	char text[64];
	if (!read_value(read, blob + layout.blob_name, name) || !read(name, text, sizeof(text)))
		return std::nullopt;
	if (first_bytes)
		std::memcpy(first_bytes, text, sizeof(*first_bytes));
	const size_t length = std::find(text, text + sizeof(text), '\0') - text;
	if (length == sizeof(text))
		return std::nullopt;
	return std::string(text, length);
}

std::vector<uint8_t> read_hotspot_line_table(const HotSpotLayout &layout, const ReadMemory &read, uint64_t method)
{
	uint64_t const_method = 0;
	uint8_t flags = 0; // the low byte: a u2 (JDK 20 and before) or a u4, little-endian
	uint16_t code_size = 0;
	if (!layout.const_flags || !read_value(read, method + layout.method_const, const_method) ||
	    !read_value(read, const_method + layout.const_flags, flags) || !(flags & 1) ||
	    !read_value(read, const_method + layout.const_code_size, code_size))
		return {};
	// The table follows the bytecodes; its size is known once it is decoded: read a piece
	// at a time until it ends.
	const uint64_t at = const_method + layout.const_size + code_size;
	constexpr size_t kPiece = 256;
	std::vector<uint8_t> table;
	while (table.size() < kMaxHotSpotLineTable) {
		const size_t had = table.size();
		table.resize(had + kPiece);
		if (!read(at + had, table.data() + had, kPiece))
			return {};
		if (const size_t size = hotspot_line_table_size(table, layout.unsigned5_excluded)) {
			table.resize(size);
			return table;
		}
	}
	return {};
}

namespace {

// Bytes [begin, end) of the JVM's memory; nothing when the range is upside down, too large,
// or unreadable.
std::optional<std::vector<uint8_t>> read_range(const ReadMemory &read, uint64_t begin, uint64_t end)
{
	if (end < begin || end - begin > kMaxHotSpotScopesBytes)
		return std::nullopt;
	std::vector<uint8_t> bytes(end - begin);
	if (!bytes.empty() && !read(begin, bytes.data(), bytes.size()))
		return std::nullopt;
	return bytes;
}

int64_t int32_at(const ReadMemory &read, uint64_t address, bool &ok)
{
	int32_t value = 0;
	ok = ok && read_value(read, address, value);
	return value;
}

} // namespace

std::optional<HotSpotCompiled> read_hotspot_compiled(const HotSpotLayout &layout, const ReadMemory &read,
						     uint64_t nmethod, uint64_t fingerprint, uint64_t unloaded)
{
	HotSpotCompiled out;
	bool ok = true;
	const int64_t compile_id = int32_at(read, nmethod + layout.nmethod_compile_id, ok);
	if (!layout.scopes || !ok || !read_value(read, nmethod + layout.nmethod_method, out.method) ||
	    hotspot_fingerprint(out.method, uint32_t(compile_id), unloaded) != fingerprint)
		return std::nullopt;
	const int64_t pcs_offset = int32_at(read, nmethod + layout.nmethod_scopes_pcs, ok);
	// Where the three lie, [begin, end) each, by the JVM's layout; read alike after.
	struct Span {
		uint64_t begin = 0, end = 0;
	} pcs_at, scopes_at, metadata_at;
	if (!layout.nmethod_immutable) {
		// [metadata][scopes' data][scopes' pcs][dependencies], from the nmethod's start.
		uint64_t data_begin = 0;
		const int64_t metadata_offset = int32_at(read, nmethod + layout.nmethod_metadata, ok);
		const int64_t dependencies = int32_at(read, nmethod + layout.nmethod_dependencies, ok);
		if (!ok || !read_value(read, nmethod + layout.nmethod_scopes_data, data_begin) || data_begin < nmethod)
			return std::nullopt;
		const int64_t data_offset = int64_t(data_begin - nmethod);
		if (!(0 < metadata_offset && metadata_offset <= data_offset && data_offset <= pcs_offset &&
		      pcs_offset <= dependencies))
			return std::nullopt;
		metadata_at = {nmethod + metadata_offset, nmethod + data_offset};
		scopes_at = {nmethod + data_offset, nmethod + pcs_offset};
		pcs_at = {nmethod + pcs_offset, nmethod + dependencies};
	} else {
		// Scopes' pcs then data in the immutable data; the metadata apart.
		uint64_t immutable = 0;
		const int64_t data_offset = int32_at(read, nmethod + layout.nmethod_scopes_data, ok);
		const int64_t immutable_size = int32_at(read, nmethod + layout.nmethod_immutable_size, ok);
		if (!ok || !read_value(read, nmethod + layout.nmethod_immutable, immutable) ||
		    !(0 <= pcs_offset && pcs_offset <= data_offset && data_offset <= immutable_size))
			return std::nullopt;
		pcs_at = {immutable + pcs_offset, immutable + data_offset};
		scopes_at = {immutable + data_offset, immutable + immutable_size};
		if (layout.blob_mutable) { // JDK 25 on: after the relocations in the mutable data
			uint64_t mutable_data = 0;
			const int64_t relocations = int32_at(read, nmethod + layout.blob_relocation_size, ok);
			const int64_t mutable_size = int32_at(read, nmethod + layout.blob_mutable_size, ok);
			if (!ok || !read_value(read, nmethod + layout.blob_mutable, mutable_data) || relocations < 0 ||
			    mutable_size < relocations)
				return std::nullopt;
			metadata_at = {mutable_data + relocations, mutable_data + mutable_size};
		} else { // JDK 23, 24: at an offset from the nmethod's data, to its end
			int16_t metadata_offset = 0;
			const int64_t data = int32_at(read, nmethod + layout.blob_data_offset, ok);
			const int64_t size = int32_at(read, nmethod + layout.blob_size, ok);
			if (!ok || !read_value(read, nmethod + layout.nmethod_metadata, metadata_offset) ||
			    data + metadata_offset < 0 || size < data + metadata_offset)
				return std::nullopt;
			metadata_at = {nmethod + data + metadata_offset, nmethod + size};
		}
	}
	const auto pcs = read_range(read, pcs_at.begin, pcs_at.end);
	auto scopes = read_range(read, scopes_at.begin, scopes_at.end);
	const auto metadata = read_range(read, metadata_at.begin, metadata_at.end);
	if (!pcs || !scopes || !metadata)
		return std::nullopt;
	out.scopes.metadata.resize(metadata->size() / 8);
	if (!out.scopes.metadata.empty())
		std::memcpy(out.scopes.metadata.data(), metadata->data(), 8 * out.scopes.metadata.size());
	out.scopes.scopes = std::move(*scopes);
	for (size_t at = 0; at + layout.pc_desc_size <= pcs->size(); at += layout.pc_desc_size) {
		int32_t pc = 0;
		uint32_t scope = 0;
		std::memcpy(&pc, pcs->data() + at + layout.pc_desc_pc, sizeof(pc));
		std::memcpy(&scope, pcs->data() + at + layout.pc_desc_scope, sizeof(scope));
		out.scopes.pcs.emplace_back(pc, scope);
	}
	return out;
}
