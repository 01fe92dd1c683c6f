// unwind/pruner.cpp: keeps the unwind table cache under its size, on a thread of its own.
#include "unwind/pruner.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "unwind/cache.h"

CachePruner::CachePruner(std::string cache_dir, uint64_t max_bytes, bool debug)
	: cache_dir_(std::move(cache_dir)), max_bytes_(max_bytes), debug_(debug)
{
	if (!cache_dir_.empty())
		thread_ = std::thread([this] { loop(); });
}

CachePruner::~CachePruner()
{
	stop();
}

void CachePruner::request_stop()
{
	{
		std::lock_guard<std::mutex> guard(lock_);
		stopping_ = true;
		wake_.notify_one();
	}
	// A prune under way stops at its next file; at nice 19 on a busy machine it might not
	// get there for as long as the machine stays busy, so it gets this thread's priority
	// back (allowed to root; otherwise it stays low, and stops all the same).
	if (const pid_t tid = tid_.load())
		setpriority(PRIO_PROCESS, id_t(tid), getpriority(PRIO_PROCESS, id_t(gettid())));
}

void CachePruner::stop()
{
	request_stop();
	if (thread_.joinable())
		thread_.join();
}

void CachePruner::not_written(const std::string &why)
{
	stores_off_ = true;
	if (!warned_.exchange(true))
		diagnostics::say("warning: unwind tables are not cached: %s", why.c_str());
}

void CachePruner::loop()
{
	// Below the builder and everything else (nice is per thread on Linux): pruning can wait.
	tid_ = gettid();
	setpriority(PRIO_PROCESS, id_t(gettid()), 19);
	std::unique_lock<std::mutex> guard(lock_);
	while (!stopping_) {
		guard.unlock();
		const double start_ms = clocks::monotonic_ms();
		UnwindCachePrune pruned = prune_unwind_cache(cache_dir_, max_bytes_, &stopping_);
		if (!pruned.status.ok())
			not_written(pruned.status.error());
		if (debug_ && pruned.stopped)
			diagnostics::say("unwind cache %s: prune stopped at the end of the run", cache_dir_.c_str());
		else if (debug_)
			diagnostics::say("unwind cache %s: %u tables kept (%.1f MiB), removed %u of files gone, %u "
				"least recently used, %u temporary, %u bad; %.1f ms",
				cache_dir_.c_str(), pruned.kept, double(pruned.kept_bytes) / (1 << 20), pruned.stale,
				pruned.evicted, pruned.temporary, pruned.bad, clocks::monotonic_ms() - start_ms);
		guard.lock();
		wake_.wait_for(guard, std::chrono::hours(1), [&] { return stopping_.load(); });
	}
}
