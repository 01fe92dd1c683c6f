// tests/test_proc_cgroup.cpp: /proc/PID/cgroup's v2 path and the container id it names, the
// cgroup2 mount in mountinfo, and --cgroup's values checked against this machine.
#include <doctest/doctest.h>

#include <unistd.h>

#include "proc/cgroup.h"
#include "tests/support.h"

namespace {

const std::string docker_id = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";
const std::string other_id = "34dc0b5e626f2c5c4c5170e34b10e7654ce36f0fcd532739f4445baabea03376";

} // namespace

TEST_SUITE("unit") {

TEST_CASE("cgroup: the v2 path is the 0:: line, also among a hybrid machine's v1 lines")
{
	CHECK(cgroup_v2_path("0::/system.slice/cron.service\n") == "/system.slice/cron.service");
	CHECK(cgroup_v2_path("12:pids:/user.slice\n"
			     "4:memory:/process_api/f7cecc9a9225891d65aa379e24c86d4f\n"
			     "1:name=systemd:/user.slice/user-0.slice/session-1.scope\n"
			     "0::/user.slice/user-0.slice/session-1.scope\n") ==
	      "/user.slice/user-0.slice/session-1.scope");
	CHECK(cgroup_v2_path("0::/\n") == "/");
	// A path may hold colons; a removed group is marked.
	CHECK(cgroup_v2_path("0::/odd:name\n") == "/odd:name");
	CHECK(cgroup_v2_path("0::/system.slice/gone.scope (deleted)\n") == "/system.slice/gone.scope");
	// cgroup v1 only: no v2 path.
	CHECK(!cgroup_v2_path("4:memory:/docker/" + docker_id + "\n1:name=systemd:/docker/" + docker_id + "\n"));
	CHECK(!cgroup_v2_path(""));
}

TEST_CASE("cgroup: container ids of docker, containerd, CRI-O, podman and Kubernetes pods")
{
	// Layouts as the runtimes write them (see proc/cgroup.cpp for where each was seen).
	const std::string pod = "kubepods-burstable-pod74c13223_5a00_11e9_b385_42010a80018d.slice";
	struct Case {
		std::string path, id;
	} cases[] = {
		{"/docker/" + docker_id, docker_id},
		{"/system.slice/docker-" + docker_id + ".scope", docker_id},
		{"/system.slice/docker-" + docker_id + ".scope/init.scope", docker_id}, // systemd in it
		{"/docker/" + other_id + "/docker/" + docker_id, docker_id},            // docker in docker
		{"/kubepods/besteffort/pod74c13223-5a00-11e9-b385-42010a80018d/" + other_id, other_id},
		{"/kubepods/pod74c13223-5a00-11e9-b385-42010a80018d/" + other_id, other_id}, // guaranteed QoS
		{"/kubepods.slice/kubepods-burstable.slice/" + pod + "/cri-containerd-" + docker_id + ".scope", docker_id},
		{"/kubepods.slice/kubepods-burstable.slice/" + pod + "/crio-" + docker_id + ".scope", docker_id},
		{"/kubepods.slice/kubepods-burstable.slice/" + pod + "/docker-" + docker_id + ".scope", docker_id},
		{"/kubepods.slice/kubepods-pod74c13223_5a00_11e9_b385_42010a80018d.slice/cri-containerd-" + docker_id +
			 ".scope",
		 docker_id},
		{"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/cri-containerd-" + docker_id +
			 ".scope",
		 docker_id},
		{"/kubepods/burstable/pod74c13223-5a00-11e9-b385-42010a80018d/crio-" + docker_id, docker_id},
		{"/containerd/" + docker_id, docker_id},
		{"/k8s.io/" + docker_id, docker_id},
		{"/machine.slice/libpod-" + docker_id + ".scope", docker_id},
		{"/machine.slice/machine-libpod_pod_" + other_id + ".slice/libpod-" + docker_id + ".scope", docker_id},
		{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + docker_id + ".scope", docker_id},
		{"/libpod_parent/libpod-" + docker_id, docker_id},
		// Not containers: the runtimes' monitors, pods' own slices, services, sessions.
		{"/kubepods.slice/kubepods-burstable.slice/" + pod + "/crio-conmon-" + docker_id + ".scope", ""},
		{"/machine.slice/libpod-conmon-" + docker_id + ".scope", ""},
		{"/kubepods.slice/kubepods-burstable.slice/" + pod, ""},
		{"/kubepods/besteffort/pod74c13223-5a00-11e9-b385-42010a80018d", ""},
		{"/system.slice/docker.service", ""},
		{"/system.slice/containerd.service", ""},
		{"/system.slice/cron.service", ""},
		{"/user.slice/user-1000.slice/session-3.scope", ""},
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-4242.scope", ""},
		{"/init.scope", ""},
		{"/", ""},
		{"", ""},
		// Not quite an id: too short, upper case, or a hex name where no runtime puts one.
		{"/system.slice/docker-" + docker_id.substr(1) + ".scope", ""},
		{"/docker/9EC39B91F3D70E1BEFF50A308F77067065EA6BE0D91A3378375056CD4422CF3D", ""},
		{"/system.slice/" + docker_id, ""},
		{"/docker-.scope", ""},
	};
	for (const Case &c : cases) {
		CAPTURE(c.path);
		CHECK(container_id(c.path) == c.id);
	}
}

TEST_CASE("cgroup: read_cgroup reads /proc/PID/cgroup; a process gone or v1-only has none")
{
	TempDir proc;
	write_file(proc / "42/cgroup", "1:name=systemd:/x\n0::/system.slice/docker-" + docker_id + ".scope\n");
	write_file(proc / "43/cgroup", "1:name=systemd:/x\n");
	auto labels = read_cgroup(42, proc.path());
	REQUIRE(labels);
	CHECK(labels->path == "/system.slice/docker-" + docker_id + ".scope");
	CHECK(labels->container == docker_id);
	CHECK(!read_cgroup(43, proc.path()));
	CHECK(!read_cgroup(44, proc.path()));
	// This process's own, on a machine with cgroup v2 mounted (this one's, and CI's).
	auto own = read_cgroup(uint32_t(getpid()));
	REQUIRE(own);
	CHECK(own->path.starts_with("/"));
}

TEST_CASE("cgroup: the cgroup2 mount from mountinfo, hybrid or unified, spaces escaped")
{
	const std::string hybrid = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
				   "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
				   "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	CHECK(cgroup2_mount(hybrid) == "/sys/fs/cgroup/unified");
	const std::string unified = "24 30 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n"
				    "25 24 0:23 / /sys/fs/cgroup rw,nosuid,nodev shared:8 - cgroup2 cgroup2 "
				    "rw,nsdelegate,memory_recursiveprot\n";
	CHECK(cgroup2_mount(unified) == "/sys/fs/cgroup");
	// A bind mount of a part of the hierarchy comes second to the whole one.
	const std::string bound = "50 24 0:23 /system.slice /mnt/part rw - cgroup2 cgroup2 rw\n"
				  "51 24 0:23 / /mnt/with\\040space rw - cgroup2 cgroup2 rw\n";
	CHECK(cgroup2_mount(bound) == "/mnt/with space");
	CHECK(cgroup2_mount(bound.substr(0, bound.find('\n') + 1)) == "/mnt/part");
	CHECK(cgroup2_mount(hybrid.substr(0, hybrid.find("41 "))) == "");
}

TEST_CASE("cgroup: --cgroup takes a cgroup2 directory or a /proc/PID/cgroup path, else says why")
{
	const std::string mount = cgroup2_mount(read_file("/proc/self/mountinfo"));
	REQUIRE_MESSAGE(!mount.empty(), "no cgroup2 file system is mounted here");
	// The root group, both ways; the same group twice is kept once.
	std::vector<std::string> paths = {"/", mount, mount + "/"};
	CHECK(resolve_cgroups(paths).ok());
	CHECK(paths == std::vector<std::string>{mount});
	// A group of this process, as /proc/self/cgroup shows it.
	const std::string own = *cgroup_v2_path(read_file("/proc/self/cgroup"));
	paths = {own};
	CHECK(resolve_cgroups(paths).ok());
	CHECK(paths == std::vector<std::string>{own == "/" ? mount : mount + own});

	TempDir dir;
	paths = {dir.path().string()};
	CHECK(resolve_cgroups(paths).error() == "--cgroup " + dir.path().string() +
						": not a cgroup v2 directory (cgroup2 is mounted at " + mount + ")");
	paths = {"/no/such/group"};
	CHECK(resolve_cgroups(paths).error() == "--cgroup /no/such/group: no such cgroup (cgroup2 is mounted at " + mount + ")");
	paths = {"relative"};
	CHECK(resolve_cgroups(paths).error().starts_with("--cgroup relative: no such cgroup"));
	// Out of the mount by "..": not a group.
	paths = {"/../../../etc"};
	CHECK(resolve_cgroups(paths).error().starts_with("--cgroup /../../../etc: "));
	write_file(dir / "mountinfo", "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n");
	paths = {"/system.slice"};
	CHECK(resolve_cgroups(paths, dir / "mountinfo").error() ==
	      "--cgroup /system.slice: no such cgroup (no cgroup2 file system is mounted)");
	paths.assign(kMaxCgroupFilters + 1, "/");
	CHECK(resolve_cgroups(paths).error() == "at most 64 --cgroup options can be given");
}

} // TEST_SUITE
