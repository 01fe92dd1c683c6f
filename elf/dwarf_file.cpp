// elf/dwarf_file.cpp: an ELF file's DWARF opened for libdw without trusting the file: its
// string sections checked, mapped only when nobody else can change it, its compressed
// sections decompressed once into a sealed copy, and an empty stand-in alt file.
#include "elf/dwarf_file.h"

#include <bit>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

namespace {

size_t inflated_bytes(Elf *elf, size_t file_size)
{
	size_t bytes = file_size;
	bool compressed = false;
	for (Elf_Scn *section = nullptr; (section = elf_nextscn(elf, section));) {
		GElf_Shdr header;
		GElf_Chdr inflated;
		if (gelf_getshdr(section, &header) && (header.sh_flags & SHF_COMPRESSED) &&
		    gelf_getchdr(section, &inflated)) {
			compressed = true;
			bytes += inflated.ch_size > header.sh_size ? size_t(inflated.ch_size - header.sh_size) : 0;
		}
	}
	return compressed ? bytes : 0;
}

// libdw hands out strings of these sections by offset alone, and its callers strlen
// them: a last string without its NUL would be read past the end of the section.
bool strings_terminated(Elf *elf)
{
	size_t names;
	if (elf_getshdrstrndx(elf, &names) != 0)
		return false;
	for (Elf_Scn *section = nullptr; (section = elf_nextscn(elf, section));) {
		GElf_Shdr header;
		if (!gelf_getshdr(section, &header))
			return false;
		const char *name = elf_strptr(elf, names, header.sh_name);
		if (!name || header.sh_type == SHT_NOBITS ||
		    (!std::strstr(name, "debug_str") && !std::strstr(name, "debug_line_str")))
			continue;
		// What libdw read (and decompressed) for its own use; a section it left
		// alone is not read now: the fd is given up.
		Elf_Data *data = elf_getdata(section, nullptr);
		if (data && data->d_buf && data->d_size > 0 &&
		    static_cast<const char *>(data->d_buf)[data->d_size - 1] != '\0')
			return false;
	}
	return true;
}

} // namespace

// The DWARF of the ELF file behind fd. libdw reads every debug section in dwarf_begin_elf;
// the fd is then given up (ELF_C_FDDONE), so nothing reads it later and the caller may
// close it. A file anyone but root could change is read, not mapped: a mapping dies with
// SIGBUS when the file is truncated under it. A sealed memfd (decompressed_copy) cannot be.
DebugInfo read_debug_info(int fd)
{
	static const bool libelf_ready = elf_version(EV_CURRENT) != EV_NONE;
	struct stat st;
	if (!libelf_ready || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return {};
	const int seals = fcntl(fd, F_GET_SEALS);
	const bool sealed = seals > 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_WRITE); // decompressed_copy's
	const bool safe_to_map = sealed || (st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)));
	DebugInfo info;
	info.elf.reset(elf_begin(fd, safe_to_map ? ELF_C_READ_MMAP : ELF_C_READ, nullptr));
	if (!info.elf || elf_kind(info.elf.get()) != ELF_K_ELF)
		return {};
	info.inflated_bytes = inflated_bytes(info.elf.get(), size_t(st.st_size));
	info.dwarf.reset(dwarf_begin_elf(info.elf.get(), DWARF_C_READ, nullptr));
	elf_cntl(info.elf.get(), ELF_C_FDDONE);
	if (!info.dwarf || !strings_terminated(info.elf.get()))
		return {};
	return info;
}

std::vector<char> empty_dwarf_image()
{
	static const char names[] = "\0.shstrtab\0.debug_line"; // names at 1 and 11
	const size_t names_offset = sizeof(Elf64_Ehdr);
	const size_t line_offset = names_offset + sizeof(names);
	const size_t line_size = 4;
	const size_t headers_offset = (line_offset + line_size + 7) & ~size_t(7);
	std::vector<char> image(headers_offset + 3 * sizeof(Elf64_Shdr));

	Elf64_Ehdr header{};
	std::memcpy(header.e_ident, ELFMAG, SELFMAG);
	header.e_ident[EI_CLASS] = ELFCLASS64;
	header.e_ident[EI_DATA] = std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;
	header.e_ident[EI_VERSION] = EV_CURRENT;
	header.e_type = ET_REL;
	header.e_version = EV_CURRENT;
	header.e_shoff = headers_offset;
	header.e_ehsize = sizeof(Elf64_Ehdr);
	header.e_shentsize = sizeof(Elf64_Shdr);
	header.e_shnum = 3;
	header.e_shstrndx = 1;
	std::memcpy(image.data(), &header, sizeof(header));
	std::memcpy(image.data() + names_offset, names, sizeof(names));

	Elf64_Shdr sections[3]{};
	sections[1].sh_name = 1;
	sections[1].sh_type = SHT_STRTAB;
	sections[1].sh_offset = names_offset;
	sections[1].sh_size = sizeof(names);
	sections[1].sh_addralign = 1;
	sections[2].sh_name = 11;
	sections[2].sh_type = SHT_PROGBITS;
	sections[2].sh_offset = line_offset;
	sections[2].sh_size = line_size;
	sections[2].sh_addralign = 1;
	std::memcpy(image.data() + headers_offset, sections, sizeof(sections));
	return image;
}

UniqueFd decompressed_copy(int fd, size_t *bytes)
{
	struct stat st;
	if (elf_version(EV_CURRENT) == EV_NONE || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return {};
	UniqueFd copy(memfd_create("profile-dwarf", MFD_CLOEXEC | MFD_ALLOW_SEALING));
	if (!copy)
		return {};
	for (off_t at = 0; at < st.st_size;) {
		const ssize_t n = sendfile(copy.get(), fd, &at, size_t(st.st_size - at));
		if (n <= 0)
			return {};
	}
	// Decompressed in place; elf_update lays the sections out again and writes the file.
	ElfHandle elf(elf_begin(copy.get(), ELF_C_RDWR, nullptr));
	if (!elf || elf_kind(elf.get()) != ELF_K_ELF)
		return {};
	bool decompressed = false;
	for (Elf_Scn *section = nullptr; (section = elf_nextscn(elf.get(), section));) {
		GElf_Shdr header;
		if (!gelf_getshdr(section, &header) || !(header.sh_flags & SHF_COMPRESSED))
			continue;
		if (elf_compress(section, 0, 0) != 1)
			return {};
		decompressed = true;
	}
	if (!decompressed || elf_update(elf.get(), ELF_C_WRITE) < 0)
		return {};
	elf.reset();
	// Sealed: nothing can change it now, so read_debug_info maps it.
	if (fcntl(copy.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0 ||
	    fstat(copy.get(), &st) != 0)
		return {};
	*bytes = size_t(st.st_size);
	return copy;
}
