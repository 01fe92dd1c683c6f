// v8/names.h: JS code objects named while their process lives (the function's name, its
// script's name and line ends, the code's source positions, read through /proc/PID/mem), and
// a JS frame (a code object's id and an offset) turned into function, file and line at any
// time after.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/room.h"
#include "v8/metadata.h"

// A source position table's entries: (code offset, source position), as V8 writes them (VLQ
// zigzag deltas; at most max_entries read).
struct V8Position {
	uint32_t code_offset;
	uint64_t position; // V8's SourcePosition: external bit, script offset + 1, inlining id + 1
};
std::vector<V8Position> v8_positions(std::span<const uint8_t> table, size_t max_entries = 1 << 16);

// The script offset of the position in force at code_offset; nothing when the table has none,
// or the code there was inlined from another function (its offset is in that function's
// script).
std::optional<uint32_t> v8_script_offset(const std::vector<V8Position> &positions, uint32_t code_offset);

// Optimized code's inlined functions: the position in force at code_offset, and where each
// inlining happened (InliningPositions: the call's position in the function it was inlined
// into, itself maybe inlined), give the chain of functions running there, innermost first:
// each by the index of its inlining (-1: the code's own function) and its script offset
// (nothing when unknown). Empty when the table has no position there, an inlining index is
// past `inlinings`, or the chain is longer than kMaxV8Inlining.
struct V8InlinedAt {
	int32_t inlining;
	std::optional<uint32_t> script_offset;
};
std::vector<V8InlinedAt> v8_inlined_chain(const std::vector<V8Position> &positions,
					  const std::vector<uint64_t> &inlinings, uint32_t code_offset);
constexpr size_t kMaxV8Inlining = 64;

// The 1-based line of a script offset, from the offsets where the script's lines end; 0 when
// there are none.
uint32_t v8_line(const std::vector<uint32_t> &line_ends, uint32_t offset);

// Reads V8's heap objects in a process.
class V8Memory {
public:
	V8Memory(int mem_fd, const V8Layout &layout) : fd_(mem_fd), layout_(layout) {}
	// A word at an object's field (tagged: as V8 holds it); nothing when it cannot be read.
	std::optional<uint64_t> field(uint64_t tagged, uint32_t offset) const;
	// The instance type of the object a tagged pointer points at; 0 for none.
	uint16_t type_of(uint64_t tagged) const;
	// The instance type a map (tagged) gives its objects; 0 for none.
	uint16_t map_type(uint64_t map) const;
	// A string object's text (one- or two-byte, cons, thin, sliced, external with its
	// characters' address cached), at most max_bytes of it,
	// from at most 256 objects.
	std::optional<std::string> string(uint64_t tagged, size_t max_bytes = 1024, int depth = 16) const;
	// A FixedArray of small integers, or a byte array's bytes, at most max_items.
	std::optional<std::vector<uint32_t>> small_integers(uint64_t tagged, size_t max_items) const;
	std::optional<std::vector<uint8_t>> bytes(uint64_t tagged, size_t max_items) const;
	// size bytes at an address; false when any cannot be read.
	bool read(uint64_t address, void *out, size_t size) const;
	// Element `index` of an array of tagged words (fixed, weak, trusted or protected); a weak
	// reference as a strong one. Nothing past its length.
	std::optional<uint64_t> element(uint64_t tagged, uint32_t index) const;

private:
	// A string's part, with the objects left to read of the whole (a cons string's tree is
	// bounded in size as well as depth).
	std::optional<std::string> string_part(uint64_t tagged, size_t max_bytes, int depth, int &pieces) const;
	int fd_;
	const V8Layout &layout_;
};

// The maps of SharedFunctionInfo, BytecodeArray and Code (tagged; 0: not met), V8's
// read-only roots, which the walk takes as known (struct v8_process).
struct V8RootMaps {
	uint64_t shared = 0, bytecode = 0, code = 0;
};

class V8Names {
public:
	// Reads the code object the walk met (seen: its process, kind, address, function and
	// fingerprint) and names its id; false when it does not read as what the walk met (its
	// fingerprint differs: moved or freed by a GC, and another took its address). maps, when
	// given, gets the maps of the objects it met (where they read as their types).
	bool learn(const runtime_code &seen, const V8Layout &layout, int mem_fd, V8RootMaps *maps = nullptr);
	// The frame's names (id and offset: what V8_FRAME_ID and V8_FRAME_OFFSET give).
	bool name(uint32_t pid, uint64_t id, uint32_t offset, RuntimeFrameName &out) const;
	size_t size() const { return codes_.size(); }
	// After a continuous run's window: forgets the ids no recent window named, and their
	// objects in the kernel's map (forget_unnamed_codes).
	void end_window(const ForgetCode &forget);

private:
	struct Script {
		std::string file;
		std::vector<uint32_t> line_ends;
	};
	struct Function {
		std::string name;
		std::shared_ptr<const Script> script;
		uint32_t start_line = 0;
	};
	struct Code {
		Function function;
		std::vector<V8Position> positions; // empty: the function's start line for every offset
		// Optimized code's inlinings: each the call's position, and the function inlined
		// there (nothing when it could not be read).
		std::vector<uint64_t> inlining_positions;
		std::vector<std::optional<Function>> inlined;
		KeptCode kept;
	};
	// A SharedFunctionInfo's map, name_or_scope_info and script words, when it reads as one,
	// and its script's id (0 when none is read).
	struct SharedWords {
		uint64_t map, name, script, script_id;
	};
	static std::optional<SharedWords> shared_words(const V8Memory &memory, const V8Layout &layout, uint64_t shared);
	// Its function's name, script and first line, from those words.
	Function read_function(const V8Memory &memory, const V8Layout &layout, uint32_t pid, const SharedWords &words);
	// A script offset's line in the function's script; its first line when unknown.
	static uint32_t line_of(const Function &function, std::optional<uint32_t> script_offset);
	std::unordered_map<uint64_t, Code> codes_; // by pid << 36 | id
	// By pid, address, id and the words that hold its name and source: a GC may free a
	// script (an eval's) and put another at its address, which the cache must not take for it.
	std::map<std::array<uint64_t, 5>, std::shared_ptr<const Script>> scripts_;
	uint64_t window_ = 0; // the continuous run's windows closed
};
