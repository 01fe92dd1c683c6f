// tests/test_install_deps.cpp: scripts/install-deps.sh: set-up installs what builds and runs
// ./profile, and only the test command adds the test tools.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "tests/support.h"

namespace {

// The packages `scripts/install-deps.sh args... --list` prints, one a line.
std::set<std::string> packages(std::vector<std::string> args)
{
	args.insert(args.begin(), {"/bin/sh", output_dir() + "/../scripts/install-deps.sh"});
	args.push_back("--list");
	CommandResult r = run_command(args);
	INFO("stderr: " << r.err);
	REQUIRE(r.status == 0);
	std::vector<std::string> lines = split_lines(r.out);
	return std::set<std::string>(lines.begin(), lines.end());
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("install-deps: set-up installs the build packages, the test command the test tools as well")
{
	std::set<std::string> build = packages({}), test = packages({"--test"});
	for (const char *needed : {"make", "g++", "clang", "libbpf-dev", "bpftool", "libelf-dev", "libdw-dev", "libdebuginfod-dev"}) {
		CAPTURE(needed);
		CHECK(build.count(needed) == 1);
	}
	// The big ones and the test framework are for the tests alone.
	for (const char *tool : {"doctest-dev", "chromium", "golang-go", "bpftrace", "linux-perf", "libc6-dbg", "debuginfod"}) {
		CAPTURE(tool);
		CHECK(build.count(tool) == 0);
		CHECK(test.count(tool) == 1);
	}
	CHECK(std::includes(test.begin(), test.end(), build.begin(), build.end()));
}

} // TEST_SUITE
