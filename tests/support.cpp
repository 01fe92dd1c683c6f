// tests/support.cpp: fork/exec with pipes, timeouts and signals, for the integration tests.
#include "tests/support.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace {

double now()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

std::vector<char *> c_args(const std::vector<std::string> &argv)
{
	std::vector<char *> args;
	for (const std::string &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	return args;
}

int decode_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

} // namespace

CommandResult run_command(const std::vector<std::string> &argv, double timeout_s, double signal_after_s,
			  int signal_number, uid_t as_uid)
{
	CommandResult result;
	int out[2], err[2];
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return result;
	const double start = now();
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (as_uid && (setgid(as_uid) || setuid(as_uid)))
			_exit(126);
		auto args = c_args(argv);
		execv(args[0], args.data());
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	bool signalled = false;
	pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
	int open_fds = 2;
	while (open_fds > 0) {
		double elapsed = now() - start;
		if (!signalled && signal_after_s >= 0 && elapsed >= signal_after_s) {
			kill(pid, signal_number);
			signalled = true;
		}
		if (elapsed > timeout_s) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(fds, 2, 50) <= 0)
			continue;
		for (pollfd &p : fds) {
			if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP)))
				continue;
			char buffer[65536];
			ssize_t n = read(p.fd, buffer, sizeof(buffer));
			if (n <= 0) {
				close(p.fd);
				p.fd = -1;
				open_fds--;
				continue;
			}
			(p.fd == out[0] ? result.out : result.err).append(buffer, n);
		}
	}
	for (pollfd &p : fds)
		if (p.fd >= 0)
			close(p.fd);
	int status = 0;
	waitpid(pid, &status, 0);
	result.status = decode_status(status);
	result.seconds = now() - start;
	return result;
}

Background::Background(const std::vector<std::string> &argv, int cpu)
{
	int out[2];
	if (pipe2(out, O_CLOEXEC))
		return;
	pid_ = fork();
	if (pid_ == 0) {
		dup2(out[1], 1);
		if (cpu >= 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		auto args = c_args(argv);
		execv(args[0], args.data());
		_exit(127);
	}
	close(out[1]);
	out_ = out[0];
}

Background::~Background()
{
	if (pid_ > 0) {
		kill(pid_, SIGKILL);
		waitpid(pid_, nullptr, 0);
	}
	if (out_ >= 0)
		close(out_);
}

std::string Background::read_line()
{
	std::string line;
	char c;
	while (read(out_, &c, 1) == 1 && c != '\n')
		line += c;
	return line;
}

int Background::wait()
{
	int status = 0;
	waitpid(pid_, &status, 0);
	pid_ = -1;
	return decode_status(status);
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
