// tests/fuzz/fuzz_source_lines.cpp: SourceLines (DWARF through libdw) on any bytes, then
// file:line and inlined frames for addresses the file's own segments hold.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "elf/elf.h"
#include "base/fd.h"
#include "elf/source_lines.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	// SourceLines reads a file: the input becomes one, in memory.
	UniqueFd fd(memfd_create("fuzz_source_lines", MFD_CLOEXEC));
	FUZZ_CHECK(fd.valid());
	for (size_t done = 0; done < size;) {
		ssize_t n = write(fd.get(), data + done, size - done);
		FUZZ_CHECK(n > 0);
		done += size_t(n);
	}
	std::unique_ptr<SourceLines> lines = SourceLines::open(fd.get());
	if (!lines)
		return 0;

	// Addresses inside the file's code, as its program headers place it, and the input's
	// choice.
	std::vector<uint64_t> addresses = {0, 0x1000, 0x401000, UINT64_MAX, fuzz_tail_u64(data, size)};
	if (std::unique_ptr<ElfFile> elf = ElfFile::from_bytes(std::vector<uint8_t>(data, data + size)))
		for (uint64_t offset = 0; offset < size && addresses.size() < 64; offset += 0x40)
			if (auto address = elf->address_of_file_offset(offset))
				addresses.push_back(*address);
	for (uint64_t address : addresses)
		for (const SourceLocation &location : lines->find(address)) {
			fuzz_touch(location.function.data(), location.function.size());
			fuzz_touch(location.file.data(), location.file.size());
		}
	return 0;
}
