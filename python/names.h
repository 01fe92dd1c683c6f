// python/names.h: code objects named while their process lives (co_qualname or co_name,
// co_filename, the line table, read through /proc/PID/mem), and a Python frame (a code
// object and an instruction) turned into function, file and line at any time after.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "python/layout.h"
#include "runtime/room.h"

// The line of the instruction at `index` (in 2-byte code units) from a code object's line
// table; 0 when the table gives none.
uint32_t python_line(LineTable kind, std::span<const uint8_t> table, int first_line, uint32_t index);

// A Python frame's names: function is co_qualname (else co_name), file co_filename.
using PythonFrameName = RuntimeFrameName;

// The fingerprint (python_fingerprint) of the code object at `code` as it is now, the walk's
// way; nothing when it cannot be read.
std::optional<uint64_t> python_code_fingerprint(int mem_fd, uint64_t code, const PythonLayout &layout);

class PythonNames {
public:
	// Reads the code object the walk met (seen: its process, address, fingerprint and id)
	// from the process whose memory mem_fd is, and names its id; false when it is not a code
	// object (its type is not code_type, the process's &PyCode_Type), does not read as one
	// of that layout, or is no longer the one the walk met (its fingerprint differs: freed,
	// and another took its address, since).
	bool learn(const python_code &seen, uint64_t code_type, const PythonLayout &layout, int mem_fd);

	// The frame's names (id: what PYTHON_FRAME_ID gives), false when it was never named.
	bool name(uint32_t pid, uint64_t id, uint32_t index, PythonFrameName &out) const;

	size_t size() const { return codes_.size(); }
	// After a continuous run's window: forgets the ids no recent window named, and their code
	// objects in the kernel's map (forget_unnamed_codes).
	void end_window(const ForgetCode &forget);

private:
	struct Key {
		uint32_t pid;
		uint64_t id;
		bool operator==(const Key &) const = default;
	};
	struct KeyHash {
		size_t operator()(const Key &k) const { return std::hash<uint64_t>()(k.id * 31 + k.pid); }
	};
	struct Code {
		std::string function, file;
		int first_line = 0;
		LineTable lines = LineTable::Locations;
		std::vector<uint8_t> table;
		KeptCode kept;
	};
	std::unordered_map<Key, Code, KeyHash> codes_;
	uint64_t window_ = 0; // the continuous run's windows closed
};
