// runtime/room.h: a language runtime's user half, as the run sees every runtime: a row that
// says what it is called and what its frames look like, and a reader that follows its
// processes while sampling and names its frames after. Each runtime's room defines its row
// (its room.cpp); runtimes/runtimes.cpp lists them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proc/maps.h"
#include "report/model.h"
#include "runtime/kernel_asks.h"

// A runtime's frame as the reports show it: its function, the source file and the line, what
// -v adds (the runtime's own: a Java method's signature and bytecode index), and the
// functions its optimizing compiler inlined into it there, innermost first.
struct RuntimeFrameName {
	std::string function;
	std::string file;
	uint32_t line = 0;
	std::string detail = {};
	std::vector<RuntimeFrameName> inlined_here = {};
};

// One runtime's user half in a run, made once the sampling program is loaded.
class RuntimeReader {
public:
	virtual ~RuntimeReader() = default;
	// Before sampling starts: looks at these processes, so that their first samples show
	// the runtime's frames (the kernel asks about the others at their first sample). maps:
	// the processes' maps, read once for all the runtimes (proc/maps.h).
	virtual void prepare(const std::vector<uint32_t> &pids, MapsReads &maps) = 0;
	// Every 20 ms or so while sampling, and once after: answers the kernel's questions (the
	// processes' maps read once for all the runtimes at that tick) and reads what names its
	// frames while their processes live.
	virtual void tick(MapsReads &maps) = 0;
	// The names of a frame of process pid in a stored stack (a value with the runtime's
	// tag); false when it was never named.
	virtual bool name(uint32_t pid, uint64_t frame, RuntimeFrameName &out) const = 0;
	// The run's last -v lines: what it followed and named, at what cost.
	virtual std::string stats() const = 0;
	// After each window of a continuous run (its frames named): forgets what names no frame
	// of its last kKeptWindows windows (runtime/kernel_asks.h).
	virtual void end_window() = 0;
};

// A runtime, as the run and the command line know it.
struct RuntimeRoom {
	const char *name;  // "NAME": --no-NAME turns it off; its -v line starts so
	const char *help;  // --no-NAME's --help text
	uint64_t tag;      // its frames' tag in stored stacks (runtime/runtime.h)
	FrameKind kind;    // its frames in the reports
	const char *unnamed; // a frame it could not name, as the reports show it, bracketed
	// Its reader, for a loaded program (the runtime's walk on): its maps and its uprobes.
	std::unique_ptr<RuntimeReader> (*start)(const RuntimeKernel &kernel);
};
