// sampler/targets.cpp: -p's ids checked against /proc and made process ids.
#include "sampler/targets.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "syms/fd.h"

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

std::string resolve_pids(std::vector<uint32_t> &pids, std::vector<std::string> &notes, const std::string &proc)
{
	std::vector<uint32_t> processes;
	for (uint32_t id : pids) {
		std::optional<TaskStatus> task = read_task_status(id, proc);
		if (!task)
			return "no process with PID " + std::to_string(id);
		if (task->tgid != id)
			notes.push_back(std::to_string(id) + " is a thread of process " + std::to_string(task->tgid) +
					" (" + task->process_name + "): sampling the whole process; -L " +
					std::to_string(id) + " samples that thread alone");
		if (std::find(processes.begin(), processes.end(), task->tgid) == processes.end())
			processes.push_back(task->tgid);
	}
	pids = std::move(processes);
	return "";
}
