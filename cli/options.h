// cli/options.h: the command line (see doc/cli.md), parsed into one Options value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "push/push.h"
#include "sampler/config.h"
#include "report/delivery.h"
#include "report/report.h"

// The command line: what the sampler is told (SamplerConfig: -f, -c, -p, -L, -C, -I, -U,
// -K, --cgroup, --unwind, the maps' sizes and the duration), and the rest of the run.
struct Options : SamplerConfig {
	ReportFormat format = ReportFormat::Stacks;
	ReportOptions report;
	bool inline_frames = true;   // false with --no-inline: no frames for inlined functions
	std::string output_path;     // -o, "" for stdout
	uint64_t unwind_cache_size = 256ull << 20; // --unwind-cache-size: bytes on disk; 0: no cache
	bool debuginfod = true;      // false with --no-debuginfod
	uint32_t debuginfod_timeout_s = 5; // --debuginfod-timeout: every fetch of a report together
	// Continuous profiling.
	uint64_t interval_s = 0;     // --interval: a report every N seconds; 0: one at the end
	std::string push_url;        // --push: where each window goes
	PushFormat push_format = PushFormat::Auto;
	std::string app;             // --app: the service name windows carry; "" = the host name
	uint32_t push_queue = 20;    // --push-queue: windows kept while the backend is unreachable
	uint64_t push_queue_bytes = 64ull << 20; // --push-queue-bytes: their bytes at most
	std::vector<std::string> push_headers; // --push-header 'Name: value', each checked
	std::string push_auth_file;  // --push-auth-file: credentials and secret headers
	std::string push_ca, push_cert, push_key; // --push-ca, --push-cert, --push-key: TLS files
	// An OTLP push's headers from OTEL_EXPORTER_OTLP_HEADERS (cli/otel_env.h), each checked.
	std::vector<std::string> otel_headers;
	bool agent = false;          // --agent: 19 Hz, --interval 15, system-wide, no end
	std::string command_line;    // as typed, for report titles
	bool help = false;
	bool version = false;

	bool operator==(const Options &) const = default;
};

// Returns Options, or the usage error that makes the command line unusable (one line for
// stderr, exit status 2). Checks values and combinations only; whether a PID exists is
// the caller's question.
Result<Options> parse_options(int argc, char **argv);

// --help, written from the option table: doc/options.md's Options block is this text, and
// tests/test_install.cpp holds both it and profile(8) to the table.
std::string help_text();

// Where the run's reports go: -o, the format, --push.
Delivery delivery(const Options &options);

// BCC's header line: "Sampling at 49 Hertz of all threads by user + kernel stack for 10 secs.",
// of what the sampler is told (sampled: the command line's, with -p and --cgroup resolved).
std::string header_line(const Options &options, const SamplerConfig &sampled);
inline std::string header_line(const Options &options)
{
	return header_line(options, options);
}

// The option table (cli/options.cpp says how to add a row). Each row is one option: its
// names, the kind and range of its value, its --help group and text, and what it sets.
enum class ValueKind {
	None,   // a switch
	Number, // a whole decimal number in [min, max]
	Bytes,  // a byte count in [min, max], with an optional K, M or G suffix
	Ids,    // a comma-separated list of ids, 1 to INT32_MAX each
	Choice, // one of `choices`
	Text,   // any text `accepts` (nullptr: any at all)
};

struct OptionChoice {
	const char *name;
	const char *help; // its own --help row; nullptr when the option's row says it all
};

// What a value became, for the row's `set`.
struct OptionValue {
	std::string_view text; // as typed
	uint64_t number = 0;    // Number, Bytes
	std::vector<uint32_t> ids;
};

// What the options given so far said, for the checks of combinations after the last one.
struct OptionsGiven {
	bool frequency = false, count = false, interval = false;
	bool user_only = false, kernel_only = false;
	bool block_limits = false; // --min-block or --max-block
	bool folded = false, folded_flag = false; // -E or --folded; --folded itself
	std::optional<ReportFormat> format;       // --format
	std::string format_name;
};

struct OptionSpec {
	const char *name;            // the long name, without "--"
	const char *shorts = "";     // its short letters ("fF"), the first named in errors
	ValueKind kind = ValueKind::None;
	const char *value_name = nullptr; // "HZ", "PID[,PID...]" in --help; nullptr for a switch
	uint64_t min = 0, max = 0; // Number and Bytes
	// What a bad value's error expects, after "expected ": "{range}" reads "MIN to MAX".
	// Choice says its choices itself.
	const char *expected = nullptr;
	std::vector<OptionChoice> choices = {};
	bool (*accepts)(std::string_view) = nullptr; // Text
	const char *group = "";
	// Its --help text, one paragraph: "{default}" reads default_value, "{choices}"
	// "a | b | c".
	const char *help = "";
	// The value that changes nothing, typed as the option takes it; nullptr when there is
	// none to type (--app's host name). tests/test_cli_options.cpp parses it.
	const char *default_value = nullptr;
	// Stores the value; ok, or a whole usage error.
	Status (*set)(Options &, OptionsGiven &, const OptionValue &) = nullptr;
	// Each value adds to the others when given again (-p 1 -p 2). Any other option given
	// again with another value is refused: a value is never silently overridden.
	bool repeatable = false;
};

const std::vector<OptionSpec> &option_table();

// The rows of --help, by group, in its order: "-f, -F, --frequency HZ", or
// "--unwind auto" for a choice with a row of its own.
struct OptionRow {
	std::string group, synopsis;
};
std::vector<OptionRow> option_rows();

// Shared by the parser's errors and --help: "a, b or c" of an option's choices (with
// `bar`, "a | b | c"), and text with every `from` replaced by `to`.
std::string choice_list(const OptionSpec &spec, bool bar);
std::string replace_all(std::string text, std::string_view from, const std::string &to);
