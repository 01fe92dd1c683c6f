// python/runtime.h: recognise CPython in a process (a libpython3.X.so or python3.X binary in
// its maps), and find what the kernel's walk needs there: _PyRuntime's thread key, the eval
// function's range, PyCode_Type, and the version's offsets.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <linux/types.h>

#include "elf/elf.h"
#include "proc/maps.h"
#include "proc/memory.h"
#include "python/python.h"
#include "python/layout.h"

// What a process turned out to be.
struct PythonDetection {
	enum Kind {
		NotPython, // no CPython in its maps
		Python,    // CPython the walk can follow: process and layout are set
		Unknown,   // CPython (or PyPy) this profiler cannot follow: note says why, in one line
		NotYet,    // CPython still starting up (its thread key is not made yet): ask again
	};
	Kind kind = NotPython;
	python_process process{};
	PythonLayout layout{}; // the table's, or (3.13) what the process's _Py_DebugOffsets say
	std::string version; // "3.11", when known
	std::string note;
};

// Looks at /proc/PID/maps (through reads: read once for every runtime that asks) and the
// files mapped there (through /proc/PID/root), and at the process's memory. Never throws; a
// process gone meanwhile is NotPython.
PythonDetection detect_python(uint32_t pid, MapsReads &reads);

// 3.X's minor number from a file name: "libpython3.11.so.1.0" and "python3.11" give 11;
// -1 for any other name (python3, libpython3.so, pypy3).
int python_minor_of_file_name(std::string_view name);

// The part of a function that the compiler moved away (its unlikely paths: NAME.cold) in a
// file whose symbols do not name it, as Debian's stripped python3.11: the .eh_frame FDE
// (found through .eh_frame_hdr's table) that the function's jumps out of itself (x86-64
// jmp and jcc with a 32-bit displacement) land in at the most places, at least
// kMinColdTargets of them. Nothing when no FDE has that many, or the tables are not of the
// usual encodings.
std::optional<ElfSymbolValue> find_cold_part(const ElfFile &elf, ElfSymbolValue function);
constexpr size_t kMinColdTargets = 8;
