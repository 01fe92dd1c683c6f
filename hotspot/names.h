// hotspot/names.h: what a JVM's memory says of its code: the code blob a pc lies in (through
// the code heap's segment map), and a Method* as Java users read it (holdout.Split.hotA,
// its signature and source file). Every read is bounded, and checked before it is trusted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hotspot/layout.h"
#include "hotspot/scopes.h"

// A Symbol's text ("hotA", "holdout/Split"); nothing when it cannot be read or is longer
// than kMaxHotSpotSymbol.
std::optional<std::string> read_hotspot_symbol(const HotSpotLayout &layout, const ReadMemory &read, uint64_t symbol);
constexpr size_t kMaxHotSpotSymbol = 4096;

// A method as the reports name it.
struct HotSpotMethodName {
	std::string klass;     // "holdout.Split"
	std::string method;    // "hotA"
	std::string signature; // "(J)J"
	std::string file;      // "Split.java", "" when the class has none
	std::string qualified() const { return klass + "." + method; }
};
std::optional<HotSpotMethodName> read_hotspot_method(const HotSpotLayout &layout, const ReadMemory &read,
						     uint64_t method);

// The start of the code blob that holds pc, through its heap's segment map; nothing when
// pc is in no heap, in a free block, or the map's walk back takes more than
// kMaxSegmapSteps steps.
std::optional<uint64_t> find_hotspot_blob(const HotSpotHeaps &heaps, const HotSpotLayout &layout,
					  const ReadMemory &read, uint64_t pc);
constexpr int kMaxSegmapSteps = 64;

// The interpreter's blob and the call stub's (the initial stubs'), those found: every Java
// thread's stack holds both. Nothing when the tables name neither or the JVM has not
// generated them yet (then `generated` is false: their fields read as null).
std::vector<HotSpotFixedBlob> hotspot_fixed_blobs(const HotSpotHeaps &heaps, const HotSpotLayout &layout,
						  const ReadMemory &read, bool *generated = nullptr);
constexpr uint64_t kMaxFixedBlob = 16 << 20; // bytes: a blob stated longer is none

// A code blob's name, as the JVM gives it ("nmethod", "Interpreter", "StubRoutines (1)"),
// and its first 8 bytes as a word (as the walk reads them) when first_bytes is given.
std::optional<std::string> read_hotspot_blob_name(const HotSpotLayout &layout, const ReadMemory &read, uint64_t blob,
						  uint64_t *first_bytes = nullptr);

// A method's compressed line table (hotspot/scopes.h), its end mark included; empty when it
// has none, or it cannot be read within kMaxHotSpotLineTable bytes.
std::vector<uint8_t> read_hotspot_line_table(const HotSpotLayout &layout, const ReadMemory &read, uint64_t method);
constexpr size_t kMaxHotSpotLineTable = 64 * 1024;

// A compiled method's Method* and debug information, when the nmethod at `nmethod` is still
// the one the walk met (hotspot_fingerprint of its method and compile id, and `unloaded`,
// the JVM's count of classes unloaded now); nothing when it is not, the JVM has no scopes
// the layout reads, or they are larger than kMaxHotSpotScopes bytes.
struct HotSpotCompiled {
	uint64_t method = 0;
	HotSpotCompiledScopes scopes;
};
std::optional<HotSpotCompiled> read_hotspot_compiled(const HotSpotLayout &layout, const ReadMemory &read,
						     uint64_t nmethod, uint64_t fingerprint, uint64_t unloaded);
constexpr size_t kMaxHotSpotScopesBytes = 1024 * 1024;
