// tests/test_base_diagnostics.cpp: every line the profiler says goes through one sink, whole.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "base/diagnostics.h"
#include "tests/support.h"

namespace {

// stderr a pipe full to the brim that nobody reads; a thread blocked writing a line to it,
// holding the lines' lock. The last words are said all the same and the process exits 7
// (it would hang, and be killed, were they to wait).
const ChildWork last_words_on_a_full_pipe("diagnostics: last words on a full pipe", [](const std::vector<std::string> &) {
	int fds[2];
	if (pipe2(fds, O_NONBLOCK) != 0)
		return 3;
	const std::string block(4096, 'x');
	while (write(fds[1], block.data(), block.size()) > 0) {
	}
	fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) & ~O_NONBLOCK);
	dup2(fds[1], STDERR_FILENO);
	std::thread([] { diagnostics::say("%s", std::string(100000, 'y').c_str()); }).detach();
	usleep(200000); // the thread is in its write, the lock held
	diagnostics::last_words("SIGINT again while testing: ending now");
	_exit(7);
});

} // namespace

TEST_SUITE("unit") {

TEST_CASE("diagnostics: say() writes 'profile: ' and the formatted text as one line; line() as it is")
{
	CaughtLines caught;
	diagnostics::say("%d window%s: %s", 3, "s", "12 samples");
	diagnostics::say("%s", std::string(5000, 'x').c_str()); // longer than any buffer on the stack
	diagnostics::say("no arguments");
	diagnostics::line("Sampling at 49 Hertz of all threads by user + kernel stack for 10 secs.");
	diagnostics::progress("profile: debuginfod: 1 of 3 debug files fetched"); // terminals only
	REQUIRE(caught.lines.size() == 4);
	CHECK(caught.lines[0] == "profile: 3 windows: 12 samples");
	CHECK(caught.lines[1] == "profile: " + std::string(5000, 'x'));
	CHECK(caught.lines[2] == "profile: no arguments");
	CHECK(caught.lines[3] == "Sampling at 49 Hertz of all threads by user + kernel stack for 10 secs.");
}

TEST_CASE("diagnostics: lines said by several threads at once arrive whole, none lost")
{
	CaughtLines caught;
	std::vector<std::thread> threads;
	for (int t = 0; t < 4; t++)
		threads.emplace_back([t] {
			for (int i = 0; i < 500; i++)
				diagnostics::say("thread %d line %d", t, i);
		});
	for (std::thread &thread : threads)
		thread.join();
	REQUIRE(caught.lines.size() == 2000);
	for (const std::string &line : caught.lines)
		CHECK(line.starts_with("profile: thread "));
}

} // TEST_SUITE("unit")

TEST_SUITE("component") {

TEST_CASE("diagnostics: last words never wait: not for a full stderr pipe, nor for a line blocked on it")
{
	const CommandResult r = run_command(child_work_argv("diagnostics: last words on a full pipe", {}), 10);
	CHECK(r.status == 7);
	CHECK(r.seconds < 5);
}

} // TEST_SUITE("component")
