// syms/user_namer.h: the second half of naming a user address (blazesym's symbolize): a
// located address (syms/locator.h) becomes its frames, from the sources of names: the
// file's ELF symbols and DWARF (syms/symbol_file.h), kept in syms/file_cache.h; a JIT's
// perf map (syms/jit_names.h); debug files from elsewhere (syms/added_debug_files.h); and
// what earlier windows named (syms/named_cache.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/fd.h"
#include "report/model.h"
#include "syms/added_debug_files.h"
#include "syms/file_cache.h"
#include "syms/jit_names.h"
#include "syms/locator.h"
#include "syms/named_cache.h"
#include "syms/symbolizer_options.h"

class LiveProcesses;

class UserNamer {
public:
	UserNamer(const SymbolizerOptions &options, SymbolizerStats &stats, LiveProcesses &processes);

	// Appends the frames of `where`, which lies in object: with want_inlined, each
	// function inlined there first (innermost first), then the function the address is
	// in. Always at least one frame.
	void frames(const UserObject &object, const UserLocation &where, bool return_address, std::vector<Frame> &out);

	// The build id of object's file when it lacks its symbols or wanted DWARF here and was
	// not asked for before.
	std::optional<std::string> wanted_debug_file(const UserObject &object);
	// A debug file from elsewhere for build_id: taken by the files kept that want it and by
	// those read later. Ok when taken, else why not.
	Status add_debug_file(const std::string &build_id, int fd);

	// A window's end: files let their DWARF go (what it named stays in the named cache, as
	// long as recent windows name it).
	void end_window()
	{
		files_.end_window();
		named_.end_window();
	}
	// Perf maps are read again: a pid may be another process's by the next call.
	void forget_processes() { jit_.forget(); }
	// The counts of what is kept now, into stats.
	void count_kept(SymbolizerStats &stats);

private:
	SymbolFile *file_of(const UserObject &object);
	std::unique_ptr<SymbolFile> open_file(uint32_t pid, const MapEntry &mapping);
	SymbolFile *own_vdso(uint64_t size);
	bool read_frames(const UserObject &object, const UserLocation &where, bool return_address,
			 std::vector<Frame> &out);

	const SymbolizerOptions &options_;
	SymbolizerStats &stats_;
	LiveProcesses &processes_;
	FileCache files_;
	NamedCache named_;
	JitNames jit_;
	AddedDebugFiles debug_files_;
	UniqueFd host_root_;
	bool vdso_read_ = false;
	uint64_t vdso_size_ = 0;
	std::unique_ptr<SymbolFile> vdso_;
};
