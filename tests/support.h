// tests/support.h: running programs from tests: the profiler, workloads, and their output.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

// CLOCK_MONOTONIC, in seconds.
double now();

struct CommandResult {
	int status = -1; // exit status, or 128+signal
	std::string out, err;
	double seconds = 0;
};

// Runs argv to completion (killed after timeout_s), capturing stdout and stderr.
// With signal_after_s >= 0, sends `signal` to it after that many seconds.
CommandResult run_command(const std::vector<std::string> &argv, double timeout_s = 60,
			  double signal_after_s = -1, int signal = 0, uid_t as_uid = 0);

// argv running with its stdout and stderr on pipes the test reads (as_uid: under that user
// and group); killed when it goes, unless wait() has already reaped it. pid() is -1 when
// it could not start.
class PipedProcess {
public:
	explicit PipedProcess(const std::vector<std::string> &argv, uid_t as_uid = 0);
	~PipedProcess();
	PipedProcess(const PipedProcess &) = delete;
	PipedProcess &operator=(const PipedProcess &) = delete;
	pid_t pid() const { return pid_; }
	// A line of stdout or stderr, read directly (blocks until it is there).
	std::string read_out_line();
	std::string read_err_line();
	// Closes the reading end of stdout, as `| head -1` does once it has its line.
	void close_out();
	// Whether stdout or stderr is still open: not at its end, nor closed.
	bool open() const { return out_ >= 0 || err_ >= 0; }
	// Waits up to timeout_ms for output, then appends what each pipe has to out and err
	// (nullptr: read and dropped). A pipe at its end is closed.
	void pump(int timeout_ms, std::string *out, std::string *err);
	// Waits for the exit: the exit status, or 128+signal.
	int wait();

private:
	pid_t pid_ = -1;
	int out_ = -1, err_ = -1;
};

// Work a test does in a process of its own: as another user, as a second writer, or where
// it may hang. The child of a fork of this runner, which has threads, may call only what is
// async-signal-safe until it execs (another thread may hold the allocator's lock at the
// fork, and the child then waits for it for ever), so the work runs in this runner execed
// anew: registered at namespace scope by name,
//     const ChildWork store("unwind cache: store", [](const std::vector<std::string> &args) { ...; return 0; });
// and run by the argv child_work_argv gives (with run_command or PipedProcess), its exit
// status what the function returned (125 when it threw).
using ChildWorkFunction = int (*)(const std::vector<std::string> &args);
struct ChildWork {
	ChildWork(const char *name, ChildWorkFunction work);
};
std::vector<std::string> child_work_argv(const std::string &name, const std::vector<std::string> &args);
// In main, before the tests: when argv is one child_work_argv made, runs that work and
// returns its exit status; otherwise -1.
int run_child_work(int argc, char **argv);

// A program running in the background for the length of a test; killed when it goes.
class Background {
public:
	explicit Background(const std::vector<std::string> &argv, int cpu = -1);
	~Background();
	Background(const Background &) = delete;
	Background &operator=(const Background &) = delete;
	pid_t pid() const { return pid_; }
	// First line the program printed (blocks until it is there).
	std::string read_line();
	int wait();

private:
	pid_t pid_ = -1;
	int out_ = -1;
};

// A fresh directory under base (by default $TMPDIR, or /tmp), removed with everything in
// it at the end.
class TempDir {
public:
	explicit TempDir(const std::string &base = "");
	~TempDir();
	TempDir(const TempDir &) = delete;
	TempDir &operator=(const TempDir &) = delete;
	const std::filesystem::path &path() const { return path_; }
	std::string operator/(const std::string &name) const { return path_.string() + "/" + name; }

private:
	std::filesystem::path path_;
};

std::string read_file(const std::string &path);
// A file a workload rewrites in place as it runs (its truth file): read until two reads
// agree and it is not empty (a read that meets a write half done is read again), waiting
// for its first write; what the last read gave after 3,000 reads.
std::string read_settled(const std::string &path);
// Writes data to path, making the directories it needs.
void write_file(const std::string &path, const std::string &data);

// Paths from the environment `make test` sets.
std::string profile_bin();
std::string output_dir();
std::string workload(const std::string &name);

std::vector<std::string> split_lines(const std::string &text);
bool contains(const std::string &text, const std::string &part);

// The lines the profiler's code says (base/diagnostics.h) while it lives, caught instead
// of written to stderr (which they go to again after it), each whole, without a newline.
struct CaughtLines {
	std::vector<std::string> lines;
	CaughtLines();
	~CaughtLines();
	CaughtLines(const CaughtLines &) = delete;
	CaughtLines &operator=(const CaughtLines &) = delete;
};

// --- running the profiler ------------------------------------------------------------------

// The test suite of the integration tests that the ASan+UBSan pass of `make test` runs as
// well (scripts/run-tests.sh says why not all): TEST_CASE("..." * doctest::test_suite(ASAN_TOO)).
// Together they run every part of the profiler: hostile ELF files, processes that exit
// and are forgotten, dlopen, debug links and JIT maps, table unwinding, Python frames,
// windows cut to files and to stdout with maps drained, pushing to a server, cgroups, signals.
#define ASAN_TOO "integration-asan"

// The integration tests run ./profile for real: they stop here unless run as root.
void require_root();

// The profiler's command line: profile_bin() and then args.
std::vector<std::string> profile_command(std::vector<std::string> args);
// Runs the profiler with args to completion (see run_command).
CommandResult profile(const std::vector<std::string> &args, double timeout_s = 60);

