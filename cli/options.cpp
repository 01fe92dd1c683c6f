// cli/options.cpp: the command line (doc/cli.md says why it is so): one table of options
// drives the parse, the errors and --help; each bad value is one usage error line.
#include "cli/options.h"

#include <getopt.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "cli/otel_env.h"
#include "push/push.h"
#include "report/formats.h"
#include "runtime/runtime.h"
#include "runtimes/runtimes.h"

namespace {

const Status ok;

// -o's help, naming the extensions of the report formats' table.
const char *output_help()
{
	static const std::string help = "write the report to FILE, in the format named by --format, --folded or -E, "
					"else by its extension " + report_suffix_list(true) + "; written whole to a "
					"temporary name, then renamed over FILE";
	return help.c_str();
}

std::vector<OptionChoice> format_choices()
{
	std::vector<OptionChoice> choices;
	for (const ReportFormatRow &row : report_formats())
		choices.push_back({row.name, nullptr});
	return choices;
}

std::vector<OptionChoice> push_format_choices()
{
	std::vector<OptionChoice> choices;
	for (const PushBackend &backend : push_backends())
		choices.push_back({backend.name, nullptr});
	return choices;
}

// Whole-string unsigned decimal in [min, max], or nothing.
std::optional<uint64_t> parse_number(std::string_view text, uint64_t min, uint64_t max)
{
	uint64_t value = 0;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
	if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
	    value > max)
		return std::nullopt;
	return value;
}

// A byte count with an optional binary suffix: 65536, 64K, 64M, 1G.
std::optional<uint64_t> parse_bytes(std::string_view text, uint64_t min, uint64_t max)
{
	uint64_t unit = 1;
	if (!text.empty()) {
		switch (text.back()) {
		case 'K': case 'k': unit = 1ull << 10; break;
		case 'M': case 'm': unit = 1ull << 20; break;
		case 'G': case 'g': unit = 1ull << 30; break;
		}
		if (unit != 1)
			text.remove_suffix(1);
	}
	auto n = parse_number(text, 0, max / unit);
	if (!n || *n * unit < min)
		return std::nullopt;
	return *n * unit;
}

std::optional<std::vector<uint32_t>> parse_id_list(std::string_view text)
{
	std::vector<uint32_t> ids;
	while (true) {
		size_t comma = text.find(',');
		auto id = parse_number(text.substr(0, comma), 1, INT32_MAX);
		if (!id)
			return std::nullopt;
		ids.push_back(*id);
		if (comma == std::string_view::npos)
			return ids;
		text.remove_prefix(comma + 1);
	}
}

bool nonempty(std::string_view text)
{
	return !text.empty();
}

bool http_url(std::string_view text)
{
	return text.starts_with("http://") || text.starts_with("https://");
}

// Pyroscope's application names and label values: no braces, commas, quotes, spaces or
// control characters.
bool app_name(std::string_view text)
{
	return !text.empty() && text.size() <= 200 && std::none_of(text.begin(), text.end(), [](unsigned char c) {
		return c <= ' ' || c >= 0x7f || std::strchr("{}=,\"\\", c);
	});
}

Status push_header(Options &o, OptionsGiven &, const OptionValue &v)
{
	// The value is not quoted back: it may be a secret.
	if (Status header = check_push_header(v.text); !header.ok())
		return Error("invalid --push-header: " + header.error());
	// Whatever is typed here is in /proc/PID/cmdline, for every user to read.
	std::string name(v.text.substr(0, v.text.find(':')));
	std::string lower = name;
	std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
	if (lower == "authorization" || lower == "proxy-authorization" || lower == "cookie")
		return Error("--push-header " + name + ": a secret on the command line, where every user can read it "
			     "(ps, /proc/PID/cmdline): put it in --push-auth-file");
	o.push_headers.emplace_back(v.text);
	return ok;
}

// The options, in --help's order.
//
// To add an option, add one row where --help should list it: its long name, its short
// letters ("" for none), the kind of its value and, for a number or a size, its range, the
// phrase its error expects, its group and help text, its default (as typed), and `set`, a
// lambda that stores the value in a field of Options (declared, with its default, in
// cli/options.h). The parse, the error for a bad value and --help follow from the row; for
// example a switch and a number:
//   {.name = "no-inline", .group = "Output", .help = "...",
//    .set = [](Options &o, G, V) { o.inline_frames = false; return ok; }},
//   {.name = "debuginfod-timeout", .kind = ValueKind::Number, .value_name = "SECONDS",
//    .min = 1, .max = 600, .expected = "whole seconds, {range}", .group = "...",
//    .help = "... (default {default})", .default_value = "10",
//    .set = [](Options &o, G, V v) { o.debuginfod_timeout_s = v.number; return ok; }},
// A new group also gets a line in group_texts when it opens with a sentence. Then run
// scripts/options-doc.sh (doc/options.md's Options block is --help) and document the option in
// doc/profile.8 with a tag as --help writes it, under the .SS of its group:
// tests/test_install.cpp fails until both agree with the table. A check of the option
// against others goes in check_combinations below; one against this machine in
// check_against_machine (cli/run_plan.cpp).
using V = const OptionValue &;
using G = OptionsGiven &;

