// tests/fuzz/fuzz_python.cpp: what the Python walk reads from outside: a libpython's symbols
// (ElfFile::from_bytes, then find_elf_symbol for every name it looks up, and the eval
// function's cold part from .eh_frame_hdr), a mapped file's name, and code objects' line
// tables of each format.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "python/names.h"
#include "python/runtime.h"
#include "elf/elf.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view text(reinterpret_cast<const char *>(data), size);
	const int minor = python_minor_of_file_name(text);
	FUZZ_CHECK(minor >= -1 && minor < 1000);

	// The bytes as a line table, exactly sized: a read past its end is an ASan report.
	const std::vector<uint8_t> table(data, data + size);
	const uint32_t index = uint32_t(fuzz_tail_u64(data, size) % 4096);
	for (LineTable kind : {LineTable::Lnotab, LineTable::Linetable, LineTable::Locations})
		FUZZ_CHECK(python_line(kind, table, 1, index) <= (1u << 24));

	std::unique_ptr<ElfFile> elf = ElfFile::from_bytes(std::vector<uint8_t>(data, data + size));
	if (!elf)
		return 0;
	for (const char *name : {"_PyRuntime", "_PyEval_EvalFrameDefault", "PyCode_Type", "Py_Version", ""})
		(void)find_elf_symbol(*elf, name);
	// The eval function's cold part, from its unwind tables: where the file says the function
	// is, and anywhere.
	if (const auto eval = find_elf_symbol(*elf, "_PyEval_EvalFrameDefault"))
		(void)find_cold_part(*elf, *eval);
	const uint64_t tail = fuzz_tail_u64(data, size);
	if (const auto cold = find_cold_part(*elf, ElfSymbolValue{tail, tail >> 48}))
		FUZZ_CHECK(cold->size > 0);
	return 0;
}
