// syms/symbolizer.h: names kernel and user addresses with the project's own resolvers: a
// facade over the kernel's names (syms/kernel_namer.h), the locator of user addresses
// (syms/locator.h) and the namer of what it located (syms/user_namer.h). It owns their
// caches and says when each is dropped: processes after each batch, objects and the
// files' DWARF at each window's end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "report/model.h"
#include "syms/locator.h"
#include "syms/symbolizer_options.h"

class ProcessHistory;
struct ProcessImage;
struct KernelSymbolRecord;

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
	// root, their perf maps): a pid may be another process's by the next call. Called
	// after each batch of samples is located while sampling runs.
	void forget_live_processes();

	// User addresses are first located, while the history still knows the process, and
	// named at the end from their location alone.

	// address of pid, which ran image: its object, its offset in it, and its mapping.
	UserLocation locate(uint32_t pid, const ProcessImage *image, uint64_t address, bool return_address);
	size_t object_count() const;
	// Once each location handed out is named (a window's end): drops every object located
	// so far (the next one is 1 again), so that a run that meets processes without end
	// keeps no more objects than one window has; and the files' DWARF, so that what an
	// agent holds while it samples does not depend on which files the last window met.
	// The files and their symbols stay, within their bounds: the next window meets most of
	// them again. A file's DWARF is read again when a frame in it is named next that
	// kept_named_bytes does not hold.
	void end_window();

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