// The table with --no-NAME for each language runtime (runtimes/runtimes.cpp's rows) after
// the row named `after`.
std::vector<OptionSpec> with_runtime_switches(std::vector<OptionSpec> rows, std::string_view after)
{
	auto at = std::find_if(rows.begin(), rows.end(), [&](const OptionSpec &spec) { return spec.name == after; });
	static std::vector<std::unique_ptr<std::string>> names; // the switches' names, for the run's life
	std::vector<OptionSpec> switches;
	for (const RuntimeRoom *room : runtime_rooms()) {
		names.push_back(std::make_unique<std::string>(std::string("no-") + room->name));
		// A switch's value is its name: "no-NAME" turns off the runtime NAME.
		switches.push_back({.name = names.back()->c_str(), .group = at->group, .help = room->help,
				    .set = [](Options &o, G, V v) {
					    for (const RuntimeRoom *r : runtime_rooms())
						    if (v.text == std::string("no-") + r->name)
							    o.runtimes_off |= RUNTIME_BIT(r->tag);
					    return ok;
				    }});
	}
	rows.insert(at + 1, switches.begin(), switches.end());
	return rows;
}

const std::vector<OptionSpec> table = with_runtime_switches({
	// Sampling
	{.name = "frequency", .shorts = "fF", .kind = ValueKind::Number, .value_name = "HZ", .min = 1, .max = 1000000,
	 .expected = "samples per second, {range}", .group = "Sampling",
	 .help = "samples per second on each CPU (default {default}); a rate this machine cannot carry is lowered, "
		 "saying so (see man profile)",
	 .default_value = "49",
	 .set = [](Options &o, G g, V v) { o.frequency = v.number; g.frequency = true; return ok; }},
	{.name = "count", .shorts = "c", .kind = ValueKind::Number, .value_name = "N", .min = 1, .max = UINT64_MAX >> 1,
	 .expected = "a positive event count", .group = "Sampling",
	 .help = "one sample every N nanoseconds of CPU time on each CPU, instead of -f (-c 10000000: every 10 ms, "
		 "as -f 100); raised as -f is lowered",
	 .set = [](Options &o, G g, V v) { o.period = v.number; g.count = true; return ok; }},
	{.name = "sw-event", .group = "Sampling",
	 .help = "changes nothing: sampling always uses the cpu-clock software timer, which needs no hardware "
		 "counters (it works in VMs); accepted so that command lines that pass it keep working",
	 .set = [](Options &, G, V) { return ok; }},
	// What to sample
	{.name = "pid", .shorts = "p", .kind = ValueKind::Ids, .value_name = "PID[,PID...]",
	 .expected = "a comma-separated list of positive ids", .group = "What to sample",
	 .help = "only these processes; a thread id stands for its whole process, as with perf record -p (-L "
		 "samples one thread)",
	 .set = [](Options &o, G, V v) { o.pids.insert(o.pids.end(), v.ids.begin(), v.ids.end()); return ok; },
	 .repeatable = true},
	{.name = "tid", .shorts = "L", .kind = ValueKind::Ids, .value_name = "TID[,TID...]",
	 .expected = "a comma-separated list of positive ids", .group = "What to sample",
	 .help = "only these threads (thread ids, as top -H or ps -L show them)",
	 .set = [](Options &o, G, V v) { o.tids.insert(o.tids.end(), v.ids.begin(), v.ids.end()); return ok; },
	 .repeatable = true},
	{.name = "cpu", .shorts = "C", .kind = ValueKind::Number, .value_name = "CPU", .min = 0, .max = 65535,
	 .expected = "a CPU number", .group = "What to sample", .help = "only this CPU (numbered from 0)",
	 .set = [](Options &o, G, V v) { o.cpu = int(v.number); return ok; }},
	{.name = "include-idle", .shorts = "I", .group = "What to sample",
	 .help = "keep the samples of idle CPUs, which run the idle task (swapper, pid 0); without -I they are "
		 "dropped",
	 .set = [](Options &o, G, V) { o.include_idle = true; return ok; }},
	{.name = "user-stacks-only", .shorts = "U", .group = "What to sample",
	 .help = "user-space stacks only, no kernel frames",
	 .set = [](Options &, G g, V) { g.user_only = true; return ok; }},
	{.name = "kernel-stacks-only", .shorts = "K", .group = "What to sample",
	 .help = "kernel stacks only, no user frames",
	 .set = [](Options &, G g, V) { g.kernel_only = true; return ok; }},
	// Off-CPU time
	{.name = "off-cpu", .group = "Off-CPU time",
	 .help = "instead of samples on the CPU, the time threads spend off it, summed in the kernel per stack at "
		 "each context switch: each thread's kernel and user stack where it left the CPU (walked as on-CPU "
		 "samples are, a language runtime's functions too), under a root frame [blocked] (asleep until an event: I/O, a lock, "
		 "a timer) or [runnable] (preempted, waiting for a CPU); folded counts are microseconds. -p, -L, "
		 "--cgroup, -U, -K, -C (the times that begin on that CPU) and the duration mean what they mean on "
		 "the CPU; -f, -c, -I and --unwind fp do not apply",
	 .set = [](Options &o, G, V) { o.off_cpu = true; return ok; }},
	{.name = "wakers", .group = "Off-CPU time",
	 .help = "with --off-cpu, each blocked time joined with the thread that woke it, as BCC's offwaketime: "
		 "the waker's kernel and user stacks (walked as on-CPU samples are) and comm, taken when it woke "
		 "the thread; folded, they are above a \"--\" frame, leaf first, the waker's comm at the top",
	 .set = [](Options &o, G, V) { o.wakers = true; return ok; }},
	{.name = "min-block", .kind = ValueKind::Number, .value_name = "US", .min = 0, .max = UINT64_MAX / 1000,
	 .expected = "microseconds, {range}", .group = "Off-CPU time",
	 .help = "with --off-cpu, count only the times off the CPU of at least US microseconds, as offcputime's "
		 "-m (default: 0, every one)",
	 .set = [](Options &o, G g, V v) { o.min_block_us = v.number; g.block_limits = true; return ok; }},
	{.name = "max-block", .kind = ValueKind::Number, .value_name = "US", .min = 1, .max = UINT64_MAX / 1000,
	 .expected = "microseconds, {range}", .group = "Off-CPU time",
	 .help = "with --off-cpu, count only the times off the CPU of at most US microseconds, as offcputime's -M "
		 "(default: no limit)",
	 .set = [](Options &o, G g, V v) { o.max_block_us = v.number; g.block_limits = true; return ok; }},
	// Output
	{.name = "folded", .group = "Output",
	 .help = "one line per stack, root first: comm;frame;...;frame COUNT",
	 .set = [](Options &, G g, V) { g.folded = g.folded_flag = true; return ok; }},
	{.name = "fold-extend", .shorts = "E", .group = "Output",
	 .help = "folded, with the process id in the root frame: comm-PID;... (with --format svg: a flame graph "
		 "with the process ids)",
	 .set = [](Options &o, G g, V) { g.folded = o.report.fold_pid = true; return ok; }},
	{.name = "delimited", .shorts = "d", .group = "Output",
	 .help = "a delimiter between kernel and user frames (\"--\" in multi-line stacks, \"-\" in folded ones)",
	 .set = [](Options &o, G, V) { o.report.delimited = true; return ok; }},
	{.name = "annotations", .shorts = "a", .group = "Output",
	 .help = "append _[k] to kernel frames, _[i] to inlined ones",
	 .set = [](Options &o, G, V) { o.report.annotations = true; return ok; }},
	{.name = "verbose", .shorts = "v", .group = "Output",
	 .help = "each frame's address, symbol+offset, module, and file:line where debug info has it",
	 .set = [](Options &o, G, V) { o.report.verbose = true; return ok; }},
	{.name = "no-inline", .group = "Output",
	 .help = "no frames for functions the compiler inlined; by default each is a frame of its own, innermost "
		 "first, as perf shows them (found in DWARF, in the binary or its debug file)",
	 .set = [](Options &o, G, V) { o.inline_frames = false; return ok; }},
	{.name = "no-debuginfod", .group = "Output",
	 .help = "fetch no debug files, even with DEBUGINFOD_URLS set (below)",
	 .set = [](Options &o, G, V) { o.debuginfod = false; return ok; }},
	{.name = "debuginfod-timeout", .kind = ValueKind::Number, .value_name = "SECONDS", .min = 1, .max = 3600,
	 .expected = "whole seconds, {range}", .group = "Output",
	 .help = "how long the fetch of debug files may add to the end of a run (or of each --interval window), "
		 "all files together (default {default})",
	 .default_value = "5",
	 .set = [](Options &o, G, V v) { o.debuginfod_timeout_s = uint32_t(v.number); return ok; }},
	{.name = "output", .shorts = "o", .kind = ValueKind::Text, .value_name = "FILE", .expected = "a file name",
	 .accepts = nonempty, .group = "Output",
	 .help = output_help(),
	 .set = [](Options &o, G, V v) { o.output_path = v.text; return ok; }},
	{.name = "format", .kind = ValueKind::Choice, .value_name = "FORMAT",
	 .choices = format_choices(),
	 .group = "Output", .help = "{choices}", .default_value = "stacks",
	 .set = [](Options &, G g, V v) {
		 g.format = format_from_name(v.text);
		 g.format_name = v.text;
		 return ok;
	 }},
	// Continuous profiling
	{.name = "interval", .kind = ValueKind::Number, .value_name = "SECONDS", .min = 1, .max = 86400,
	 .expected = "whole seconds, {range}", .group = "Continuous profiling",
	 .help = "end a window every SECONDS and write its report: to stdout, each opened by a line with the "
		 "window's start and end; or, with -o, to a file named by the window's start through strftime fields "
		 "(-o 'cpu-%Y%m%dT%H%M%S.pb.gz'); a name a window of this run already has gets .1, .2, ... before its "
		 "extension. Every sample is in exactly one window; the last window ends with the run",
	 .set = [](Options &o, G g, V v) { o.interval_s = v.number; g.interval = true; return ok; }},
	{.name = "push", .kind = ValueKind::Text, .value_name = "URL",
	 .expected = "an http:// or https:// URL", .accepts = http_url, .group = "Continuous profiling",
	 .help = "send each window to a Grafana Pyroscope server (its /ingest API: http://HOST:4040/ingest) or to a "
		 "Parca server (its WriteRaw API, by gRPC-web, on port 7070: "
		 "/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw), as gzipped pprof; or to an OpenTelemetry "
		 "Collector or any other OTLP backend, as an OTLP profiles request over HTTP (http://HOST:4318/"
		 "v1development/profiles; with --push-format otlp, OTEL_EXPORTER_OTLP_ENDPOINT when no URL is given). "
		 "Nothing goes to stdout unless -o also names files. A failed push is retried, with backoff, from a "
		 "queue; sampling never waits for the server",
	 .set = [](Options &o, G, V v) { o.push_url = v.text; return ok; }},
	{.name = "push-format", .kind = ValueKind::Choice, .value_name = "FORMAT",
	 .choices = push_format_choices(), .group = "Continuous profiling",
	 .help = "{choices}, for a URL whose path does not tell (http://HOST:4040 gets /ingest added, and so on)",
	 .set = [](Options &o, G, V v) {
		 o.push_format = push_backend_named(v.text)->format;
		 return ok;
	 }},
	{.name = "app", .kind = ValueKind::Text, .value_name = "NAME",
	 .expected = "a name of up to 200 printable characters, none of space { } = , \" \\", .accepts = app_name,
	 .group = "Continuous profiling",
	 .help = "the service name each window carries (default: OTLP's OTEL_SERVICE_NAME, else the host name)",
	 .set = [](Options &o, G, V v) { o.app = v.text; return ok; }},
	{.name = "push-queue", .kind = ValueKind::Number, .value_name = "N", .min = 1, .max = 100000,
	 .expected = "a number of windows, {range}", .group = "Continuous profiling",
	 .help = "windows kept while the server is unreachable (default {default}); a window pushed out of a full "
		 "queue is counted on stderr",
	 .default_value = "20", .set = [](Options &o, G, V v) { o.push_queue = uint32_t(v.number); return ok; }},
	{.name = "push-queue-bytes", .kind = ValueKind::Bytes, .value_name = "SIZE", .min = 1 << 16,
	 .max = 1ull << 40, .expected = "a size in bytes, 64K or more (K, M and G suffixes allowed)",
	 .group = "Continuous profiling", .help = "their bytes at most (default {default}; K, M and G suffixes)",
	 .default_value = "64M", .set = [](Options &o, G, V v) { o.push_queue_bytes = v.number; return ok; }},
	{.name = "push-header", .kind = ValueKind::Text, .value_name = "'NAME: VALUE'",
	 .group = "Continuous profiling",
	 .help = "a header every push carries (repeatable): a tenant (X-Scope-OrgID: ID), a gateway's route. Not "
		 "for secrets: the command line is every user's to read",
	 .set = push_header, .repeatable = true},
	{.name = "push-auth-file", .kind = ValueKind::Text, .value_name = "FILE",
	 .expected = "a file", .accepts = nonempty, .group = "Continuous profiling",
	 .help = "the server's credentials: a line 'Bearer TOKEN' or 'USER:PASSWORD' (basic auth), and "
		 "'NAME: VALUE' lines for headers that hold secrets; '#' starts a comment. FILE must be owned by root "
		 "(or by the user profile runs as) and readable by no one else. A server that refuses them (401, 403) "
		 "gets no more windows this run: one line says so",
	 .set = [](Options &o, G, V v) { o.push_auth_file = v.text; return ok; }},
	{.name = "push-ca", .kind = ValueKind::Text, .value_name = "FILE", .expected = "a file",
	 .accepts = nonempty, .group = "Continuous profiling",
	 .help = "trust https:// servers whose certificates this CA (PEM) signed instead of the system's CAs",
	 .set = [](Options &o, G, V v) { o.push_ca = v.text; return ok; }},
	{.name = "push-cert", .kind = ValueKind::Text, .value_name = "FILE", .expected = "a file",
	 .accepts = nonempty, .group = "Continuous profiling",
	 .help = "a client certificate (PEM), for a server that asks for one",
	 .set = [](Options &o, G, V v) { o.push_cert = v.text; return ok; }},
	{.name = "push-key", .kind = ValueKind::Text, .value_name = "FILE", .expected = "a file",
	 .accepts = nonempty, .group = "Continuous profiling",
	 .help = "its private key, kept as --push-auth-file is",
	 .set = [](Options &o, G, V v) { o.push_key = v.text; return ok; }},
	{.name = "cgroup", .kind = ValueKind::Text, .value_name = "PATH",
	 .expected = "a cgroup v2 directory or path", .accepts = nonempty, .group = "Continuous profiling",
	 .help = "only tasks in this cgroup v2 group or below it, filtered in the kernel; a directory of the "
		 "cgroup2 mount, or a path as /proc/PID/cgroup shows it (repeatable: any of them)",
	 .set = [](Options &o, G, V v) { o.cgroups.emplace_back(v.text); return ok; },
	 .repeatable = true},
	{.name = "agent", .group = "Continuous profiling",
	 .help = "a continuous agent's defaults: -f 19, --interval 15, the whole machine, until stopped; explicit "
		 "options win",
	 .set = [](Options &o, G, V) { o.agent = true; return ok; }},
	// How user stacks are walked
	{.name = "unwind", .kind = ValueKind::Choice, .value_name = "MODE",
	 .choices = {{"auto", "from the unwind tables (.eh_frame) that compilers put in programs and libraries, "
			      "where there is one; by frame pointers elsewhere (the default)"},
		     {"fp", "by frame pointers only, as BCC and perf -g do: programs built without frame pointers "
			    "(most of Debian's) lose their callers"},
		     {"dwarf", "from unwind tables only; a stack ends where no table covers it"}},
	 .group = "How user stacks are walked", .default_value = "auto",
	 .set = [](Options &o, G, V v) {
		 o.unwind = v.text == "fp" ? UnwindMode::FramePointers : v.text == "dwarf" ? UnwindMode::Tables
											 : UnwindMode::Auto;
		 return ok;
	 }},
	// Limits
	{.name = "stack-storage-size", .kind = ValueKind::Number, .value_name = "N", .min = 1,
	 .max = 1u << 26, .expected = "a number of entries, {range}", .group = "Limits",
	 .help = "distinct stacks the kernel keeps (default {default}); each takes about 8 bytes per frame of "
		 "--perf-max-stack-depth, twice (one map fills while the other is read), from the start: 34 MiB by "
		 "default (walking unwind tables, a run of a given duration and -f takes no more than it can fill)",
	 .default_value = "16384",
	 .set = [](Options &o, G, V v) { o.stack_storage_size = uint32_t(v.number); return ok; }},
	{.name = "hash-storage-size", .kind = ValueKind::Number, .value_name = "N", .min = 1,
	 .max = 1u << 26, .expected = "a number of entries, {range}", .group = "Limits",
	 .help = "distinct (process, user stack, kernel stack) counts the counts map holds (default {default}: "
		 "3 MiB)",
	 .default_value = "40960",
	 .set = [](Options &o, G, V v) { o.hash_storage_size = uint32_t(v.number); return ok; }},
	{.name = "perf-max-stack-depth", .kind = ValueKind::Number, .value_name = "N", .min = 1,
	 .max = 1024, .expected = "a number of frames, {range}", .group = "Limits",
	 .help = "frames kept per stack, deeper ones are cut (default {default}; at most 127 but with --unwind fp)",
	 .default_value = "127",
	 .set = [](Options &o, G, V v) { o.max_stack_depth = uint32_t(v.number); return ok; }},
	{.name = "unwind-table-size", .kind = ValueKind::Number, .value_name = "N", .min = 1024,
	 .max = 1u << 26, .expected = "a number of table rows, {range}", .group = "Limits",
	 .help = "unwind table rows the kernel may hold, 8 bytes each, taken as tables load (default {default}: "
		 "64 MiB at most)",
	 .default_value = "8388608",
	 .set = [](Options &o, G, V v) { o.unwind_table_size = uint32_t(v.number); return ok; }},
	{.name = "unwind-cache-size", .kind = ValueKind::Bytes, .value_name = "SIZE", .min = 0,
	 .max = 1ull << 40, .expected = "a size in bytes (K, M and G suffixes allowed), 0 for no cache",
	 .group = "Limits",
	 .help = "disk the unwind tables kept between runs may take (default {default}; K, M and G suffixes; 0: "
		 "none kept), in /var/cache/profile/unwind, least recently used dropped first",
	 .default_value = "256M", .set = [](Options &o, G, V v) { o.unwind_cache_size = v.number; return ok; }},
	// Help
	{.name = "help", .shorts = "h", .group = "Help",
	 .help = "this text", .set = [](Options &o, G, V) { o.help = true; return ok; }},
	{.name = "version", .shorts = "V", .group = "Help",
	 .help = "the version", .set = [](Options &o, G, V) { o.version = true; return ok; }},
}, "unwind");

