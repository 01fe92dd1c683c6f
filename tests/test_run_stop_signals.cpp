// tests/test_run_stop_signals.cpp: which signals stop a run, and what the first and the
// second do, in a process of the test's own (tests/test_profile.cpp and test_push.cpp send
// them to the profiler itself).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "base/pending_files.h"
#include "run/stop_signals.h"
#include "tests/support.h"

namespace {

// In a child of its own (a stop signal blocked in the runner would be blocked in its
// threads too): the first SIGINT is the run's end, told to wait_for; 2 s later, a line says
// what the run still does; a SIGTERM then ends the process with its line. Exit status 3
// when the first is not seen, 4 when the second does not end it. A file registered as half
// written in the folder args[0] (a report's temporary file) is removed by the second.
const ChildWork first_and_second("stop signals: first and second", [](const std::vector<std::string> &args) {
	const int dir = open(args.at(0).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const int half = openat(dir, ".out.svg.tmp", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (dir < 0 || half < 0)
		return 5;
	pending_files::add(dir, ".out.svg.tmp");
	StopSignals stop;
	if (stop.wait_for(1000000) || stop.first())
		return 3;
	kill(getpid(), SIGINT);
	if (!stop.wait_for(5000000000) || stop.first() != SIGINT)
		return 3;
	stop.doing("testing", "without the rest");
	sleep(3);
	kill(getpid(), SIGTERM);
	sleep(10);
	return 4;
});

} // namespace

TEST_SUITE("unit")
{
	TEST_CASE("stop signals: SIGINT, SIGTERM and SIGHUP; SIGHUP not when ignored at the start (nohup)")
	{
		struct sigaction was {};
		REQUIRE(sigaction(SIGHUP, nullptr, &was) == 0);
		struct sigaction action {};
		action.sa_handler = SIG_DFL;
		sigaction(SIGHUP, &action, nullptr);
		sigset_t set = stop_signal_set();
		CHECK(sigismember(&set, SIGINT));
		CHECK(sigismember(&set, SIGTERM));
		CHECK(sigismember(&set, SIGHUP));
		CHECK(!sigismember(&set, SIGQUIT));

		action.sa_handler = SIG_IGN;
		sigaction(SIGHUP, &action, nullptr);
		set = stop_signal_set();
		CHECK(!sigismember(&set, SIGHUP));
		// A script's background job starts with SIGINT ignored, and `kill -INT $!` stops it.
		struct sigaction interrupt_was {};
		sigaction(SIGINT, &action, &interrupt_was);
		set = stop_signal_set();
		CHECK(sigismember(&set, SIGINT));
		sigaction(SIGINT, &interrupt_was, nullptr);
		sigaction(SIGHUP, &was, nullptr);
	}
}

TEST_SUITE("component")
{
	TEST_CASE("stop signals: the first ends the wait; one still under way 2 s later says so; a second ends the process at once, saying what is undone")
	{
		TempDir dir;
		const CommandResult r = run_command(child_work_argv("stop signals: first and second", {dir.path().string()}), 30);
		INFO("stderr: " << r.err);
		CHECK(r.status == 128 + SIGTERM);
		CHECK_MESSAGE(!std::filesystem::exists(dir / ".out.svg.tmp"), "the half-written file outlived the run");
		CHECK(r.err == "profile: still testing after SIGINT; SIGINT again ends the run now, without the rest\n"
			       "profile: SIGTERM after SIGINT while testing: ending now, without the rest\n");
		// The 3 s the child waits, and not the 10 s after its SIGTERM.
		CHECK(r.seconds < 9);
	}
}
