// python/reader.h: the user half of the Python walk while sampling: answers the kernel's
// questions about processes (CPython or not, and where) and names each code object the
// walk meets, while its process lives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "python/names.h"
#include "runtime/room.h"

class PythonReader : public RuntimeReader {
public:
	explicit PythonReader(const RuntimeMaps &maps);
	~PythonReader();
	PythonReader(const PythonReader &) = delete;
	PythonReader &operator=(const PythonReader &) = delete;

	// Before sampling starts: classifies these processes, so that their first samples have
	// their Python frames (the kernel asks about the others at their first sample).
	void prepare(const std::vector<uint32_t> &pids, MapsReads &maps) override;

	// Every 20 ms or so, and once after sampling: classifies the processes the kernel asked
	// about (one line on stderr for each CPython it cannot follow, once per reason) and names
	// the code objects it met since.
	void tick(MapsReads &maps) override;

	const PythonNames &names() const;
	// A Python frame (python/python.h's tagged value) as its code object was named.
	bool name(uint32_t pid, uint64_t frame, RuntimeFrameName &out) const override;

	struct Stats {
		uint32_t processes = 0; // CPython processes followed
		uint64_t codes = 0;     // code objects named
		uint64_t unnamed = 0;   // met but not read (gone, or not a code object)
		double naming_ms = 0;   // CPU spent reading them
	};
	Stats counts() const;
	// "python: 2 processes followed, ...".
	std::string stats() const override;
	void end_window() override;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};