// An option's value that getopt_long returns: its first short letter, or one past the
// letters for a long-only one.
int getopt_value(size_t index)
{
	return table[index].shorts[0] ? table[index].shorts[0] : 256 + int(index);
}

const OptionSpec *spec_of(int value)
{
	for (size_t i = 0; i < table.size(); i++)
		if (getopt_value(i) == value || (value < 256 && std::strchr(table[i].shorts, value) && value))
			return &table[i];
	return nullptr;
}

// "-f" for an option with a short name, else "--name": how errors name it.
std::string display_name(const OptionSpec &spec)
{
	return spec.shorts[0] ? std::string("-") + spec.shorts[0] : std::string("--") + spec.name;
}

std::string expected_text(const OptionSpec &spec)
{
	if (spec.kind == ValueKind::Choice)
		return choice_list(spec, false);
	return replace_all(spec.expected ? spec.expected : "", "{range}",
			   std::to_string(spec.min) + " to " + std::to_string(spec.max));
}

// Reads one option's value by its kind, or says the usage error.
Result<OptionValue> read_value(const OptionSpec &spec, std::string_view arg)
{
	OptionValue value;
	value.text = arg;
	bool good = true;
	switch (spec.kind) {
	case ValueKind::None:
		value.text = spec.name; // a switch's value: its name
		break;
	case ValueKind::Number:
	case ValueKind::Bytes: {
		auto n = spec.kind == ValueKind::Number ? parse_number(arg, spec.min, spec.max)
							: parse_bytes(arg, spec.min, spec.max);
		good = n.has_value();
		value.number = n.value_or(0);
		break;
	}
	case ValueKind::Ids: {
		auto ids = parse_id_list(arg);
		good = ids.has_value();
		if (ids)
			value.ids = std::move(*ids);
		break;
	}
	case ValueKind::Choice:
		good = std::any_of(spec.choices.begin(), spec.choices.end(),
				   [&](const OptionChoice &c) { return arg == c.name; });
		break;
	case ValueKind::Text:
		good = !spec.accepts || spec.accepts(arg);
		break;
	}
	if (good)
		return value;
	return Error("invalid value '" + std::string(arg) + "' for " + display_name(spec) + ": expected " +
		     expected_text(spec));
}

