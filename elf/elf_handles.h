// elf/elf_handles.h: owning types for the handles of elfutils' libelf and libdw, so that
// every reader of ELF and DWARF through them ends what it began in one way.
#pragma once

#include <elfutils/libdw.h>
#include <libelf.h>

#include <cstdlib>

#include "base/handle.h"

using ElfHandle = Handle<Elf, elf_end>;
using DwarfHandle = Handle<Dwarf, dwarf_end>;
using CfiHandle = Handle<Dwarf_CFI, dwarf_cfi_end>;
// dwarf_cfi_addrframe's frames are malloc'ed for the caller to free.
using FrameHandle = Handle<Dwarf_Frame, std::free>;
