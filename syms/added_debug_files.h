// syms/added_debug_files.h: debug files from elsewhere (a debuginfod server) for the build
// ids of files that lack their symbols or DWARF here: which were asked for, and those
// taken, kept open so that a file read again takes its own again.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "base/fd.h"
#include "syms/symbolizer_options.h"

class AddedDebugFiles {
public:
	// True the first time build_id is asked for.
	bool ask(const std::string &build_id) { return asked_.insert(build_id).second; }
	// Checks fd against build_id (asked for, an ELF file of that build id, with symbols or
	// the DWARF the options want) and keeps it open: the descriptor kept, else why not.
	Result<int> add(const std::string &build_id, int fd, const SymbolizerOptions &options);
	// The debug file taken for build_id, or -1.
	int find(const std::string &build_id) const;

private:
	std::unordered_set<std::string> asked_;
	std::unordered_map<std::string, UniqueFd> added_;
};