// The checks of options against each other, once every one has been read; settles what
// depends on more than one.
Status check_combinations(Options &options, const OptionsGiven &given)
{
	if (given.user_only && given.kernel_only)
		return Error("-U and -K cannot be used together: -U keeps only user stacks, -K only kernel stacks");
	if (given.frequency && given.count)
		return Error("-f and -c cannot be used together: sample by frequency or by event count");
	if (!options.pids.empty() && !options.tids.empty())
		return Error("-p and -L cannot be used together");
	if (options.off_cpu) {
		// What only sampling has: refused rather than silently ignored.
		for (auto [given_too, what] : {std::pair{given.frequency, "-f"}, {given.count, "-c"},
					       {options.include_idle, "-I"}})
			if (given_too)
				return Error(std::string(what) + " cannot be used with --off-cpu: it counts the time "
					     "threads spend off the CPU at each context switch, not samples");
		if (options.unwind == UnwindMode::FramePointers)
			return Error("--unwind fp cannot be used with --off-cpu: its stacks are walked from unwind tables");
		if (options.min_block_us > options.max_block_us)
			return Error("--min-block " + std::to_string(options.min_block_us) + " is above --max-block " +
				     std::to_string(options.max_block_us) + ": nothing would be counted");
	} else if (given.block_limits) {
		return Error("--min-block and --max-block are for --off-cpu: give --off-cpu too");
	} else if (options.wakers) {
		return Error("--wakers is for --off-cpu: give --off-cpu too");
	}
	if (given.count)
		options.frequency = 0;
	// --agent: what a continuous agent wants, where the command line does not say otherwise.
	if (options.agent) {
		if (!given.frequency && !given.count)
			options.frequency = 19;
		if (!given.interval)
			options.interval_s = 15;
		if (!options.pids.empty() || !options.tids.empty())
			return Error("--agent samples the whole machine: -p and -L cannot be used with it "
				     "(--cgroup can)");
	}
	if (!options.push_url.empty() && !options.interval_s)
		return Error("--push sends one window every --interval seconds: give --interval (or --agent)");
	if (options.push_format != PushFormat::Auto && options.push_url.empty())
		return Error(std::string("--push-format says how to --push: give --push URL too") +
			     (options.push_format == PushFormat::Otlp ? " (or set OTEL_EXPORTER_OTLP_ENDPOINT)" : ""));
	for (auto [given_too, name] : {std::pair{!options.push_headers.empty(), "--push-header"},
				       {!options.push_auth_file.empty(), "--push-auth-file"},
				       {!options.push_ca.empty(), "--push-ca"},
				       {!options.push_cert.empty(), "--push-cert"},
				       {!options.push_key.empty(), "--push-key"}})
		if (given_too && options.push_url.empty())
			return Error(std::string(name) + " is for --push: give --push URL too");
	if (options.push_cert.empty() != options.push_key.empty())
		return Error("--push-cert and --push-key go together: the client certificate and its key");
	if (!options.push_url.empty() && options.push_url.starts_with("http://") &&
	    !(options.push_ca + options.push_cert).empty())
		return Error(std::string(options.push_ca.empty() ? "--push-cert" : "--push-ca") +
			     " is for an https:// --push URL");
	// Report titles and pprof comments carry the command line: never the URL's password.
	if (options.push_url.find('@') != std::string::npos)
		if (std::string shown = url_for_humans(options.push_url); shown != options.push_url)
			for (size_t at; (at = options.command_line.find(options.push_url)) != std::string::npos;)
				options.command_line.replace(at, options.push_url.size(), shown);
	options.user_stacks = !given.kernel_only;
	options.kernel_stacks = !given.user_only;

	// The format is what a format flag names (--format, else --folded or -E), else what
	// -o's extension names: what the user typed to choose it beats what a file name
	// suggests. -E also puts the process id in the root frames of --format svg.
	if (given.format && given.folded_flag && *given.format != ReportFormat::Folded)
		return Error("--folded and --format " + given.format_name + " name two formats: give one");
	if (given.format)
		options.format = *given.format;
	else if (given.folded)
		options.format = ReportFormat::Folded;
	else if (!options.output_path.empty()) {
		auto by_extension = format_from_path(options.output_path);
		if (!by_extension)
			return Error("cannot tell the format of '" + options.output_path + "' from its extension " +
				     report_suffix_list(false) + ": add --format " + report_format_names("|"));
		options.format = *by_extension;
	}
	if (const ReportFormatRow &row = report_format(options.format);
	    options.interval_s && options.output_path.empty() && options.push_url.empty() && row.binary)
		return Error("--interval with --format " + std::string(row.name) + " writes one file per window: give -o "
			     "with strftime fields (-o 'cpu-%Y%m%dT%H%M%S" + std::string(row.suffixes.front()) + "') or --push");
	return {};
}

} // namespace

