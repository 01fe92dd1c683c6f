// unwind/cfi_image.h: a CFI section (.eh_frame or .debug_frame) checked before libdw plays
// it, in an ELF image of its own: the FDEs that pass, and the others emptied.
#pragma once

#include <elfutils/libdw.h>
#include <libelf.h>

#include <cstdint>
#include <vector>

#include "elf/elf_handles.h"

struct Fde {
	uint64_t start, end; // ELF virtual addresses
	uint64_t size;       // of its entry: what libdw plays for each of its rows
};

// libdw gets a CFI section in an ELF image of its own, [header][section][names][section
// headers]: the one section (".eh_frame" or ".debug_frame") at the object's address for
// it, every FDE that fails its checks emptied (zeroed: it covers no address and plays
// nothing). So libdw plays only programs checked here, never follows the object's
// .eh_frame_hdr (whose table could send it to bytes no one checked), and dwarf_begin_elf
// decompresses nothing else of a debug file (whose .debug_info may be a gigabyte).
struct CfiImage {
	std::vector<uint8_t> bytes;
	Elf_Data section{}; // the CFI, inside bytes
	std::vector<Fde> fdes; // those that passed, in the section's order
	ElfHandle elf;      // over bytes: ended first
};

// Copies the section (data, at address in the object) into the image, named name.
void make_image(CfiImage &image, const char *name, uint64_t address, const Elf_Data &data);
// Checks every entry of the image's section as libdw will walk them (past an entry it cannot
// read, when it can tell where the next one starts), keeps the FDEs that pass and empties the
// others; then opens the image.
void check_entries(CfiImage &image, bool eh_frame, uint64_t address);
