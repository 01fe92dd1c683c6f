// cli/options.cpp: parses the command line (doc/cli.md says why it is so); each bad value
// is one UsageError line.
#include "cli/options.h"

#include <getopt.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "push/push.h"

namespace {

enum LongOnly {
	OPT_FOLDED = 1000,
	OPT_SW_EVENT,
	OPT_FORMAT,
	OPT_STACK_STORAGE,
	OPT_HASH_STORAGE,
	OPT_STACK_DEPTH,
	OPT_UNWIND,
	OPT_UNWIND_TABLE_SIZE,
	OPT_UNWIND_CACHE_SIZE,
	OPT_INTERVAL,
	OPT_PUSH,
	OPT_PUSH_FORMAT,
	OPT_APP,
	OPT_PUSH_QUEUE,
	OPT_PUSH_QUEUE_BYTES,
	OPT_PUSH_HEADER,
	OPT_PUSH_AUTH_FILE,
	OPT_PUSH_CA,
	OPT_PUSH_CERT,
	OPT_PUSH_KEY,
	OPT_CGROUP,
	OPT_AGENT,
	OPT_NO_DEBUGINFOD,
	OPT_DEBUGINFOD_TIMEOUT,
};

const option long_options[] = {
	{"frequency", required_argument, nullptr, 'f'},
	{"count", required_argument, nullptr, 'c'},
	{"sw-event", no_argument, nullptr, OPT_SW_EVENT},
	{"pid", required_argument, nullptr, 'p'},
	{"tid", required_argument, nullptr, 'L'},
	{"cpu", required_argument, nullptr, 'C'},
	{"include-idle", no_argument, nullptr, 'I'},
	{"user-stacks-only", no_argument, nullptr, 'U'},
	{"kernel-stacks-only", no_argument, nullptr, 'K'},
	{"folded", no_argument, nullptr, OPT_FOLDED},
	{"fold-extend", no_argument, nullptr, 'E'},
	{"delimited", no_argument, nullptr, 'd'},
	{"annotations", no_argument, nullptr, 'a'},
	{"verbose", no_argument, nullptr, 'v'},
	{"output", required_argument, nullptr, 'o'},
	{"format", required_argument, nullptr, OPT_FORMAT},
	{"stack-storage-size", required_argument, nullptr, OPT_STACK_STORAGE},
	{"hash-storage-size", required_argument, nullptr, OPT_HASH_STORAGE},
	{"perf-max-stack-depth", required_argument, nullptr, OPT_STACK_DEPTH},
	{"unwind", required_argument, nullptr, OPT_UNWIND},
	{"unwind-table-size", required_argument, nullptr, OPT_UNWIND_TABLE_SIZE},
	{"unwind-cache-size", required_argument, nullptr, OPT_UNWIND_CACHE_SIZE},
	{"interval", required_argument, nullptr, OPT_INTERVAL},
	{"push", required_argument, nullptr, OPT_PUSH},
	{"push-format", required_argument, nullptr, OPT_PUSH_FORMAT},
	{"app", required_argument, nullptr, OPT_APP},
	{"push-queue", required_argument, nullptr, OPT_PUSH_QUEUE},
	{"push-queue-bytes", required_argument, nullptr, OPT_PUSH_QUEUE_BYTES},
	{"push-header", required_argument, nullptr, OPT_PUSH_HEADER},
	{"push-auth-file", required_argument, nullptr, OPT_PUSH_AUTH_FILE},
	{"push-ca", required_argument, nullptr, OPT_PUSH_CA},
	{"push-cert", required_argument, nullptr, OPT_PUSH_CERT},
	{"push-key", required_argument, nullptr, OPT_PUSH_KEY},
	{"cgroup", required_argument, nullptr, OPT_CGROUP},
	{"agent", no_argument, nullptr, OPT_AGENT},
	{"no-debuginfod", no_argument, nullptr, OPT_NO_DEBUGINFOD},
	{"debuginfod-timeout", required_argument, nullptr, OPT_DEBUGINFOD_TIMEOUT},
	{"help", no_argument, nullptr, 'h'},
	{"version", no_argument, nullptr, 'V'},
	{},
};

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

std::string option_name(int opt, const char *typed)
{
	for (const option &o : long_options)
		if (o.name && o.val == opt)
			return opt < 256 ? std::string("-") + char(opt) : std::string("--") + o.name;
	return typed;
}

} // namespace

