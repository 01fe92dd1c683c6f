// tests/test_sampler_targets.cpp: -p's ids made process ids, from /proc/ID/status files.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "sampler/targets.h"
#include "tests/support.h"

namespace {

// A /proc/ID/status with the lines read_task_status reads, among others.
void write_status(const TempDir &proc, uint32_t id, const std::string &name, uint32_t tgid)
{
	write_file(proc / (std::to_string(id) + "/status"),
		   "Name:\t" + name + "\nUmask:\t0022\nState:\tR (running)\nTgid:\t" + std::to_string(tgid) +
			   "\nNgid:\t0\nPid:\t" + std::to_string(id) + "\nPPid:\t1\n");
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("targets: a task's process and that process's name come from /proc/ID/status")
{
	TempDir proc;
	write_status(proc, 1234, "sshd", 1234);
	write_status(proc, 1235, "worker thread", 1234); // a thread named apart from its process
	auto process = read_task_status(1234, proc.path());
	REQUIRE(process);
	CHECK(process->tgid == 1234);
	CHECK(process->process_name == "sshd");
	auto thread = read_task_status(1235, proc.path());
	REQUIRE(thread);
	CHECK(thread->tgid == 1234);
	CHECK(thread->process_name == "sshd");
	CHECK(!read_task_status(999, proc.path()));
	write_file(proc / "77/status", "Name:\tbroken\nTgid:\tx\n");
	CHECK(!read_task_status(77, proc.path()));
}

TEST_CASE("targets: -p's thread ids become their processes, once each, with a note per thread")
{
	TempDir proc;
	write_status(proc, 1234, "sshd", 1234);
	write_status(proc, 1235, "sshd", 1234);
	write_status(proc, 1236, "sshd", 1234);
	write_status(proc, 500, "nginx", 500);
	std::vector<uint32_t> pids = {1235, 500, 1234, 1236};
	std::vector<std::string> notes;
	CHECK(resolve_pids(pids, notes, proc.path()).ok());
	CHECK(pids == std::vector<uint32_t>{1234, 500});
	CHECK(notes == std::vector<std::string>{
			       "1235 is a thread of process 1234 (sshd): sampling the whole process; "
			       "-L 1235 samples that thread alone",
			       "1236 is a thread of process 1234 (sshd): sampling the whole process; "
			       "-L 1236 samples that thread alone",
		       });

	std::vector<uint32_t> gone = {500, 4000};
	notes.clear();
	CHECK(resolve_pids(gone, notes, proc.path()).error() == "no process with PID 4000");
}

TEST_CASE("targets: CPU time from /proc/ID/stat, counted past a command name with spaces and parentheses")
{
	TempDir proc;
	const long hz = sysconf(_SC_CLK_TCK);
	// Fields 14 and 15, utime and stime, in clock ticks.
	write_file(proc / "42/stat", "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 " + std::to_string(3 * hz) + " " +
					     std::to_string(hz / 2) + " 0 0 20 0 1 0 100 0 0\n");
	write_file(proc / "42/task/43/stat", "43 (t) R 1 42 42 0 -1 0 0 0 0 0 " + std::to_string(hz) + " 0 0 0\n");
	write_file(proc / "43/task/43/stat", "43 (t) R 1 42 42 0 -1 0 0 0 0 0 " + std::to_string(hz) + " 0 0 0\n");
	CHECK(cpu_time(42, false, proc.path()) == doctest::Approx(3.5));
	CHECK(cpu_time(43, true, proc.path()) == doctest::Approx(1.0));
	CHECK(!cpu_time(44, false, proc.path()));
	write_file(proc / "45/stat", "45 (short) S 1\n");
	CHECK(!cpu_time(45, false, proc.path()));
}

TEST_CASE("targets: a process that has exited counts as exited before its parent reaps it")
{
	// The child calls nothing but pause: REQUIRE's code is not async-signal-safe.
	const pid_t child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	REQUIRE(child >= 0);
	TargetWatch watch({uint32_t(child)}, false);
	CHECK(!watch.empty());
	CHECK(!watch.all_exited());
	CHECK(watch.exited().empty());
	REQUIRE(kill(child, SIGKILL) == 0);
	// A zombie now: its parent (this test) has not waited for it.
	bool exited = false;
	for (int i = 0; i < 200 && !exited; i++) {
		exited = watch.all_exited();
		if (!exited)
			usleep(10000);
	}
	CHECK(exited);
	CHECK(watch.exited() == std::vector<uint32_t>{uint32_t(child)});
	CHECK(waitpid(child, nullptr, 0) == child);
	CHECK(watch.all_exited());

	TargetWatch none({}, false);
	CHECK(none.empty());
	CHECK(!none.all_exited()); // a system-wide run never ends for this
}

TEST_CASE("targets: -L's threads are watched one by one")
{
	std::atomic<pid_t> tid{0};
	std::atomic<bool> stop{false};
	std::thread thread([&] {
		tid = gettid();
		while (!stop)
			usleep(1000);
	});
	while (!tid)
		usleep(1000);
	TargetWatch watch({uint32_t(tid.load())}, true);
	CHECK(watch.threads());
	CHECK(!watch.all_exited());
	stop = true;
	thread.join();
	// join() returns when the kernel clears the thread's tid, a moment before the thread
	// is gone from its process.
	bool exited = false;
	for (int i = 0; i < 200 && !exited; i++) {
		exited = watch.all_exited();
		if (!exited)
			usleep(10000);
	}
	CHECK(exited);
}

TEST_CASE("targets: the PID namespace to translate to is profile's own, none for the initial one")
{
	// The initial namespace's inode is fixed (PROC_PID_INIT_INO): readlink tells it.
	char link[64] = {};
	REQUIRE(readlink("/proc/self/ns/pid", link, sizeof(link) - 1) > 0);
	const uint32_t own = own_pid_namespace();
	if (std::string(link) == "pid:[4026531836]")
		CHECK(own == 0);
	else
		CHECK(std::string(link) == "pid:[" + std::to_string(own) + "]");
	// Any other inode is a namespace of its own; no /proc, none.
	TempDir proc;
	write_file(proc / "self/ns/pid", "");
	struct stat st;
	REQUIRE(stat((proc / "self/ns/pid").c_str(), &st) == 0);
	CHECK(own_pid_namespace(proc.path()) == uint32_t(st.st_ino));
	CHECK(own_pid_namespace(proc / "none") == 0);
}

} // TEST_SUITE
