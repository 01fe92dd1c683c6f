// tests/test_profile_containers.cpp: the real ./profile, as root, on workloads in a cgroup and
// PID namespace of their own, as a container runtime makes them; and run inside one itself.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>

#include "proc/cgroup.h"
#include "tests/support.h"
#include "tests/test_report_data.h"

namespace {

std::string random_container_id()
{
	std::random_device random;
	std::string id;
	while (id.size() < 64)
		id += "0123456789abcdef"[random() % 16];
	return id;
}

std::string unshare_or_fail()
{
	const std::string unshare = find_tool("unshare");
	REQUIRE_MESSAGE(!unshare.empty(), "unshare is not installed (util-linux)");
	return unshare;
}

} // namespace

TEST_SUITE("integration") {

TEST_CASE("--cgroup samples a container's group alone; its samples carry the cgroup and container id" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	const std::string mount = cgroup2_mount_or_fail(), unshare = unshare_or_fail();
	const std::string id = random_container_id();
	TestCgroup group(mount, "docker-" + id + ".scope");
	TempDir dir;
	// As a runtime starts a container: in its group before it runs, in PID and mount
	// namespaces of its own.
	Background inside({"/bin/sh", "-c",
			   "echo $$ > " + group.path() + "/cgroup.procs && exec " + unshare +
				   " --pid --fork --mount-proc --kill-child " + workload("split") + " 8 " + dir / "truth"});
	Background outside({workload("split"), "30"});
	const uint32_t pid = group.process("split");
	REQUIRE_MESSAGE(pid, "the workload never showed up in " << group.path());
	REQUIRE(inside.read_line() == "ready");
	const std::string cgroup = group.path().substr(mount.size()); // as /proc/PID/cgroup shows it
	CHECK(read_file("/proc/" + std::to_string(pid) + "/cgroup").ends_with("0::" + cgroup + "\n"));

	const SplitSpent before = split_spent(dir / "truth");
	auto r = profile({"--cgroup", group.path(), "-f", "199", "-o", dir / "cpu.pb.gz", "2"});
	const SplitSpent after = split_spent(dir / "truth");
	REQUIRE_MESSAGE(r.status == 0, r.err);
	uint64_t hot = 0, one = 0;
	for (const Trace &trace : pprof_traces(dir / "cpu.pb.gz")) {
		const std::string trace_pid = trace.label("pid");
		CAPTURE(trace_pid);
		CHECK(trace_pid != std::to_string(outside.pid()));
		CHECK(trace.label("cgroup") == cgroup);
		CHECK(trace.label("container_id") == id);
		if (trace_pid == std::to_string(pid) && !trace.frames.empty()) {
			hot += trace.frames[0] == "split_hot_three" ? trace.count : 0;
			one += trace.frames[0] == "split_hot_one" ? trace.count : 0;
		}
	}
	INFO("stderr: " << r.err);
	CAPTURE(before);
	CAPTURE(after);
	CHECK(hot > 40); // 2 s at 199 Hz, most of it in split_hot_three: a loaded machine gives fewer
	// The container's split, as split measured it.
	const SampledShare share = sampled_share(hot, hot + one, split_share(before, after), 0.03);
	CHECK_MESSAGE(share.ok, share);

	// The same group as /proc/PID/cgroup names it; -E's root shows the container.
	r = profile({"--cgroup", cgroup, "-E", "-f", "199", "1"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	const std::vector<FoldedLine> lines = parse_folded(r.out);
	CHECK(samples_of_with(lines, "split-" + std::to_string(pid) + "@" + id.substr(0, 12), "split_hot_three") > 20);
	for (const FoldedLine &line : lines)
		CHECK(line.frames[0].ends_with("@" + id.substr(0, 12)));
}

TEST_CASE("--cgroup with a path that is no cgroup v2 group: one line, exit 2")
{
	require_root();
	const std::string mount = cgroup2_mount_or_fail();
	struct Case {
		std::string path, says;
	} cases[] = {
		{"/no/such/cgroup", "--cgroup /no/such/cgroup: no such cgroup (cgroup2 is mounted at " + mount + ")"},
		{"/etc", "--cgroup /etc: not a cgroup v2 directory (cgroup2 is mounted at " + mount + ")"},
	};
	for (const Case &c : cases) {
		auto r = profile({"--cgroup", c.path, "1"}, 20);
		CHECK(r.status == 2);
		CHECK(r.err == "profile: " + c.says + "\n");
		CHECK(r.out.empty());
	}
}

TEST_CASE("in a PID namespace of its own, profile takes -p and reports PIDs as the namespace numbers them")
{
	require_root();
	const std::string unshare = unshare_or_fail();
	// In the namespace the shell is PID 1, the workload 2; profile's -p and report use 2.
	// A kernel PID is what bpf_get_current_pid_tgid gives: without translation -p 2 names
	// some other process of the machine, or none, and the report is empty.
	const std::string script = workload("split") + " 6 & echo $!; " + profile_bin() +
				   " -p $! -E -f 199 2; echo; " + profile_bin() + " -E -f 199 1; kill $! 2>/dev/null; exit 0";
	auto r = run_command({unshare, "--pid", "--fork", "--mount-proc", "--kill-child", "/bin/sh", "-c", script}, 60);
	INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
	REQUIRE(r.status == 0);
	const size_t first = r.out.find('\n'), blank = r.out.find("\n\n");
	REQUIRE(first != std::string::npos);
	REQUIRE(blank != std::string::npos);
	const std::string pid = r.out.substr(0, first);
	CHECK(pid == "2");
	CHECK(contains(r.err, "Sampling at 199 Hertz of PID 2 by user + kernel stack for 2 secs.\n"));
	const std::vector<FoldedLine> by_pid = parse_folded(r.out.substr(first + 1, blank - first));
	CHECK(samples_of_with(by_pid, "split-2", "split_hot_three") > 40); // a loaded machine gives fewer
	for (const FoldedLine &line : by_pid)
		CHECK(line.frames[0] == "split-2");
	// The whole machine, from inside: the namespace's processes only, by their PIDs there.
	const std::vector<FoldedLine> all = parse_folded(r.out.substr(blank + 2));
	CHECK(samples_of_with(all, "split-2", "split_hot_three") > 20);
	// profile's own PID there follows the first run's threads (each takes a number): small.
	for (const FoldedLine &line : all)
		CHECK(std::regex_match(line.frames[0], std::regex("(split-2|sh-1|profile-[0-9]{1,2})")));
}

} // TEST_SUITE
