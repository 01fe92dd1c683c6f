// tests/support.cpp: fork/exec with pipes, timeouts and signals, and the profiler's folded
// output, for the integration tests.
#include "tests/support.h"

#include "base/diagnostics.h"
#include "proc/cgroup.h"

#include <doctest/doctest.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace {

// argv as execv takes it, made before the fork: until it execs, the child of a process
// with threads may call only what is async-signal-safe. Another thread may hold a lock at
// the fork, and the child then waits for it forever: once, under ASan, a child spun in the
// allocator's lock while building this list, and its test waited with it.
std::vector<char *> exec_args(const std::vector<std::string> &argv)
{
	std::vector<char *> args;
	for (const std::string &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	return args;
}

// In the child after fork: runs args, or exits 127. The stop signals are let through and
// take their default action again, whatever the runner was started with: profile keeps
// SIGHUP ignored when it starts so (nohup), and the tests that send it would wait for
// nothing under `nohup make check`.
[[noreturn]] void exec_child(const std::vector<char *> &args)
{
	sigset_t stop;
	sigemptyset(&stop);
	for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
		struct sigaction default_action {};
		default_action.sa_handler = SIG_DFL;
		sigaction(signal, &default_action, nullptr);
		sigaddset(&stop, signal);
	}
	sigprocmask(SIG_UNBLOCK, &stop, nullptr);
	execv(args[0], args.data());
	_exit(127);
}

// Waits for pid to exit and forgets it: the exit status, or 128+signal (-1 with no pid).
int reap(pid_t &pid)
{
	if (pid <= 0)
		return -1;
	int status = 0;
	waitpid(pid, &status, 0);
	pid = -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

void kill_and_reap(pid_t &pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		reap(pid);
	}
}

void close_fd(int &fd)
{
	if (fd >= 0)
		close(fd);
	fd = -1;
}

// A line read a byte at a time, so that nothing after it is taken from the pipe.
std::string read_fd_line(int fd)
{
	std::string line;
	char c;
	while (read(fd, &c, 1) == 1 && c != '\n')
		line += c;
	return line;
}

} // namespace

double now()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

CommandResult run_command(const std::vector<std::string> &argv, double timeout_s, double signal_after_s,
			  int signal_number, uid_t as_uid)
{
	CommandResult result;
	const double start = now();
	PipedProcess child(argv, as_uid);
	if (child.pid() < 0)
		return result;
	bool signalled = false;
	while (child.open()) {
		double elapsed = now() - start;
		if (!signalled && signal_after_s >= 0 && elapsed >= signal_after_s) {
			kill(child.pid(), signal_number);
			signalled = true;
		}
		if (elapsed > timeout_s) {
			kill(child.pid(), SIGKILL);
			break;
		}
		child.pump(50, &result.out, &result.err);
	}
	result.status = child.wait();
	result.seconds = now() - start;
	return result;
}

PipedProcess::PipedProcess(const std::vector<std::string> &argv, uid_t as_uid)
{
	int out[2], err[2];
	if (pipe2(out, O_CLOEXEC))
		return;
	if (pipe2(err, O_CLOEXEC)) {
		close(out[0]);
		close(out[1]);
		return;
	}
	const std::vector<char *> args = exec_args(argv);
	pid_ = fork();
	if (pid_ == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (as_uid && (setgid(as_uid) || setuid(as_uid)))
			_exit(126);
		exec_child(args);
	}
	close(out[1]);
	close(err[1]);
	out_ = out[0];
	err_ = err[0];
	if (pid_ < 0) {
		close_fd(out_);
		close_fd(err_);
	}
}

PipedProcess::~PipedProcess()
{
	kill_and_reap(pid_);
	close_fd(out_);
	close_fd(err_);
}

std::string PipedProcess::read_out_line()
{
	return read_fd_line(out_);
}

std::string PipedProcess::read_err_line()
{
	return read_fd_line(err_);
}

void PipedProcess::close_out()
{
	close_fd(out_);
}

void PipedProcess::pump(int timeout_ms, std::string *out, std::string *err)
{
	pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
	if (poll(fds, 2, timeout_ms) <= 0)
		return;
	for (pollfd &p : fds) {
		if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP)))
			continue;
		const bool is_out = p.fd == out_;
		char buffer[65536];
		ssize_t n = read(p.fd, buffer, sizeof(buffer));
		if (n <= 0)
			close_fd(is_out ? out_ : err_);
		else if (std::string *text = is_out ? out : err)
			text->append(buffer, size_t(n));
	}
}

