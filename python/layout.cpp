// python/layout.cpp: the offsets, checked against the interpreters they name (Debian's
// python3.11 and pyenv's 3.8 to 3.13 builds) by tests/test_python.cpp.
#include "python/layout.h"

namespace {

// clang-format off
constexpr PythonLayout kLayouts[] = {
	// minor, chain, instr, autoTSSkey, tstate frame, cframe frame,
	//   frame: previous, code, instr, entry;
	//   code: firstlineno, filename, name, qualname, lines, table; string data: ascii, compact
	{8, PYTHON_CHAIN_FRAME_OBJECT, PYTHON_INSTR_LASTI_BYTES, 1392, 24, -1,
	 24, 32, 104, 0, 40, 104, 112, -1, 120, LineTable::Lnotab, 48, 72},
	{9, PYTHON_CHAIN_FRAME_OBJECT, PYTHON_INSTR_LASTI_BYTES, 584, 24, -1,
	 24, 32, 104, 0, 40, 104, 112, -1, 120, LineTable::Lnotab, 48, 72},
	{10, PYTHON_CHAIN_FRAME_OBJECT, PYTHON_INSTR_LASTI_UNITS, 584, 24, -1,
	 24, 32, 96, 0, 40, 104, 112, -1, 120, LineTable::Linetable, 48, 72},
	{11, PYTHON_CHAIN_IS_ENTRY, PYTHON_INSTR_POINTER, 592, 56, 8,
	 48, 32, 56, 68, 72, 112, 120, 128, 136, LineTable::Locations, 48, 72},
	{12, PYTHON_CHAIN_SHIM, PYTHON_INSTR_POINTER, 1544, 56, 0,
	 8, 0, 56, 70, 68, 112, 120, 128, 136, LineTable::Locations, 40, 56},
	{13, PYTHON_CHAIN_SHIM, PYTHON_INSTR_POINTER, 2160, 72, -1,
	 8, 0, 56, 70, 68, 112, 120, 128, 136, LineTable::Locations, 40, 56},
};
// clang-format on

} // namespace

const PythonLayout *python_layout(int minor)
{
	for (const PythonLayout &layout : kLayouts)
		if (layout.minor == minor)
			return &layout;
	return nullptr;
}
