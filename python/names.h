// python/names.h: code objects named while their process lives (co_qualname or co_name,
// co_filename, the line table, read through /proc/PID/mem), and a Python frame (a code
// object and an instruction) turned into function, file and line at any time after.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "python/layout.h"

// The line of the instruction at `index` (in 2-byte code units) from a code object's line
// table; 0 when the table gives none.
uint32_t python_line(LineTable kind, std::span<const uint8_t> table, int first_line, uint32_t index);

struct PythonFrameName {
	std::string function; // co_qualname, else co_name
	std::string file;     // co_filename
	uint32_t line = 0;
};

class PythonNames {
public:
	// Reads the code object at `code` in the process whose memory mem_fd is, in place of
	// what was read there before (the walk reports an address again only after the
	// process's image changed); false when it is not a code object (its type is not
	// code_type, the process's &PyCode_Type) or does not read as one of that layout.
	bool learn(uint32_t pid, uint64_t code, uint64_t code_type, const PythonLayout &layout, int mem_fd);

	// The frame's names, false when the code object was never named.
	bool name(uint32_t pid, uint64_t code, uint32_t index, PythonFrameName &out) const;

	size_t size() const { return codes_.size(); }

private:
	struct Key {
		uint32_t pid;
		uint64_t code;
		bool operator==(const Key &) const = default;
	};
	struct KeyHash {
		size_t operator()(const Key &k) const { return std::hash<uint64_t>()(k.code * 31 + k.pid); }
	};
	struct Code {
		std::string function, file;
		int first_line = 0;
		LineTable lines = LineTable::Locations;
		std::vector<uint8_t> table;
	};
	std::unordered_map<Key, Code, KeyHash> codes_;
};
