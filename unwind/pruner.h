// unwind/pruner.h: keeps the unwind table cache under its size, on a thread of its own, and
// says once when the cache cannot be written.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <thread>

// Prunes the cache at start and hourly after, so that neither sampling nor the tables wait
// for it. At nice 19 it may get no CPU at all while the machine is busy, so the end of the
// run does not wait for a prune under way: it is told to stop (between files) and raised
// back to the process's priority for that.
class CachePruner {
public:
	// cache_dir "": nothing to prune, no thread.
	CachePruner(std::string cache_dir, uint64_t max_bytes, bool debug);
	~CachePruner();
	CachePruner(const CachePruner &) = delete;
	CachePruner &operator=(const CachePruner &) = delete;

	// Tells a prune under way to stop at its next file, without waiting for it.
	void request_stop();
	// Waits for the thread to end.
	void stop();

	// One line on stderr, the first time the cache cannot be written; no stores after that.
	void not_written(const std::string &why);
	bool stores_off() const { return stores_off_; }

private:
	void loop();

	const std::string cache_dir_;
	const uint64_t max_bytes_;
	const bool debug_;
	std::atomic<bool> warned_{false}, stores_off_{false};
	std::atomic<pid_t> tid_{0};
	std::mutex lock_; // with wake_: the hourly sleep, cut short by request_stop
	std::condition_variable wake_;
	std::atomic<bool> stopping_{false};
	std::thread thread_;
};