std::variant<Options, UsageError> parse_options(int argc, char **argv)
{
	Options options;
	bool frequency_given = false, count_given = false, user_only = false, kernel_only = false;
	bool folded = false, folded_flag = false; // -E or --folded; --folded itself
	bool interval_given = false;
	std::optional<ReportFormat> format;
	std::string format_arg;

	for (int i = 0; i < argc; i++) {
		if (i)
			options.command_line += ' ';
		options.command_line += argv[i];
	}

	optind = 0; // 0, not 1: glibc then also resets its state from any earlier parse
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, ":f:F:c:p:L:C:IUKEdavo:hV", long_options, nullptr)) != -1) {
		std::string_view arg = optarg ? optarg : "";
		auto bad_value = [&](const std::string &what) {
			return UsageError{"invalid value '" + std::string(arg) + "' for " +
					  option_name(opt == 'F' ? 'f' : opt, "") + ": " + what};
		};
		switch (opt) {
		case 'f':
		case 'F': {
			auto hz = parse_number(arg, 1, 1000000);
			if (!hz)
				return bad_value("expected samples per second, 1 to 1000000");
			options.frequency = *hz;
			frequency_given = true;
			break;
		}
		case 'c': {
			auto n = parse_number(arg, 1, UINT64_MAX >> 1);
			if (!n)
				return bad_value("expected a positive event count");
			options.period = *n;
			count_given = true;
			break;
		}
		case OPT_SW_EVENT:
			break; // cpu-clock is what we use anyway
		case 'p':
		case 'L': {
			auto ids = parse_id_list(arg);
			if (!ids)
				return bad_value("expected a comma-separated list of positive ids");
			auto &list = opt == 'p' ? options.pids : options.tids;
			list.insert(list.end(), ids->begin(), ids->end());
			break;
		}
		case 'C': {
			auto cpu = parse_number(arg, 0, 65535);
			if (!cpu)
				return bad_value("expected a CPU number");
			options.cpu = int(*cpu);
			break;
		}
		case 'I':
			options.include_idle = true;
			break;
		case 'U':
			user_only = true;
			break;
		case 'K':
			kernel_only = true;
			break;
		case OPT_FOLDED:
			folded = folded_flag = true;
			break;
		case 'E':
			folded = true;
			options.report.fold_pid = true;
			break;
		case 'd':
			options.report.delimited = true;
			break;
		case 'a':
			options.report.annotations = true;
			break;
		case 'v':
			options.report.verbose = true;
			break;
		case 'o':
			if (arg.empty())
				return bad_value("expected a file name");
			options.output_path = arg;
			break;
		case OPT_FORMAT:
			format = format_from_name(arg);
			format_arg = arg;
			if (!format)
				return bad_value("expected stacks, folded, svg or pprof");
			break;
		case OPT_STACK_STORAGE:
		case OPT_HASH_STORAGE: {
			auto n = parse_number(arg, 1, 1u << 26);
			if (!n)
				return bad_value("expected a number of entries, 1 to 67108864");
			(opt == OPT_STACK_STORAGE ? options.stack_storage_size : options.hash_storage_size) = *n;
			break;
		}
		case OPT_STACK_DEPTH: {
			auto n = parse_number(arg, 1, 1024);
			if (!n)
				return bad_value("expected a number of frames, 1 to 1024");
			options.max_stack_depth = *n;
			break;
		}
		case OPT_UNWIND:
			if (arg == "auto")
				options.unwind = UnwindMode::Auto;
			else if (arg == "fp")
				options.unwind = UnwindMode::FramePointers;
			else if (arg == "dwarf")
				options.unwind = UnwindMode::Tables;
			else
				return bad_value("expected auto, fp or dwarf");
			break;
		case OPT_UNWIND_TABLE_SIZE: {
			auto n = parse_number(arg, 1024, 1u << 26);
			if (!n)
				return bad_value("expected a number of table rows, 1024 to 67108864");
			options.unwind_table_size = *n;
			break;
		}
		case OPT_UNWIND_CACHE_SIZE: {
			auto n = parse_bytes(arg, 0, 1ull << 40);
			if (!n)
				return bad_value("expected a size in bytes (K, M and G suffixes allowed), 0 for no cache");
			options.unwind_cache_size = *n;
			break;
		}
		case OPT_INTERVAL: {
			auto n = parse_number(arg, 1, 86400);
			if (!n)
				return bad_value("expected whole seconds, 1 to 86400");
			options.interval_s = *n;
			interval_given = true;
			break;
		}
		case OPT_PUSH:
			if (arg.substr(0, 7) != "http://" && arg.substr(0, 8) != "https://")
				return bad_value("expected an http:// or https:// URL");
			options.push_url = arg;
			break;
		case OPT_PUSH_FORMAT:
			if (arg == "pyroscope")
				options.push_format = PushFormat::Pyroscope;
			else if (arg == "parca")
				options.push_format = PushFormat::Parca;
			else
				return bad_value("expected pyroscope or parca");
			break;
		case OPT_APP:
			// Pyroscope's application names and label values: no braces, commas, quotes,
			// spaces or control characters.
			if (arg.empty() || arg.size() > 200 ||
			    std::any_of(arg.begin(), arg.end(), [](unsigned char c) {
				    return c <= ' ' || c >= 0x7f || std::strchr("{}=,\"\\", c);
			    }))
				return bad_value("expected a name of up to 200 printable characters, none of "
						 "space { } = , \" \\");
			options.app = arg;
			break;
		case OPT_PUSH_QUEUE: {
			auto n = parse_number(arg, 1, 100000);
			if (!n)
				return bad_value("expected a number of windows, 1 to 100000");
			options.push_queue = *n;
			break;
		}
		case OPT_PUSH_QUEUE_BYTES: {
			auto n = parse_bytes(arg, 1 << 16, 1ull << 40);
			if (!n)
				return bad_value("expected a size in bytes, 64K or more (K, M and G suffixes allowed)");
			options.push_queue_bytes = *n;
			break;
		}
		case OPT_PUSH_HEADER: {
			// The value is not quoted back: it may be a secret.
			if (std::string wrong = check_push_header(arg); !wrong.empty())
				return UsageError{"invalid --push-header: " + wrong};
			// Whatever is typed here is in /proc/PID/cmdline, for every user to read.
			std::string name(arg.substr(0, arg.find(':')));
			std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
			if (name == "authorization" || name == "proxy-authorization" || name == "cookie")
				return UsageError{"--push-header " + std::string(arg.substr(0, arg.find(':'))) +
						  ": a secret on the command line, where every user can read it (ps, "
						  "/proc/PID/cmdline): put it in --push-auth-file"};
			options.push_headers.emplace_back(arg);
			break;
		}
		case OPT_PUSH_AUTH_FILE:
		case OPT_PUSH_CA:
		case OPT_PUSH_CERT:
		case OPT_PUSH_KEY:
			if (arg.empty())
				return bad_value("expected a file");
			(opt == OPT_PUSH_AUTH_FILE ? options.push_auth_file
			 : opt == OPT_PUSH_CA	   ? options.push_ca
			 : opt == OPT_PUSH_CERT	   ? options.push_cert
						   : options.push_key) = arg;
			break;
		case OPT_CGROUP:
			if (arg.empty())
				return bad_value("expected a cgroup v2 directory or path");
			options.cgroups.emplace_back(arg);
			break;
		case OPT_AGENT:
			options.agent = true;
			break;
		case OPT_NO_DEBUGINFOD:
			options.debuginfod = false;
			break;
		case OPT_DEBUGINFOD_TIMEOUT: {
			auto n = parse_number(arg, 1, 3600);
			if (!n)
				return bad_value("expected whole seconds, 1 to 3600");
			options.debuginfod_timeout_s = *n;
			break;
		}
		case 'h':
			options.help = true;
			return options;
		case 'V':
			options.version = true;
			return options;
		case ':':
			return UsageError{"option " + std::string(argv[optind - 1]) + " needs a value"};
		default:
			return UsageError{"unknown option '" + std::string(argv[optind - 1]) + "'"};
		}
	}

	if (optind < argc) {
		auto seconds = parse_number(argv[optind], 1, 100000000);
		if (!seconds)
			return UsageError{"invalid duration '" + std::string(argv[optind]) +
					  "': expected whole seconds, at least 1"};
		options.duration_s = *seconds;
		optind++;
	}
	if (optind < argc)
		return UsageError{"unexpected argument '" + std::string(argv[optind]) +
				  "' (the duration is the only positional argument)"};
	if (user_only && kernel_only)
		return UsageError{"-U and -K cannot be used together: -U keeps only user stacks, -K only kernel stacks"};
	if (frequency_given && count_given)
		return UsageError{"-f and -c cannot be used together: sample by frequency or by event count"};
	if (!options.pids.empty() && !options.tids.empty())
		return UsageError{"-p and -L cannot be used together"};
	if (count_given)
		options.frequency = 0;
	// --agent: what a continuous agent wants, where the command line does not say otherwise.
	if (options.agent) {
		if (!frequency_given && !count_given)
			options.frequency = 19;
		if (!interval_given)
			options.interval_s = 15;
		if (!options.pids.empty() || !options.tids.empty())
			return UsageError{"--agent samples the whole machine: -p and -L cannot be used with it "
					  "(--cgroup can)"};
	}
	if (!options.push_url.empty() && !options.interval_s)
		return UsageError{"--push sends one window every --interval seconds: give --interval (or --agent)"};
	if (options.push_format != PushFormat::Auto && options.push_url.empty())
		return UsageError{"--push-format says how to --push: give --push URL too"};
	for (auto [given, name] : {std::pair{!options.push_headers.empty(), "--push-header"},
				   {!options.push_auth_file.empty(), "--push-auth-file"},
				   {!options.push_ca.empty(), "--push-ca"},
				   {!options.push_cert.empty(), "--push-cert"},
				   {!options.push_key.empty(), "--push-key"}})
		if (given && options.push_url.empty())
			return UsageError{std::string(name) + " is for --push: give --push URL too"};
	if (options.push_cert.empty() != options.push_key.empty())
		return UsageError{"--push-cert and --push-key go together: the client certificate and its key"};
	if (!options.push_url.empty() && options.push_url.starts_with("http://") &&
	    !(options.push_ca + options.push_cert).empty())
		return UsageError{std::string(options.push_ca.empty() ? "--push-cert" : "--push-ca") +
				  " is for an https:// --push URL"};
	// Report titles and pprof comments carry the command line: never the URL's password.
	if (options.push_url.find('@') != std::string::npos)
		if (std::string shown = url_for_humans(options.push_url); shown != options.push_url)
			for (size_t at; (at = options.command_line.find(options.push_url)) != std::string::npos;)
				options.command_line.replace(at, options.push_url.size(), shown);
	options.user_stacks = !kernel_only;
	options.kernel_stacks = !user_only;

	// The format is what a format flag names (--format, else --folded or -E), else what
	// -o's extension names: what the user typed to choose it beats what a file name
	// suggests. -E also puts the process id in the root frames of --format svg.
	if (format && folded_flag && *format != ReportFormat::Folded)
		return UsageError{"--folded and --format " + format_arg + " name two formats: give one"};
	if (format)
		options.format = *format;
	else if (folded)
		options.format = ReportFormat::Folded;
	else if (!options.output_path.empty()) {
		auto by_extension = format_from_path(options.output_path);
		if (!by_extension)
			return UsageError{"cannot tell the format of '" + options.output_path +
					  "' from its extension (.svg, .pb.gz, .folded, .txt): "
					  "add --format stacks|folded|svg|pprof"};
		options.format = *by_extension;
	}
	if (options.interval_s && options.output_path.empty() && options.push_url.empty() &&
	    options.format == ReportFormat::Pprof)
		return UsageError{"--interval with --format pprof writes one file per window: give -o with "
				  "strftime fields (-o 'cpu-%Y%m%dT%H%M%S.pb.gz') or --push"};
	return options;
}

