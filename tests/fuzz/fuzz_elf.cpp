// tests/fuzz/fuzz_elf.cpp: ElfFile::from_bytes on any bytes, then every query on what it parsed,
// and the check a debug file from a debuginfod server passes before it is used.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "elf/debug_file.h"
#include "elf/elf.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	// The bytes go in as an exactly sized vector: a read past its end is an ASan report.
	std::unique_ptr<ElfFile> elf = ElfFile::from_bytes(std::vector<uint8_t>(data, data + size));
	if (!elf)
		return 0;

	for (char c : elf->build_id())
		FUZZ_CHECK((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
	// As the debug file of itself (taken exactly when it has a build id) and of another build.
	FUZZ_CHECK(debug_file_mismatch(*elf, *elf).ok() == !elf->build_id().empty());
	for (const char *name : {".text", ".symtab", ".dynsym", ".strtab", ".note.gnu.build-id", ".debug_line",
				 ".debug_info", ".gnu_debuglink", ""})
		if (auto bytes = elf->section_data(name))
			fuzz_touch(bytes->data(), bytes->size());

	// Addresses worth asking about: what the file's own offsets map to, the edges of the
	// address space, and whatever the input's last bytes say.
	std::vector<uint64_t> addresses = {0, 1, 0x1000, UINT64_MAX, UINT64_MAX - 1};
	for (uint64_t offset : {uint64_t(0), uint64_t(size / 2), uint64_t(size ? size - 1 : 0), uint64_t(0x1000),
				fuzz_tail_u64(data, size), UINT64_MAX})
		if (auto address = elf->address_of_file_offset(offset)) {
			addresses.push_back(*address);
			addresses.push_back(*address + 1);
			addresses.push_back(*address - 1);
		}
	addresses.push_back(fuzz_tail_u64(data, size));

	(void)elf->symbol_count();
	(void)elf->symbol_table();
	for (uint64_t address : addresses)
		if (const ElfFile::Symbol *symbol = elf->find_symbol(address)) {
			FUZZ_CHECK(symbol->start <= address && address < symbol->end);
			fuzz_touch(symbol->name.data(), symbol->name.size());
		}
	return 0;
}
