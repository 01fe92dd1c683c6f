// tests/test_syms_debuginfod.cpp: syms/debuginfod against tests/debuginfod_faults.py: the
// bound holds for every fetch together, the progress line comes once it takes over a
// second, and what libdebuginfod says comes back as an errno.
#include <doctest/doctest.h>

#include <optional>

#include "syms/debuginfod.h"
#include "tests/support.h"
#include "tests/test_report_data.h"

namespace {

// tests/debuginfod_faults.py answering every request with `answer`; its URL.
class Faults {
public:
	explicit Faults(const std::string &answer)
	{
		const std::string python = find_tool("python3");
		REQUIRE_MESSAGE(!python.empty(), "python3 is not installed (scripts/install-deps.sh --test installs it)");
		process_.emplace(std::vector<std::string>{python, output_dir() + "/../tests/debuginfod_faults.py", answer});
		const std::string line = process_->read_line();
		REQUIRE_MESSAGE(line.starts_with("port "), "debuginfod_faults.py said '" << line << "'");
		url_ = "http://127.0.0.1:" + line.substr(5);
	}
	const std::string &url() const { return url_; }

private:
	std::optional<Background> process_;
	std::string url_;
};

const std::vector<std::string> kIds = {std::string(40, 'a'), std::string(40, 'b'), std::string(40, 'c')};

} // namespace

TEST_SUITE("component") {

TEST_CASE("debuginfod: a server that never answers costs the bound, for every file together, with progress")
{
	Faults stall("stall");
	TempDir cache;
	ScopedEnv urls("DEBUGINFOD_URLS", stall.url().c_str());
	ScopedEnv cache_path("DEBUGINFOD_CACHE_PATH", cache.path().c_str());
	CHECK(debuginfod_configured());
	size_t calls = 0, last_calls = 0;
	DebuginfodSettings settings;
	settings.timeout_s = 1.5;
	settings.parallel = 2; // fewer threads than files: the third is never started
	settings.progress = [&](size_t done, size_t total, bool last) {
		CHECK(done <= total);
		CHECK(total == kIds.size());
		(last ? last_calls : calls)++;
	};
	const double start = now();
	std::vector<FetchedDebugFile> files = fetch_debug_files(kIds, settings);
	const double took = now() - start;
	CHECK(took >= 1.5);
	CHECK(took < 1.5 + 0.5);
	REQUIRE(files.size() == kIds.size());
	for (size_t i = 0; i < files.size(); i++) {
		CHECK(files[i].build_id == kIds[i]);
		CHECK(files[i].error == ETIME);
		CHECK(!files[i].fd);
	}
	CHECK(calls >= 1);      // from the first second on
	CHECK(last_calls == 1); // and once to clear it
}

TEST_CASE("debuginfod: 404 is ENOENT, quickly and without a progress line; no DEBUGINFOD_URLS, no server")
{
	{
		Faults missing("404");
		TempDir cache;
		ScopedEnv urls("DEBUGINFOD_URLS", missing.url().c_str());
		ScopedEnv cache_path("DEBUGINFOD_CACHE_PATH", cache.path().c_str());
		bool progress = false;
		DebuginfodSettings settings;
		settings.progress = [&](size_t, size_t, bool) { progress = true; };
		const double start = now();
		for (const FetchedDebugFile &file : fetch_debug_files(kIds, settings))
			CHECK(file.error == ENOENT);
		CHECK(now() - start < 1);
		CHECK(!progress);
	}
	ScopedEnv urls("DEBUGINFOD_URLS", " ");
	CHECK(!debuginfod_configured());
	CHECK(fetch_debug_files({}, {}).empty());
}

} // TEST_SUITE
