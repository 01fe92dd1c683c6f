// elf/debug_file.h: the separate debug file of a stripped ELF file, found where gdb and
// perf look for it and checked before it is trusted.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "elf/elf.h"
#include "base/fd.h"

// The .gnu_debuglink section: the debug file's name, then (aligned to 4) the CRC32 of
// the debug file's contents.
struct DebugLink {
	std::string name;
	uint32_t crc = 0;
};

std::optional<DebugLink> read_debuglink(const ElfFile &elf);

// The CRC .gnu_debuglink carries: the CRC-32 of zlib and of gzip, over the whole file.
uint32_t debuglink_crc(std::span<const uint8_t> bytes);

struct DebugFileCandidate {
	std::string path;
	bool by_build_id; // checked by build id; otherwise by the debuglink's CRC
};

// Where the debug file of the binary at binary_path may be, in the order they are tried:
// DEBUG_ROOT/.build-id/xx/rest.debug for its build id, then the debuglink's name beside
// the binary, in .debug/ beside it, and under DEBUG_ROOT + the binary's folder.
std::vector<DebugFileCandidate> debug_file_candidates(const std::string &binary_path, const std::string &build_id,
						      const std::optional<DebugLink> &link,
						      const std::string &debug_root);

struct DebugFile {
	std::unique_ptr<ElfFile> elf;
	UniqueFd fd;      // still open, for a DWARF reader
	std::string path; // the candidate it was found at
};

// The first candidate that opens inside root_dir (the process's root: a container's
// files, never the host's for it) and checks out: same build id, or the debuglink's CRC.
// With build_id_only, the debuglink's places are not tried.
std::optional<DebugFile> find_debug_file(const ElfFile &binary, const std::string &binary_path,
					 const std::string &debug_root, int root_dir, bool build_id_only = false);

// Ok when debug is the debug file of binary, else why not: a debug file from elsewhere
// (a debuginfod server) must carry the binary's build id, as one found by build id here.
Status debug_file_mismatch(const ElfFile &binary, const ElfFile &debug);
