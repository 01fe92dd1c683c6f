// run/stop_signals.cpp: the run's watcher of SIGINT, SIGTERM and SIGHUP.
#include "run/stop_signals.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "base/error.h"
#include "base/pending_files.h"

namespace {

// How long after the first signal a run that has not ended says what it is still doing.
constexpr int64_t kStillSaidNs = 2000000000;

} // namespace

sigset_t stop_signal_set()
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	struct sigaction hangup {};
	if (sigaction(SIGHUP, nullptr, &hangup) != 0 || hangup.sa_handler != SIG_IGN)
		sigaddset(&set, SIGHUP);
	return set;
}

StopSignals::StopSignals() : signals_(stop_signal_set())
{
	// Blocked before any other thread exists, so that none of them takes a stop signal's
	// default action (the end of the process, with nothing written): every thread
	// inherits the mask, and the signals wait for the signalfd.
	pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
	signal_fd_ = UniqueFd(signalfd(-1, &signals_, SFD_CLOEXEC));
	end_fd_ = UniqueFd(eventfd(0, EFD_CLOEXEC));
	if (!signal_fd_ || !end_fd_)
		throw RunError(std::string("cannot watch for signals: ") + std::strerror(errno));
	thread_ = std::thread([this] { watch(); });
}

StopSignals::~StopSignals()
{
	const uint64_t one = 1;
	if (write(end_fd_.get(), &one, sizeof one) != sizeof one)
		thread_.detach(); // cannot happen to an eventfd; then never wait for a watch that cannot end
	else
		thread_.join();
}

bool StopSignals::wait_for(int64_t ns)
{
	std::unique_lock lock(mutex_);
	return came_.wait_for(lock, std::chrono::nanoseconds(ns), [this] { return first_ != 0; });
}

int StopSignals::first() const
{
	std::lock_guard lock(mutex_);
	return first_;
}

void StopSignals::doing(std::string what, std::string undone)
{
	std::lock_guard lock(mutex_);
	doing_ = std::move(what);
	undone_ = std::move(undone);
}

void StopSignals::watch()
{
	while (true) {
		int timeout_ms = -1;
		{
			std::lock_guard lock(mutex_);
			if (first_ && !still_said_)
				timeout_ms = int(std::max<int64_t>(0, first_ns_ + kStillSaidNs - clocks::monotonic_ns()) /
						 1000000) + 1;
		}
		pollfd fds[2] = {{signal_fd_.get(), POLLIN, 0}, {end_fd_.get(), POLLIN, 0}};
		const int ready = poll(fds, 2, timeout_ms);
		if (ready < 0 && errno != EINTR)
			return;
		if (fds[1].revents)
			return;
		if (ready > 0 && (fds[0].revents & POLLIN)) {
			signalfd_siginfo info;
			if (read(signal_fd_.get(), &info, sizeof info) == ssize_t(sizeof info))
				signalled(int(info.ssi_signo));
			continue;
		}
		std::lock_guard lock(mutex_);
		if (first_ && !still_said_ && clocks::monotonic_ns() - first_ns_ >= kStillSaidNs) {
			still_said_ = true;
			diagnostics::say("still %s after SIG%s; SIG%s again ends the run now, %s", doing_.c_str(),
					 sigabbrev_np(first_), sigabbrev_np(first_), undone_.c_str());
		}
	}
}

void StopSignals::signalled(int signal)
{
	std::lock_guard lock(mutex_);
	if (!first_) {
		first_ = signal;
		first_ns_ = clocks::monotonic_ns();
		came_.notify_all();
		return;
	}
	// stdout is the run's thread's, mid-write perhaps: left as it is. stderr's line is
	// written at once, and never holds the exit up (a full pipe nobody reads).
	const std::string which = signal == first_ ? std::string("SIG") + sigabbrev_np(signal) + " again"
						   : std::string("SIG") + sigabbrev_np(signal) + " after SIG" +
							     sigabbrev_np(first_);
	diagnostics::last_words("%s while %s: ending now, %s", which.c_str(), doing_.c_str(), undone_.c_str());
	// A report half written goes with the run: no hidden temporary file stays beside -o's.
	pending_files::remove_all();
	_exit(128 + signal);
}
