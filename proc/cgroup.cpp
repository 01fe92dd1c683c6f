// proc/cgroup.cpp: /proc/PID/cgroup parsed into a path and a container id; --cgroup's
// values found on the cgroup2 mount.
#include "proc/cgroup.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "base/fd.h"

namespace {

bool is_hex_id(std::string_view text)
{
	return text.size() == 64 &&
	       std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The path's components, root first.
std::vector<std::string_view> components(std::string_view path)
{
	std::vector<std::string_view> parts;
	while (!path.empty()) {
		const size_t slash = path.find('/');
		if (slash != 0)
			parts.push_back(path.substr(0, slash));
		if (slash == std::string_view::npos)
			break;
		path.remove_prefix(slash + 1);
	}
	return parts;
}

// The id in one component named by a runtime: "<prefix>-<id>.scope" (the systemd driver) or
// "<prefix>-<id>" (cgroupfs: CRI-O, podman's libpod_parent). The runtimes' monitors are
// named "crio-conmon-<id>" and "libpod-conmon-<id>": "conmon-<id>" is no id, so they name none.
std::string_view runtime_scope_id(std::string_view part)
{
	static constexpr std::string_view prefixes[] = {"docker-", "cri-containerd-", "crio-", "libpod-", "nerdctl-"};
	if (part.ends_with(".scope"))
		part.remove_suffix(6);
	for (std::string_view prefix : prefixes)
		if (part.starts_with(prefix) && is_hex_id(part.substr(prefix.size())))
			return part.substr(prefix.size());
	return {};
}

// Undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134).
std::string unescape(std::string_view field)
{
	std::string out;
	for (size_t i = 0; i < field.size(); i++) {
		auto octal = [&](size_t j) { return field[j] >= '0' && field[j] <= '7'; };
		if (field[i] == '\\' && i + 3 < field.size() && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
			out += char((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0'));
			i += 3;
		} else {
			out += field[i];
		}
	}
	return out;
}

bool is_directory(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool on_cgroup2(const std::string &path)
{
	struct statfs fs;
	return statfs(path.c_str(), &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

std::string real_path(const std::string &path)
{
	char resolved[PATH_MAX];
	return realpath(path.c_str(), resolved) ? std::string(resolved) : path;
}

} // namespace

std::optional<std::string> cgroup_v2_path(std::string_view text)
{
	for (size_t at = 0; at < text.size();) {
		size_t end = text.find('\n', at);
		if (end == std::string_view::npos)
			end = text.size();
		std::string_view line = text.substr(at, end - at);
		at = end + 1;
		// "hierarchy-ID:controllers:path": the path may hold colons of its own.
		if (!line.starts_with("0::"))
			continue;
		line.remove_prefix(3);
		// A group removed while a process (a zombie) is still in it.
		if (line.ends_with(" (deleted)"))
			line.remove_suffix(10);
		return std::string(line);
	}
	return std::nullopt;
}

// The layouts, leaf last, as the runtimes write them (ids shortened here):
//   docker, cgroupfs driver     /docker/4f797c53...             (neuvector/neuvector,
//   docker, systemd driver      /system.slice/docker-9ec39b91....scope   share/system/cgroup_test.go)
//   Kubernetes, cgroupfs        /kubepods/besteffort/pod74c13223-5a00-11e9-b385-42010a80018d/34dc0b5e...
//                               (Qard/container-info, test/fixtures/result.js)
//   Kubernetes, systemd         /kubepods.slice/kubepods-burstable.slice/
//                               kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope
//                               (crio-<id>.scope under CRI-O, docker-<id>.scope under cri-dockerd)
//   CRI-O's monitor             .../crio-conmon-<id>.scope: not a container (cri-o/cri-o,
//                               createConmonUnitName)
//   podman                      /machine.slice/libpod-<id>.scope, its monitor in
//                               libpod-conmon-<id>.scope (containers/podman's log lines:
//                               "Running conmon under slice machine.slice and unitName
//                               libpod-conmon-<id>.scope"); /libpod_parent/libpod-<id> (cgroupfs)
//   containerd, cgroupfs        /containerd/<id>, /k8s.io/<id> (by containerd namespace)
// A container's own processes may sit in groups below its own (systemd inside it: .../
// docker-<id>.scope/init.scope; docker in docker: /docker/<outer>/docker/<inner>): the
// innermost container named, leaf first, is the one.
std::string container_id(std::string_view path)
{
	const std::vector<std::string_view> parts = components(path);
	const bool kubepods = !parts.empty() && parts[0].starts_with("kubepods");
	for (size_t i = parts.size(); i-- > 0;) {
		if (std::string_view id = runtime_scope_id(parts[i]); !id.empty())
			return std::string(id);
		if (!is_hex_id(parts[i]) || i == 0)
			continue;
		const std::string_view parent = parts[i - 1];
		if (parent == "docker" || parent == "containerd" || parent == "k8s.io" ||
		    (kubepods && parent.starts_with("pod")))
			return std::string(parts[i]);
	}
	return "";
}

std::optional<CgroupLabels> read_cgroup(uint32_t pid, const std::string &proc)
{
	std::string text;
	if (!read_whole_file((proc + "/" + std::to_string(pid) + "/cgroup").c_str(), text))
		return std::nullopt;
	std::optional<std::string> path = cgroup_v2_path(text);
	if (!path)
		return std::nullopt;
	CgroupLabels labels;
	labels.container = container_id(*path);
	labels.path = std::move(*path);
	return labels;
}

std::string cgroup2_mount(std::string_view mountinfo)
{
	// "36 35 98:0 /root /mnt/point rw,noatime master:1 - cgroup2 cgroup2 rw": the fields
	// after " - " are the type, the source and the super block's options. A mount of
	// the whole hierarchy (root "/") is preferred to a bind mount of a part of it.
	std::string found;
	for (size_t at = 0; at < mountinfo.size();) {
		size_t end = mountinfo.find('\n', at);
		if (end == std::string_view::npos)
			end = mountinfo.size();
		const std::string_view line = mountinfo.substr(at, end - at);
		at = end + 1;
		const size_t dash = line.find(" - ");
		if (dash == std::string_view::npos || line.substr(dash + 3, 8) != "cgroup2 ")
			continue;
		std::vector<std::string_view> fields;
		for (std::string_view rest = line.substr(0, dash); fields.size() < 5 && !rest.empty();) {
			const size_t space = rest.find(' ');
			fields.push_back(rest.substr(0, space));
			rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
		}
		if (fields.size() < 5)
			continue;
		if (fields[3] == "/")
			return unescape(fields[4]);
		if (found.empty())
			found = unescape(fields[4]);
	}
	return found;
}

Status resolve_cgroups(std::vector<std::string> &paths, const std::string &mountinfo_path)
{
	if (paths.size() > kMaxCgroupFilters)
		return Error("at most " + std::to_string(kMaxCgroupFilters) + " --cgroup options can be given");
	std::string mountinfo;
	read_whole_file(mountinfo_path.c_str(), mountinfo);
	const std::string mount = cgroup2_mount(mountinfo);
	std::vector<std::string> resolved;
	for (const std::string &path : paths) {
		std::string dir;
		if (is_directory(path) && on_cgroup2(path))
			dir = path;
		else if (path.starts_with('/') && !mount.empty() && is_directory(mount + path))
			dir = mount + path;
		if (!dir.empty())
			dir = real_path(dir);
		if (dir.empty() || !on_cgroup2(dir)) {
			const std::string where = mount.empty() ? "no cgroup2 file system is mounted"
								: "cgroup2 is mounted at " + mount;
			struct stat st;
			if (stat(path.c_str(), &st) == 0)
				return Error("--cgroup " + path + ": not a cgroup v2 directory (" + where + ")");
			return Error("--cgroup " + path + ": no such cgroup (" + where + ")");
		}
		if (std::find(resolved.begin(), resolved.end(), dir) == resolved.end())
			resolved.push_back(dir);
	}
	paths = std::move(resolved);
	return {};
}
