// syms/symbolizer.h: names kernel and user addresses with the project's own resolvers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "report/model.h"

class ProcessHistory;
struct ProcessImage;
struct KernelSymbolRecord;

// Where a mapping lay in its process: [start, end), with the file offset mapped at start.
struct MapPlacement {
	uint64_t start = 0, end = 0, offset = 0;
	bool operator==(const MapPlacement &) const = default;
};

// A user address, normalized by Symbolizer::locate.
struct UserLocation {
	// What the address lies in, in terms that outlive its process: one file mapped by
	// many processes, wherever each mapped it, is one object. 0: code nothing mapped, of
	// a process gone without a perf map ("[unknown]").
	uint32_t object = 0;
	// In a file or a kernel-made area ([vdso], [heap]): the offset in it; else the
	// address itself.
	uint64_t offset = 0;
	// The mapping the address was in, where the caller kept it (all 0 where not): the
	// frame's address (for a File or Area) and its pprof mapping come from it.
	MapPlacement mapped;
};

struct SymbolizerOptions {
	std::string kallsyms_path = "/proc/kallsyms";
	std::string proc_root = "/proc"; // where PID directories live (tests point it at fixtures)
	// Separate debug files: DEBUG_ROOT/.build-id/xx/rest.debug, and DEBUG_ROOT + a binary's
	// folder for its .gnu_debuglink name. Looked up inside each process's root.
	std::string debug_root = "/usr/lib/debug";
	std::string perf_map_dir = "/tmp"; // where JIT compilers write perf-PID.map
	// Both read DWARF. Either gives each frame its file:line where DWARF has it.
	bool want_lines = false;   // -v: file:line
	bool want_inlined = false; // a frame for each function inlined at an address (on unless --no-inline)
	bool wants_dwarf() const { return want_lines || want_inlined; }
	// Where the core kernel's symbols are kept between runs of one boot (see
	// syms/kallsyms_cache.h); "" reads kallsyms_path every time.
	std::string kernel_cache_dir;
	// Files whose symbols and DWARF are kept after use, the least recently used dropped
	// first: one file's DWARF can take tens of MiB, and a long run meets files without end.
	// A file dropped is read again when an address in it is named next: Collected names
	// addresses object by object, so it never comes back to one it is done with.
	size_t kept_files = 16;
	// Of those, the files whose DWARF was read (want_lines, want_inlined): the most memory
	// by far.
	size_t kept_dwarf_files = 1;
	// What user_frames named from files' DWARF, by device, inode and offset, kept after
	// drop_files, the least recently used dropped first past this many bytes: a run
	// that names window after window (an agent) reads a file's DWARF again only for an
	// address no window has named lately. 0 keeps nothing.
	size_t kept_named_bytes = 0;
};

// What a run cost, for tests and for the summary under -v.
struct SymbolizerStats {
	size_t kernel_symbols = 0;    // text symbols indexed from kallsyms
	bool kallsyms_reread = false; // the cache was not enough: kallsyms was read at the end
	size_t processes_read = 0;    // /proc/PID/maps files read (once per pid)
	size_t elf_files_parsed = 0;  // ELF files opened and parsed (once per device and inode)
	size_t debug_files_read = 0;  // separate debug files found and parsed
	size_t debug_files_added = 0; // debug files from elsewhere (debuginfod) taken by add_debug_file
	size_t perf_maps_read = 0;    // /tmp/perf-PID.map files read (once per pid)
	size_t files_dropped = 0;     // files (and their debug files) dropped past kept_files
	// kept_named_bytes: addresses of files named from what was kept, and named by reading
	// the file; addresses kept now, their bytes, and addresses dropped for room.
	size_t named_from_kept = 0, named_from_file = 0;
	size_t named_kept = 0, named_kept_bytes = 0, named_dropped = 0;
};

class Symbolizer {
public:
	explicit Symbolizer(SymbolizerOptions options = {});
	~Symbolizer();
	Symbolizer(const Symbolizer &) = delete;
	Symbolizer &operator=(const Symbolizer &) = delete;

	// Where user addresses are normalized: what each process had mapped, image by image,
	// also after it exited; and the kernel symbols (BPF programs) that came and went while
	// sampling. It may change between calls. Without one, or for a process it does not
	// know, the process's maps are read from proc_root now.
	void set_process_history(const ProcessHistory *history);

	// Reads and indexes the kernel symbols now, so a caller can do it while sampling runs.
	void load_kernel_symbols();

	// A return address (any frame of a stack but its leaf) is where a call returns to,
	// which may already be the next function: it is looked up as address - 1, the call.
	// The frame keeps the address as sampled, and offsets count from it.

	// Frame.kind, address and every field the sources know are filled in.
	// Never fails: an address nothing covers comes back with an empty name and module.
	// time_ns (CLOCK_MONOTONIC) picks among the BPF programs that were at address in turn.
	Frame kernel_frame(uint64_t address, bool return_address = false, uint64_t time_ns = UINT64_MAX);

	// The program of the history kernel_frame names address by at time_ns; null when the
	// name comes from kallsyms. Frames of one address and one such record may be shared.
	const KernelSymbolRecord *loaded_kernel_symbol(uint64_t address, bool return_address, uint64_t time_ns) const;
	// kernel_frame, once loaded_kernel_symbol has been asked: `program` is its answer.
	Frame kernel_frame(uint64_t address, bool return_address, const KernelSymbolRecord *program);

	// The image pid ran at time_ns (CLOCK_MONOTONIC). Null when nothing is known of the
	// process.
	const ProcessImage *image_at(uint32_t pid, uint64_t time_ns);
	// Drops what was read of processes the history does not know (their maps now, their
	// root): a pid may be another process's by the next call. Called after each batch of
	// samples is located while sampling runs.
	void forget_live_processes();

	// User addresses are first located, while the history still knows the process, and
	// named at the end from their location alone.

	// address of pid, which ran image: its object, its offset in it, and its mapping.
	UserLocation locate(uint32_t pid, const ProcessImage *image, uint64_t address, bool return_address);
	size_t object_count() const;
	// Drops every object located so far: the next one is 1 again. Once each location
	// handed out is named (a window's end), so that a run that meets processes without
	// end keeps no more objects than one window has. The files stay kept (kept_files).
	void forget_objects();
	// Drops every kept file: an agent does it between windows, so that what it holds while
	// it samples (the files' DWARF, and their mapped pages, which count in its RSS too)
	// does not depend on which files the last window met. A file is read again when a
	// frame in it is named next that kept_named_bytes does not hold.
	void drop_files();

	// Appends the frames of one located user address: with want_inlined, each function
	// inlined there first (inlined = true, innermost first), then the function the
	// address is in. Always at least one frame.
	void user_frames(const UserLocation &where, bool return_address, std::vector<Frame> &out);

	// The function frame alone of address, in the image pid ran at time_ns (by default
	// its last): locate, then user_frames.
	Frame user_frame(uint32_t pid, uint64_t address, uint64_t time_ns = UINT64_MAX);

	// Debug files from elsewhere (a debuginfod server), for what no file on this machine
	// names: the build ids of the files user addresses were located in so far that lack
	// their symbols (.symtab) or, with want_lines, their DWARF, neither in themselves nor
	// in a debug file found here. Each build id is listed once per Symbolizer.
	std::vector<std::string> wanted_debug_files();
	// A debug file for build_id, from elsewhere: read by the same parser as a local one,
	// and taken only if it is what that build id names (the same build id, with the
	// symbols or DWARF missing). Ok when taken, else why not.
	Status add_debug_file(const std::string &build_id, int fd);

	SymbolizerStats stats() const;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};
