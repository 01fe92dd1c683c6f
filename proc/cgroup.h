// proc/cgroup.h: a process's cgroup v2 group and the container it names, from
// /proc/PID/cgroup; and where --cgroup's groups are, on the cgroup2 mount.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

// What a process's cgroup says of it, for the report's labels.
struct CgroupLabels {
	std::string path;      // as /proc/PID/cgroup's v2 line shows it: "/system.slice/cron.service"
	std::string container; // the container id the path names, "" for none
	bool operator==(const CgroupLabels &) const = default;
};

// The cgroup v2 path in the text of /proc/PID/cgroup: its "0::" line, which a hybrid
// machine shows beside the v1 lines. Nothing when there is none (a v1-only machine).
std::optional<std::string> cgroup_v2_path(std::string_view proc_cgroup);

// The id of the container a cgroup path names (docker, containerd, CRI-O, podman, and
// Kubernetes pods over any of them, with the cgroupfs or the systemd driver); "" for a
// path that names none (systemd services, user sessions, a runtime's monitor process).
std::string container_id(std::string_view cgroup_path);

// /proc/PID/cgroup read now; nothing when it cannot be read or has no v2 line.
std::optional<CgroupLabels> read_cgroup(uint32_t pid, const std::string &proc = "/proc");

// The most --cgroup options a run takes: the BPF program checks each in turn.
constexpr size_t kMaxCgroupFilters = 64;

// Where the cgroup2 file system is mounted, from the text of /proc/self/mountinfo
// (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid machine); "" when it is not.
std::string cgroup2_mount(std::string_view mountinfo);

// Makes each --cgroup value the real path of a cgroup v2 directory: one of the cgroup2
// mount already, or a path as /proc/PID/cgroup shows it, taken under the mount. Ok, or
// what is wrong.
Status resolve_cgroups(std::vector<std::string> &paths,
			    const std::string &mountinfo_path = "/proc/self/mountinfo");