std::string header_line(const Options &options)
{
	std::string line = options.frequency
				   ? "Sampling at " + std::to_string(options.frequency) + " Hertz of "
				   : "Sampling at every " + std::to_string(options.period) + " events of ";
	auto join = [](const std::vector<uint32_t> &ids) {
		std::string s;
		for (uint32_t id : ids)
			s += (s.empty() ? "" : ",") + std::to_string(id);
		return s;
	};
	if (!options.pids.empty())
		line += "PID " + join(options.pids);
	else if (!options.tids.empty())
		line += "TID " + join(options.tids);
	else
		line += "all threads";
	if (options.cpu >= 0)
		line += " on CPU " + std::to_string(options.cpu);
	line += " by ";
	line += !options.kernel_stacks ? "user" : !options.user_stacks ? "kernel" : "user + kernel";
	line += " stack";
	if (!options.cgroups.empty())
		line += options.cgroups.size() > 1 ? " in " + std::to_string(options.cgroups.size()) + " cgroups"
						   : " in cgroup " + options.cgroups[0];
	if (options.interval_s)
		line += ", a report every " + std::to_string(options.interval_s) + " s";
	if (options.duration_s)
		line += " for " + std::to_string(*options.duration_s) + " secs.";
	else
		line += "... Hit Ctrl-C to end.";
	return line;
}

