// syms/live_processes.h: what is true of processes now, at naming time, as opposed to
// their history: alive or not, their owner, their root and their mappings, each read from
// /proc once until forgotten (a pid may be another process's by then).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>

#include "base/fd.h"
#include "proc/maps.h"
#include "syms/symbolizer_options.h"

class ProcessHistory;

struct LiveProcess {
	bool alive = false;
	uid_t uid = 0;
	UniqueFd root; // /proc/PID/root: its files as it sees them
	bool maps_read = false;
	ProcessMaps maps; // its mappings now
};

class LiveProcesses {
public:
	LiveProcesses(std::string proc_root, SymbolizerStats &stats) : proc_root_(std::move(proc_root)), stats_(stats) {}

	// The history that knows which processes exited (null: only /proc does); forgets the rest.
	void set_history(const ProcessHistory *history);
	const ProcessHistory *history() const { return history_; }

	LiveProcess &process(uint32_t pid);
	// Its mappings now, read once; an empty list when it is gone.
	const ProcessMaps &maps_now(uint32_t pid);
	// True when pid has exited, as far as the history or /proc can tell.
	bool gone(uint32_t pid) const;
	std::string dir(uint32_t pid) const { return proc_root_ + "/" + std::to_string(pid); }
	const std::string &proc_root() const { return proc_root_; }
	void forget() { processes_.clear(); }

private:
	std::string proc_root_;
	SymbolizerStats &stats_;
	const ProcessHistory *history_ = nullptr;
	std::unordered_map<uint32_t, LiveProcess> processes_;
};
