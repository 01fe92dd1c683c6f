// tests/test_windows.cpp: --interval: the run cut into windows, each its own report, the
// windows adding up to the whole run exactly; the names -o's strftime fields give them.
#include <doctest/doctest.h>

#include <sys/inotify.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <regex>
#include <set>

#include "report/delivery.h"
#include "report/window.h"
#include "tests/support.h"

TEST_SUITE("unit") {

TEST_CASE("windows: strftime fields name each window's file; a pattern without them stays")
{
	ScopedEnv tz("TZ", "UTC");
	tzset();
	const int64_t t = 1795440000123456789; // 2026-11-23T13:20:00.123Z
	CHECK(expand_time_fields("cpu-%Y%m%dT%H%M%S.pb.gz", t) == "cpu-20261123T132000.pb.gz");
	CHECK(expand_time_fields("/var/lib/profile/%F/%H%M.svg", t) == "/var/lib/profile/2026-11-23/1320.svg");
	CHECK(expand_time_fields("cpu.folded", t) == "cpu.folded");
	CHECK(expand_time_fields("100%%-%S.txt", t) == "100%-00.txt");
	CHECK(rfc3339_time(t) == "2026-11-23T13:20:00.123+00:00");
	{
		// Local time, with its offset (a POSIX TZ rule: no zone files needed).
		ScopedEnv india("TZ", "IST-5:30");
		tzset();
		CHECK(rfc3339_time(t) == "2026-11-23T18:50:00.123+05:30");
		CHECK(expand_time_fields("%H%M", t) == "1850");
	}
	tzset();
	CHECK(window_account(99, 97, 2) == "99 samples taken, 97 stored, 2 lost");
	CHECK(window_account(5, 5, 0) == "5 samples taken, 5 stored");
	CHECK(window_account(1, 1, 0) == "1 sample taken, 1 stored");
	CHECK(window_account(40, 39, 1, true) == "40 times off the CPU, 39 stored, 1 lost");
	CHECK(window_account(1, 1, 0, true) == "1 time off the CPU, 1 stored");
	CHECK(window_line(t, t + 1000000000, "5 samples taken, 5 stored") ==
	      "# window 2026-11-23T13:20:00.123+00:00 2026-11-23T13:20:01.123+00:00: 5 samples taken, 5 stored");
}

TEST_CASE("windows: a window's file never replaces another's: a name taken in this run gets .1, .2 before its extension")
{
	// Windows drift by milliseconds, and %S names have one second: two windows of one
	// second can start within the same second.
	ScopedEnv tz("TZ", "UTC");
	tzset();
	CHECK(unused_window_path("/d/cpu-1.folded", {}) == "/d/cpu-1.folded");
	CHECK(unused_window_path("/d/cpu-1.folded", {"/d/cpu-1.folded"}) == "/d/cpu-1.1.folded");
	CHECK(unused_window_path("/d/cpu-1.folded", {"/d/cpu-1.folded", "/d/cpu-1.1.folded"}) == "/d/cpu-1.2.folded");
	CHECK(unused_window_path("cpu.pb.gz", {"cpu.pb.gz"}) == "cpu.1.pb.gz");
	CHECK(unused_window_path("x.gz", {"x.gz"}) == "x.1.gz");
	CHECK(unused_window_path("/d.v2/cpu", {"/d.v2/cpu"}) == "/d.v2/cpu.1");
	CHECK(unused_window_path("/d/.cpu", {"/d/.cpu"}) == "/d/.cpu.1");
	TempDir dir;
	Delivery delivery;
	delivery.format = ReportFormat::Folded;
	delivery.output_path = dir / "cpu-%H%M%S.folded";
	Reports reports(delivery, "host");
	const int64_t t = 1795440000000000000; // 2026-11-23T13:20:00.000Z
	for (int64_t start : {t, t + 993000000, t + 999000000, t + 1000000000}) {
		Profile profile;
		profile.start_time_ns = start;
		reports.window(profile, WindowAccount{}, start + 1000000000);
	}
	CHECK(reports.status() == 0);
	std::set<std::string> names;
	for (const auto &entry : std::filesystem::directory_iterator(dir.path()))
		names.insert(entry.path().filename());
	CHECK(names == std::set<std::string>{"cpu-132000.folded", "cpu-132000.1.folded", "cpu-132000.2.folded",
					     "cpu-132001.folded"});
	tzset();
}

} // TEST_SUITE

namespace {

// "... : 99 samples taken, 97 stored, 2 lost" -> {99, 97, 2}
struct Account {
	uint64_t taken = 0, stored = 0, lost = 0;
};
Account parse_account(const std::string &text)
{
	static const std::regex account("([0-9]+) samples? taken, ([0-9]+) stored(, ([0-9]+) lost)?");
	std::smatch m;
	Account a;
	if (std::regex_search(text, m, account)) {
		a.taken = std::stoull(m[1]);
		a.stored = std::stoull(m[2]);
		a.lost = m[4].matched ? std::stoull(m[4]) : 0;
	}
	return a;
}

// The windows of a run on stdout: each "# window START END: ACCOUNT" line and the folded
// lines after it.
struct StdoutWindow {
	std::string line;
	Account account;
	std::vector<FoldedLine> folded;
};
std::vector<StdoutWindow> split_windows(const std::string &out)
{
	std::vector<StdoutWindow> windows;
	std::string body;
	auto flush = [&] {
		if (!windows.empty())
			windows.back().folded = parse_folded(body);
		body.clear();
	};
	for (const std::string &line : split_lines(out)) {
		if (line.starts_with("# window ")) {
			flush();
			windows.push_back({line, parse_account(line), {}});
		} else if (!windows.empty()) {
			body += line + "\n";
		}
	}
	flush();
	return windows;
}

} // namespace

