// hotspot/scopes.cpp: line tables and inlining scopes, decoded as HotSpot writes them
// (compressedStream and unsigned5.hpp, method.hpp's line table, scopeDesc.cpp).
#include "hotspot/scopes.h"

#include <algorithm>

namespace {

// UNSIGNED5: a byte below kLow ends a number, one at or above it is followed by another
// (6 bits more each), up to kMaxBytes.
constexpr uint32_t kLow = 192;
constexpr int kMaxBytes = 5;

// Each entry of a line table (bci and line, as deltas from 0 and 0) passed to f, up to its
// end mark; the bytes taken, end mark included, or 0 when it does not end within table.
template <typename F>
size_t each_line(std::span<const uint8_t> table, uint8_t excluded, F f)
{
	Unsigned5Reader read(table, excluded);
	uint32_t bci = 0, line = 0;
	while (true) {
		const uint8_t next = read.byte();
		if (!read.ok())
			return 0;
		if (next == 0)
			return read.position();
		if (next == 0xff) { // a long pair: two signed numbers
			const int32_t bci_delta = read.signed_number(), line_delta = read.signed_number();
			if (!read.ok())
				return 0;
			bci += uint32_t(bci_delta);
			line += uint32_t(line_delta);
		} else { // a short pair: 5 bits of bci delta, 3 of line delta
			bci += next >> 3;
			line += next & 7;
		}
		f(bci, line);
	}
}

} // namespace

uint8_t Unsigned5Reader::byte()
{
	if (at_ >= bytes_.size()) {
		ok_ = false;
		return 0;
	}
	return bytes_[at_++];
}

uint32_t Unsigned5Reader::number()
{
	uint32_t sum = 0;
	for (int i = 0, shift = 0; i < kMaxBytes; i++, shift += 6) {
		const uint8_t b = byte();
		if (!ok_ || b < excluded_) {
			ok_ = false;
			return 0;
		}
		sum += uint32_t(b - excluded_) << shift;
		if (b < kLow)
			break;
	}
	return sum;
}

uint32_t hotspot_line_of(std::span<const uint8_t> table, uint32_t bci, uint8_t excluded)
{
	uint32_t best_bci = 0, best_line = 0;
	bool exact = false;
	each_line(table, excluded, [&](uint32_t entry_bci, uint32_t line) {
		if (exact)
			return;
		if (entry_bci == bci) {
			best_line = line;
			exact = true;
		} else if (entry_bci < bci && entry_bci >= best_bci) {
			best_bci = entry_bci;
			best_line = line;
		}
	});
	return best_line;
}

size_t hotspot_line_table_size(std::span<const uint8_t> table, uint8_t excluded)
{
	return each_line(table, excluded, [](uint32_t, uint32_t) {});
}

std::vector<HotSpotScope> hotspot_scopes_at(const HotSpotCompiledScopes &compiled, uint32_t pc, uint8_t excluded)
{
	// HotSpot's own approximate lookup: the first PcDesc at or after pc (a return address
	// has one of its own: the call's), else the last before it; of those with a scope (the
	// table's ends have none).
	const std::pair<int32_t, uint32_t> *after = nullptr, *before = nullptr;
	for (const auto &desc : compiled.pcs) {
		if (desc.second == 0)
			continue;
		if (desc.first >= int64_t(pc) && (!after || desc.first < after->first))
			after = &desc;
		else if (desc.first < int64_t(pc) && (!before || desc.first >= before->first))
			before = &desc;
	}
	const auto *found = after ? after : before;
	return found ? hotspot_scope_chain(compiled, found->second, excluded) : std::vector<HotSpotScope>{};
}

std::vector<HotSpotScope> hotspot_scope_chain(const HotSpotCompiledScopes &compiled, uint32_t scope, uint8_t excluded)
{
	std::vector<HotSpotScope> chain;
	// Each scope: its sender's decode offset, its method's index into the metadata (from
	// 1), its bci + 1. A sender comes before its callee in the data: the offsets fall.
	uint32_t offset = scope, limit = uint32_t(compiled.scopes.size());
	while (offset != 0 && offset < limit && chain.size() < kMaxHotSpotScopes) {
		Unsigned5Reader read(compiled.scopes, excluded, offset);
		const uint32_t sender = read.number(), method = read.number(), bci = read.number();
		if (!read.ok() || method == 0 || method > compiled.metadata.size() || !compiled.metadata[method - 1])
			return {};
		chain.push_back({compiled.metadata[method - 1], bci > 0 ? bci - 1 : 0});
		limit = offset;
		offset = sender;
	}
	if (offset != 0) // cut short: a chain without its outer methods would misplace the inner
		return {};
	return chain;
}
