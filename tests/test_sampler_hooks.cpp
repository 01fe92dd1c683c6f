// tests/test_sampler_hooks.cpp: what a run attaches beside its sampling events. No program
// of it may run on the syscall path (sys_enter, sys_exit: every syscall of the machine
// would pay for it); the table walk hooks a process's exec, fork and exit, and ld.so's
// _dl_debug_state, only where it follows new processes itself; sched_switch, on every
// context switch, is hooked with --off-cpu only, and sched_waking with --wakers only. A
// runtime may hook its own functions in the files it runs from: V8's GCs in node.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>

#include "tests/support.h"

namespace {

// What a process's BPF links are attached to, from its fds' fdinfo: a tracepoint's name,
// or "uprobe " and the probed file.
std::multiset<std::string> attached_hooks(pid_t pid)
{
	std::multiset<std::string> names;
	std::error_code ec;
	const std::filesystem::path fdinfo = "/proc/" + std::to_string(pid) + "/fdinfo";
	for (const auto &fd : std::filesystem::directory_iterator(fdinfo, ec)) {
		std::ifstream in(fd.path());
		std::string line, file;
		auto value = [&] { return line.substr(line.find_first_not_of(" \t", line.find(':') + 1)); };
		while (std::getline(in, line)) {
			if (line.starts_with("tp_name:"))
				names.insert(value());
			else if (line.starts_with("name:"))
				file = value();
			else if (line.starts_with("event_type:") && value() == "uprobe")
				names.insert("uprobe " + file);
		}
	}
	return names;
}

// Starts profile with args and returns what it attached once it samples (its header line,
// "Sampling at ..." or with --off-cpu "Tracing off-CPU time ...", comes after the attach).
std::multiset<std::string> hooks_of_run(std::vector<std::string> args)
{
	TempDir dir;
	args.insert(args.end(), {"--folded", "-o", dir / "out.folded", "30"});
	PipedProcess run(profile_command(args));
	REQUIRE(run.pid() > 0);
	std::string line, err;
	auto header = [](const std::string &l) { return l.starts_with("Sampling at") || l.starts_with("Tracing off-CPU"); };
	while (!(line = run.read_err_line()).empty() && !header(line))
		err += line;
	INFO("profile's stderr before its header: " << err);
	REQUIRE(header(line));
	std::multiset<std::string> names = attached_hooks(run.pid());
	kill(run.pid(), SIGINT);
	CHECK(run.wait() == 0);
	return names;
}

bool on_syscall_path(const std::string &tracepoint)
{
	return tracepoint.starts_with("sys_") || tracepoint.starts_with("syscalls");
}

} // namespace

TEST_SUITE("integration") {

TEST_CASE("no program on the syscall path: --unwind fp and -p attach no hook, the whole machine only exec, fork, exit and ld.so's" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	SUBCASE("--unwind fp, the whole machine")
	{
		const std::multiset<std::string> names = hooks_of_run({"--unwind", "fp"});
		CHECK(names.empty());
	}
	SUBCASE("-p: a process running now")
	{
		Background target({workload("syscalls"), "30"});
		const std::multiset<std::string> names = hooks_of_run({"-p", std::to_string(target.pid())});
		CHECK(names.empty());
	}
	SUBCASE("--unwind auto, the whole machine")
	{
		// A Node process running: the JS walk counts its GCs by uprobes in node's file (the
		// file checked, named by profile's descriptor of it), three or more per Node file.
		std::unique_ptr<Background> node;
		if (access("/usr/bin/node", X_OK) == 0) {
			node = std::make_unique<Background>(std::vector<std::string>{
				"/usr/bin/node", "-e", "console.log('ready'); setTimeout(() => {}, 60000)"});
			REQUIRE(node->read_line() == "ready");
		} else if (getenv("CI")) {
			FAIL("needs /usr/bin/node");
		}
		const std::multiset<std::string> names = hooks_of_run({});
		size_t ld_so = 0, gc = 0;
		for (const std::string &name : names) {
			CAPTURE(name);
			CHECK_FALSE(on_syscall_path(name));
			const bool loader = name.starts_with("uprobe /") && name.find("/ld-linux") != std::string::npos;
			const bool runtime = name.starts_with("uprobe /proc/self/fd/");
			CHECK((name == "sched_process_exec" || name == "sched_process_fork" ||
			       name == "sched_process_exit" || loader || runtime));
			ld_so += loader;
			gc += runtime;
		}
		// The table walk follows new processes from their exec, and their libraries from
		// ld.so's word.
		CHECK(names.count("sched_process_exec") >= 1);
		CHECK(ld_so == 1);
		if (node)
			CHECK(gc >= 3);
		CHECK(names.count("sched_switch") == 0);
		CHECK(names.count("sched_waking") == 0);
	}
}

TEST_CASE("--off-cpu hooks sched_switch once, beside the table walk's hooks; -p and -K without them")
{
	require_root();
	SUBCASE("the whole machine")
	{
		const std::multiset<std::string> names = hooks_of_run({"--off-cpu"});
		CHECK(names.count("sched_switch") == 1);
		CHECK(names.count("sched_process_exec") == 1);
		for (const std::string &name : names) {
			CAPTURE(name);
			CHECK_FALSE(on_syscall_path(name));
		}
	}
	SUBCASE("-p: a process running now")
	{
		Background target({workload("syscalls"), "30"});
		const std::multiset<std::string> names =
			hooks_of_run({"--off-cpu", "-p", std::to_string(target.pid())});
		CHECK(names == std::multiset<std::string>{"sched_switch"});
	}
	SUBCASE("-K: no user stack to walk, so none of the table walk's hooks")
	{
		const std::multiset<std::string> names = hooks_of_run({"--off-cpu", "-K"});
		CHECK(names == std::multiset<std::string>{"sched_switch"});
	}
	SUBCASE("-p --wakers: sched_waking too")
	{
		Background target({workload("syscalls"), "30"});
		const std::multiset<std::string> names =
			hooks_of_run({"--off-cpu", "--wakers", "-p", std::to_string(target.pid())});
		CHECK(names == std::multiset<std::string>{"sched_switch", "sched_waking"});
	}
}

} // TEST_SUITE