TEST_SUITE("integration") {

TEST_CASE("--interval 1 for 5 s: five files named by strftime, each appearing whole, each with split's share, adding up to the run" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	TempDir dir;
	Split split;
	// Every event on the directory: a report's final name may only ever appear by a rename.
	const int watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	REQUIRE(watch >= 0);
	REQUIRE(inotify_add_watch(watch, dir.path().c_str(), IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO) >= 0);

	const SplitSpent before = split.spent();
	auto r = profile({"-p", std::to_string(split.pid()), "-f", "499", "--folded", "--interval", "1", "-o",
			  dir / "cpu-%Y%m%dT%H%M%S.folded", "5"});
	const SplitSpent after = split.spent();
	INFO("stderr: " << r.err);
	REQUIRE(r.status == 0);
	CAPTURE(before);
	CAPTURE(after);

	std::map<std::string, uint32_t> events; // final names -> the events they had
	alignas(inotify_event) char buffer[1 << 16];
	ssize_t n;
	while ((n = read(watch, buffer, sizeof(buffer))) > 0)
		for (char *p = buffer; p < buffer + n;) {
			auto *e = reinterpret_cast<inotify_event *>(p);
			if (e->len && std::string(e->name).starts_with("cpu-"))
				events[e->name] |= e->mask;
			p += sizeof(inotify_event) + e->len;
		}
	close(watch);

	// One "wrote" line per window, naming its file by the window's start.
	static const std::regex wrote("profile: wrote ([^ ]+) \\(window [0-9-]+T([0-9]{2}):([0-9]{2}):([0-9]{2})\\.[0-9]+\\S* \\S+: ([^)]*)\\)");
	std::vector<std::pair<std::string, Account>> files;
	for (const std::string &line : split_lines(r.err)) {
		std::smatch m;
		if (std::regex_search(line, m, wrote)) {
			const std::string name = std::filesystem::path(m[1].str()).filename();
			// Two windows that start within one second share a name: the second is .1.
			CHECK(std::regex_match(name, std::regex("cpu-[0-9]{8}T[0-9]{6}(\\.[1-9])?\\.folded")));
			CHECK(name.substr(13, 6) == m[2].str() + m[3].str() + m[4].str());
			files.push_back({m[1], parse_account(m[5])});
		}
	}
	REQUIRE(files.size() == 5);
	CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), {}) == 5); // no temporary file left

	uint64_t stored = 0, taken = 0;
	for (const auto &[path, account] : files) {
		const std::string name = std::filesystem::path(path).filename();
		INFO(name);
		CHECK(events[name] == IN_MOVED_TO); // never created, written or closed under its own name
		std::vector<FoldedLine> lines = parse_folded(read_file(path));
		const uint64_t three = samples_with(lines, "split_hot_three"), one = samples_with(lines, "split_hot_one");
		// A second of one busy thread at 499 Hz (fewer on a loaded machine): with 500
		// samples, the measured share +- 0.12. The share is the run's, not the window's:
		// each round of split is the same 3:1 of iterations, a window holds thousands of
		// rounds, so a window's own share differs from the run's by far less than the
		// sampling's bound.
		CHECK(three + one >= 100);
		const SampledShare share = sampled_share(three, three + one, split_share(before, after), 0.03);
		CHECK_MESSAGE(share.ok, share);
		CHECK(total(lines) == account.stored);
		stored += account.stored;
		taken += account.taken;
	}
	const Account run = parse_account(r.err.substr(r.err.find("profile: 5 windows: ")));
	CHECK(run.taken == taken);
	CHECK(run.stored == stored);
	CHECK(run.taken == run.stored);
}

TEST_CASE("--interval on stdout with maps too small: every window opened by its line, windows adding up to the run's loss account" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	// Eight processes, each its own stack, into a counts map of 4: samples are lost, and the
	// maps are drained between the cuts as they fill.
	std::vector<std::unique_ptr<Background>> workloads;
	std::string pids;
	for (int i = 0; i < 8; i++) {
		workloads.push_back(std::make_unique<Background>(
			std::vector<std::string>{workload("stacks"), std::to_string(i * 4), "30", "500"})); // killed at the end
		pids += (i ? "," : "") + std::to_string(workloads.back()->pid());
	}
	auto r = profile({"-p", pids, "-f", "199", "-U", "--folded", "-E", "--hash-storage-size", "4", "--interval",
			  "1", "4"});
	INFO("stderr: " << r.err);
	REQUIRE(r.status == 0);
	std::vector<StdoutWindow> windows = split_windows(r.out);
	REQUIRE(windows.size() == 4);
	Account sum;
	for (const StdoutWindow &w : windows) {
		INFO(w.line);
		CHECK(w.account.taken == w.account.stored + w.account.lost);
		CHECK(total(w.folded) == w.account.stored);
		sum.taken += w.account.taken;
		sum.stored += w.account.stored;
		sum.lost += w.account.lost;
	}
	CHECK(sum.lost > 0);
	// The run's loss line: "profile: T samples taken, S stored, L lost: ..."
	std::smatch m;
	REQUIRE(std::regex_search(r.err, m, std::regex("profile: ([0-9]+) samples? taken, ([0-9]+) stored, ([0-9]+) lost: ")));
	CHECK(std::stoull(m[1]) == sum.taken);
	CHECK(std::stoull(m[2]) == sum.stored);
	CHECK(std::stoull(m[3]) == sum.lost);
	const Account run = parse_account(r.err.substr(r.err.find("profile: 4 windows: ")));
	CHECK(run.taken == sum.taken);
	CHECK(run.lost == sum.lost);
}

} // TEST_SUITE