// "a, b or c"; with `bar`, "a | b | c".
std::string choice_list(const OptionSpec &spec, bool bar)
{
	std::string text;
	for (size_t i = 0; i < spec.choices.size(); i++) {
		if (i)
			text += bar ? " | " : i + 1 == spec.choices.size() ? " or " : ", ";
		text += spec.choices[i].name;
	}
	return text;
}

std::string replace_all(std::string text, std::string_view from, const std::string &to)
{
	for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
		text.replace(at, from.size(), to);
	return text;
}

const std::vector<OptionSpec> &option_table()
{
	return table;
}

Result<Options> parse_options(int argc, char **argv)
{
	Options options;
	OptionsGiven given;
	for (int i = 0; i < argc; i++) {
		if (i)
			options.command_line += ' ';
		options.command_line += argv[i];
	}

	// getopt_long's view of the table.
	std::string short_options = ":";
	std::vector<option> long_options;
	for (size_t i = 0; i < table.size(); i++) {
		const bool value = table[i].kind != ValueKind::None;
		for (const char *c = table[i].shorts; *c; c++)
			short_options += std::string(1, *c) + (value ? ":" : "");
		long_options.push_back({table[i].name, value ? required_argument : no_argument, nullptr, getopt_value(i)});
	}
	long_options.push_back({});

	optind = 0; // 0, not 1: glibc then also resets its state from any earlier parse
	opterr = 0;
	// The value each option was first given: another one is refused (OptionSpec::repeatable).
	std::vector<std::optional<std::string>> first_value(table.size());
	int opt;
	while ((opt = getopt_long(argc, argv, short_options.c_str(), long_options.data(), nullptr)) != -1) {
		if (opt == ':')
			return Error("option " + std::string(argv[optind - 1]) + " needs a value");
		const OptionSpec *spec = opt == '?' ? nullptr : spec_of(opt);
		if (!spec)
			return Error("unknown option '" + std::string(argv[optind - 1]) + "'");
		Result<OptionValue> value = read_value(*spec, optarg ? optarg : "");
		if (!value.ok())
			return Error(value.error());
		std::optional<std::string> &first = first_value[size_t(spec - table.data())];
		if (spec->kind != ValueKind::None && !spec->repeatable && first && *first != value->text)
			return Error(display_name(*spec) + " given twice (" + *first + ", then " + std::string(value->text) +
				     "): give it once" +
				     (std::string(spec->name) == "cpu" ? " (-C samples one CPU)" : ""));
		first = std::string(value->text);
		if (Status set = spec->set(options, given, *value); !set.ok())
			return Error(set.error());
		if (options.help || options.version)
			return options;
	}

	if (optind < argc) {
		auto seconds = parse_number(argv[optind], 1, 100000000);
		if (!seconds)
			return Error("invalid duration '" + std::string(argv[optind]) +
				     "': expected whole seconds, at least 1");
		options.duration_s = *seconds;
		optind++;
	}
	if (optind < argc)
		return Error("unexpected argument '" + std::string(argv[optind]) +
			     "' (the duration is the only positional argument)");
	if (Status endpoint = apply_otel_endpoint(options, getenv); !endpoint.ok())
		return Error(endpoint.error());
	if (Status combined = check_combinations(options, given); !combined.ok())
		return Error(combined.error());
	if (Status otel = apply_otel_environment(options, getenv); !otel.ok())
		return Error(otel.error());
	return options;
}

