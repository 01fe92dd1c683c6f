// tests/test_report_otlp.cpp: the OTLP profiles request, read with the tests' own schema
// (tests/otlp_decoded.h) and with protoc --decode_raw, which knows no schema at all.
#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include "report/formats.h"
#include "report/report.h"
#include "report/utf8.h"
#include "tests/otlp_decoded.h"
#include "tests/support.h"
#include "tests/test_report_data.h"

namespace {

std::string render(const Profile &profile, const ReportOptions &options = {})
{
	std::ostringstream out;
	write_otlp(out, profile, options);
	return out.str();
}

// The frame types of a request's locations, by function name.
std::map<std::string, std::string> frame_types(const OtlpRequest &r)
{
	std::map<std::string, std::string> types;
	for (const OtlpRequest::Location &l : r.locations)
		if (!l.lines.empty())
			types[r.str(r.functions.at(l.lines[0].function).name)] = r.attributes_of(l.attributes)["profile.frame.type"];
	return types;
}

// protoc --decode_raw's reading: every scalar as "path=value", the path the field numbers
// from the top ("1.2.2.1.1=5"), strings unquoted. Nesting is protoc's own guess: a
// length-delimited field that parses as a message is shown as one.
std::set<std::string> decode_raw(const std::string &bytes)
{
	const std::string protoc = find_tool("protoc");
	if (protoc.empty()) {
		skip_test("protoc is missing (scripts/install-deps.sh --test installs protobuf-compiler)");
		return {};
	}
	TempDir dir;
	write_file(dir / "request.otlp", bytes);
	const CommandResult r = run_command({"/bin/sh", "-c", "'" + protoc + "' --decode_raw < " + (dir / "request.otlp")}, 60);
	REQUIRE_MESSAGE(r.status == 0, r.err);
	std::set<std::string> paths;
	std::vector<std::string> path;
	for (std::string line : split_lines(r.out)) {
		line.erase(0, line.find_first_not_of(' '));
		if (line == "}") {
			path.pop_back();
		} else if (line.ends_with(" {")) {
			path.push_back(line.substr(0, line.size() - 2));
		} else if (size_t colon = line.find(": "); colon != std::string::npos) {
			std::string joined;
			for (const std::string &p : path)
				joined += p + ".";
			std::string value = line.substr(colon + 2);
			if (value.size() >= 2 && value.front() == '"')
				value = value.substr(1, value.size() - 2);
			paths.insert(joined + line.substr(0, colon) + "=" + value);
		}
	}
	return paths;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("otlp: one request whole: one dictionary, element 0 of each table zero, every index in range; "
	  "its stacks and counts are write_folded's")
{
	for (const Profile &profile : {tricky_profile(), many_stacks_profile(2000, 7)}) {
		const OtlpRequest r = decode_otlp(render(profile));
		CHECK(r.total() == profile.total());
		// Folded output keeps a name's bytes; protobuf's strings are UTF-8.
		std::map<std::string, uint64_t> from_folded;
		for (const auto &[stack, count] : folded_lines(profile))
			from_folded[valid_utf8(stack)] += count;
		CHECK(r.folded() == from_folded);
	}
}

TEST_CASE("otlp: on the CPU, samples/count each a period of cpu/nanoseconds, 1e9/rate; the window's time and duration")
{
	const Profile profile = tricky_profile();
	const OtlpRequest r = decode_otlp(render(profile));
	// tricky_profile is two processes, in no container: one resource.
	REQUIRE(r.resources.size() == 1);
	REQUIRE(r.resources[0].profiles.size() == 1);
	const OtlpRequest::Profile &p = r.resources[0].profiles[0];
	CHECK(r.str(p.sample_type.first) == "samples");
	CHECK(r.str(p.sample_type.second) == "count");
	CHECK(r.str(p.period_type.first) == "cpu");
	CHECK(r.str(p.period_type.second) == "nanoseconds");
	CHECK(p.period == 1000000000 / 49);
	CHECK(p.time == 1700000000123456789u);
	CHECK(p.duration == 2500000000u);
	CHECK(r.resources[0].scope_name == "profile");
	CHECK(!r.resources[0].scope_version.empty());
}

TEST_CASE("otlp: off the CPU, a profile of off_cpu/nanoseconds, counted, not sampled: no period")
{
	Profile profile = tricky_profile();
	profile.off_cpu = true;
	const OtlpRequest r = decode_otlp(render(profile));
	REQUIRE(r.resources.size() == 1);
	const OtlpRequest::Profile &p = r.resources[0].profiles.at(0);
	CHECK(r.str(p.sample_type.first) == "off_cpu");
	CHECK(r.str(p.sample_type.second) == "nanoseconds");
	CHECK(p.period_type == std::pair<uint64_t, uint64_t>{0, 0});
	CHECK(p.period == 0);
	CHECK(r.total() == profile.total());
}

TEST_CASE("otlp: each location says its profile.frame.type; inlined frames are lines of one location, the caller last")
{
	Profile profile = tricky_profile();
	Frame python;
	python.kind = FrameKind::Python;
	python.name = "Spinner.fib";
	python.source_file = "/srv/app/fib.py";
	python.line = 7;
	profile.frames.push_back(python);
	profile.samples.push_back({300, "python3", {}, {uint32_t(profile.frames.size() - 1)}, 5});
	const OtlpRequest r = decode_otlp(render(profile));
	const auto types = frame_types(r);
	CHECK(types.at("do_syscall_64") == "kernel");
	CHECK(types.at("main") == "native");
	CHECK(types.at("Spinner.fib") == "cpython");
	// Every kind has its type: none is left "unknown".
	for (const auto &[name, type] : types)
		CHECK_MESSAGE(type != "unknown", name);

	bool inlined = false;
	for (const OtlpRequest::Location &l : r.locations) {
		if (l.lines.size() < 2)
			continue;
		inlined = true;
		REQUIRE(l.lines.size() == 2);
		const OtlpRequest::Function &inner = r.functions.at(l.lines[0].function);
		const OtlpRequest::Function &caller = r.functions.at(l.lines[1].function);
		CHECK(r.str(inner.name) == "inline_helper(Foo<Bar>&)");
		CHECK(r.str(inner.filename) == "/src/app/helper.h");
		CHECK(l.lines[0].line == 12);
		CHECK(r.str(caller.name) == "caller_of_inline()");
		CHECK(l.lines[1].line == 40);
		CHECK(l.address == 0x555555554000 + 0x5500);
	}
	CHECK(inlined);
	// A Python function is its qualified name, with its file and line.
	for (const OtlpRequest::Location &l : r.locations)
		if (!l.lines.empty() && r.str(r.functions.at(l.lines[0].function).name) == "Spinner.fib") {
			CHECK(r.str(r.functions.at(l.lines[0].function).filename) == "/srv/app/fib.py");
			CHECK(l.lines[0].line == 7);
		}
}

TEST_CASE("otlp: mappings: file, range and offset, the GNU build id as an attribute; one [kernel.kallsyms]")
{
	const OtlpRequest r = decode_otlp(render(tricky_profile()));
	std::map<std::string, const OtlpRequest::Mapping *> by_file;
	for (const OtlpRequest::Mapping &m : r.mappings)
		if (m.filename)
			by_file[r.str(m.filename)] = &m;
	REQUIRE(by_file.count("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	const OtlpRequest::Mapping &libc = *by_file["/usr/lib/x86_64-linux-gnu/libc.so.6"];
	CHECK(libc.start == 0x7ffff7c28000);
	CHECK(libc.limit == 0x7ffff7dbd000);
	CHECK(libc.offset == 0x28000);
	CHECK(r.attributes_of(libc.attributes)["process.executable.build_id.gnu"] ==
	      "0123456789abcdef0123456789abcdef01234567");
	REQUIRE(by_file.count("/usr/bin/app"));
	CHECK(by_file["/usr/bin/app"]->attributes.empty()); // no build id known
	REQUIRE(by_file.count("[kernel.kallsyms]"));
	const OtlpRequest::Mapping &kernel = *by_file["[kernel.kallsyms]"];
	CHECK(kernel.start == 0xffffffff81000010);
	CHECK(kernel.limit == 0xffffffff81044441);
	// Every location of a kernel frame is in it.
	for (const OtlpRequest::Location &l : r.locations)
		if (r.attributes_of(l.attributes)["profile.frame.type"] == "kernel")
			CHECK(r.str(r.mappings.at(l.mapping).filename) == "[kernel.kallsyms]");
}

TEST_CASE("otlp: the processes of a run over many are each sample's; a run of one process names it in the resource; thread.id where threads were kept apart")
{
	Profile profile = tricky_profile();
	profile.host = "build-7";
	profile.samples[0].container = profile.samples[1].container = profile.samples[2].container =
		profile.samples[5].container = "0123456789abcdef0123456789abcdef";
	ReportOptions options;
	options.service_name = "checkout";
	options.resource_attributes = {{"deployment.environment.name", "staging"}, {"host.name", "given"}};
	OtlpRequest r = decode_otlp(render(profile, options));
	// One resource per container: pid 100's, and pid 200's in none.
	REQUIRE(r.resources.size() == 2);
	for (const OtlpRequest::Resource &resource : r.resources) {
		CHECK(resource.attributes.at("service.name") == "checkout");
		CHECK(resource.attributes.at("host.name") == "given"); // OTEL_RESOURCE_ATTRIBUTES' wins
		CHECK(resource.attributes.at("deployment.environment.name") == "staging");
		CHECK(!resource.attributes.count("process.pid"));
		const bool contained = resource.attributes.count("container.id");
		for (const OtlpRequest::Sample &s : resource.profiles.at(0).samples) {
			auto a = r.attributes_of(s.attributes);
			CHECK(a["process.pid"] == (contained ? "100" : "200"));
			CHECK(a["thread.name"] == (contained ? "app" : "x<y>&z"));
			// Its program: the file its stacks start in that is no library (pid 200's one
			// stack in libc is no matter: its other starts in /usr/bin/app).
			CHECK(a["process.executable.path"] == "/usr/bin/app");
			CHECK(a["process.executable.name"] == "app");
		}
	}
	// pid 100 alone: the process is the resource's, the thread each sample's.
	std::erase_if(profile.samples, [](const Sample &s) { return s.pid != 100; });
	profile.single_pid = 100;
	r = decode_otlp(render(profile));
	REQUIRE(r.resources.size() == 1);
	const auto &attributes = r.resources[0].attributes;
	CHECK(attributes.at("service.name") == "build-7"); // no service name given: the host's
	CHECK(attributes.at("process.pid") == "100");
	CHECK(attributes.at("process.executable.path") == "/usr/bin/app");
	CHECK(attributes.at("process.executable.name") == "app");
	CHECK(attributes.at("container.id") == "0123456789abcdef0123456789abcdef");
	for (const OtlpRequest::Sample &s : r.resources[0].profiles.at(0).samples)
		CHECK(r.attributes_of(s.attributes) == std::map<std::string, std::string>{{"thread.name", "app"}});
	CHECK(r.total() == profile.total());
	// Counts kept apart by thread: each sample's thread.id, an int.
	for (Sample &sample : profile.samples)
		sample.tid = 101;
	r = decode_otlp(render(profile));
	for (const OtlpRequest::Sample &s : r.resources[0].profiles.at(0).samples)
		CHECK(r.attributes_of(s.attributes) ==
		      std::map<std::string, std::string>{{"thread.name", "app"}, {"thread.id", "101"}});
}

TEST_CASE("otlp: an empty profile is a whole request: one resource, a profile with no samples, the zero elements")
{
	Profile profile;
	profile.host = "h";
	const OtlpRequest r = decode_otlp(render(profile));
	REQUIRE(r.resources.size() == 1);
	REQUIRE(r.resources[0].profiles.size() == 1);
	CHECK(r.resources[0].profiles[0].samples.empty());
	CHECK(r.stacks.size() == 1);
	CHECK(r.locations.size() == 1);
	CHECK(r.strings.at(0).empty());
}

TEST_CASE("otlp: protoc --decode_raw reads the request with the nesting and field numbers of opentelemetry-proto")
{
	const std::set<std::string> paths = decode_raw(render(tricky_profile()));
	if (paths.empty())
		return;
	auto has = [&](const std::string &path) {
		CAPTURE(path);
		CHECK(paths.count(path));
	};
	// request.resource_profiles(1).resource(1).attributes(1).key(1), .value(2).string_value(1)
	has("1.1.1.1=service.name");
	// request.resource_profiles.scope_profiles(2).scope(1).name(1)
	has("1.2.1.1=profile");
	// ...scope_profiles.profiles(2).period(6), duration_nano(4), time_unix_nano(3, fixed64)
	has("1.2.2.6=" + std::to_string(1000000000 / 49));
	has("1.2.2.4=2500000000");
	has("1.2.2.3=0x17979cfe3d85cd15");
	// request.dictionary(2).string_table(5)
	has("2.5=samples");
	has("2.5=profile.frame.type");
	has("2.5=[kernel.kallsyms]");
	// dictionary.link_table(4): the zero link's ids of 16 and 8 bytes.
	has("2.4.1=\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000");
	// dictionary.attribute_table(6).value(2).string_value(1)
	has("2.6.2.1=native");
	has("2.6.2.1=kernel");
	CHECK(!paths.count("2.6.2.1=cpython")); // no Python frame in this profile
}

TEST_CASE("otlp: -o FILE.otlp and --format otlp name it; binary, one file per window")
{
	CHECK(format_from_path("cpu.otlp") == ReportFormat::Otlp);
	CHECK(format_from_name("otlp") == ReportFormat::Otlp);
	CHECK(report_format(ReportFormat::Otlp).binary);
	const ReportDetail detail = report_detail(ReportFormat::Otlp, {});
	CHECK(detail.pids);
	CHECK(detail.addresses);
}

} // TEST_SUITE
