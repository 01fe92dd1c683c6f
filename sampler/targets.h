// sampler/targets.h: the processes -p names, as the kernel knows them: a thread id stands for
// its whole process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/fd.h"

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
// stderr per thread id saying so. Ok, or what is wrong ("no process with PID N").
Status resolve_pids(std::vector<uint32_t> &pids, std::vector<std::string> &notes,
			 const std::string &proc = "/proc");

// The inode of the PID namespace profile runs in (proc/self/ns/pid) when it is not the
// initial one; 0 when it is (or cannot be told). Inside a container -p and /proc give
// that namespace's ids, and the BPF program translates the kernel's to them.
uint32_t own_pid_namespace(const std::string &proc = "/proc");

// CPU time, user and system, that a process (thread false: all its threads) or one thread
// has used, in seconds, from /proc/ID/stat (/proc/ID/task/ID/stat); nothing once it is gone.
std::optional<double> cpu_time(uint32_t id, bool thread, const std::string &proc = "/proc");

// The processes of -p, or the threads of -L, while a run samples them: whether they still
// run, and the CPU time they used, to say why a run collected nothing.
class TargetWatch {
public:
	// Call just before sampling starts: the CPU times counted from then on start here.
	TargetWatch(const std::vector<uint32_t> &ids, bool threads, std::string proc = "/proc");

	bool empty() const { return targets_.empty(); }
	const std::vector<uint32_t> &ids() const { return ids_; }
	bool threads() const { return threads_; }

	// True once every target has exited; a process that has exited but that its parent
	// has not reaped yet (a zombie) counts, as for perf: it runs no more. Cheap enough
	// for every 100 ms: one poll(2) on pidfds, or one kill(2)/tgkill(2) per target.
	// Always false without targets.
	bool all_exited();
	// Targets that have exited by now.
	std::vector<uint32_t> exited();
	// The CPU time the targets still running used since construction, in seconds.
	double cpu_seconds() const;
	// The one process every target belongs to; 0 for none (no targets) or several.
	uint32_t single_process() const;

private:
	struct Target {
		uint32_t id = 0, tgid = 0;
		UniqueFd pidfd; // none: checked with kill(2) (threads, kernels before 5.3)
		double cpu_at_start = 0;
		bool exited = false;
	};
	void poll_exits();

	std::vector<uint32_t> ids_;
	bool threads_ = false;
	std::string proc_;
	std::vector<Target> targets_;
};