std::string help_text()
{
	return R"(Usage: profile [OPTIONS] [DURATION]

Samples the stacks running on every CPU at a fixed rate, counts identical stacks inside
the kernel, and prints them, symbolized, when sampling ends.

Note: BCC's profile uses -f for folded output; here -f is the frequency (as -F), and
folded output is --folded.

DURATION                  seconds to sample; without it, until Ctrl-C or SIGTERM.
                          With -p or -L, sampling also ends once every process or
                          thread sampled has exited. The stacks collected so far are
                          printed either way.

Sampling: a timer on each CPU (the kernel's cpu-clock event) takes a sample of whatever
runs there, kernel and user stack, as often as -f or -c says.
  -f, -F, --frequency HZ  samples per second on each CPU (default 49)
  -c, --count N           one sample every N nanoseconds of CPU time on each CPU,
                          instead of -f (-c 10000000: every 10 ms, as -f 100)
  --sw-event              changes nothing: sampling always uses the cpu-clock software
                          timer, which needs no hardware counters (it works in VMs);
                          accepted so that command lines that pass it keep working

What to sample
  -p, --pid PID[,PID...]  only these processes; a thread id stands for its whole
                          process, as with perf record -p (-L samples one thread)
  -L, --tid TID[,TID...]  only these threads (thread ids, as top -H or ps -L show them)
  -C, --cpu CPU           only this CPU (numbered from 0)
  -I, --include-idle      keep the samples of idle CPUs, which run the idle task
                          (swapper, pid 0); without -I they are dropped
  -U, --user-stacks-only  user-space stacks only, no kernel frames
  -K, --kernel-stacks-only  kernel stacks only, no user frames

Output
  (default)               multi-line stacks, BCC's layout, hottest stack printed last
  --folded                one line per stack, root first: comm;frame;...;frame COUNT
  -E, --fold-extend       folded, with the process id in the root frame: comm-PID;...
                          (with --format svg: a flame graph with the process ids)
  -d, --delimited         a delimiter between kernel and user frames
                          ("--" in multi-line stacks, "-" in folded ones)
  -a, --annotations       append _[k] to kernel frames
  -v, --verbose           each frame's address, symbol+offset, module, and file:line
                          where debug info has it
  --no-debuginfod         fetch no debug files, even with DEBUGINFOD_URLS set (below)
  --debuginfod-timeout SECONDS  how long the fetch of debug files may add to the end
                          of a run (or of each --interval window), all files together
                          (default 5)
  -o, --output FILE       write the report to FILE, in the format named by --format,
                          --folded or -E, else by its extension (.svg flame graph,
                          .pb.gz pprof, .folded, .txt multi-line stacks); written whole
                          to a temporary name, then renamed over FILE
  --format FORMAT         stacks | folded | svg | pprof

Continuous profiling: cut the run into windows, each its own report.
  --interval SECONDS      end a window every SECONDS and write its report: to stdout,
                          each opened by a line with the window's start and end; or, with
                          -o, to a file named by the window's start through strftime
                          fields (-o 'cpu-%Y%m%dT%H%M%S.pb.gz'); a name a window of
                          this run already has gets .1, .2, ... before its extension.
                          Every sample is in exactly one window; the last window ends
                          with the run
  --push URL              send each window, as gzipped pprof, to a Grafana Pyroscope
                          server (its /ingest API: http://HOST:4040/ingest) or to a Parca
                          server (its WriteRaw API, by gRPC-web: http://HOST:7070/parca.
                          profilestore.v1alpha1.ProfileStoreService/WriteRaw); nothing
                          goes to stdout unless -o also names files. A failed push is
                          retried, with backoff, from a queue; sampling never waits for
                          the server
  --push-format FORMAT    pyroscope | parca, for a URL whose path does not tell
                          (http://HOST:4040 gets /ingest added, and so on)
  --app NAME              the service name each window carries (default: the host name)
  --push-queue N          windows kept while the server is unreachable (default 20); a
                          window pushed out of a full queue is counted on stderr
  --push-queue-bytes SIZE their bytes at most (default 64M; K, M and G suffixes)
  --push-header 'NAME: VALUE'  a header every push carries (repeatable): a tenant
                          (X-Scope-OrgID: ID), a gateway's route. Not for secrets: the
                          command line is every user's to read
  --push-auth-file FILE   the server's credentials: a line 'Bearer TOKEN' or
                          'USER:PASSWORD' (basic auth), and 'NAME: VALUE' lines for
                          headers that hold secrets; '#' starts a comment. FILE must be
                          owned by root (or by the user profile runs as) and readable by
                          no one else. A server that refuses them (401, 403) gets no more
                          windows this run: one line says so
  --push-ca FILE          trust https:// servers whose certificates this CA (PEM) signed
                          instead of the system's CAs
  --push-cert FILE        a client certificate (PEM), for a server that asks for one
  --push-key FILE         its private key, kept as --push-auth-file is
  --cgroup PATH           only tasks in this cgroup v2 group or below it, filtered in the
                          kernel; a directory of the cgroup2 mount, or a path as
                          /proc/PID/cgroup shows it (repeatable: any of them)
  --agent                 a continuous agent's defaults: -f 19, --interval 15, the whole
                          machine, until stopped; explicit options win

  Each pprof sample carries its process as labels: pid, comm, and, read from
  /proc/PID/cgroup, its cgroup path and container id (docker, containerd, CRI-O,
  podman, Kubernetes pods). -E's folded roots read comm-PID@CONTAINER (12 characters
  of the id) for processes in a container.

How user stacks are walked
  --unwind auto           from the unwind tables (.eh_frame) that compilers put in
                          programs and libraries, where there is one; by frame pointers
                          elsewhere (the default)
  --unwind fp             by frame pointers only, as BCC and perf -g do: programs built
                          without frame pointers (most of Debian's) lose their callers
  --unwind dwarf          from unwind tables only; a stack ends where no table covers it

Limits: the kernel keeps what is sampled in maps until profile reads them (as they
fill, and at the end); a full map loses samples, and the last line on stderr then says
how many and which option to raise. Larger maps take more kernel memory, from the start
of the run: above 1 GiB profile warns, above half the memory available it refuses.
  --stack-storage-size N    distinct stacks the kernel keeps (default 16384); each takes
                            about 8 bytes per frame of --perf-max-stack-depth, twice (one
                            map fills while the other is read), from the start: 34 MiB
                            by default
  --hash-storage-size N     distinct (process, user stack, kernel stack) counts the
                            counts map holds (default 40960: 3 MiB)
  --perf-max-stack-depth N  frames kept per stack, deeper ones are cut (default 127;
                            at most 127 but with --unwind fp)
  --unwind-table-size N     unwind table rows the kernel may hold, 8 bytes each,
                            taken as tables load (default 8388608: 64 MiB at most)
  --unwind-cache-size SIZE  disk the unwind tables kept between runs may take (default
                            256M; K, M and G suffixes; 0: none kept), in
                            /var/cache/profile/unwind, least recently used dropped first

Names of stripped programs and libraries: from their debug files, found by build id
under /usr/lib/debug/.build-id or by their .gnu_debuglink. With DEBUGINFOD_URLS set
(sudo drops it: sudo --preserve-env=DEBUGINFOD_URLS), the debug files not found here
are fetched from those debuginfod servers at the end of the run, by libdebuginfod, in
parallel, and kept in DEBUGINFOD_CACHE_PATH (for root: /var/cache/profile/debuginfod).
A file whose build id differs from the program's is not used.

  -h, --help      this text
  -V, --version   the version

Examples:
  sudo ./profile -f 49 10           # all CPUs at 49 Hz for 10 seconds
  sudo ./profile -p 1234 --folded   # one process, folded, until Ctrl-C
  sudo ./profile -o cpu.svg 10      # a flame graph
  sudo ./profile --interval 60 -o 'cpu-%H%M.svg'     # a flame graph a minute
  sudo ./profile --agent --push http://pyroscope:4040/ingest   # a continuous agent
)";
}
