// sampler/targets.cpp: -p's ids checked against /proc and made process ids; the targets
// watched while sampling.
#include "sampler/targets.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "base/fd.h"

std::optional<TaskStatus> read_task_status(uint32_t id, const std::string &proc)
{
	auto field = [](std::string_view status, std::string_view name) -> std::optional<std::string_view> {
		for (size_t at = 0; at < status.size();) {
			size_t end = status.find('\n', at);
			if (end == std::string_view::npos)
				end = status.size();
			std::string_view line = status.substr(at, end - at);
			if (line.starts_with(name) && line.size() > name.size() && line[name.size()] == ':') {
				line.remove_prefix(name.size() + 1);
				line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
				return line;
			}
			at = end + 1;
		}
		return std::nullopt;
	};
	std::string status;
	if (!read_whole_file((proc + "/" + std::to_string(id) + "/status").c_str(), status))
		return std::nullopt;
	auto tgid_text = field(status, "Tgid");
	TaskStatus task;
	if (!tgid_text || std::from_chars(tgid_text->data(), tgid_text->data() + tgid_text->size(), task.tgid).ec != std::errc() ||
	    !task.tgid)
		return std::nullopt;
	// The thread's own Name may differ from its process's (pthread_setname_np).
	std::string process_status;
	if (task.tgid == id)
		process_status = std::move(status);
	else if (!read_whole_file((proc + "/" + std::to_string(task.tgid) + "/status").c_str(), process_status))
		return std::nullopt; // the process went away between the two reads
	if (auto name = field(process_status, "Name"))
		task.process_name = *name;
	return task;
}

Status resolve_pids(std::vector<uint32_t> &pids, std::vector<std::string> &notes, const std::string &proc)
{
	std::vector<uint32_t> processes;
	for (uint32_t id : pids) {
		std::optional<TaskStatus> task = read_task_status(id, proc);
		if (!task)
			return Error("no process with PID " + std::to_string(id));
		if (task->tgid != id)
			notes.push_back(std::to_string(id) + " is a thread of process " + std::to_string(task->tgid) +
					" (" + task->process_name + "): sampling the whole process; -L " +
					std::to_string(id) + " samples that thread alone");
		if (std::find(processes.begin(), processes.end(), task->tgid) == processes.end())
			processes.push_back(task->tgid);
	}
	pids = std::move(processes);
	return {};
}

uint32_t own_pid_namespace(const std::string &proc)
{
	// The initial PID namespace has a fixed inode, PROC_PID_INIT_INO (linux/proc_ns.h);
	// from inside another, no parent can be asked for (NS_GET_PARENT refuses), and
	// /proc/self/status's NSpid lists only the levels the /proc mount sees.
	constexpr uint64_t initial = 0xEFFFFFFC;
	struct stat st;
	if (stat((proc + "/self/ns/pid").c_str(), &st) != 0 || st.st_ino == initial)
		return 0;
	return uint32_t(st.st_ino);
}

std::optional<double> cpu_time(uint32_t id, bool thread, const std::string &proc)
{
	const std::string dir = proc + "/" + std::to_string(id);
	std::string stat;
	if (!read_whole_file((thread ? dir + "/task/" + std::to_string(id) + "/stat" : dir + "/stat").c_str(), stat))
		return std::nullopt;
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields are
	// counted from the last ')'. utime and stime are fields 14 and 15, in clock ticks.
	const size_t paren = stat.rfind(')');
	if (paren == std::string::npos)
		return std::nullopt;
	std::string_view rest = std::string_view(stat).substr(paren + 1);
	uint64_t ticks = 0;
	for (int field = 3; field <= 15; field++) {
		rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
		const size_t end = std::min(rest.find(' '), rest.size());
		if (field >= 14) {
			uint64_t value = 0;
			if (std::from_chars(rest.data(), rest.data() + end, value).ec != std::errc())
				return std::nullopt;
			ticks += value;
		}
		rest.remove_prefix(end);
	}
	const long hz = sysconf(_SC_CLK_TCK);
	return double(ticks) / double(hz > 0 ? hz : 100);
}

TargetWatch::TargetWatch(const std::vector<uint32_t> &ids, bool threads, std::string proc)
	: ids_(ids), threads_(threads), proc_(std::move(proc))
{
	for (uint32_t id : ids) {
		Target target;
		target.id = id;
		target.tgid = id;
		if (threads) {
			if (auto status = read_task_status(id, proc_))
				target.tgid = status->tgid;
		} else {
			// A pidfd turns readable when the whole process has exited, zombie or not.
			target.pidfd.reset(int(syscall(SYS_pidfd_open, pid_t(id), 0u)));
			if (!target.pidfd && errno == ESRCH)
				target.exited = true;
		}
		target.cpu_at_start = cpu_time(id, threads, proc_).value_or(0);
		targets_.push_back(std::move(target));
	}
}

void TargetWatch::poll_exits()
{
	std::vector<pollfd> fds;
	for (Target &target : targets_) {
		if (target.exited)
			continue;
		if (target.pidfd) {
			fds.push_back({target.pidfd.get(), POLLIN, 0});
			continue;
		}
		const long gone = threads_ ? syscall(SYS_tgkill, pid_t(target.tgid), pid_t(target.id), 0)
					   : kill(pid_t(target.id), 0);
		target.exited = gone != 0 && errno == ESRCH;
	}
	if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0)
		return;
	for (Target &target : targets_)
		for (const pollfd &fd : fds)
			if (fd.fd == target.pidfd.get() && (fd.revents & (POLLIN | POLLHUP | POLLERR)))
				target.exited = true;
}

bool TargetWatch::all_exited()
{
	if (targets_.empty())
		return false;
	poll_exits();
	return std::all_of(targets_.begin(), targets_.end(), [](const Target &t) { return t.exited; });
}

std::vector<uint32_t> TargetWatch::exited()
{
	poll_exits();
	std::vector<uint32_t> ids;
	for (const Target &target : targets_)
		if (target.exited)
			ids.push_back(target.id);
	return ids;
}

double TargetWatch::cpu_seconds() const
{
	double seconds = 0;
	for (const Target &target : targets_)
		if (!target.exited)
			if (auto now = cpu_time(target.id, threads_, proc_))
				seconds += *now - target.cpu_at_start;
	return seconds;
}

uint32_t TargetWatch::single_process() const
{
	if (targets_.empty())
		return 0;
	for (const Target &target : targets_)
		if (target.tgid != targets_[0].tgid)
			return 0;
	return targets_[0].tgid;
}
