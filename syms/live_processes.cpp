// syms/live_processes.cpp: processes as /proc shows them now, read once each.
#include "syms/live_processes.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "proc/process_history.h"

void LiveProcesses::set_history(const ProcessHistory *history)
{
	history_ = history;
	forget();
}

LiveProcess &LiveProcesses::process(uint32_t pid)
{
	auto [it, inserted] = processes_.try_emplace(pid);
	LiveProcess &process = it->second;
	if (inserted && !(history_ && history_->exited(pid))) {
		struct stat st;
		if (stat(dir(pid).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
			process.alive = true;
			process.uid = st.st_uid;
			process.root.reset(open((dir(pid) + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
		}
	}
	return process;
}

const ProcessMaps &LiveProcesses::maps_now(uint32_t pid)
{
	LiveProcess &live = process(pid);
	if (!live.maps_read && live.alive) {
		live.maps_read = true;
		if (ProcessMaps::load(dir(pid) + "/maps", live.maps))
			stats_.processes_read++;
		else
			live.alive = false;
	}
	return live.maps;
}

bool LiveProcesses::gone(uint32_t pid) const
{
	if (history_ && history_->exited(pid))
		return true;
	struct stat st;
	return stat(dir(pid).c_str(), &st) != 0;
}
