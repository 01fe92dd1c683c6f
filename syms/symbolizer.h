// syms/symbolizer.h: names kernel and user addresses with the project's own resolvers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "report/model.h"

struct SymbolizerOptions {
	std::string kallsyms_path = "/proc/kallsyms";
	std::string proc_root = "/proc"; // where PID directories live (tests point it at fixtures)
	bool want_lines = false;         // -v: file:line from DWARF where debug info exists
};

// What a run cost, for tests and for the summary under -v.
struct SymbolizerStats {
	size_t kernel_symbols = 0;    // text symbols indexed from kallsyms
	size_t processes_read = 0;    // /proc/PID/maps files read (once per pid)
	size_t elf_files_parsed = 0;  // ELF files opened and parsed (once per device and inode)
};

class Symbolizer {
public:
	explicit Symbolizer(SymbolizerOptions options = {});
	~Symbolizer();
	Symbolizer(const Symbolizer &) = delete;
	Symbolizer &operator=(const Symbolizer &) = delete;

	// Reads and indexes the kernel symbols now, so a caller can do it while sampling runs.
	void load_kernel_symbols();

	// Frame.kind, address and every field the sources know are filled in.
	// Never fails: an address nothing covers comes back with an empty name and module.
	Frame kernel_frame(uint64_t address);
	Frame user_frame(uint32_t pid, uint64_t address);

	// Reads a process's maps and opens every file it maps executable, now: a process
	// that exits before the end of the run can still be named. Same thread as user_frame.
	void preload_process(uint32_t pid);

	SymbolizerStats stats() const;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

// How a frame is printed in the stack and folded reports: the demangled name,
// "[module+0xoffset]" when only the module is known, "[unknown]" otherwise.
std::string frame_label(const Frame &frame);
