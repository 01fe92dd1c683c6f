// hotspot/names.cpp: code blobs and methods read from a JVM's memory.
#include "hotspot/names.h"

#include <algorithm>
#include <vector>

namespace {

template <typename T>
bool read_value(const ReadMemory &read, uint64_t address, T &out)
{
	return address && read(address, &out, sizeof(out));
}

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

std::optional<std::string> read_hotspot_blob_name(const HotSpotLayout &layout, const ReadMemory &read, uint64_t blob)
{
	uint64_t name = 0;
	char text[64];
	if (!read_value(read, blob + layout.blob_name, name) || !read(name, text, sizeof(text)))
		return std::nullopt;
	const size_t length = std::find(text, text + sizeof(text), '\0') - text;
	if (length == sizeof(text))
		return std::nullopt;
	return std::string(text, length);
}
