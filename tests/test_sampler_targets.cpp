// tests/test_sampler_targets.cpp: -p's ids made process ids, from /proc/ID/status files.
#include <doctest/doctest.h>

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
	CHECK(resolve_pids(pids, notes, proc.path()) == "");
	CHECK(pids == std::vector<uint32_t>{1234, 500});
	CHECK(notes == std::vector<std::string>{
			       "1235 is a thread of process 1234 (sshd): sampling the whole process; "
			       "-L 1235 samples that thread alone",
			       "1236 is a thread of process 1234 (sshd): sampling the whole process; "
			       "-L 1236 samples that thread alone",
		       });

	std::vector<uint32_t> gone = {500, 4000};
	notes.clear();
	CHECK(resolve_pids(gone, notes, proc.path()) == "no process with PID 4000");
}

} // TEST_SUITE
