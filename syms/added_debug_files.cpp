// syms/added_debug_files.cpp: debug files from elsewhere, checked and kept.
#include "syms/added_debug_files.h"

#include <fcntl.h>

#include <memory>

#include "elf/elf.h"

Result<int> AddedDebugFiles::add(const std::string &build_id, int fd, const SymbolizerOptions &options)
{
	if (!asked_.count(build_id))
		return Error("no file wants it");
	std::unique_ptr<ElfFile> debug = ElfFile::open(fd);
	if (!debug)
		return Error("not an ELF file");
	if (debug->build_id() != build_id)
		return Error(debug->build_id().empty() ? "it has no build id"
						       : "its build id is " + debug->build_id() + ", not " + build_id);
	if (!debug->has_section(".symtab") && !(options.wants_dwarf() && debug->has_dwarf()))
		return Error("neither symbols nor DWARF in it");
	UniqueFd kept(fcntl(fd, F_DUPFD_CLOEXEC, 0));
	if (!kept)
		return Error("cannot keep it open");
	UniqueFd &slot = added_[build_id];
	slot = std::move(kept);
	return slot.get();
}

int AddedDebugFiles::find(const std::string &build_id) const
{
	auto it = added_.find(build_id);
	return it == added_.end() ? -1 : it->second.get();
}
