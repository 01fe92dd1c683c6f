// tests/test_unwind.cpp: whole user stacks without frame pointers: the real ./profile's
// table unwinder on a workload built as Debian builds its packages, on Debian's own
// python3, on JIT code, and the frame-pointer path it leaves as it was.
#include <doctest/doctest.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <set>

#include "tests/support.h"

namespace {

// The outermost frames a whole stack ends in: where CFI says the return address is
// undefined (_start, clone3), or the C library's entry points below main and threads.
bool reaches_root(const FoldedLine &line)
{
	static const std::set<std::string> roots = {"_start", "__libc_start_main", "__libc_start_main_impl",
						    "__libc_start_call_main", "start_thread", "clone3", "clone", "__clone3"};
	return line.frames.size() > 1 && roots.count(line.frames[1]);
}

// The share of user stacks cut short while their tables were still being built, from the
// run's account line ("profile: user stacks: ..., 3.1 % cut short while tables were built,
// ..."); 0 when it names none.
double pending_share(const std::string &err)
{
	std::smatch m;
	static const std::regex pending("([0-9.]+) % cut short while tables were built");
	return std::regex_search(err, m, pending) ? std::stod(m[1]) / 100 : 0;
}

// How many of a process's samples reach the root, out of those taken once its tables were
// ready: a sample taken before stops where its table is missing, and says nothing of the
// tables. The account gives the share of such samples among all user stacks walked, of
// every process the run saw; those of this process are among its stacks that do not reach
// the root, so at most that many are taken off its count (on a machine busy with other
// new programs, the whole run's count alone would swamp it).
struct RootShare {
	uint64_t samples = 0, whole = 0, pending = 0;
	double share() const
	{
		const uint64_t ready = samples - std::min(pending, samples - whole);
		return ready ? double(whole) / double(ready) : 0;
	}
};

RootShare root_share(const std::vector<FoldedLine> &lines, const std::string &comm, const std::string &err = "")
{
	RootShare s;
	for (const FoldedLine &l : lines)
		if (l.frames[0] == comm) {
			s.samples += l.count;
			s.whole += reaches_root(l) ? l.count : 0;
		}
	s.pending = uint64_t(std::ceil(pending_share(err) * double(total(lines))));
	return s;
}

std::ostream &operator<<(std::ostream &out, const RootShare &s)
{
	return out << s.whole << " of " << s.samples << " samples reach the root, " << s.pending
		   << " of them perhaps taken before the tables were ready: " << s.share();
}

// The samples of lines with a frame named `callee` (by prefix) whose caller, the frame
// before it, is `caller`; and all samples with `callee`.
std::pair<uint64_t, uint64_t> called_from(const std::vector<FoldedLine> &lines, const std::string &callee,
					  const std::string &caller)
{
	uint64_t under = 0, all = 0;
	for (const FoldedLine &l : lines)
		for (size_t i = 2; i < l.frames.size(); i++)
			if (l.frames[i].starts_with(callee)) {
				all += l.count;
				under += l.frames[i - 1] == caller ? l.count : 0;
				break;
			}
	return {under, all};
}

std::string worst_lines(const std::vector<FoldedLine> &lines)
{
	std::string text;
	size_t n = 0;
	for (const FoldedLine &l : lines)
		if (!reaches_root(l) && n++ < 10) {
			for (const std::string &f : l.frames)
				text += f + ";";
			text += " " + std::to_string(l.count) + "\n";
		}
	return text;
}

} // namespace

