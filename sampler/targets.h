// sampler/targets.h: the processes -p names, as the kernel knows them: a thread id stands for
// its whole process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// From /proc/ID/status: the process a task belongs to (its Tgid) and that process's name.
struct TaskStatus {
	uint32_t tgid = 0;
	std::string process_name;
};
// Nothing when no task has that id (or its status cannot be read).
std::optional<TaskStatus> read_task_status(uint32_t id, const std::string &proc = "/proc");

// Makes every id of -p a process id, as `perf record -p` does: the BPF filter compares
// process ids, so a thread id (from top -H) would match nothing. A thread's process takes
// its place, once however many of its threads are named, and notes gets one line for
// stderr per thread id saying so. Returns "" or what is wrong ("no process with PID N").
std::string resolve_pids(std::vector<uint32_t> &pids, std::vector<std::string> &notes,
			 const std::string &proc = "/proc");
