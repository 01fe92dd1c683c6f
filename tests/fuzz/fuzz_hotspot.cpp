// tests/fuzz/fuzz_hotspot.cpp: what the HotSpot walk reads from a JVM's memory, with the
// bytes as that memory (at 0x10000, the rest unreadable): the VM tables through their
// symbols (each at a word of the input), the layout made of what was read, and, with a
// layout whose offsets the input gives, Symbols, methods and the code heap's segment map;
// and the input as a method's line table and as a compiled method's scopes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "hotspot/layout.h"
#include "hotspot/names.h"
#include "hotspot/scopes.h"
#include "hotspot/vmstructs.h"
#include "tests/fuzz/fuzz.h"

namespace {

constexpr uint64_t kBase = 0x10000;

uint64_t word_at(const uint8_t *data, size_t size, size_t index)
{
	uint64_t value = 0;
	if ((index + 1) * 8 <= size)
		std::memcpy(&value, data + index * 8, 8);
	return value;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ReadMemory read = [data, size](uint64_t address, void *out, size_t n) {
		if (address < kBase || address - kBase > size || n > size - (address - kBase))
			return false;
		std::memcpy(out, data + (address - kBase), n);
		return true;
	};
	// Each symbol at the address one of the input's first words says (its low 12 bits).
	const HotSpotSymbolAddress symbol = [data, size](std::string_view name) -> std::optional<uint64_t> {
		const size_t index = std::hash<std::string_view>{}(name) % 16;
		return kBase + (word_at(data, size, index) & 0xfff);
	};
	Result<HotSpotTables> tables = HotSpotTables::read(symbol, read);
	if (tables.ok()) {
		FUZZ_CHECK(tables->field_count() <= kMaxHotSpotTableEntries);
		if (Result<HotSpotLayout> layout = hotspot_layout(*tables); layout.ok()) {
			(void)hotspot_version(*layout, read);
			(void)hotspot_heaps(*layout, read);
		}
	}
	// A layout of offsets the input gives, over the same memory.
	HotSpotLayout l;
	uint32_t *offsets[] = {&l.symbol_length, &l.symbol_body, &l.method_const, &l.const_constants,
			       &l.const_name_index, &l.const_signature_index, &l.pool_holder, &l.pool_source_file,
			       &l.pool_size, &l.klass_name, &l.block_used, &l.heap_block_size, &l.blob_name};
	for (size_t i = 0; i < std::size(offsets); i++)
		*offsets[i] = uint32_t(word_at(data, size, 16 + i) & 0xffff);
	const uint64_t at = kBase + (fuzz_tail_u64(data, size) % (size + 1));
	if (const auto text = read_hotspot_symbol(l, read, at))
		FUZZ_CHECK(text->size() <= kMaxHotSpotSymbol);
	(void)read_hotspot_method(l, read, at);
	(void)read_hotspot_blob_name(l, read, at);
	HotSpotHeaps heaps;
	heaps.log2_segment = uint32_t(word_at(data, size, 30) % 17);
	heaps.heaps.push_back({kBase, kBase + size, kBase, kBase + size});
	if (const auto blob = find_hotspot_blob(heaps, l, read, at))
		FUZZ_CHECK(*blob >= kBase);
	// The decoders, with either encoding: a line table, and scopes whose pcs and metadata
	// are the input's first words.
	const std::span<const uint8_t> bytes(data, size);
	for (const uint8_t excluded : {0, 1}) {
		FUZZ_CHECK(hotspot_line_table_size(bytes, excluded) <= size);
		(void)hotspot_line_of(bytes, uint32_t(fuzz_tail_u64(data, size)), excluded);
		HotSpotCompiledScopes scopes;
		scopes.scopes.assign(data, data + size);
		for (size_t i = 0; i < 8; i++) {
			const uint64_t word = word_at(data, size, i);
			scopes.pcs.emplace_back(int32_t(word), uint32_t(word >> 32));
			scopes.metadata.push_back(word);
		}
		FUZZ_CHECK(hotspot_scopes_at(scopes, uint32_t(word_at(data, size, 8)), excluded).size() <=
			   kMaxHotSpotScopes);
	}
	return 0;
}
