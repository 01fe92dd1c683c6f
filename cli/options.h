// cli/options.h: the command line (see doc/cli.md), parsed into one Options value.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <string>
#include <vector>

#include "report/report.h"

// --unwind: how user stacks are walked.
enum class UnwindMode {
	Auto,          // unwind tables where an object has one, frame pointers elsewhere
	FramePointers, // bpf_get_stackid, as BCC does
	Tables,        // unwind tables only
};

// --push-format: which backend's API --push speaks.
enum class PushFormat {
	Auto,      // from the URL's path: /ingest is Pyroscope's, .../WriteRaw or /writeraw Parca's
	Pyroscope, // Grafana Pyroscope's HTTP /ingest
	Parca,     // Parca's ProfileStoreService WriteRaw over HTTP
};

struct Options {
	uint64_t frequency = 49;     // samples per second per CPU; 0 in period mode
	uint64_t period = 0;         // -c: one sample every N events
	std::vector<uint32_t> pids;  // -p
	std::vector<uint32_t> tids;  // -L
	int cpu = -1;                // -C, -1 for every online CPU
	bool include_idle = false;   // -I
	bool user_stacks = true;     // false with -K
	bool kernel_stacks = true;   // false with -U
	ReportFormat format = ReportFormat::Stacks;
	ReportOptions report;
	std::string output_path;     // -o, "" for stdout
	uint32_t stack_storage_size = 16384;
	uint32_t hash_storage_size = 40960;
	uint32_t max_stack_depth = 127;
	UnwindMode unwind = UnwindMode::Auto;
	uint32_t unwind_table_size = 8388608; // rows, at most, over every table loaded
	uint64_t unwind_cache_size = 256ull << 20; // --unwind-cache-size: bytes on disk; 0: no cache
	std::optional<uint64_t> duration_s; // none: until SIGINT/SIGTERM
	bool debuginfod = true;      // false with --no-debuginfod
	uint32_t debuginfod_timeout_s = 5; // --debuginfod-timeout: every fetch of a report together
	// Continuous profiling.
	uint64_t interval_s = 0;     // --interval: a report every N seconds; 0: one at the end
	std::string push_url;        // --push: where each window goes as gzipped pprof
	PushFormat push_format = PushFormat::Auto;
	std::string app;             // --app: the service name windows carry; "" = the host name
	uint32_t push_queue = 20;    // --push-queue: windows kept while the backend is unreachable
	uint64_t push_queue_bytes = 64ull << 20; // --push-queue-bytes: their bytes at most
	std::vector<std::string> push_headers; // --push-header 'Name: value', each checked
	std::string push_auth_file;  // --push-auth-file: credentials and secret headers
	std::vector<std::string> push_auth_headers; // its lines, once the run has read it (secrets)
	std::string push_ca, push_cert, push_key; // --push-ca, --push-cert, --push-key: TLS files
	std::vector<std::string> cgroups; // --cgroup: only tasks under these cgroup v2 groups
	bool agent = false;          // --agent: 19 Hz, --interval 15, system-wide, no end
	std::string command_line;    // as typed, for report titles
	bool help = false;
	bool version = false;
};

// A usage error: one line for stderr, exit status 2.
struct UsageError {
	std::string message;
};

// Returns Options, or the usage error that makes the command line unusable.
// Checks values and combinations only; whether a PID exists is the caller's question.
std::variant<Options, UsageError> parse_options(int argc, char **argv);

std::string help_text();

// BCC's header line: "Sampling at 49 Hertz of all threads by user + kernel stack for 10 secs."
std::string header_line(const Options &options);
