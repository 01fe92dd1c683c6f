// cli/options.h: the command line of CLI.md, parsed into one Options value.
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
	uint32_t unwind_table_size = 1048576; // rows
	std::optional<uint64_t> duration_s; // none: until SIGINT/SIGTERM
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
