// run/stop_signals.h: how signals end a run. SIGINT, SIGTERM and SIGHUP end sampling, and
// what was collected is written; a second one ends the process at once, saying what it
// leaves undone.
#pragma once

#include <signal.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "base/fd.h"

// The signals that stop a run: SIGINT, SIGTERM, and SIGHUP unless this process started
// with it ignored: `nohup profile` outlives its terminal. SIGINT and SIGTERM stop it even
// when ignored at the start, as a shell script's background job starts: `profile & ...
// kill -INT $!` is how scripts stop a profiler (perf record too).
sigset_t stop_signal_set();

// The run's one watcher of stop signals, from before any other thread starts to the end.
// The first signal is the run's end: wait_for() returns, and the run goes on to write what
// it collected. The second ends the process there and then (exit status 128 + its number,
// as a shell reports a process the signal killed), with one line: what the run was doing
// and what is not written. If the run has not ended two seconds after the first, a line
// says what it is still doing and that a second signal ends it.
class StopSignals {
public:
	// Blocks the stop signals in this thread, and so in every thread started after, and
	// watches them from a thread of its own.
	StopSignals();
	~StopSignals();
	StopSignals(const StopSignals &) = delete;
	StopSignals &operator=(const StopSignals &) = delete;

	// Waits up to ns for the first stop signal; true once one has come.
	bool wait_for(int64_t ns);
	// The first signal's number, 0 before one came.
	int first() const;
	// What the run does now ("naming the stacks") and what a second signal would leave
	// undone ("without printing the report"), for the lines above.
	void doing(std::string what, std::string undone);

private:
	void watch();
	void signalled(int signal);

	sigset_t signals_;
	UniqueFd signal_fd_; // the stop signals, read here rather than delivered
	UniqueFd end_fd_;    // written by the destructor: the watch ends
	mutable std::mutex mutex_;
	std::condition_variable came_;
	int first_ = 0;
	int64_t first_ns_ = 0; // CLOCK_MONOTONIC
	bool still_said_ = false;
	std::string doing_ = "starting", undone_ = "before sampling";
	std::thread thread_;
};
