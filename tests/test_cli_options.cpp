// tests/test_cli_options.cpp: the command line, value by value.
#include <doctest/doctest.h>

#include <set>

#include "cli/options.h"

namespace {

Result<Options> parse(std::vector<std::string> args)
{
	args.insert(args.begin(), "profile");
	std::vector<char *> argv;
	for (auto &a : args)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	return parse_options(int(args.size()), argv.data());
}

Options ok(std::vector<std::string> args)
{
	Result<Options> parsed = parse(args);
	if (!parsed.ok())
		FAIL("unexpected usage error: " << parsed.error());
	return std::move(parsed).value();
}

std::string error(std::vector<std::string> args)
{
	Result<Options> parsed = parse(args);
	REQUIRE(!parsed.ok());
	return parsed.error();
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("defaults are BCC's: 49 Hz, user + kernel, until Ctrl-C, stacks report")
{
	Options o = ok({});
	CHECK(o.frequency == 49);
	CHECK(o.period == 0);
	CHECK(o.user_stacks);
	CHECK(o.kernel_stacks);
	CHECK(!o.duration_s);
	CHECK(o.format == ReportFormat::Stacks);
	CHECK(o.stack_storage_size == 16384);
	CHECK(o.hash_storage_size == 40960);
	CHECK(o.max_stack_depth == 127);
	CHECK(header_line(o) == "Sampling at 49 Hertz of all threads by user + kernel stack... Hit Ctrl-C to end.");
}

TEST_CASE("-f, -F and --frequency set the frequency; the duration is positional")
{
	CHECK(ok({"-f", "99"}).frequency == 99);
	CHECK(ok({"-F", "999"}).frequency == 999);
	CHECK(ok({"--frequency=13"}).frequency == 13);
	Options o = ok({"-f", "49", "10"});
	CHECK(*o.duration_s == 10);
	CHECK(header_line(o) == "Sampling at 49 Hertz of all threads by user + kernel stack for 10 secs.");
	CHECK(o.command_line == "profile -f 49 10");
}

TEST_CASE("-c switches to period mode")
{
	Options o = ok({"-c", "1000000", "5"});
	CHECK(o.frequency == 0);
	CHECK(o.period == 1000000);
	CHECK(header_line(o) == "Sampling at every 1000000 events of all threads by user + kernel stack for 5 secs.");
	CHECK(error({"-c", "10", "-f", "99"}).find("-f and -c") != std::string::npos);
}

TEST_CASE("filters: pid and tid lists, cpu, idle")
{
	Options o = ok({"-p", "12,34", "-C", "1", "-I"});
	CHECK(o.pids == std::vector<uint32_t>{12, 34});
	CHECK(o.cpu == 1);
	CHECK(o.include_idle);
	CHECK(header_line(o) == "Sampling at 49 Hertz of PID 12,34 on CPU 1 by user + kernel stack... Hit Ctrl-C to end.");
	CHECK(ok({"-L", "7"}).tids == std::vector<uint32_t>{7});
	CHECK(ok({"--pid", "5", "--pid", "6"}).pids == std::vector<uint32_t>{5, 6});
	CHECK(error({"-p", "1,,2"}).find("-p") != std::string::npos);
	CHECK(error({"-p", "0"}).find("-p") != std::string::npos);
	CHECK(error({"-p", "1", "-L", "2"}).find("-p and -L") != std::string::npos);
	CHECK(error({"-C", "-1"}).find("-C") != std::string::npos);
}

TEST_CASE("-U and -K pick one stack; together they are an error")
{
	Options u = ok({"-U"});
	CHECK(u.user_stacks);
	CHECK(!u.kernel_stacks);
	CHECK(header_line(u).find("by user stack") != std::string::npos);
	Options k = ok({"--kernel-stacks-only"});
	CHECK(!k.user_stacks);
	CHECK(k.kernel_stacks);
	CHECK(error({"-U", "-K"}).find("-U and -K") != std::string::npos);
}

TEST_CASE("output options: folded, -E, -d, -a, -v, --no-inline, -o and --format")
{
	CHECK(ok({"--folded"}).format == ReportFormat::Folded);
	Options e = ok({"-E"});
	CHECK(e.format == ReportFormat::Folded);
	CHECK(e.report.fold_pid);
	Options d = ok({"-d", "-a", "-v"});
	CHECK(d.report.delimited);
	CHECK(d.report.annotations);
	CHECK(d.report.verbose);
	// Inlined frames are on by default, as in perf; --no-inline turns them off.
	CHECK(ok({}).inline_frames);
	CHECK(!ok({"--no-inline"}).inline_frames);
	CHECK(!ok({"--no-inline", "-v", "--folded"}).inline_frames);
	CHECK(ok({"-o", "cpu.svg"}).format == ReportFormat::Svg);
	CHECK(ok({"-o", "cpu.pb.gz"}).format == ReportFormat::Pprof);
	CHECK(ok({"-o", "cpu.folded"}).format == ReportFormat::Folded);
	CHECK(ok({"-o", "cpu.txt"}).format == ReportFormat::Stacks);
	CHECK(ok({"-o", "cpu.txt", "--folded"}).format == ReportFormat::Folded);
	CHECK(ok({"-o", "cpu.data", "--format", "pprof"}).format == ReportFormat::Pprof);
	CHECK(ok({"--format=svg", "-o", "x.txt"}).format == ReportFormat::Svg);
	CHECK(error({"-o", "cpu.data"}).find("--format") != std::string::npos);
	// --folded names the format of a file whose extension does not.
	CHECK(ok({"-o", "cpu.data", "--folded"}).format == ReportFormat::Folded);
	CHECK(ok({"-E", "-o", "/dev/full"}).format == ReportFormat::Folded);
	CHECK(error({"--format", "png"}).find("stacks, folded, svg, pprof or otlp") != std::string::npos);
}

TEST_CASE("a format flag wins over -o's extension; --folded and another --format disagree")
{
	// What the user typed to name the format beats what the file name suggests, in
	// either order on the command line.
	CHECK(ok({"--folded", "-o", "cpu.svg"}).format == ReportFormat::Folded);
	CHECK(ok({"-o", "cpu.pb.gz", "--folded"}).format == ReportFormat::Folded);
	CHECK(ok({"-E", "-o", "cpu.svg"}).format == ReportFormat::Folded);
	CHECK(ok({"--format", "stacks", "-o", "cpu.folded"}).format == ReportFormat::Stacks);
	// -E adds the process id to whatever --format names.
	Options e = ok({"-E", "--format", "svg", "-o", "cpu.svg"});
	CHECK(e.format == ReportFormat::Svg);
	CHECK(e.report.fold_pid);
	CHECK(ok({"--folded", "--format", "folded"}).format == ReportFormat::Folded);
	CHECK(error({"--folded", "--format", "svg"}) ==
	      "--folded and --format svg name two formats: give one");
	CHECK(error({"--format=pprof", "--folded", "-o", "x.pb.gz"}) ==
	      "--folded and --format pprof name two formats: give one");
	// The error for an unknown extension names the ways that now work.
	CHECK(error({"-o", "cpu.data"}) ==
	      "cannot tell the format of 'cpu.data' from its extension (.svg, .pb.gz, .folded, .txt, .otlp): "
	      "add --format stacks|folded|svg|pprof|otlp");
	// --help says the same.
	CHECK(help_text().find("--folded or -E, else by its extension") != std::string::npos);
}

TEST_CASE("limits take positive sizes")
{
	Options o = ok({"--stack-storage-size", "16", "--hash-storage-size", "32", "--perf-max-stack-depth", "64"});
	CHECK(o.stack_storage_size == 16);
	CHECK(o.hash_storage_size == 32);
	CHECK(o.max_stack_depth == 64);
	CHECK(error({"--stack-storage-size", "0"}).find("--stack-storage-size") != std::string::npos);
	CHECK(error({"--perf-max-stack-depth", "5000"}).find("--perf-max-stack-depth") != std::string::npos);
}

TEST_CASE("--unwind picks how user stacks are walked; tables by default")
{
	CHECK(ok({}).unwind == UnwindMode::Auto);
	CHECK(ok({"--unwind", "fp"}).unwind == UnwindMode::FramePointers);
	CHECK(ok({"--unwind", "dwarf"}).unwind == UnwindMode::Tables);
	CHECK(ok({"--unwind=auto"}).unwind == UnwindMode::Auto);
	CHECK(ok({}).unwind_table_size == 8388608);
	CHECK(ok({"--unwind-table-size", "65536"}).unwind_table_size == 65536);
	CHECK(error({"--unwind", "lbr"}) == "invalid value 'lbr' for --unwind: expected auto, fp or dwarf");
	CHECK(error({"--unwind-table-size", "10"}).find("1024 to 67108864") != std::string::npos);
	CHECK(help_text().find("--unwind dwarf") != std::string::npos);
}

TEST_CASE("--off-cpu counts time off the CPU; what only sampling has is refused with it")
{
	CHECK_FALSE(ok({}).off_cpu);
	Options o = ok({"--off-cpu", "-p", "1", "-U", "-C", "0", "--min-block", "100", "--max-block", "2000", "5"});
	CHECK(o.off_cpu);
	CHECK(o.min_block_us == 100);
	CHECK(o.max_block_us == 2000);
	CHECK(o.duration_s == 5u);
	CHECK(ok({"--off-cpu"}).max_block_us == UINT64_MAX);
	CHECK(header_line(o) == "Tracing off-CPU time (us) of PID 1 on CPU 0 by user stack for 5 secs.");
	CHECK(error({"--off-cpu", "-f", "99"}) == "-f cannot be used with --off-cpu: it counts the time threads spend "
						   "off the CPU at each context switch, not samples");
	CHECK(error({"--off-cpu", "-c", "1000"}).starts_with("-c cannot be used with --off-cpu"));
	CHECK(error({"--off-cpu", "-I"}).starts_with("-I cannot be used with --off-cpu"));
	CHECK(error({"--off-cpu", "--unwind", "fp"}).starts_with("--unwind fp cannot be used with --off-cpu"));
	CHECK(error({"--min-block", "10"}) == "--min-block and --max-block are for --off-cpu: give --off-cpu too");
	CHECK(error({"--wakers"}) == "--wakers is for --off-cpu: give --off-cpu too");
	CHECK(ok({"--off-cpu", "--wakers"}).wakers);
	CHECK_FALSE(ok({"--off-cpu"}).wakers);
	CHECK(error({"--off-cpu", "--min-block", "10", "--max-block", "5"}).find("nothing would be counted") !=
	      std::string::npos);
	CHECK(error({"--off-cpu", "--max-block", "0"}).find("--max-block") != std::string::npos);
}

TEST_CASE("--unwind-cache-size bounds the table cache on disk: 256M by default, suffixes, 0 for none")
{
	CHECK(ok({}).unwind_cache_size == 256ull << 20);
	CHECK(ok({"--unwind-cache-size", "64M"}).unwind_cache_size == 64ull << 20);
	CHECK(ok({"--unwind-cache-size", "1G"}).unwind_cache_size == 1ull << 30);
	CHECK(ok({"--unwind-cache-size", "500000"}).unwind_cache_size == 500000);
	CHECK(ok({"--unwind-cache-size", "0"}).unwind_cache_size == 0);
	CHECK(error({"--unwind-cache-size", "-1"}) ==
	      "invalid value '-1' for --unwind-cache-size: expected a size in bytes (K, M and G suffixes allowed), 0 "
	      "for no cache");
	CHECK(error({"--unwind-cache-size", "2T"}).find("for --unwind-cache-size") != std::string::npos);
}

TEST_CASE("debuginfod: on by default within 5 s; --debuginfod-timeout takes whole seconds; --no-debuginfod")
{
	CHECK(ok({}).debuginfod);
	CHECK(ok({}).debuginfod_timeout_s == 5);
	CHECK(!ok({"--no-debuginfod"}).debuginfod);
	CHECK(ok({"--debuginfod-timeout", "30"}).debuginfod_timeout_s == 30);
	CHECK(error({"--debuginfod-timeout", "0"}) ==
	      "invalid value '0' for --debuginfod-timeout: expected whole seconds, 1 to 3600");
	CHECK(error({"--debuginfod-timeout", "1.5"}).find("for --debuginfod-timeout") != std::string::npos);
}

TEST_CASE("continuous profiling: --interval, --push, --app, the queue, --cgroup, --agent")
{
	Options o = ok({"--interval", "5", "-o", "cpu-%H%M%S.folded"});
	CHECK(o.interval_s == 5);
	CHECK(o.format == ReportFormat::Folded);
	CHECK(header_line(o) == "Sampling at 49 Hertz of all threads by user + kernel stack, a report every 5 s... Hit Ctrl-C to end.");
	CHECK(ok({}).interval_s == 0);
	CHECK(error({"--interval", "0"}) == "invalid value '0' for --interval: expected whole seconds, 1 to 86400");
	// pprof windows cannot follow each other on stdout.
	CHECK(error({"--interval", "5", "--format", "pprof"}).find("-o with strftime fields") != std::string::npos);

	o = ok({"--push", "http://127.0.0.1:4040/ingest", "--interval", "10", "--app", "web.cpu"});
	CHECK(o.push_url == "http://127.0.0.1:4040/ingest");
	CHECK(o.push_format == PushFormat::Auto);
	CHECK(o.app == "web.cpu");
	CHECK(ok({"--push", "https://parca:7070", "--push-format", "parca", "--interval", "1"}).push_format ==
	      PushFormat::Parca);
	CHECK(error({"--push", "ftp://x", "--interval", "1"}).find("http:// or https://") != std::string::npos);
	CHECK(error({"--push", "http://x"}).find("give --interval") != std::string::npos);
	CHECK(error({"--push-format", "parca"}).find("give --push URL") != std::string::npos);
	CHECK(error({"--push-format", "zipkin"}).find("pyroscope, parca or otlp") != std::string::npos);
	CHECK(error({"--push-format", "otlp"}) ==
	      "--push-format says how to --push: give --push URL too (or set OTEL_EXPORTER_OTLP_ENDPOINT)");
	CHECK(error({"--app", "a b"}).find("for --app") != std::string::npos);
	CHECK(error({"--app", "a{x=1}"}).find("for --app") != std::string::npos);

	CHECK(ok({}).push_queue == 20);
	CHECK(ok({}).push_queue_bytes == 64ull << 20);
	CHECK(ok({"--push-queue", "3"}).push_queue == 3);
	CHECK(ok({"--push-queue-bytes", "128K"}).push_queue_bytes == 128 << 10);
	CHECK(ok({"--push-queue-bytes", "2G"}).push_queue_bytes == 2ull << 30);
	CHECK(ok({"--push-queue-bytes", "1000000"}).push_queue_bytes == 1000000);
	CHECK(error({"--push-queue-bytes", "1K"}).find("64K or more") != std::string::npos);
	CHECK(error({"--push-queue-bytes", "M"}).find("for --push-queue-bytes") != std::string::npos);
	CHECK(error({"--push-queue", "0"}).find("for --push-queue") != std::string::npos);

	// The push's headers, credentials and TLS files: checked here for their form; the files
	// themselves before anything loads (tests/test_push.cpp).
	const std::vector<std::string> https = {"--push", "https://p:4040/ingest", "--interval", "1"};
	auto with = [&](std::vector<std::string> more) {
		more.insert(more.begin(), https.begin(), https.end());
		return more;
	};
	o = ok(with({"--push-header", "X-Scope-OrgID: tenant-a", "--push-header", "X-Gateway:b"}));
	CHECK(o.push_headers == std::vector<std::string>{"X-Scope-OrgID: tenant-a", "X-Gateway:b"});
	o = ok(with({"--push-auth-file", "/etc/profile/push-auth", "--push-ca", "ca.pem", "--push-cert", "c.pem",
		     "--push-key", "c.key"}));
	CHECK(o.push_auth_file == "/etc/profile/push-auth");
	CHECK(o.push_ca == "ca.pem");
	CHECK(o.push_cert == "c.pem");
	CHECK(o.push_key == "c.key");
	CHECK(error(with({"--push-header", "X-Scope-OrgID"})) == "invalid --push-header: expected 'Name: value'");
	CHECK(error(with({"--push-header", "X Scope: a"})).find("the name made of letters") != std::string::npos);
	CHECK(error(with({"--push-header", "X-Scope-OrgID:  "})).find("has no value") != std::string::npos);
	CHECK(error(with({"--push-header", "Content-Type: text/plain"})).find("profile sets Content-Type itself") !=
	      std::string::npos);
	// A secret typed as a header: refused, and not repeated on stderr.
	const std::string secret = error(with({"--push-header", "Authorization: Bearer tok-123"}));
	CHECK(secret.find("put it in --push-auth-file") != std::string::npos);
	CHECK(secret.find("tok-123") == std::string::npos);
	CHECK(error(with({"--push-header", "cookie: s=tok-123"})).find("tok-123") == std::string::npos);
	CHECK(error({"--push-header", "X-A: b"}) == "--push-header is for --push: give --push URL too");
	CHECK(error({"--push-auth-file", "f"}) == "--push-auth-file is for --push: give --push URL too");
	CHECK(error(with({"--push-cert", "c.pem"})).find("--push-cert and --push-key go together") != std::string::npos);
	CHECK(error(with({"--push-key", "c.key"})).find("--push-cert and --push-key go together") != std::string::npos);
	CHECK(error({"--push", "http://p:4040/ingest", "--interval", "1", "--push-ca", "ca.pem"}) ==
	      "--push-ca is for an https:// --push URL");
	CHECK(error(with({"--push-ca", ""})).find("expected a file") != std::string::npos);
	// Report titles and pprof comments carry the command line, never a URL's password.
	o = ok({"--push", "https://u:pa55@p:4040/ingest", "--interval", "1"});
	CHECK(o.command_line.find("pa55") == std::string::npos);
	CHECK(o.command_line.find("--push https://p:4040/ingest") != std::string::npos);

	o = ok({"--cgroup", "/sys/fs/cgroup/a", "--cgroup", "/b.slice"});
	CHECK(o.cgroups == std::vector<std::string>{"/sys/fs/cgroup/a", "/b.slice"});
	CHECK(header_line(o).find("in 2 cgroups") != std::string::npos);

	o = ok({"--agent"});
	CHECK(o.frequency == 19);
	CHECK(o.interval_s == 15);
	CHECK(!o.duration_s);
	CHECK(o.pids.empty());
	// What is typed wins over the agent's defaults.
	o = ok({"--agent", "-f", "99", "--interval", "60", "3600"});
	CHECK(o.frequency == 99);
	CHECK(o.interval_s == 60);
	CHECK(*o.duration_s == 3600);
	CHECK(ok({"--agent", "-c", "1000000"}).frequency == 0);
	CHECK(error({"--agent", "-p", "1"}).find("--agent samples the whole machine") != std::string::npos);
	CHECK(help_text().find("--agent") != std::string::npos);
}

TEST_CASE("an option given twice with another value is refused; -p, -L, --cgroup and --push-header add up")
{
	CHECK(error({"-C", "0", "-C", "1"}) == "-C given twice (0, then 1): give it once (-C samples one CPU)");
	// -f and -F are one option.
	CHECK(error({"-f", "49", "-F", "99"}) == "-f given twice (49, then 99): give it once");
	CHECK(error({"--interval", "5", "--interval", "10"}).starts_with("--interval given twice (5, then 10)"));
	CHECK(error({"-o", "a.svg", "-o", "b.svg"}).starts_with("-o given twice"));
	CHECK(error({"--unwind", "fp", "--unwind", "dwarf"}).starts_with("--unwind given twice"));
	// The same value again overrides nothing.
	CHECK(ok({"-f", "99", "-f", "99"}).frequency == 99);
	// Switches may be repeated.
	CHECK(ok({"-U", "-U"}).kernel_stacks == false);
	// The repeatable ones keep every value.
	CHECK(ok({"-p", "1", "-p", "2,3"}).pids == std::vector<uint32_t>{1, 2, 3});
	CHECK(ok({"-L", "4", "-L", "5"}).tids == std::vector<uint32_t>{4, 5});
	CHECK(ok({"--cgroup", "/a", "--cgroup", "/b"}).cgroups.size() == 2);
	for (const OptionSpec &spec : option_table())
		if (spec.repeatable) {
			const bool says = std::string(spec.help).find("repeatable") != std::string::npos ||
					  spec.kind == ValueKind::Ids;
			CHECK_MESSAGE(says, spec.name, ": --help says it may be given again");
		}
}

TEST_CASE("every bad value is named in the error")
{
	CHECK(error({"-f", "0"}) == "invalid value '0' for -f: expected samples per second, 1 to 1000000");
	CHECK(error({"-F", "x"}).find("for -f") != std::string::npos);
	CHECK(error({"-f", "10x"}).find("'10x'") != std::string::npos);
	CHECK(error({"0"}).find("invalid duration '0'") != std::string::npos);
	CHECK(error({"-1"}).find("unknown option") != std::string::npos);
	CHECK(error({"5", "6"}).find("unexpected argument '6'") != std::string::npos);
	CHECK(error({"-p"}) == "option -p needs a value");
	CHECK(error({"--pid"}) == "option --pid needs a value");
	CHECK(error({"--bogus"}) == "unknown option '--bogus'");
}

TEST_CASE("each kind of value is held to its range, and a bad one's error names the option and what it expects")
{
	// One of each kind, word for word.
	CHECK(error({"--interval", "86401"}) == "invalid value '86401' for --interval: expected whole seconds, 1 to 86400");
	CHECK(error({"-C", "65536"}) == "invalid value '65536' for -C: expected a CPU number");
	CHECK(error({"--push-queue-bytes", "1025G"}) ==
	      "invalid value '1025G' for --push-queue-bytes: expected a size in bytes, 64K or more (K, M and G suffixes "
	      "allowed)");
	CHECK(error({"-L", "2147483648"}) ==
	      "invalid value '2147483648' for -L: expected a comma-separated list of positive ids");
	CHECK(error({"--push-format", "zipkin"}) ==
	      "invalid value 'zipkin' for --push-format: expected pyroscope, parca or otlp");
	CHECK(error({"-o", ""}) == "invalid value '' for -o: expected a file name");
	CHECK(error({"--app", std::string(201, 'a')}).find("expected a name of up to 200 printable characters") !=
	      std::string::npos);
	CHECK(ok({"--app", std::string(200, 'a')}).app.size() == 200);

	// Every row of the table, at and past the ends of its range (with the option it is for).
	for (const OptionSpec &spec : option_table()) {
		const std::string name = std::string("--") + spec.name;
		const std::string shown = spec.shorts[0] ? std::string("-") + spec.shorts[0] : name;
		const bool for_off_cpu = name == "--min-block" || name == "--max-block";
		auto ok = [&](std::vector<std::string> args) {
			if (for_off_cpu)
				args.push_back("--off-cpu");
			return ::ok(args);
		};
		auto refused = [&](const std::string &value) {
			const std::string message = error({name, value});
			CHECK_MESSAGE(message.starts_with("invalid value '" + value + "' for " + shown + ": expected "),
				      message);
		};
		CAPTURE(name);
		switch (spec.kind) {
		case ValueKind::Number:
			ok({name, std::to_string(spec.min)});
			ok({name, std::to_string(spec.max)});
			refused(std::to_string(spec.max + 1));
			if (spec.min > 0)
				refused(std::to_string(spec.min - 1));
			refused("-1");
			refused("1x");
			refused("");
			refused("1K");
			break;
		case ValueKind::Bytes:
			ok({name, std::to_string(spec.min)});
			ok({name, std::to_string(spec.max)});
			ok({name, std::to_string(spec.max >> 30) + "G"});
			ok({name, std::to_string(std::max<uint64_t>(spec.min, 1024) >> 10) + "K"});
			refused(std::to_string(spec.max + 1));
			refused(std::to_string((spec.max >> 30) + 1) + "G");
			if (spec.min > 0) {
				refused(std::to_string(spec.min - 1));
				refused(std::to_string((spec.min >> 10) - 1) + "K");
			}
			refused("1T");
			refused("K");
			refused("");
			break;
		case ValueKind::Ids:
			ok({name, "1"});
			ok({name, "2147483647,1"});
			refused("0");
			refused("2147483648");
			refused("1,,2");
			refused("1,");
			refused("");
			break;
		case ValueKind::Choice: {
			std::string choices;
			for (size_t i = 0; i < spec.choices.size(); i++)
				choices += std::string(i == 0 ? "" : i + 1 == spec.choices.size() ? " or " : ", ") +
					   spec.choices[i].name;
			CHECK(error({name, "nope"}) == "invalid value 'nope' for " + shown + ": expected " + choices);
			break;
		}
		case ValueKind::Text:
			if (spec.accepts && !spec.accepts(""))
				refused("");
			break;
		case ValueKind::None:
			CHECK(error({name + "=1"}).find("unknown option") != std::string::npos);
			break;
		}
		if (spec.kind != ValueKind::None)
			CHECK(error({name}) == "option " + name + " needs a value");
	}
}

TEST_CASE("the table: a default it names is the value without the option, and --help shows it")
{
	Options none = ok({});
	for (const OptionSpec &spec : option_table()) {
		CAPTURE(spec.name);
		CHECK_MESSAGE((std::string(spec.help).find("{default}") == std::string::npos || spec.default_value),
			      "its help shows a default it does not name");
		if (!spec.default_value)
			continue;
		Options with = ok({std::string("--") + spec.name, spec.default_value});
		with.command_line = none.command_line;
		CHECK(with == none);
	}
	CHECK(help_text().find("samples per second on each CPU (default 49)") != std::string::npos);
	CHECK(help_text().find("(default 64M; K, M and G suffixes)") != std::string::npos);
}

TEST_CASE("the table: every option has one long name, short letters of its own, a group and help")
{
	std::set<std::string> names;
	std::set<char> letters;
	for (const OptionSpec &spec : option_table()) {
		CAPTURE(spec.name);
		CHECK(names.insert(spec.name).second);
		for (const char *c = spec.shorts; *c; c++)
			CHECK(letters.insert(*c).second);
		CHECK(*spec.group);
		CHECK((*spec.help || !spec.choices.empty()));
		CHECK(bool(spec.set));
		CHECK((spec.kind == ValueKind::None) == (spec.value_name == nullptr));
	}
}

TEST_CASE("help and version stop parsing")
{
	CHECK(ok({"-h"}).help);
	CHECK(ok({"--version"}).version);
	CHECK(help_text().find("-f is the frequency") != std::string::npos);
}

TEST_CASE("--help makes sense to someone who has read only --help")
{
	const std::string help = help_text();
	auto has = [&](const char *text) { return help.find(text) != std::string::npos; };
	// Words that mean something only to whoever wrote them.
	CHECK(!has("tutorial"));
	CHECK(!has("period mode"));
	// BCC's users type -f for folded output: the help says what -f is here.
	CHECK(has("BCC's profile uses -f for folded output; here -f is the frequency"));
	// What -c counts, with its unit.
	CHECK(has("one sample every N nanoseconds of CPU time on each CPU"));
	// What --sw-event does: nothing, and why.
	CHECK(has("--sw-event              changes nothing"));
	// What the idle task is.
	CHECK(has("idle CPUs, which run the idle task"));
	CHECK(has("(swapper, pid 0)"));
	// When a run without a duration ends.
	CHECK(has("sampling also ends once every process"));
	CHECK(has("until Ctrl-C, SIGTERM or\n                          SIGHUP"));
	// A thread id given to -p.
	CHECK(has("a thread id stands for its whole"));
	// What the limits hold, what happens when they are full, and what they cost.
	CHECK(has("a full map loses samples"));
	CHECK(has("8 bytes per frame"));
	CHECK(has("above 1 GiB profile warns"));
	// Lines fit a terminal.
	for (size_t start = 0, end; start < help.size(); start = end + 1) {
		end = help.find('\n', start);
		CHECK_MESSAGE(end - start <= 90, help.substr(start, end - start));
	}
}

} // TEST_SUITE