int PipedProcess::wait()
{
	return reap(pid_);
}

namespace {

std::map<std::string, ChildWorkFunction> &child_works()
{
	static std::map<std::string, ChildWorkFunction> works;
	return works;
}

constexpr const char *kChildWork = "--child-work";

} // namespace

ChildWork::ChildWork(const char *name, ChildWorkFunction work)
{
	child_works()[name] = work;
}

std::vector<std::string> child_work_argv(const std::string &name, const std::vector<std::string> &args)
{
	REQUIRE_MESSAGE(child_works().count(name), "no child work is named " << name);
	std::vector<std::string> argv = {std::filesystem::read_symlink("/proc/self/exe"), kChildWork, name};
	argv.insert(argv.end(), args.begin(), args.end());
	return argv;
}

int run_child_work(int argc, char **argv)
{
	if (argc < 3 || std::string(argv[1]) != kChildWork)
		return -1;
	const auto work = child_works().find(argv[2]);
	if (work == child_works().end())
		return 127;
	try {
		return work->second(std::vector<std::string>(argv + 3, argv + argc));
	} catch (...) {
		return 125;
	}
}

Background::Background(const std::vector<std::string> &argv, int cpu)
{
	int out[2];
	if (pipe2(out, O_CLOEXEC))
		return;
	const std::vector<char *> args = exec_args(argv);
	pid_ = fork();
	if (pid_ == 0) {
		dup2(out[1], 1);
		if (cpu >= 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		exec_child(args);
	}
	close(out[1]);
	out_ = out[0];
}

Background::~Background()
{
	kill_and_reap(pid_);
	close_fd(out_);
}

std::string Background::read_line()
{
	return read_fd_line(out_);
}

int Background::wait()
{
	return reap(pid_);
}

std::string profile_bin()
{
	const char *bin = getenv("PROFILE_BIN");
	return bin ? bin : "./profile";
}

std::string output_dir()
{
	const char *dir = getenv("TEST_OUTPUT");
	return dir ? dir : "build";
}

std::string workload(const std::string &name)
{
	return output_dir() + "/workloads/" + name;
}

std::vector<std::string> split_lines(const std::string &text)
{
	std::vector<std::string> lines;
	size_t start = 0;
	while (start < text.size()) {
		size_t end = text.find('\n', start);
		if (end == std::string::npos)
			end = text.size();
		lines.push_back(text.substr(start, end - start));
		start = end + 1;
	}
	return lines;
}

bool contains(const std::string &text, const std::string &part)
{
	return text.find(part) != std::string::npos;
}

CaughtLines::CaughtLines()
{
	diagnostics::set_sink([this](const std::string &line) { lines.push_back(line); });
}

CaughtLines::~CaughtLines()
{
	diagnostics::set_sink({});
}

void require_root()
{
	REQUIRE_MESSAGE(geteuid() == 0, "the integration tests run ./profile for real and need root: use `make test`");
}

std::vector<std::string> profile_command(std::vector<std::string> args)
{
	args.insert(args.begin(), profile_bin());
	return args;
}

OffCpuRun off_cpu_run(std::vector<std::string> args, double seconds, const std::function<void()> &at_start,
		      const std::function<void()> &at_end)
{
	TempDir dir;
	args.insert(args.begin(), "--off-cpu");
	args.insert(args.end(), {"--folded", "-o", dir / "out.folded"});
	PipedProcess run(profile_command(args));
	REQUIRE(run.pid() > 0);
	OffCpuRun result;
	std::string line;
	while (!(line = run.read_err_line()).empty() && !line.starts_with("Tracing off-CPU time"))
		result.err += line;
	REQUIRE_MESSAGE(line.starts_with("Tracing off-CPU time"), result.err);
	at_start();
	const double end = now() + seconds;
	while (now() < end)
		usleep(1000);
	at_end();
	kill(run.pid(), SIGINT);
	while (run.open())
		run.pump(1000, nullptr, &result.err);
	result.status = run.wait();
	result.lines = parse_folded(read_file(dir / "out.folded"));
	return result;
}

CommandResult profile(const std::vector<std::string> &args, double timeout_s)
{
	return run_command(profile_command(args), timeout_s);
}

std::vector<FoldedLine> parse_folded(const std::string &out)
{
	std::vector<FoldedLine> lines;
	for (const std::string &line : split_lines(out)) {
		size_t space = line.rfind(' ');
		REQUIRE_MESSAGE(space != std::string::npos, "folded line without a count: " << line);
		std::string count = line.substr(space + 1);
		REQUIRE_MESSAGE((!count.empty() && count.find_first_not_of("0123456789") == std::string::npos),
				"bad count in: " << line);
		FoldedLine folded;
		folded.count = std::stoull(count);
		std::string stack = line.substr(0, space);
		size_t start = 0;
		while (true) {
			size_t semi = stack.find(';', start);
			folded.frames.push_back(stack.substr(start, semi - start));
			if (semi == std::string::npos)
				break;
			start = semi + 1;
		}
		REQUIRE_MESSAGE(!folded.frames[0].empty(), "empty comm in: " << line);
		lines.push_back(folded);
	}
	return lines;
}

uint64_t total(const std::vector<FoldedLine> &lines)
{
	uint64_t n = 0;
	for (const auto &l : lines)
		n += l.count;
	return n;
}

uint64_t samples_of(const std::vector<FoldedLine> &lines, const std::string &comm)
{
	uint64_t n = 0;
	for (const auto &l : lines)
		if (l.frames[0] == comm)
			n += l.count;
	return n;
}

uint64_t samples_of_with(const std::vector<FoldedLine> &lines, const std::string &comm, const std::string &frame)
{
	uint64_t n = 0;
	for (const auto &l : lines)
		if ((comm.empty() || l.frames[0] == comm) &&
		    std::find(l.frames.begin() + 1, l.frames.end(), frame) != l.frames.end())
			n += l.count;
	return n;
}

uint64_t samples_with(const std::vector<FoldedLine> &lines, const std::string &frame)
{
	return samples_of_with(lines, "", frame);
}

ScopedEnv::ScopedEnv(const char *name, const char *value) : name_(name)
{
	if (const char *old = getenv(name)) {
		had_ = true;
		old_ = old;
	}
	setenv(name, value, 1);
}

ScopedEnv::~ScopedEnv()
{
	if (had_)
		setenv(name_.c_str(), old_.c_str(), 1);
	else
		unsetenv(name_.c_str());
}

TempDir::TempDir(const std::string &base)
{
	const char *tmpdir = std::getenv("TMPDIR");
	std::string pattern = (!base.empty() ? base : tmpdir && *tmpdir ? tmpdir : "/tmp") + "/profile-test-XXXXXX";
	if (!mkdtemp(pattern.data()))
		throw std::runtime_error("mkdtemp failed for " + pattern);
	path_ = pattern;
}

TempDir::~TempDir()
{
	std::error_code ignored;
	std::filesystem::remove_all(path_, ignored);
}

std::string read_file(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	std::ostringstream data;
	data << in.rdbuf();
	return data.str();
}

std::string read_settled(const std::string &path)
{
	std::string last, text;
	for (int i = 0; i < 3000; i++) {
		text = read_file(path);
		if (!text.empty() && text == last)
			break;
		if (text.empty())
			usleep(10000);
		last = text;
	}
	return text;
}

void write_file(const std::string &path, const std::string &data)
{
	std::filesystem::create_directories(std::filesystem::path(path).parent_path());
	std::ofstream out(path, std::ios::binary);
	out << data;
}

SplitSpent split_spent(const std::string &truth_file)
{
	// Mapped, not read: split adds to the totals as the test reads them, and an aligned
	// 8-byte load sees each whole, where read() may copy a total half before a store.
	SplitSpent spent;
	const int fd = open(truth_file.c_str(), O_RDONLY | O_CLOEXEC);
	REQUIRE_MESSAGE(fd >= 0, truth_file << ": " << strerror(errno));
	void *map = mmap(nullptr, 2 * sizeof(uint64_t), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	REQUIRE_MESSAGE(map != MAP_FAILED, truth_file << ": " << strerror(errno));
	const volatile uint64_t *totals = static_cast<const volatile uint64_t *>(map);
	spent.three = totals[0];
	spent.one = totals[1];
	munmap(map, 2 * sizeof(uint64_t));
	return spent;
}

double split_share(const SplitSpent &before, const SplitSpent &after)
{
	const uint64_t three = after.three - before.three, one = after.one - before.one;
	return three + one ? double(three) / double(three + one) : 0;
}

std::ostream &operator<<(std::ostream &out, const SplitSpent &spent)
{
	return out << "split measured " << spent.three << " ns in split_hot_three, " << spent.one
		   << " ns in split_hot_one";
}

Split::Split(const std::string &seconds)
	: truth_(dir_ / "truth"), program_({workload("split"), seconds, truth_})
{
	REQUIRE(program_.read_line() == "ready");
}

SampledShare sampled_share(uint64_t hits, uint64_t n, double expected, double allowance)
{
	SampledShare s;
	s.hits = hits;
	s.n = n;
	s.expected = expected;
	s.observed = n ? double(hits) / double(n) : 0;
	constexpr double z = 4.5;
	s.bound = (n ? z * std::sqrt(expected * (1 - expected) / double(n)) : 1) + allowance;
	s.ok = n > 0 && std::fabs(s.observed - expected) <= s.bound;
	return s;
}

std::ostream &operator<<(std::ostream &out, const SampledShare &s)
{
	return out << "share " << s.observed << " (" << s.hits << " of " << s.n << " samples) against "
		   << s.expected << " +- " << s.bound;
}

namespace {

std::string current_test;
std::vector<std::pair<std::string, std::string>> skipped;

} // namespace

bool on_ci()
{
	const char *ci = getenv("CI");
	return ci && *ci && std::string(ci) != "false" && std::string(ci) != "0";
}

void skip_test(const std::string &why)
{
	REQUIRE_MESSAGE(!on_ci(), why << ": CI installs every tool and runs as root, so this test fails there "
					     "rather than skips");
	MESSAGE("skipped: " << why);
	skipped.emplace_back(current_test, why);
}

const std::vector<std::pair<std::string, std::string>> &skipped_tests()
{
	return skipped;
}

void set_current_test(const std::string &name)
{
	current_test = name;
}

TestCgroup::TestCgroup(const std::string &mount, const std::string &leaf)
	: parent_(mount + "/profile-test-" + std::to_string(getpid())), path_(parent_ + "/" + leaf)
{
	std::filesystem::create_directories(path_);
}

TestCgroup::~TestCgroup()
{
	for (const std::string &dir : {path_, parent_}) {
		std::ofstream(dir + "/cgroup.kill") << "1";
		// A killed process leaves its group as it exits: wait for that.
		for (int i = 0; i < 200 && rmdir(dir.c_str()) != 0 && errno == EBUSY; i++)
			usleep(10000);
	}
}

uint32_t TestCgroup::process(const std::string &comm) const
{
	for (int i = 0; i < 500; i++) {
		for (const std::string &pid : split_lines(read_file(path_ + "/cgroup.procs")))
			if (read_file("/proc/" + pid + "/comm") == comm + "\n")
				return uint32_t(std::stoul(pid));
		usleep(10000);
	}
	return 0;
}

std::string cgroup2_mount_or_fail()
{
	const std::string mount = cgroup2_mount(read_file("/proc/self/mountinfo"));
	REQUIRE_MESSAGE(!mount.empty(), "no cgroup2 file system is mounted: --cgroup needs one");
	return mount;
}

std::map<std::string, std::set<uint32_t>> bpf_ids_of(pid_t pid)
{
	std::map<std::string, std::set<uint32_t>> ids;
	std::string dir = "/proc/" + std::to_string(pid) + "/fdinfo";
	DIR *d = opendir(dir.c_str());
	REQUIRE(d);
	while (dirent *e = readdir(d)) {
		std::ifstream in(dir + "/" + e->d_name);
		std::string line;
		bool link = false;
		uint32_t prog = 0, link_id = 0;
		while (std::getline(in, line)) {
			if (line.starts_with("prog_id:"))
				prog = uint32_t(std::stoul(line.substr(8)));
			if (line.starts_with("link_id:")) {
				link = true;
				link_id = uint32_t(std::stoul(line.substr(8)));
			}
		}
		if (link)
			ids["link"].insert(link_id);
		else if (prog)
			ids["prog"].insert(prog);
	}
	closedir(d);
	return ids;
}
