// syms/symbol_file.cpp: a mapped file's ELF symbols, debug file and DWARF, found and read.
#include "syms/symbol_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <optional>

#include "elf/debug_file.h"
#include "elf/demangle.h"
#include "elf/dwarf_file.h"

namespace {

// True when both descriptors are the same directory: a process whose root is the host's.
bool same_directory(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

} // namespace

std::unique_ptr<SymbolFile> SymbolFile::open(int fd, const std::string &path, int root, int host_root,
					     const SymbolizerOptions &options, SymbolizerStats &stats)
{
	std::unique_ptr<SymbolFile> file(new SymbolFile());
	file->elf_ = ElfFile::open(fd);
	if (!file->elf_)
		return nullptr;
	stats.elf_files_parsed++;
	const ElfFile &elf = *file->elf_;

	// A stripped file's full symbol table, and its DWARF, are in its separate debug file.
	const bool own_symtab = elf.has_section(".symtab"), own_dwarf = elf.has_dwarf();
	std::optional<DebugFile> debug;
	const bool want_dwarf = options.wants_dwarf();
	if (!own_symtab || (want_dwarf && !own_dwarf)) {
		debug = find_debug_file(elf, path, options.debug_root, root, false);
		// The host's debug files serve a container's binaries too when the build id,
		// which names the very build, says they are the same.
		if (!debug && root != host_root && !same_directory(root, host_root))
			debug = find_debug_file(elf, path, options.debug_root, host_root, true);
		if (debug)
			stats.debug_files_read++;
	}
	file->symbols_ = file->elf_.get();
	if (debug && !own_symtab && debug->elf->has_section(".symtab"))
		file->symbols_ = debug->elf.get();
	if (want_dwarf) {
		if (own_dwarf)
			file->read_lines(fd, options);
		else if (debug && debug->elf->has_dwarf())
			file->read_lines(debug->fd.get(), options);
	}
	if (debug)
		file->debug_ = std::move(debug->elf);
	file->wants_debug_file_ = !elf.build_id().empty() && ((file->symbols_ == file->elf_.get() && !own_symtab) ||
							       (options.want_lines && !file->lines_));
	return file;
}

std::unique_ptr<SymbolFile> SymbolFile::of_image(std::unique_ptr<ElfFile> elf)
{
	if (!elf)
		return nullptr;
	std::unique_ptr<SymbolFile> file(new SymbolFile());
	file->elf_ = std::move(elf);
	file->symbols_ = file->elf_.get();
	return file;
}

const ElfFile::Symbol *SymbolFile::symbol_at(uint64_t address)
{
	// A separate debug file has the fullest table, but not the binary's PLT.
	const bool from_debug_file = symbols_ != elf_.get();
	const ElfFile::Symbol *symbol = from_debug_file ? elf_->find_plt_symbol(address) : nullptr;
	if (!symbol)
		symbol = symbols_->find_symbol(address);
	if (!symbol && from_debug_file)
		symbol = elf_->find_symbol(address);
	return symbol;
}

const std::string &SymbolFile::name_of(const ElfFile::Symbol &symbol)
{
	auto [it, inserted] = names_.try_emplace(symbol.name.data());
	if (inserted)
		it->second = demangle(symbol.name);
	return it->second;
}

void SymbolFile::take_debug_file(int fd, const SymbolizerOptions &options)
{
	std::unique_ptr<ElfFile> debug = ElfFile::open(fd);
	if (!debug || !debug_file_mismatch(*elf_, *debug).ok())
		return;
	const bool symbols = symbols_ == elf_.get() && !elf_->has_section(".symtab") && debug->has_section(".symtab");
	// Its DWARF too, for inlined frames or -v's lines, once it is here for its symbols.
	const bool lines = options.wants_dwarf() && !lines_ && debug->has_dwarf();
	if (!symbols && !lines)
		return;
	if (lines)
		read_lines(fd, options);
	if (symbols) {
		symbols_ = debug.get();
		debug_ = std::move(debug);
	}
	wants_debug_file_ = false;
}

void SymbolFile::read_lines(int fd, const SymbolizerOptions &options)
{
	lines_ = SourceLines::open(fd);
	dwarf_copy_.reset();
	if (lines_)
		dwarf_fd_.reset(fcntl(fd, F_DUPFD_CLOEXEC, 0));
	// Its decompressed copy is made once, now (one more inflating of its sections), for the
	// windows after this one; not for a file that could never be kept.
	if (lines_ && lines_->inflated_bytes() && lines_->inflated_bytes() <= options.kept_decompressed_bytes &&
	    dwarf_fd_)
		dwarf_copy_ = decompressed_copy(dwarf_fd_.get(), &dwarf_copy_bytes_);
}

SourceLines *SymbolFile::lines(SymbolizerStats &stats)
{
	if (!lines_ && (dwarf_copy_ || dwarf_fd_)) {
		stats.dwarf_read_again++;
		if (dwarf_copy_) {
			lines_ = SourceLines::open(dwarf_copy_.get());
			if (lines_)
				stats.dwarf_read_from_copy++;
			else
				dwarf_copy_.reset(); // the file itself, then
		}
		if (!lines_ && dwarf_fd_) {
			lines_ = SourceLines::open(dwarf_fd_.get());
			if (!lines_)
				dwarf_fd_.reset();
		}
	}
	return lines_.get();
}

size_t SymbolFile::held_bytes() const
{
	size_t bytes = sizeof(SymbolFile) + elf_->held_bytes() + (debug_ ? debug_->held_bytes() : 0);
	// A node of the map and its string, where the string outgrew its own buffer.
	for (const auto &[raw, name] : names_)
		bytes += 4 * sizeof(void *) + sizeof(name) + (name.capacity() > std::string().capacity() ? name.capacity() + 1 : 0);
	return bytes;
}
