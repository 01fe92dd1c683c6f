// syms/elf_handles.h: owning types for the handles of elfutils' libelf and libdw, so that
// every reader of ELF and DWARF through them ends what it began in one way.
#pragma once

#include <elfutils/libdw.h>
#include <libelf.h>

#include <cstdlib>
#include <memory>

struct ElfEnd {
	void operator()(Elf *elf) const { elf_end(elf); }
};
struct DwarfEnd {
	void operator()(Dwarf *dwarf) const { dwarf_end(dwarf); }
};
struct CfiEnd {
	void operator()(Dwarf_CFI *cfi) const { dwarf_cfi_end(cfi); }
};
// dwarf_cfi_addrframe's frames are malloc'ed for the caller to free.
struct FrameFree {
	void operator()(Dwarf_Frame *frame) const { std::free(frame); }
};
using ElfHandle = std::unique_ptr<Elf, ElfEnd>;
using DwarfHandle = std::unique_ptr<Dwarf, DwarfEnd>;
using CfiHandle = std::unique_ptr<Dwarf_CFI, CfiEnd>;
using FrameHandle = std::unique_ptr<Dwarf_Frame, FrameFree>;
