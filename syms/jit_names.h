// syms/jit_names.h: names of JIT-compiled code, from each process's perf map
// (perf-PID.map, where the JIT wrote it: the host's folder, or its container's /tmp under
// its own PID), read once per process until forgotten.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "proc/perf_map.h"
#include "syms/symbolizer_options.h"

class LiveProcesses;

// Where a JIT of process pid writes its perf map, in folder dir.
std::string perf_map_path(const std::string &dir, uint32_t pid);

class JitNames {
public:
	JitNames(const SymbolizerOptions &options, LiveProcesses &processes, SymbolizerStats &stats)
		: options_(options), processes_(processes), stats_(stats)
	{
	}

	// The function of pid's perf map holding address, or null; path: the map it came from.
	const PerfMap::Symbol *find(uint32_t pid, uint64_t address, std::string &path);
	void forget() { maps_.clear(); }

private:
	struct ProcessMap {
		std::optional<PerfMap> map;
		std::string path;
	};
	const SymbolizerOptions &options_;
	LiveProcesses &processes_;
	SymbolizerStats &stats_;
	std::unordered_map<uint32_t, ProcessMap> maps_;
};
