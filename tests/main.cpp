// tests/main.cpp: the doctest runner; ends with the one line CI reads, "N passed, N failed".
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

struct Totals {
	unsigned run = 0, failed = 0;
} totals;

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
	void test_case_start(const doctest::TestCaseData &) override {}
	void test_case_reenter(const doctest::TestCaseData &) override {}
	void test_case_end(const doctest::CurrentTestCaseStats &) override {}
	void test_case_exception(const doctest::TestCaseException &) override {}
	void subcase_start(const doctest::SubcaseSignature &) override {}
	void subcase_end() override {}
	void log_assert(const doctest::AssertData &) override {}
	void log_message(const doctest::MessageData &) override {}
	void test_case_skipped(const doctest::TestCaseData &) override {}
};

} // namespace

DOCTEST_REGISTER_LISTENER("counting", 1, CountingListener);

int main(int argc, char **argv)
{
	doctest::Context context(argc, argv);
	int rc = context.run();
	if (context.shouldExit())
		return rc;
	std::printf("%u passed, %u failed\n", totals.run - totals.failed, totals.failed);
	return rc;
}
