// tests/main.cpp: the doctest runner; ends with the one line CI reads, "N passed, N failed".
// A test that skipped (skip_test: a tool or root missing outside CI) is neither: the line
// before says "N skipped: ..." and names them, and scripts/run-tests.sh adds them up.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support.h"

namespace {

struct Totals {
	unsigned run = 0, failed = 0;
} totals;

std::set<std::string> failed_tests;
// Seconds each test case took (its subcases' runs added up): the slowest are printed
// before the total, so a log shows where the suite's minutes go.
std::map<std::string, double> test_seconds;

bool failed_test(const std::string &name)
{
	return failed_tests.count(name) != 0;
}

// A listener sees every test case end; it only counts, the normal reporter still prints.
struct CountingListener : doctest::IReporter {
	explicit CountingListener(const doctest::ContextOptions &) {}
	void report_query(const doctest::QueryData &) override {}
	void test_run_start() override {}
	void test_run_end(const doctest::TestRunStats &stats) override
	{
		totals.run = stats.numTestCasesPassingFilters;
		totals.failed = stats.numTestCasesFailed;
	}
	void test_case_start(const doctest::TestCaseData &data) override
	{
		current = data.m_name;
		set_current_test(current);
	}
	void test_case_reenter(const doctest::TestCaseData &) override {}
	void test_case_end(const doctest::CurrentTestCaseStats &stats) override
	{
		if (stats.failure_flags)
			failed_tests.insert(current);
		test_seconds[current] += stats.seconds;
	}
	void test_case_exception(const doctest::TestCaseException &) override {}
	void subcase_start(const doctest::SubcaseSignature &) override {}
	void subcase_end() override {}
	void log_assert(const doctest::AssertData &) override {}
	void log_message(const doctest::MessageData &) override {}
	void test_case_skipped(const doctest::TestCaseData &) override {}

	std::string current;
};

} // namespace

DOCTEST_REGISTER_LISTENER("counting", 1, CountingListener);

// The ASan+UBSan pass of `make test` picks test cases by suite (scripts/run-tests.sh): a
// case in no suite, or in one of another name, would never run there, and a file none of
// whose cases are in a suite it picks would go unchecked under ASan whole.
TEST_SUITE("unit") {

TEST_CASE("every test case is in a suite, and every test file has cases the ASan pass runs")
{
	const std::set<std::string> suites = {"unit", "component", "integration", ASAN_TOO};
	const std::set<std::string> asan = {"unit", "component", ASAN_TOO};
	std::set<std::string> files, files_under_asan;
	for (const doctest::detail::TestCase &test : doctest::detail::getRegisteredTests()) {
		const std::string file = test.m_file.c_str(), suite = test.m_test_suite;
		files.insert(file);
		CHECK_MESSAGE(suites.count(suite), file << ":" << test.m_line << ": \"" << std::string(test.m_name)
							<< "\" is in suite \"" << suite << "\", not one of unit, component, integration, " ASAN_TOO);
		if (asan.count(suite))
			files_under_asan.insert(file);
	}
	for (const std::string &file : files)
		CHECK_MESSAGE(files_under_asan.count(file), file << ": no test case in unit, component or " ASAN_TOO);
}

} // TEST_SUITE("unit")

int main(int argc, char **argv)
{
	// A test's child, execed to do one piece of work (ChildWork in tests/support.h).
	if (const int status = run_child_work(argc, argv); status >= 0)
		return status;
	// The integration tests sample workloads for a set number of seconds and judge what
	// they got: on a machine busy with other work (a build, a browser) the workloads went
	// without CPU for seconds and the checks failed for want of samples, not for anything
	// the profiler did. As root, everything the tests start (the profiler, the workloads,
	// perf) runs ahead of that work, inheriting this nice value; on a quiet machine it
	// changes nothing.
	if (geteuid() == 0)
		setpriority(PRIO_PROCESS, 0, -10);
	doctest::Context context(argc, argv);
	int rc = context.run();
	if (context.shouldExit())
		return rc;
	// A test that skipped after a failed check counts as failed, not skipped.
	std::set<std::string> skipped;
	std::string lines;
	for (const auto &[name, why] : skipped_tests())
		if (!failed_test(name)) {
			skipped.insert(name);
			lines += "  " + name + ": " + why + "\n";
		}
	std::vector<std::pair<double, std::string>> slowest;
	double all_seconds = 0;
	for (const auto &[name, seconds] : test_seconds) {
		slowest.emplace_back(seconds, name);
		all_seconds += seconds;
	}
	std::sort(slowest.rbegin(), slowest.rend());
	if (slowest.size() > 10)
		slowest.resize(10);
	std::printf("%.0f s in test cases; the slowest:\n", all_seconds);
	for (const auto &[seconds, name] : slowest)
		std::printf("  %6.1f s  %s\n", seconds, name.c_str());
	if (!skipped.empty())
		std::printf("%zu skipped:\n%s", skipped.size(), lines.c_str());
	std::printf("%u passed, %u failed\n", unsigned(totals.run - totals.failed - skipped.size()), totals.failed);
	return rc;
}
