// elf/debug_file.cpp: the separate debug file of a stripped ELF file, found where gdb and
// perf look for it and checked before it is trusted.
#include "elf/debug_file.h"

#include <zlib.h>

#include <cstring>

std::optional<DebugLink> read_debuglink(const ElfFile &elf)
{
	auto section = elf.section_data(".gnu_debuglink");
	if (!section)
		return std::nullopt;
	const char *text = reinterpret_cast<const char *>(section->data());
	const void *nul = std::memchr(text, 0, section->size());
	if (!nul || nul == text)
		return std::nullopt;
	DebugLink link;
	link.name.assign(text, static_cast<const char *>(nul));
	size_t crc_at = (link.name.size() + 1 + 3) & ~size_t(3);
	if (crc_at + 4 > section->size())
		return std::nullopt;
	std::memcpy(&link.crc, section->data() + crc_at, 4);
	// A name, not a path: it must not lead out of the folders it is looked for in.
	if (link.name.find('/') != std::string::npos || link.name == "." || link.name == "..")
		return std::nullopt;
	return link;
}

uint32_t debuglink_crc(std::span<const uint8_t> bytes)
{
	uLong crc = crc32(0, Z_NULL, 0);
	while (!bytes.empty()) {
		uInt chunk = uInt(std::min<size_t>(bytes.size(), 1u << 30));
		crc = crc32(crc, bytes.data(), chunk);
		bytes = bytes.subspan(chunk);
	}
	return uint32_t(crc);
}

std::vector<DebugFileCandidate> debug_file_candidates(const std::string &binary_path, const std::string &build_id,
						      const std::optional<DebugLink> &link,
						      const std::string &debug_root)
{
	std::vector<DebugFileCandidate> candidates;
	if (build_id.size() > 2)
		candidates.push_back({debug_root + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug",
				      true});
	size_t slash = binary_path.rfind('/');
	if (link && slash != std::string::npos && binary_path[0] == '/') {
		std::string folder = binary_path.substr(0, slash); // "" for a file in "/"
		candidates.push_back({folder + "/" + link->name, false});
		candidates.push_back({folder + "/.debug/" + link->name, false});
		candidates.push_back({debug_root + folder + "/" + link->name, false});
	}
	return candidates;
}

std::optional<DebugFile> find_debug_file(const ElfFile &binary, const std::string &binary_path,
					 const std::string &debug_root, int root_dir, bool build_id_only)
{
	std::optional<DebugLink> link;
	if (!build_id_only)
		link = read_debuglink(binary);
	for (const DebugFileCandidate &candidate :
	     debug_file_candidates(binary_path, binary.build_id(), link, debug_root)) {
		DebugFile found;
		found.fd = open_in_root(root_dir, candidate.path);
		if (!found.fd)
			continue;
		found.elf = ElfFile::open(found.fd.get());
		if (!found.elf)
			continue;
		bool same = candidate.by_build_id ? found.elf->build_id() == binary.build_id()
						  : debuglink_crc(found.elf->bytes()) == link->crc;
		if (!same)
			continue;
		found.path = candidate.path;
		return found;
	}
	return std::nullopt;
}

Status debug_file_mismatch(const ElfFile &binary, const ElfFile &debug)
{
	if (binary.build_id().empty())
		return Error("the binary has no build id to check it by");
	if (debug.build_id().empty())
		return Error("it has no build id");
	if (debug.build_id() != binary.build_id())
		return Error("its build id is " + debug.build_id() + ", not " + binary.build_id());
	return {};
}
