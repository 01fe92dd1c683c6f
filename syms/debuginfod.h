// syms/debuginfod.h: debug files fetched by build id from the servers DEBUGINFOD_URLS
// names, through elfutils' libdebuginfod: all at once, within one bound of time; and
// handed to the symbolizer.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/fd.h"

struct FetchedDebugFile {
	std::string build_id;
	UniqueFd fd;      // the file in libdebuginfod's cache, when it came
	std::string path; // its path there
	// 0 when it came; else an errno: ENOENT not on any server, ETIME still coming when
	// the bound ran out, anything else what libdebuginfod said (a cache it cannot write).
	int error = ETIME;
};

struct DebuginfodSettings {
	double timeout_s = 5;  // for every fetch together
	unsigned parallel = 8; // fetches at once, at most
	// Called about five times a second once the fetch has taken a second, and once more
	// (with done == total, or at the bound) at the end: for a progress line.
	std::function<void(size_t done, size_t total, bool last)> progress;
};

// True when DEBUGINFOD_URLS names a server.
bool debuginfod_configured();

// Where fetched files are kept when DEBUGINFOD_CACHE_PATH does not say: beside profile's
// other caches (under $CACHE_DIRECTORY, systemd's for the agent, else /var/cache/profile)
// when run as root or by such a unit; else "" (libdebuginfod's own default under ~/.cache).
std::string debuginfod_cache_dir();

// Fetches each build id's debug file, one libdebuginfod client per fetch running at once.
// Returns once every fetch ended or timeout_s passed: a fetch still running then is told
// to stop and left to end on its own (libdebuginfod checks about every second), its
// result ETIME. In the order of build_ids.
std::vector<FetchedDebugFile> fetch_debug_files(const std::vector<std::string> &build_ids,
						const DebuginfodSettings &settings);

// Fetches given up at their bound whose threads have not ended yet. A process that exits
// with some should leave by _exit once its output is flushed: the exit handlers of the
// TLS libraries under libcurl must not run beneath a thread still inside them.
size_t debuginfod_fetches_running();

// What fetching debug files from debuginfod servers cost, for PROFILE_DEBUG and the
// benchmark.
struct DebuginfodAccount {
	size_t asked = 0, used = 0;
	double wall_ms = 0;
	bool told = false; // the one line of a run's failures is printed
};

class Symbolizer;

// The debug files of what a report is about to name that no file here has, from the
// debuginfod servers: fetched all at once, bounded by timeout_s (--debuginfod-timeout),
// and handed to the symbolizer. What could not be used is said in one line, once a run;
// its frames stay [file+0x...].
void fetch_missing_debug_files(Symbolizer &symbolizer, uint32_t timeout_s, DebuginfodAccount &account);