// One line of --folded output: "comm;root;...;leaf COUNT". Malformed lines fail the test.
struct FoldedLine {
	std::vector<std::string> frames; // root first; frames[0] is the comm
	uint64_t count = 0;
};
std::vector<FoldedLine> parse_folded(const std::string &out);

// All samples of the lines.
uint64_t total(const std::vector<FoldedLine> &lines);
// Samples of one comm.
uint64_t samples_of(const std::vector<FoldedLine> &lines, const std::string &comm);
// Samples whose stack holds frame, of one comm or (comm "") of any.
uint64_t samples_of_with(const std::vector<FoldedLine> &lines, const std::string &comm, const std::string &frame);
uint64_t samples_with(const std::vector<FoldedLine> &lines, const std::string &frame);

// Sets an environment variable for the programs a test starts, until the end of the scope.
class ScopedEnv {
public:
	ScopedEnv(const char *name, const char *value);
	~ScopedEnv();
	ScopedEnv(const ScopedEnv &) = delete;
	ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
	std::string name_, old_;
	bool had_ = false;
};

// --- judging what was sampled ----------------------------------------------------------------

// A share of samples checked against the share the workload is known to have. Sampling is
// a draw: of n samples, hits/n lies within z = 4.5 standard errors, z * sqrt(p (1 - p) / n),
// of the true share p but for a chance of about 1e-5; `allowance` adds what is systematic
// and no larger sample removes (a sample on a call's first or last instruction, the loop
// around the hot functions). Prints itself, for a CHECK's message:
//     const SampledShare s = sampled_share(three, three + one, 0.75);
//     CHECK_MESSAGE(s.ok, s);
struct SampledShare {
	uint64_t hits = 0, n = 0;
	double expected = 0, observed = 0, bound = 0;
	bool ok = false;
};
SampledShare sampled_share(uint64_t hits, uint64_t n, double expected, double allowance = 0.02);
std::ostream &operator<<(std::ostream &out, const SampledShare &share);

// What tests/workloads/split.c measured of its own CPU time, read from its TRUTH_FILE:
// nanoseconds spent in split_hot_three and in split_hot_one since it started. The truth a
// sampled split is judged by: how fast one loop runs against the other differs between
// CPUs, so no share is assumed.
struct SplitSpent {
	uint64_t three = 0, one = 0;
};
SplitSpent split_spent(const std::string &truth_file);
// split_hot_three's share of what the two took between two readings (0 when nothing ran).
double split_share(const SplitSpent &before, const SplitSpent &after);
std::ostream &operator<<(std::ostream &out, const SplitSpent &spent);

// tests/workloads/split.c running in the background with its truth file, once it is there.
// Read spent() before and after a profile of it, and judge the profile by split_share:
//     Split split;
//     const SplitSpent before = split.spent();
//     ... profile it ...
//     sampled_share(three, three + one, split_share(before, split.spent()))
class Split {
public:
	explicit Split(const std::string &seconds = "30");
	pid_t pid() const { return program_.pid(); }
	SplitSpent spent() const { return split_spent(truth_); }

private:
	TempDir dir_;
	std::string truth_;
	Background program_;
};

// --- time off the CPU ---------------------------------------------------------------------

// profile --off-cpu with args, --folded into a file, from its attach (its header line) until
// it is sent SIGINT `seconds` later: at_start and at_end run at those two moments (to read
// what a workload measured of itself over the same time). Its exit status, stderr and lines.
struct OffCpuRun {
	int status = -1;
	std::string err;
	std::vector<FoldedLine> lines;
};
OffCpuRun off_cpu_run(std::vector<std::string> args, double seconds, const std::function<void()> &at_start,
		      const std::function<void()> &at_end);

// --- tests that cannot run here ------------------------------------------------------------

// The test needs what this machine lacks (a tool, root): outside CI it says so and is
// counted as skipped, in the runner's "N skipped" line; on CI (CI set) it fails, since CI
// installs every tool and runs as root. The caller returns right after.
void skip_test(const std::string &why);
// Whether this is CI: CI set, and not to "", "false" or "0".
bool on_ci();
// The tests skipped so far: name and why.
const std::vector<std::pair<std::string, std::string>> &skipped_tests();
// The runner's listener says which test runs (for skip_test's record).
void set_current_test(const std::string &name);

// --- cgroups ----------------------------------------------------------------------------------

// A cgroup v2 group made for a test, with its parent: emptied (cgroup.kill) and removed
// at the end, whatever the test's outcome.
class TestCgroup {
public:
	TestCgroup(const std::string &mount, const std::string &leaf);
	~TestCgroup();
	TestCgroup(const TestCgroup &) = delete;
	TestCgroup &operator=(const TestCgroup &) = delete;
	const std::string &path() const { return path_; }

	// The process of that comm in the group, once it is there; 0 after 5 s without.
	uint32_t process(const std::string &comm) const;

private:
	std::string parent_, path_;
};

// Where the cgroup2 file system is mounted; fails the test when it is not.
std::string cgroup2_mount_or_fail();

// The ids of the BPF objects process pid holds, from /proc/PID/fdinfo: "prog" (the
// "prog_id:" of a program's fd) and "link" (the "link_id:" of a link's).
std::map<std::string, std::set<uint32_t>> bpf_ids_of(pid_t pid);
