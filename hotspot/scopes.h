// hotspot/scopes.h: what HotSpot keeps of a method's source lines and of its compiled code's
// inlining, decoded: the compressed line table of a ConstMethod (bytecode index -> line),
// and an nmethod's scopes (pc offset -> the chain of methods and bytecode indexes inlined
// there, innermost first). Both are in HotSpot's UNSIGNED5 encoding; every decoder stops at
// the end of the bytes it was given.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

// UNSIGNED5 numbers (HotSpot's CompressedReadStream): `excluded` bytes below it never
// occur (1 from JDK 20 on, where a zero byte ends a stream; 0 before).
class Unsigned5Reader {
public:
	Unsigned5Reader(std::span<const uint8_t> bytes, uint8_t excluded, size_t at = 0)
		: bytes_(bytes), at_(at), excluded_(excluded)
	{
	}
	// false once a read went past the end or met an excluded byte.
	bool ok() const { return ok_; }
	size_t position() const { return at_; }
	uint8_t byte();
	uint32_t number();
	int32_t signed_number() { const uint32_t v = number(); return int32_t(v >> 1) ^ -int32_t(v & 1); }

private:
	std::span<const uint8_t> bytes_;
	size_t at_;
	uint8_t excluded_;
	bool ok_ = true;
};

// The line of bytecode index bci: the table's entry for it, else the nearest before it;
// 0 when the table has none. A table cut short gives what its whole entries say.
uint32_t hotspot_line_of(std::span<const uint8_t> table, uint32_t bci, uint8_t excluded);
// How many bytes of `table` its entries take, its end mark included; 0 when it does not
// end within them (read more of it).
size_t hotspot_line_table_size(std::span<const uint8_t> table, uint8_t excluded);

// A compiled method's debug information, as read from the JVM (hotspot/names.h).
struct HotSpotCompiledScopes {
	std::vector<std::pair<int32_t, uint32_t>> pcs; // each PcDesc: pc offset, scope's decode offset
	std::vector<uint8_t> scopes;                    // the scopes' data
	std::vector<uint64_t> metadata;                 // what a scope's method index points into
};

// One method of an inlining chain.
struct HotSpotScope {
	uint64_t method = 0; // its Method*
	uint32_t bci = 0;
};
// At most this many methods are read of one chain (HotSpot inlines 15 deep by default).
constexpr size_t kMaxHotSpotScopes = 64;

// The chain of methods of the scope at decode offset `scope` of the compiled code, innermost
// first. Empty when there is none, or it does not decode (an offset out of range, a method
// index past the metadata, a chain cut short or longer than kMaxHotSpotScopes).
std::vector<HotSpotScope> hotspot_scope_chain(const HotSpotCompiledScopes &compiled, uint32_t scope, uint8_t excluded);

// The chain of methods running at pc offset `pc` of the compiled code, innermost first: the
// PcDesc at pc, else the nearest before it. Empty when there is none, or its scopes do not
// decode (an offset out of range, a method index past the metadata).
std::vector<HotSpotScope> hotspot_scopes_at(const HotSpotCompiledScopes &compiled, uint32_t pc, uint8_t excluded);
