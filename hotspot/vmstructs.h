// hotspot/vmstructs.h: HotSpot's description of itself, as libjvm.so exports it for the
// Serviceability Agent: the tables gHotSpotVMStructs (each type's fields: an offset, or a
// static's address), gHotSpotVMTypes (each type's size) and gHotSpotVMIntConstants, read
// from a JVM's memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/error.h"

// Reads size bytes of the JVM's memory at address; false when any cannot be read.
using ReadMemory = std::function<bool(uint64_t address, void *out, size_t size)>;

// One value of type T at address (0: none, never read).
template <typename T>
bool read_value(const ReadMemory &read, uint64_t address, T &out)
{
	return address && read(address, &out, sizeof(out));
}

// Where libjvm.so's exported symbols are in the process (relocated addresses), by the name
// each has after "gHotSpot": "VMStructs", "VMStructEntryArrayStride", ...
using HotSpotSymbolAddress = std::function<std::optional<uint64_t>(std::string_view name)>;

class HotSpotTables {
public:
	// A field's offset in its type, or a static field's address: "CodeBlob", "_frame_size".
	std::optional<uint64_t> field(std::string_view type, std::string_view name) const;
	// A field's C++ type, as the table states it: "int", "int16_t", "address".
	std::optional<std::string> field_type(std::string_view type, std::string_view name) const;
	// A type's size: "ConstMethod".
	std::optional<uint64_t> size_of(std::string_view type) const;
	// An integer constant: "frame::interpreter_frame_method_offset".
	std::optional<int64_t> constant(std::string_view name) const;

	size_t field_count() const { return fields_.size(); }
	size_t type_count() const { return sizes_.size(); }
	size_t constant_count() const { return constants_.size(); }

	// Reads the three tables through their exported symbols. An error says, in a phrase,
	// what is missing ("its VM tables are not exported", "... are not set up yet").
	static Result<HotSpotTables> read(const HotSpotSymbolAddress &symbol, const ReadMemory &read);

private:
	std::unordered_map<std::string, uint64_t> fields_; // "Type::_field"
	std::unordered_map<std::string, std::string> field_types_;
	std::unordered_map<std::string, uint64_t> sizes_;
	std::unordered_map<std::string, int64_t> constants_;
};

// At most this many entries are read of each table (JDK 25 has about 1,100 fields).
constexpr size_t kMaxHotSpotTableEntries = 8192;
// A name in the tables is at most this long.
constexpr size_t kMaxHotSpotTableName = 256;
