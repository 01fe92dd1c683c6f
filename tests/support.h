// tests/support.h: running programs from tests: the profiler, workloads, and their output.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

struct CommandResult {
	int status = -1; // exit status, or 128+signal
	std::string out, err;
	double seconds = 0;
};

// Runs argv to completion (killed after timeout_s), capturing stdout and stderr.
// With signal_after_s >= 0, sends `signal` to it after that many seconds.
CommandResult run_command(const std::vector<std::string> &argv, double timeout_s = 60,
			  double signal_after_s = -1, int signal = 0, uid_t as_uid = 0);

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

// Paths from the environment `make test` sets.
std::string profile_bin();
std::string output_dir();
std::string workload(const std::string &name);

std::vector<std::string> split_lines(const std::string &text);
bool contains(const std::string &text, const std::string &part);
