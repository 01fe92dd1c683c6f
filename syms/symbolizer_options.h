// syms/symbolizer_options.h: what the symbolizer's parts are told (SymbolizerOptions) and
// what they tell of their work (SymbolizerStats).
#pragma once

#include <cstddef>
#include <string>

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
	// Files whose symbols are kept after use, also from window to window, the least
	// recently used dropped first past either bound: a long run meets files without end,
	// and an agent meets most of them again in its next window. A file dropped is read
	// again when an address in it is named next.
	size_t kept_files = 64;
	size_t kept_file_bytes = size_t(32) << 20; // as SymbolFile::held_bytes counts them
	// Of those, the files whose DWARF (want_lines, want_inlined) is held: one file's DWARF
	// can take tens of MiB. A file past it lets its DWARF go, and so does every file at a
	// window's end (end_window), so that what an agent holds while it samples does not
	// depend on which files the last window met; the DWARF is read again, from the file
	// kept open, when a frame needs it. Collected names addresses object by object, so
	// within a window it never comes back to one it is done with.
	size_t kept_dwarf_files = 1;
	// A file whose DWARF is compressed (Debian's, Fedora's and debuginfod's debug files)
	// keeps a copy with its sections decompressed, in memory (decompressed_copy), made when
	// its DWARF is first read; at a window's end the most recently used copies within this
	// many bytes stay, and the DWARF is read again from them. An agent names a few new
	// addresses of libc in nearly every window, and inflating libc's debug file again each
	// time was half of its CPU. 0: none.
	size_t kept_decompressed_bytes = 0;
	// What user_frames named from files' DWARF, by device, inode and offset, kept after
	// end_window, the least recently used dropped first past this many bytes: a run that
	// names window after window (an agent) reads a file's DWARF again only for an address
	// no window has named lately. 0 keeps nothing.
	size_t kept_named_bytes = 0;
	// And of those, an address that none of the last this many windows named is dropped at
	// a window's end: what is kept is what the machine runs now, not all that it ran since
	// the start, and an agent's memory stays flat as its processes move on through their
	// code. 0: dropped past the bytes alone.
	size_t kept_named_windows = 0;
};

// What a run cost, for tests and for the summary under -v.
struct SymbolizerStats {
	size_t kernel_symbols = 0;    // text symbols indexed from kallsyms
	bool kallsyms_reread = false; // the cache was not enough: kallsyms was read at the end
	size_t processes_read = 0;    // /proc/PID/maps files read (once per pid)
	size_t elf_files_parsed = 0;  // ELF files opened and parsed (once per device and inode while kept)
	size_t debug_files_read = 0;  // separate debug files found and parsed
	size_t debug_files_added = 0; // debug files from elsewhere (debuginfod) taken by add_debug_file
	size_t perf_maps_read = 0;    // /tmp/perf-PID.map files read (once per pid)
	size_t files_dropped = 0;     // files (and their debug files) dropped past the bounds or at a window's end
	size_t files_kept = 0, file_bytes_kept = 0; // kept now, and their bytes
	size_t dwarf_read_again = 0; // files' DWARF read again after it was let go
	size_t dwarf_read_from_copy = 0; // of those, from a decompressed copy
	size_t decompressed_copies = 0, decompressed_bytes = 0; // kept now, and their bytes
	// kept_named_bytes: addresses of files named from what was kept, and named by reading
	// the file; addresses kept now, their bytes, and addresses dropped for room.
	size_t named_from_kept = 0, named_from_file = 0;
	size_t named_kept = 0, named_kept_bytes = 0, named_dropped = 0;
	size_t named_aged = 0; // dropped as no window of the last kept_named_windows named them
};
