// syms/debuginfod.cpp: debug files fetched by build id from the servers DEBUGINFOD_URLS
// names, through elfutils' libdebuginfod: all at once, within one bound of time; and
// handed to the symbolizer.
#include "syms/debuginfod.h"

#include <elfutils/debuginfod.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "syms/symbolizer.h"

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<size_t> threads_running{0};

// What the caller and the fetching threads share. The threads hold it too, so a caller
// that stopped waiting at the bound may return while some of them still end their fetch.
struct FetchState {
	std::mutex mutex;
	std::condition_variable changed;
	std::vector<FetchedDebugFile> files;
	size_t next = 0, done = 0;
	std::atomic<bool> stop{false};
	Clock::time_point deadline;
};

// libdebuginfod calls it while a fetch runs (about once a second when nothing comes):
// non-zero ends the fetch.
int keep_going(debuginfod_client *client, long, long)
{
	auto *state = static_cast<FetchState *>(debuginfod_get_user_data(client));
	return state->stop.load() || Clock::now() >= state->deadline;
}

void fetch_some(std::shared_ptr<FetchState> state)
{
	struct Running {
		~Running() { threads_running--; } // counted up by whoever started the thread
	} running;
	debuginfod_client *client = debuginfod_begin();
	if (client) {
		debuginfod_set_user_data(client, state.get());
		debuginfod_set_progressfn(client, keep_going);
	}
	while (true) {
		std::string build_id;
		size_t index;
		{
			std::lock_guard lock(state->mutex);
			if (state->next == state->files.size() || state->stop)
				break;
			index = state->next++;
			build_id = state->files[index].build_id;
		}
		char *path = nullptr;
		int fd = client ? debuginfod_find_debuginfo(client, reinterpret_cast<const unsigned char *>(build_id.c_str()),
							    0, &path)
				: -ENOMEM;
		std::lock_guard lock(state->mutex);
		FetchedDebugFile &file = state->files[index];
		if (fd >= 0) {
			file.fd.reset(fd);
			file.error = 0;
		} else {
			// Stopped by keep_going: whatever libdebuginfod made of that, it is the bound.
			file.error = state->stop || Clock::now() >= state->deadline ? ETIME : -fd;
		}
		if (path) {
			file.path = path;
			std::free(path);
		}
		state->done++;
		state->changed.notify_all();
	}
	if (client)
		debuginfod_end(client);
}

} // namespace

size_t debuginfod_fetches_running()
{
	return threads_running.load();
}

bool debuginfod_configured()
{
	const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
	return urls && urls[std::strspn(urls, " \t")] != '\0';
}

std::string debuginfod_cache_dir()
{
	const char *systemd = getenv("CACHE_DIRECTORY");
	if (systemd && *systemd == '/')
		return std::string(systemd) + "/debuginfod";
	return geteuid() == 0 ? "/var/cache/profile/debuginfod" : "";
}

std::vector<FetchedDebugFile> fetch_debug_files(const std::vector<std::string> &build_ids,
						const DebuginfodSettings &settings)
{
	auto state = std::make_shared<FetchState>();
	const Clock::time_point start = Clock::now();
	state->deadline = start + std::chrono::duration_cast<Clock::duration>(
					  std::chrono::duration<double>(std::max(settings.timeout_s, 0.0)));
	for (const std::string &id : build_ids) {
		FetchedDebugFile file;
		file.build_id = id;
		state->files.push_back(std::move(file));
	}
	if (build_ids.empty())
		return {};

	const size_t threads = std::min<size_t>(build_ids.size(), std::max(settings.parallel, 1u));
	for (size_t i = 0; i < threads; i++) {
		threads_running++;
		std::thread(fetch_some, state).detach();
	}

	std::unique_lock lock(state->mutex);
	const Clock::time_point quiet_until = start + std::chrono::seconds(1);
	bool shown = false;
	while (state->done < state->files.size()) {
		Clock::time_point wake = state->deadline;
		if (settings.progress)
			wake = std::min(wake, std::max(quiet_until, Clock::now() + std::chrono::milliseconds(200)));
		state->changed.wait_until(lock, wake);
		const Clock::time_point now = Clock::now();
		if (now >= state->deadline)
			break;
		if (settings.progress && now >= quiet_until) {
			const size_t done = state->done, total = state->files.size();
			lock.unlock();
			settings.progress(done, total, false);
			shown = true;
			lock.lock();
		}
	}
	state->stop = true;
	// What has not come is left to its thread, which drops it; what came is the caller's.
	std::vector<FetchedDebugFile> files(state->files.size());
	for (size_t i = 0; i < files.size(); i++) {
		FetchedDebugFile &file = state->files[i];
		files[i].build_id = file.build_id;
		if (file.error != ETIME || file.fd) {
			files[i] = std::move(file);
			file.error = ETIME;
		}
	}
	const size_t done = state->done;
	lock.unlock();
	if (shown)
		settings.progress(done, files.size(), true);
	return files;
}

void fetch_missing_debug_files(Symbolizer &symbolizer, uint32_t timeout_s, DebuginfodAccount &account)
{
	const int64_t start = clocks::monotonic_ns();
	std::vector<std::string> wanted = symbolizer.wanted_debug_files();
	if (wanted.empty())
		return;
	DebuginfodSettings settings;
	settings.timeout_s = timeout_s;
	if (isatty(STDERR_FILENO))
		settings.progress = [](size_t done, size_t total, bool last) {
			diagnostics::progress(last ? "" : "profile: debuginfod: " + std::to_string(done) + " of " +
								  std::to_string(total) + " debug files fetched");
		};
	std::vector<FetchedDebugFile> files = fetch_debug_files(wanted, settings);
	size_t missing = 0, late = 0, refused = 0, failed = 0;
	std::string refused_why, failed_why;
	for (FetchedDebugFile &file : files) {
		if (file.error == ENOENT) {
			missing++;
		} else if (file.error == ETIME) {
			late++;
		} else if (file.error) {
			failed++;
			failed_why = strerror(file.error);
		} else if (Status added = symbolizer.add_debug_file(file.build_id, file.fd.get()); !added.ok()) {
			refused++;
			refused_why = added.error();
			// Not what its build id names: kept in the cache, it would be served again.
			if (!file.path.empty())
				unlink(file.path.c_str());
		} else {
			account.used++;
		}
	}
	account.asked += files.size();
	account.wall_ms += double(clocks::monotonic_ns() - start) / 1e6;
	if (account.told || missing + late + refused + failed == 0)
		return;
	account.told = true;
	std::string why;
	auto add = [&](size_t n, const std::string &text) {
		if (n)
			why += (why.empty() ? "" : ", ") + std::to_string(n) + " " + text;
	};
	add(missing, "not on the servers");
	add(late, "not there within --debuginfod-timeout " + std::to_string(timeout_s) + " s");
	add(refused, "refused (" + refused_why + ")");
	add(failed, "failed (" + failed_why + ")");
	diagnostics::say("debuginfod: %zu of %zu debug files not used, their frames stay unnamed: %s",
		missing + late + refused + failed, files.size(), why.c_str());
}

