// python/layout.h: where CPython keeps what the walk and the naming read, per minor version
// (x86-64, glibc): the one table of structure offsets.
#pragma once

#include <cstdint>

#include <linux/types.h>

#include "python/python.h"

// How a code object's line table is written.
enum class LineTable {
	Lnotab,    // 3.8, 3.9: co_lnotab, (bytecode bytes, line delta) pairs
	Linetable, // 3.10: co_linetable, (bytecode bytes, line delta or -128) pairs
	Locations, // 3.11+: the location table, entries of code units with varint lines
};

struct PythonLayout {
	int minor; // 3.minor
	// The kernel's walk (see struct python_process).
	python_chain chain;
	python_instr instr;
	uint16_t runtime_tss;   // _PyRuntime: autoTSSkey (a Py_tss_t {int initialized; key})
	uint16_t tstate_frame;
	int16_t cframe_frame;
	uint16_t frame_previous, frame_code, frame_instr, frame_entry;
	// The naming in user space.
	uint16_t code_firstlineno, code_filename, code_name;
	int16_t code_qualname; // -1: none (before 3.11)
	uint16_t code_lines;   // co_lnotab / co_linetable
	LineTable lines;
	uint16_t ascii_data;   // sizeof(PyASCIIObject): where a compact ASCII string's bytes start
	uint16_t compact_data; // sizeof(PyCompactUnicodeObject): a compact non-ASCII string's
};

// The layout of 3.minor, or nullptr when this profiler does not know it.
const PythonLayout *python_layout(int minor);

// The bytes of a code object user space reads to name it: every code_* offset lies within.
constexpr uint16_t kPythonCodeRead = PYTHON_CODE_READ;

// The name a code object's fingerprint (python_fingerprint) is made with: co_qualname where
// the version has one, else co_name.
inline uint16_t python_fingerprint_name(const PythonLayout &layout)
{
	return layout.code_qualname >= 0 ? uint16_t(layout.code_qualname) : layout.code_name;
}

// glibc x86-64: struct pthread's specific_1stblock, the values of pthread keys 0 to 31.
constexpr uint16_t kGlibcSpecificFirstBlock = 0x310;