TEST_SUITE("integration") {

TEST_CASE("--unwind auto: a program built without frame pointers is unwound to its root through qsort and bsearch" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	Background nofp({workload("nofp"), "30"});
	auto r = profile({"-p", std::to_string(nofp.pid()), "-U", "-f", "499", "--folded", "4"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	auto lines = parse_folded(r.out);
	INFO("stderr:\n" << r.err << "stacks not reaching the root:\n" << worst_lines(lines));
	RootShare root = root_share(lines, "nofp", r.err);
	// Enough samples to tell 95 % from less (about 2000 on a quiet machine; a loaded one
	// gives the workload a fraction of a CPU, and fewer).
	REQUIRE(root.samples > root.pending + 150);
	CHECK_MESSAGE(root.share() >= 0.95, root);

	// strcmp under the comparator, the comparator under glibc's sort and search, and the
	// program's own callers below them: no frame skipped, none invented.
	auto [strcmp_under, strcmp_all] = called_from(lines, "__strcmp", "compare_names");
	CHECK(strcmp_all > 50);
	// Samples from before the tables were ready may be among them: taken off, as above.
	auto ready = [&](uint64_t n) { return n > root.pending ? n - root.pending : 0; };
	CHECK(strcmp_under * 100 >= ready(strcmp_all) * 95);
	uint64_t comparator = 0, comparator_whole = 0;
	for (const FoldedLine &l : lines) {
		auto at = std::find(l.frames.begin(), l.frames.end(), std::string("compare_names"));
		if (at == l.frames.end())
			continue;
		comparator += l.count;
		const bool sort = std::find(l.frames.begin(), at, std::string("sort_names")) != at;
		const bool search = std::find(l.frames.begin(), at, std::string("find_names")) != at;
		// qsort's merge sort calls the comparator; bsearch is inlined into find_names, an
		// inlined frame right above it.
		const bool by_libc = at[-1].starts_with("msort") || at[-1].starts_with("qsort") ||
				     (at[-1] == "bsearch" && at[-2] == "find_names");
		if ((sort || search) && by_libc && std::find(l.frames.begin(), at, std::string("main")) != at &&
		    std::find(l.frames.begin(), at, std::string("nested")) != at)
			comparator_whole += l.count;
	}
	CHECK(comparator > 50);
	CHECK(comparator_whole * 100 >= ready(comparator) * 95);
	CHECK(contains(r.err, "% from unwind tables"));
}

TEST_CASE("whole machine: short-lived processes of a program without frame pointers reach their roots, walked in the kernel")
{
	require_root();
	// Processes one after another: every one is new to the profiler, and most start after
	// it, so none of them can have been sent from /proc before sampling. The kernel must know
	// each one's mappings from its exec on (its hooks), and a file one of them asked for must
	// get its table though the process may be gone by the time user space answers (found
	// through the run's records of its mappings): else each sample of each process waits,
	// is kept raw and walked in user space.
	std::string count, each, hz;
	uint64_t floor = 0;
	SUBCASE("forty of 0.15 s at 499 Hz")
	{
		count = "40", each = "0.15", hz = "499", floor = 300;
	}
	SUBCASE("150 of 20 ms at 49 Hz, where user space looks at what the walk asked for every 100 ms")
	{
		count = "150", each = "0.02", hz = "49", floor = 50;
	}
	Background loop({"/bin/sh", "-c", "for i in $(seq " + count + "); do " + workload("nofp") + " " + each + "; done"});
	ScopedEnv debug("PROFILE_DEBUG", "1");
	auto r = profile({"-U", "-F", hz, "--folded", "3"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	auto lines = parse_folded(r.out);
	INFO("stderr:\n" << r.err << "stacks not reaching the root:\n" << worst_lines(lines));
	RootShare root = root_share(lines, "nofp", r.err);
	REQUIRE(root.samples > floor);
	CHECK(root.share() >= 0.9);
	std::smatch waited;
	REQUIRE(std::regex_search(r.err, waited, std::regex("walks that waited for tables: ([0-9]+) for the process's "
							    "mappings, ([0-9]+) for a file's object")));
	// None but a rare race (a fork while another thread of the parent maps code; a burst of
	// execs that outruns the kernel's allocator for the lists): these are a few samples of
	// the whole machine's, where a run whose kernel cannot follow has most of them wait.
	CHECK(std::stoull(waited[1]) * 20 <= root.samples);
	// The account says how many stacks stopped at a table not yet in, or were kept raw for
	// it: those of a file's first minutes of fame, a tick or two, more on a loaded machine;
	// never most of them.
	std::smatch kept;
	const double raw = std::regex_search(r.err, kept, std::regex("([0-9.]+) % kept raw while tables were built"))
				   ? std::stod(kept[1]) / 100
				   : 0;
	CHECK(raw + pending_share(r.err) < 0.15);
}

TEST_CASE("whole machine: a file first met in a process already gone gets its table from the process's records")
{
	require_root();
	// Three copies of the workload, new files to the run, each run 40 times for 20 ms: the
	// process whose sample announced a copy is gone when user space answers, a tick later
	// (100 ms at 49 Hz). Its path comes from the run's records of that process's mappings;
	// without them each copy would wait for an announcement from a process still alive,
	// and its samples meanwhile be kept raw.
	TempDir dir;
	for (int i = 1; i <= 3; i++)
		std::filesystem::copy_file(workload("nofp"), dir / ("gonefile" + std::to_string(i)));
	Background loop({"/bin/sh", "-c",
			 "for i in $(seq 40); do for c in 1 2 3; do " + dir / "gonefile$c" + " 0.02; done; done"});
	ScopedEnv debug("PROFILE_DEBUG", "1");
	auto r = profile({"-U", "-f", "49", "--folded", "3"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	INFO("stderr:\n" << r.err);
	uint64_t samples = 0;
	for (const FoldedLine &l : parse_folded(r.out))
		samples += l.frames[0].starts_with("gonefile") ? l.count : 0;
	REQUIRE(samples > 60);
	std::smatch waited;
	REQUIRE(std::regex_search(r.err, waited, std::regex("([0-9]+) for a file's object")));
	CHECK_MESSAGE(std::stoull(waited[1]) * 5 < samples,
		      waited[1] << " walks waited for a file's object; the copies had " << samples << " samples");
}

TEST_CASE("whole machine: samples taken while a new program's table is built are kept raw and reach their roots")
{
	require_root();
	// Five copies of the workload, each a file the run has not met, started one after
	// another over the run (those that start before sampling does leave no samples): the
	// first samples of each come before its table is in, a tick or more after it first
	// runs (built, or read from the cache by the build id the copies share).
	TempDir dir;
	std::string loop = "for i in 1 2 3 4 5; do sleep 0.4; ";
	for (int i = 1; i <= 5; i++)
		std::filesystem::copy_file(workload("nofp"), dir / ("rawfresh" + std::to_string(i)));
	loop += dir / "rawfresh$i 0.3; done";
	Background copies({"/bin/sh", "-c", loop});
	auto r = profile({"-U", "-F", "999", "--folded", "4"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	auto lines = parse_folded(r.out);
	std::vector<FoldedLine> fresh;
	for (const FoldedLine &l : lines)
		if (l.frames[0].starts_with("rawfresh")) {
			fresh.push_back(l);
			fresh.back().frames[0] = "rawfresh";
		}
	INFO("stderr:\n" << r.err << "stacks not reaching the root:\n" << worst_lines(fresh));
	std::smatch kept;
	REQUIRE(std::regex_search(r.err, kept, std::regex("([0-9.]+) % kept raw while tables were built and walked "
							  "later \\(([0-9]+) of ([0-9]+) still cut short\\)")));
	CHECK(std::stoull(kept[3]) > 0);
	// Every sample reaches the root but those a full set of raw slots left cut short (the
	// account's share of all stacks, taken off these), and the few of a process's first
	// and last instructions (in ld.so, in exit).
	RootShare root = root_share(fresh, "rawfresh", r.err);
	REQUIRE(root.samples > root.pending + 100);
	const SampledShare whole = sampled_share(root.whole, root.samples - root.pending, 0.99);
	CHECK_MESSAGE(whole.observed >= whole.expected - whole.bound, whole);
}

TEST_CASE("the table cache: kept in $CACHE_DIRECTORY/unwind for the next run; a full one gives one warning and the run goes on")
{
	require_root();
	// Three runs of it: it must outlive them even when each one's start is slow (it is
	// killed at the end).
	Background nofp({workload("nofp"), "60"});
	const std::vector<std::string> args = {"-p", std::to_string(nofp.pid()), "-U", "-f", "199", "--folded", "1"};
	TempDir dir;
	REQUIRE(chmod(dir.path().c_str(), 0700) == 0);
	{
		ScopedEnv cache("CACHE_DIRECTORY", dir.path().c_str());
		ScopedEnv debug("PROFILE_DEBUG", "1");
		auto first = profile(args);
		REQUIRE_MESSAGE(first.status == 0, first.err);
		CHECK(!contains(first.err, "warning: unwind"));
		CHECK(std::distance(std::filesystem::directory_iterator(dir / "unwind"),
				    std::filesystem::directory_iterator()) > 2);
		auto second = profile(args);
		REQUIRE_MESSAGE(second.status == 0, second.err);
		CHECK(contains(second.err, "from the cache"));
		CHECK(contains(second.err, "profile: unwind cache " + dir / "unwind" + ": "));
	}

	// 64 KiB: libc's table alone does not fit.
	const std::string full = dir / "full";
	REQUIRE(mkdir(full.c_str(), 0700) == 0);
	REQUIRE(mount("tmpfs", full.c_str(), "tmpfs", 0, "size=64k,mode=0700") == 0);
	struct Unmount {
		std::string at;
		~Unmount() { umount2(at.c_str(), MNT_DETACH); }
	} unmount{full};
	ScopedEnv cache("CACHE_DIRECTORY", full.c_str());
	auto r = profile(args);
	REQUIRE_MESSAGE(r.status == 0, r.err);
	size_t warnings = 0;
	for (const std::string &line : split_lines(r.err))
		warnings += line.starts_with("profile: warning: unwind tables are not cached: ");
	CHECK_MESSAGE(warnings == 1, r.err);
	CHECK(contains(r.err, "profile: warning: unwind tables are not cached: " + full + "/unwind: No space left on device"));
	CHECK(contains(r.err, "% from unwind tables"));
	CHECK(!parse_folded(r.out).empty());
}

TEST_CASE("the table cache: root shares the agent's, a private directory of its unit's user, and what it adds is that user's")
{
	require_root();
	Background nofp({workload("nofp"), "30"});
	const std::vector<std::string> args = {"-p", std::to_string(nofp.pid()), "-U", "-f", "199", "--folded", "1"};
	// As systemd makes it for the unit's DynamicUser= (65534 here), and the agent its unwind/.
	TempDir dir;
	const std::string agent = dir / "agent", cache = agent + "/unwind";
	REQUIRE(mkdir(agent.c_str(), 0700) == 0);
	REQUIRE(mkdir(cache.c_str(), 0700) == 0);
	REQUIRE(chown(agent.c_str(), 65534, 65534) == 0);
	REQUIRE(chown(cache.c_str(), 65534, 65534) == 0);
	ScopedEnv directory("CACHE_DIRECTORY", agent.c_str());
	ScopedEnv debug("PROFILE_DEBUG", "1");
	auto first = profile(args);
	REQUIRE_MESSAGE(first.status == 0, first.err);
	CHECK_MESSAGE(!contains(first.err, "warning: unwind"), first.err);
	size_t files = 0;
	for (const auto &entry : std::filesystem::directory_iterator(cache)) {
		struct stat st {};
		REQUIRE(stat(entry.path().c_str(), &st) == 0);
		CHECK(st.st_uid == 65534);
		CHECK((st.st_mode & 07777) == 0600);
		files++;
	}
	CHECK(files > 2);
	auto second = profile(args);
	REQUIRE_MESSAGE(second.status == 0, second.err);
	CHECK(contains(second.err, "from the cache"));
}

TEST_CASE("--unwind fp: the frame-pointer path loses the callers of code built without frame pointers")
{
	require_root();
	Background nofp({workload("nofp"), "30"});
	auto r = profile({"--unwind", "fp", "-p", std::to_string(nofp.pid()), "-U", "-f", "499", "--folded", "2"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	auto lines = parse_folded(r.out);
	RootShare root = root_share(lines, "nofp");
	REQUIRE(root.samples > 200);
	// What the tables are for: a frame-pointer walk reaches the root in few samples.
	CHECK(root.share() < 0.5);
	CHECK(!contains(r.err, "unwind tables"));
}

TEST_CASE("--unwind dwarf: tables only; Debian's python3 is unwound to its root")
{
	require_root();
	const std::string python = "/usr/bin/python3";
	if (access(python.c_str(), X_OK) != 0) {
		// CI installs python3 (scripts/install-deps.sh): a skip there is a failure.
		skip_test(python + " is missing (apt-get install python3)");
		return;
	}
	Background py({python, "-c",
		       "import sys\n"
		       "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
		       "print('ready', flush=True)\n"
		       "while True:\n    fib(22)\n"});
	CHECK(py.read_line() == "ready");
	for (const char *mode : {"auto", "dwarf"}) {
		CAPTURE(mode);
		auto r = profile({"--unwind", mode, "-p", std::to_string(py.pid()), "-U", "-f", "499", "--folded", "3"});
		REQUIRE_MESSAGE(r.status == 0, r.err);
		auto lines = parse_folded(r.out);
		INFO("stderr:\n" << r.err << "stacks not reaching the root:\n" << worst_lines(lines));
		RootShare root = root_share(lines, "python3", r.err);
		REQUIRE(root.samples > root.pending + 300);
		CHECK_MESSAGE(root.share() >= 0.95, root);
		// The interpreter's own frames between main and the evaluation loop.
		CHECK(samples_with(lines, "Py_RunMain") * 100 >= (root.samples - root.pending) * 90);
	}
}

TEST_CASE("--unwind auto: JIT code in anonymous memory and frame-pointer programs stay whole")
{
	require_root();
	Background jit({workload("jit"), "30"});
	Background split({workload("split"), "30"});
	const std::string perf_map = "/tmp/perf-" + std::to_string(jit.pid()) + ".map";
	struct Remove {
		std::string path;
		~Remove() { std::filesystem::remove(path); }
	} remove{perf_map};
	auto r = profile({"-p", std::to_string(jit.pid()) + "," + std::to_string(split.pid()), "-U", "-f", "499",
			  "--folded", "2"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	auto lines = parse_folded(r.out);
	INFO("stderr:\n" << r.err << "\nstdout:\n" << r.out);
	// The JIT frame has no table: one frame-pointer step takes the walk back to main, and
	// the tables to the root.
	auto [jit_under_main, jit_all] = called_from(lines, "jit_spin_loop", "main");
	CHECK(jit_all > 100);
	CHECK(jit_under_main * 100 >= jit_all * 98);
	CHECK_MESSAGE(root_share(lines, "jit", r.err).share() >= 0.95, root_share(lines, "jit", r.err));
	CHECK_MESSAGE(root_share(lines, "split", r.err).share() >= 0.95, root_share(lines, "split", r.err));
	CHECK(contains(r.err, "through code without tables"));
}

TEST_CASE("--unwind dwarf: a stack that meets code without a table ends in [truncated]")
{
	require_root();
	Background jit({workload("jit"), "30"});
	const std::string perf_map = "/tmp/perf-" + std::to_string(jit.pid()) + ".map";
	struct Remove {
		std::string path;
		~Remove() { std::filesystem::remove(path); }
	} remove{perf_map};
	auto r = profile({"--unwind", "dwarf", "-p", std::to_string(jit.pid()), "-U", "-f", "499", "--folded", "2"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	auto lines = parse_folded(r.out);
	INFO("stdout:\n" << r.out);
	uint64_t jitted = 0, truncated = 0;
	for (const FoldedLine &l : lines)
		if (l.frames.back() == "jit_spin_loop") {
			jitted += l.count;
			truncated += l.frames.size() == 3 && l.frames[1] == "[truncated]" ? l.count : 0;
		}
	CHECK(jitted > 100);
	CHECK(truncated == jitted);
	CHECK(contains(r.err, "cut short"));
}

TEST_CASE("a 6 s system-wide run at 999 Hz with two workloads loses nothing")
{
	require_root();
	Background nofp({workload("nofp"), "30"});
	Background split({workload("split"), "30"});
	auto r = profile({"-f", "999", "--folded", "6"}, 60);
	REQUIRE_MESSAGE(r.status == 0, r.err);
	INFO("stderr:\n" << r.err);
	CHECK(!contains(r.err, " lost"));
	auto lines = parse_folded(r.out);
	CHECK(total(lines) > 9000);
	CHECK_MESSAGE(root_share(lines, "nofp", r.err).share() >= 0.95, root_share(lines, "nofp", r.err));
}

} // TEST_SUITE
