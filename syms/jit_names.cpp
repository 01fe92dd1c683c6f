// syms/jit_names.cpp: each process's perf map, found and read once.
#include "syms/jit_names.h"

#include <cstdlib>

#include "base/fd.h"
#include "syms/live_processes.h"

namespace {

// The PID the process has in its own PID namespace (the last of /proc/PID/status's NSpid),
// the number a JIT inside a container names its perf map with.
uint32_t namespaced_pid(const std::string &pid_dir, uint32_t pid)
{
	std::string status;
	if (!read_whole_file((pid_dir + "/status").c_str(), status))
		return pid;
	size_t at = status.find("\nNSpid:");
	if (at == std::string::npos)
		return pid;
	size_t end = status.find('\n', at + 1);
	std::string line = status.substr(at + 7, end == std::string::npos ? std::string::npos : end - at - 7);
	size_t last = line.find_last_of(" \t");
	unsigned long inner = std::strtoul(line.c_str() + (last == std::string::npos ? 0 : last + 1), nullptr, 10);
	return inner && inner <= UINT32_MAX ? uint32_t(inner) : pid;
}

} // namespace

std::string perf_map_path(const std::string &dir, uint32_t pid)
{
	return dir + "/perf-" + std::to_string(pid) + ".map";
}

const PerfMap::Symbol *JitNames::find(uint32_t pid, uint64_t address, std::string &path)
{
	auto [it, inserted] = maps_.try_emplace(pid);
	ProcessMap &process = it->second;
	if (inserted) {
		LiveProcess &live = processes_.process(pid);
		// Only root's file or the process's own: of a process that is gone the owner is
		// not known any more, so only root's.
		uid_t owner = live.alive ? live.uid : 0;
		process.path = perf_map_path(options_.perf_map_dir, pid);
		process.map = PerfMap::load(process.path, owner);
		// A JIT in a container writes the map in its own /tmp, under its own PID.
		if (!process.map && live.alive && live.root) {
			std::string inside = perf_map_path("/tmp", namespaced_pid(processes_.dir(pid), pid));
			process.map = PerfMap::load(inside, owner, live.root.get());
			if (process.map)
				process.path = inside;
		}
		if (process.map)
			stats_.perf_maps_read++;
	}
	if (!process.map)
		return nullptr;
	path = process.path;
	return process.map->find(address);
}