Delivery delivery(const Options &options)
{
	return {options.format, options.report, options.output_path, !options.push_url.empty()};
}

std::string header_line(const Options &options, const SamplerConfig &sampled)
{
	// Off the CPU, offcputime's words.
	std::string line = options.off_cpu ? std::string("Tracing off-CPU time (us) of ")
			   : sampled.frequency
				   ? "Sampling at " + std::to_string(sampled.frequency) + " Hertz of "
				   : "Sampling at every " + std::to_string(sampled.period) + " events of ";
	auto join = [](const std::vector<uint32_t> &ids) {
		std::string s;
		for (uint32_t id : ids)
			s += (s.empty() ? "" : ",") + std::to_string(id);
		return s;
	};
	if (!sampled.pids.empty())
		line += "PID " + join(sampled.pids);
	else if (!options.tids.empty())
		line += "TID " + join(options.tids);
	else
		line += "all threads";
	if (options.cpu >= 0)
		line += " on CPU " + std::to_string(options.cpu);
	line += " by ";
	line += !options.kernel_stacks ? "user" : !options.user_stacks ? "kernel" : "user + kernel";
	line += " stack";
	if (!sampled.cgroups.empty())
		line += sampled.cgroups.size() > 1 ? " in " + std::to_string(sampled.cgroups.size()) + " cgroups"
						   : " in cgroup " + sampled.cgroups[0];
	if (options.interval_s)
		line += ", a report every " + std::to_string(options.interval_s) + " s";
	if (options.duration_s)
		line += " for " + std::to_string(*options.duration_s) + " secs.";
	else
		line += "... Hit Ctrl-C to end.";
	return line;
}
