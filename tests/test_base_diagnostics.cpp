// tests/test_base_diagnostics.cpp: every line the profiler says goes through one sink, whole.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "base/diagnostics.h"

TEST_SUITE("unit") {

// Lines go to the sink set (stderr again once it is unset), each whole, without a newline.
struct CaughtLines {
	std::vector<std::string> lines;
	CaughtLines()
	{
		diagnostics::set_sink([this](const std::string &line) { lines.push_back(line); });
	}
	~CaughtLines() { diagnostics::set_sink({}); }
};

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
