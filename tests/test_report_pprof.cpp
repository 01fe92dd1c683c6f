// tests/test_report_pprof.cpp: the pprof file, decoded here field by field and read by go tool pprof.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string_view>

#include "report/report.h"
#include "report/utf8.h"
#include "tests/proto_wire.h"
#include "tests/support.h"
#include "tests/test_report_data.h"

namespace {

struct Decoded {
	struct Label {
		uint64_t key = 0, str = 0, num = 0;
	};
	struct Sample {
		std::vector<uint64_t> locations, values;
		std::vector<Label> labels;
	};
	struct Mapping {
		uint64_t id = 0, start = 0, limit = 0, offset = 0, file = 0, build_id = 0;
		bool has_functions = false, has_filenames = false, has_lines = false, has_inline = false;
	};
	struct Line {
		uint64_t function = 0, line = 0;
	};
	struct Location {
		uint64_t id = 0, mapping = 0, address = 0;
		std::vector<Line> lines;
	};
	struct Function {
		uint64_t id = 0, name = 0, system_name = 0, file = 0;
	};
	std::vector<std::pair<uint64_t, uint64_t>> sample_types;
	std::pair<uint64_t, uint64_t> period_type;
	std::vector<Sample> samples;
	std::vector<Mapping> mappings;
	std::vector<Location> locations;
	std::vector<Function> functions;
	std::vector<std::string> strings;
	std::vector<uint64_t> comments;
	uint64_t time = 0, duration = 0, period = 0, default_sample_type = 0;

	const std::string &str(uint64_t id) const
	{
		REQUIRE(id < strings.size());
		return strings[id];
	}
	const Location &location(uint64_t id) const
	{
		REQUIRE(id >= 1);
		REQUIRE(id <= locations.size());
		return locations[id - 1];
	}
	const Function &function(uint64_t id) const
	{
		REQUIRE(id >= 1);
		REQUIRE(id <= functions.size());
		return functions[id - 1];
	}
	const Mapping &mapping_named(const std::string &file) const
	{
		for (const Mapping &m : mappings)
			if (str(m.file) == file)
				return m;
		FAIL("no mapping for " << file);
		return mappings.front();
	}
	// Function names of a sample, leaf first, inlined functions included.
	std::vector<std::string> stack(const Sample &sample) const
	{
		std::vector<std::string> names;
		for (uint64_t id : sample.locations)
			for (const Line &line : location(id).lines)
				names.push_back(str(function(line.function).name));
		return names;
	}
};

std::pair<uint64_t, uint64_t> value_type(const std::string &bytes)
{
	std::pair<uint64_t, uint64_t> type;
	for (const Field &f : fields(bytes))
		(f.number == 1 ? type.first : type.second) = f.value;
	return type;
}

Decoded decode(const std::string &gzipped)
{
	Decoded p;
	for (const Field &f : fields(gunzip(gzipped))) {
		switch (f.number) {
		case 1: p.sample_types.push_back(value_type(f.bytes)); break;
		case 2: {
			Decoded::Sample s;
			for (const Field &g : fields(f.bytes)) {
				if (g.number == 1)
					add_repeated(s.locations, g);
				else if (g.number == 2)
					add_repeated(s.values, g);
				else if (g.number == 3) {
					Decoded::Label label;
					for (const Field &h : fields(g.bytes))
						(h.number == 1 ? label.key : h.number == 2 ? label.str : label.num) = h.value;
					s.labels.push_back(label);
				}
			}
			p.samples.push_back(s);
			break;
		}
		case 3: {
			Decoded::Mapping m;
			for (const Field &g : fields(f.bytes)) {
				uint64_t *targets[] = {nullptr, &m.id, &m.start, &m.limit, &m.offset, &m.file, &m.build_id};
				if (g.number <= 6)
					*targets[g.number] = g.value;
				else if (g.number == 7)
					m.has_functions = g.value;
				else if (g.number == 8)
					m.has_filenames = g.value;
				else if (g.number == 9)
					m.has_lines = g.value;
				else if (g.number == 10)
					m.has_inline = g.value;
			}
			p.mappings.push_back(m);
			break;
		}
		case 4: {
			Decoded::Location l;
			for (const Field &g : fields(f.bytes)) {
				if (g.number == 1)
					l.id = g.value;
				else if (g.number == 2)
					l.mapping = g.value;
				else if (g.number == 3)
					l.address = g.value;
				else if (g.number == 4) {
					Decoded::Line line;
					for (const Field &h : fields(g.bytes))
						(h.number == 1 ? line.function : line.line) = h.value;
					l.lines.push_back(line);
				}
			}
			p.locations.push_back(l);
			break;
		}
		case 5: {
			Decoded::Function fn;
			for (const Field &g : fields(f.bytes)) {
				uint64_t *targets[] = {nullptr, &fn.id, &fn.name, &fn.system_name, &fn.file};
				if (g.number <= 4)
					*targets[g.number] = g.value;
			}
			p.functions.push_back(fn);
			break;
		}
		case 6: p.strings.push_back(f.bytes); break;
		case 9: p.time = f.value; break;
		case 10: p.duration = f.value; break;
		case 11: p.period_type = value_type(f.bytes); break;
		case 12: p.period = f.value; break;
		case 13: add_repeated(p.comments, f); break;
		case 14: p.default_sample_type = f.value; break;
		default: FAIL("unexpected Profile field " << f.number);
		}
	}
	return p;
}

std::string render(const Profile &profile)
{
	std::ostringstream out;
	write_pprof(out, profile);
	return out.str();
}

std::string go_or_fail()
{
	const std::string go = find_tool("go");
	REQUIRE_MESSAGE(!go.empty(), "go is not installed (apt-get install golang-go: `go tool pprof` "
				     "reads the file); CI installs it, so this test fails rather than skips");
	return go;
}

CommandResult go_pprof(const std::vector<std::string> &args, const std::string &file)
{
	std::vector<std::string> argv = {go_or_fail(), "tool", "pprof"};
	argv.insert(argv.end(), args.begin(), args.end());
	argv.push_back(file);
	return run_command(argv, 120);
}

// go tool pprof -traces: each sample as "comm-pid;root;...;leaf" -> count, to set
// beside write_folded -E.
std::map<std::string, uint64_t> traces_as_folded(const std::string &text)
{
	std::map<std::string, uint64_t> stacks;
	std::string comm, pid;
	std::vector<std::string> frames;
	uint64_t count = 0;
	auto finish = [&] {
		if (frames.empty())
			return;
		std::string line = comm + "-" + pid;
		for (auto it = frames.rbegin(); it != frames.rend(); ++it)
			line += ";" + *it;
		stacks[line] += count;
		frames.clear();
	};
	for (const std::string &line : split_lines(text)) {
		if (line.starts_with("-----------+")) {
			finish();
			continue;
		}
		// Labels are "%10s:  %s", frames "%10s   %s" with the value on the leaf only.
		if (line.size() > 13 && line.compare(10, 3, ":  ") == 0) {
			const std::string key = line.substr(0, 10), value = line.substr(13);
			if (key.ends_with("comm"))
				comm = value;
			else if (key.ends_with("pid"))
				pid = value;
		} else if (line.size() > 13 && line.compare(10, 3, "   ") == 0) {
			const std::string value = line.substr(0, 10);
			std::string name = line.substr(13);
			if (name.ends_with(" (inline)"))
				name.resize(name.size() - 9);
			if (value.find_first_not_of(' ') != std::string::npos)
				count = std::stoull(value);
			frames.push_back(name);
		}
	}
	finish();
	return stacks;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("pprof: a gzipped profile.proto with its header, ids from 1 and string 0 empty")
{
	const Profile profile = tricky_profile();
	const Decoded p = decode(render(profile));
	REQUIRE(!p.strings.empty());
	CHECK(p.strings[0] == "");
	REQUIRE(p.sample_types.size() == 2);
	CHECK(p.str(p.sample_types[0].first) == "samples");
	CHECK(p.str(p.sample_types[0].second) == "count");
	CHECK(p.str(p.sample_types[1].first) == "cpu");
	CHECK(p.str(p.sample_types[1].second) == "nanoseconds");
	CHECK(p.str(p.period_type.first) == "cpu");
	CHECK(p.str(p.period_type.second) == "nanoseconds");
	CHECK(p.period == 20408163);
	CHECK(p.time == 1700000000123456789u);
	CHECK(p.duration == 2500000000u);
	CHECK(p.str(p.default_sample_type) == "cpu");
	REQUIRE(p.comments.size() == 1);
	CHECK(p.str(p.comments[0]) == profile.command);
	for (size_t i = 0; i < p.mappings.size(); i++)
		CHECK(p.mappings[i].id == i + 1);
	for (size_t i = 0; i < p.locations.size(); i++)
		CHECK(p.locations[i].id == i + 1);
	for (size_t i = 0; i < p.functions.size(); i++)
		CHECK(p.functions[i].id == i + 1);
	// Each string once.
	std::map<std::string, int> seen;
	for (const std::string &s : p.strings)
		CHECK(++seen[s] == 1);
}

TEST_CASE("pprof: samples hold leaf-first locations, count and cpu time, pid and comm labels")
{
	const Profile profile = tricky_profile();
	const Decoded p = decode(render(profile));
	REQUIRE(p.samples.size() == profile.samples.size());
	const std::vector<std::string> expected[] = {
		{"clear_page_erms", "do_syscall_64", "entry_SYSCALL_64_after_hwframe",
		 "std::vector<int, std::allocator<int> >::push_back(int const&)", "main"},
		{"fmt::format<'x', \"y\">(std::string&&) & <&>", "main"},
		{"inline_helper(Foo<Bar>&)", "caller_of_inline()", "main"},
		{"[libc.so.6+0x29d90]", "[unknown]"},
		// protobuf's strings are UTF-8: each byte that is none becomes U+FFFD, as in the SVG.
		{"[unknown]", "bad\ufffd\ufffd utf8\x01name\ufffd\ufffd"},
		{"operator new(unsigned long)", "std::vector<int, std::allocator<int> >::push_back(int const&)",
		 "main"},
	};
	uint64_t total = 0;
	for (size_t i = 0; i < p.samples.size(); i++) {
		CAPTURE(i);
		const Decoded::Sample &s = p.samples[i];
		CHECK(p.stack(s) == expected[i]);
		REQUIRE(s.values.size() == 2);
		CHECK(s.values[0] == profile.samples[i].count);
		CHECK(s.values[1] == profile.samples[i].count * profile.period_ns);
		total += s.values[0];
		REQUIRE(s.labels.size() == 2);
		CHECK(p.str(s.labels[0].key) == "pid");
		CHECK(s.labels[0].num == profile.samples[i].pid);
		CHECK(p.str(s.labels[1].key) == "comm");
		CHECK(p.str(s.labels[1].str) == profile.samples[i].comm);
	}
	CHECK(total == 1000);
	// Every string of the table is valid UTF-8, file names and comms as well.
	for (const std::string &text : p.strings)
		CHECK_MESSAGE(valid_utf8(text) == text, text);
	// One location per address: push_back's frame is shared by two samples.
	CHECK(p.samples[0].locations[3] == p.samples[5].locations[1]);
	CHECK(p.locations.size() == 12);
}

TEST_CASE("pprof: off the CPU, one value, off_cpu nanoseconds (or the server's name for it)")
{
	Profile profile = tricky_profile();
	profile.off_cpu = true;
	for (const std::string type : {"off_cpu", "wallclock"}) {
		std::ostringstream out;
		write_pprof(out, profile, type);
		const Decoded p = decode(out.str());
		REQUIRE(p.sample_types.size() == 1);
		CHECK(p.str(p.sample_types[0].first) == type);
		CHECK(p.str(p.sample_types[0].second) == "nanoseconds");
		CHECK(p.str(p.default_sample_type) == type);
		CHECK(p.str(p.period_type.first) == "samples");
		CHECK(p.str(p.period_type.second) == "count");
		REQUIRE(p.samples.size() == profile.samples.size());
		for (size_t i = 0; i < p.samples.size(); i++)
			CHECK(p.samples[i].values == std::vector<uint64_t>{profile.samples[i].count});
	}
}

TEST_CASE("pprof: a sample's cgroup, container id and host are labels where known; go tool pprof reads them")
{
	const std::string id = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";
	Profile profile = tricky_profile();
	profile.samples[0].cgroup = "/system.slice/docker-" + id + ".scope";
	profile.samples[0].container = id;
	profile.samples[1].cgroup = "/system.slice/cron.service";
	profile.host = "node-7";
	const Decoded p = decode(render(profile));
	REQUIRE(p.samples.size() == profile.samples.size());
	for (size_t i = 0; i < p.samples.size(); i++) {
		CAPTURE(i);
		std::map<std::string, std::string> labels;
		for (const Decoded::Label &label : p.samples[i].labels)
			labels[p.str(label.key)] = label.str ? p.str(label.str) : "#" + std::to_string(label.num);
		std::map<std::string, std::string> expected = {
			{"pid", "#" + std::to_string(profile.samples[i].pid)},
			{"comm", profile.samples[i].comm},
			{"host", "node-7"},
		};
		if (!profile.samples[i].cgroup.empty())
			expected["cgroup"] = profile.samples[i].cgroup;
		if (!profile.samples[i].container.empty())
			expected["container_id"] = profile.samples[i].container;
		CHECK(labels == expected);
	}

	TempDir dir;
	write_file(dir / "labels.pb.gz", render(profile));
	const CommandResult raw = go_pprof({"-raw"}, dir / "labels.pb.gz");
	REQUIRE_MESSAGE(raw.status == 0, raw.err);
	INFO("pprof -raw:\n" << raw.out);
	CHECK(contains(raw.out, "cgroup:[/system.slice/docker-" + id + ".scope]"));
	CHECK(contains(raw.out, "container_id:[" + id + "]"));
	CHECK(contains(raw.out, "cgroup:[/system.slice/cron.service]"));
	CHECK(contains(raw.out, "host:[node-7]"));
	CHECK(contains(raw.out, "pid:[" + std::to_string(profile.samples[0].pid) + "]"));
	// pprof's own selection by label: the container's samples alone.
	const CommandResult top = go_pprof({"-top", "-sample_index=samples", "-tagfocus=container_id=" + id}, dir / "labels.pb.gz");
	REQUIRE_MESSAGE(top.status == 0, top.err);
	CHECK(contains(top.out, "Showing nodes accounting for " + std::to_string(profile.samples[0].count) +
					", 40.00% of 1000 total"));
}

TEST_CASE("pprof: an inlined frame is a line of its caller's location, with file and line")
{
	const Decoded p = decode(render(tricky_profile()));
	const Decoded::Location &location = p.location(p.samples[2].locations[0]);
	REQUIRE(location.lines.size() == 2);
	const Decoded::Function &inner = p.function(location.lines[0].function);
	const Decoded::Function &outer = p.function(location.lines[1].function);
	CHECK(p.str(inner.name) == "inline_helper(Foo<Bar>&)");
	CHECK(p.str(inner.system_name) == "inline_helper(Foo<Bar>&)");
	CHECK(p.str(inner.file) == "/src/app/helper.h");
	CHECK(location.lines[0].line == 12);
	CHECK(p.str(outer.name) == "caller_of_inline()");
	CHECK(p.str(outer.file) == "/src/app/main.cpp");
	CHECK(location.lines[1].line == 40);
	CHECK(location.address == 0x555555559500);
}

TEST_CASE("pprof: functions inlined at one address are one location's lines, innermost first")
{
	Profile profile;
	const uint64_t start = 0x555555554000;
	auto add = [&](std::string name, uint64_t offset, bool inlined, uint32_t line) {
		Frame f;
		f.name = std::move(name);
		f.address = start + offset;
		f.module = "/usr/bin/app";
		f.module_offset = offset;
		f.map_start = start;
		f.map_end = start + 0x10000;
		f.inlined = inlined;
		f.source_file = "/src/app.cpp";
		f.line = line;
		profile.frames.push_back(f);
		return uint32_t(profile.frames.size() - 1);
	};
	// Two functions inlined into mix_block at its leaf address; a return address in main
	// with one inlined call; and a recursive function whose two frames return to one address
	// without being inlined, which stay two locations.
	const uint32_t scramble = add("scramble(unsigned long)", 0x11d7, true, 19);
	const uint32_t mix = add("Mixer::mix(unsigned long)", 0x11d7, true, 30);
	const uint32_t block = add("mix_block(Mixer&, int)", 0x11d7, false, 37);
	const uint32_t now = add("now()", 0x148c, true, 11);
	const uint32_t main = add("main", 0x148c, false, 59);
	const uint32_t walk = add("walk(int)", 0x2000, false, 70);
	profile.samples.push_back({7, "app", {}, {scramble, mix, block, now, main}, 5});
	profile.samples.push_back({7, "app", {}, {walk, walk, now, main}, 2});
	profile.single_pid = 7;

	const Decoded p = decode(render(profile));
	REQUIRE(p.samples.size() == 2);
	const Decoded::Sample &inlined = p.samples[0];
	REQUIRE(inlined.locations.size() == 2); // one per address
	const Decoded::Location &leaf = p.location(inlined.locations[0]);
	CHECK(leaf.address == start + 0x11d7);
	REQUIRE(leaf.lines.size() == 3);
	CHECK(p.str(p.function(leaf.lines[0].function).name) == "scramble(unsigned long)");
	CHECK(leaf.lines[0].line == 19);
	CHECK(p.str(p.function(leaf.lines[1].function).name) == "Mixer::mix(unsigned long)");
	CHECK(leaf.lines[1].line == 30);
	CHECK(p.str(p.function(leaf.lines[2].function).name) == "mix_block(Mixer&, int)");
	CHECK(leaf.lines[2].line == 37);
	const Decoded::Location &caller = p.location(inlined.locations[1]);
	REQUIRE(caller.lines.size() == 2);
	CHECK(p.str(p.function(caller.lines[0].function).name) == "now()");
	CHECK(p.str(p.function(caller.lines[1].function).name) == "main");
	CHECK(p.stack(inlined) ==
	      std::vector<std::string>{"scramble(unsigned long)", "Mixer::mix(unsigned long)", "mix_block(Mixer&, int)",
				       "now()", "main"});

	const Decoded::Sample &recursive = p.samples[1];
	REQUIRE(recursive.locations.size() == 3);
	CHECK(recursive.locations[0] == recursive.locations[1]);
	CHECK(p.location(recursive.locations[0]).lines.size() == 1);
	CHECK(recursive.locations[2] == inlined.locations[1]); // main's, with now() inlined
	CHECK(p.mapping_named("/usr/bin/app").has_inline);
}

// tricky_profile as a run of -p 100 alone.
Profile one_process_profile()
{
	Profile profile = tricky_profile();
	std::erase_if(profile.samples, [](const Sample &s) { return s.pid != 100; });
	profile.single_pid = 100;
	return profile;
}

TEST_CASE("pprof: mappings: the executable first, libraries with build ids, one [kernel.kallsyms] last")
{
	Profile profile = tricky_profile();
	profile.single_pid = 100; // the first mapping is the program's only in a -p run
	const Decoded p = decode(render(profile));
	REQUIRE(p.mappings.size() == 3);
	CHECK(p.str(p.mappings[0].file) == "/usr/bin/app");
	CHECK(p.str(p.mappings[2].file) == "[kernel.kallsyms]");

	const Decoded::Mapping &app = p.mapping_named("/usr/bin/app");
	CHECK(app.start == 0x555555554000);
	CHECK(app.limit == 0x555555600000);
	CHECK(app.offset == 0);
	CHECK(app.has_functions);
	CHECK(app.has_filenames);
	CHECK(app.has_lines);
	CHECK(app.has_inline);

	const Decoded::Mapping &libc = p.mapping_named("/usr/lib/x86_64-linux-gnu/libc.so.6");
	CHECK(libc.start == 0x7ffff7c28000);
	CHECK(libc.limit == 0x7ffff7dbd000);
	CHECK(libc.offset == 0x28000);
	CHECK(p.str(libc.build_id) == "0123456789abcdef0123456789abcdef01234567");
	CHECK(libc.has_functions);
	CHECK(!libc.has_lines);

	const Decoded::Mapping &kernel = p.mapping_named("[kernel.kallsyms]");
	CHECK(kernel.start == 0xffffffff81000010);
	CHECK(kernel.limit == 0xffffffff81044441);
	for (const Decoded::Location &l : p.locations) {
		CAPTURE(l.address);
		if (l.address >= 0xffffffff80000000)
			CHECK(l.mapping == kernel.id);
		else if (l.address == 0x1234) // no module: no mapping
			CHECK(l.mapping == 0);
		else
			CHECK((l.mapping == app.id || l.mapping == libc.id));
		for (const Decoded::Mapping &m : p.mappings)
			if (l.mapping == m.id)
				CHECK((l.address >= m.start && l.address < m.limit));
	}
}

TEST_CASE("pprof: a profile of the whole machine or of several processes is no one program's")
{
	// profile.proto: the first mapping is the main binary, which pprof shows as "File:".
	// A system-wide run has none: its first mapping is an empty one that no location
	// uses; the programs' mappings follow, in the order of a one-process profile.
	const Decoded whole = decode(render(tricky_profile()));
	REQUIRE(whole.mappings.size() == 4);
	const Decoded::Mapping &first = whole.mappings[0];
	CHECK(first.id == 1);
	CHECK(whole.str(first.file) == "");
	CHECK(whole.str(first.build_id) == "");
	CHECK(first.start == 0);
	CHECK(first.limit == 0);
	for (const Decoded::Location &l : whole.locations)
		CHECK(l.mapping != first.id);
	CHECK(whole.str(whole.mappings[1].file) == "/usr/bin/app");
	CHECK(whole.str(whole.mappings[3].file) == "[kernel.kallsyms]");
	// Same samples, same stacks: only the mappings' ids moved.
	const Decoded one = decode(render([] {
		Profile profile = tricky_profile();
		profile.single_pid = 100;
		return profile;
	}()));
	REQUIRE(one.samples.size() == whole.samples.size());
	for (size_t i = 0; i < one.samples.size(); i++)
		CHECK(one.stack(one.samples[i]) == whole.stack(whole.samples[i]));
	for (size_t i = 0; i < one.locations.size(); i++)
		CHECK(whole.locations[i].mapping == (one.locations[i].mapping ? one.locations[i].mapping + 1 : 0));

	// go tool pprof names no file for it, and the named one for a -p run.
	TempDir dir;
	write_file(dir / "whole.pb.gz", render(tricky_profile()));
	write_file(dir / "one.pb.gz", render(one_process_profile()));
	const CommandResult whole_top = go_pprof({"-top"}, dir / "whole.pb.gz");
	REQUIRE_MESSAGE(whole_top.status == 0, whole_top.err);
	CHECK(!contains(whole_top.out, "File:"));
	CHECK(!contains(whole_top.out, "Build ID:"));
	CHECK(contains(whole_top.out, "Total samples"));
	const CommandResult one_top = go_pprof({"-top"}, dir / "one.pb.gz");
	REQUIRE_MESSAGE(one_top.status == 0, one_top.err);
	CHECK(contains(one_top.out, "File: app\n"));
	const CommandResult raw = go_pprof({"-raw"}, dir / "whole.pb.gz");
	REQUIRE_MESSAGE(raw.status == 0, raw.err);
	CHECK(contains(raw.out, "Mappings\n"));
}

TEST_CASE("pprof: an empty profile is a valid message with no samples")
{
	Profile profile;
	profile.frequency = 49;
	profile.period_ns = 1000000000 / 49;
	const Decoded p = decode(render(profile));
	CHECK(p.samples.empty());
	CHECK(p.sample_types.size() == 2);
	CHECK(p.period == profile.period_ns);
}

TEST_CASE("pprof: go tool pprof reads it; totals and the top function agree")
{
	TempDir dir;
	const std::string file = dir / "tricky.pb.gz";
	Profile profile = tricky_profile();
	profile.single_pid = 100; // "File: app"
	write_file(file, render(profile));

	const CommandResult raw = go_pprof({"-raw"}, file);
	REQUIRE_MESSAGE(raw.status == 0, raw.err);
	CHECK(contains(raw.out, "PeriodType: cpu nanoseconds"));
	CHECK(contains(raw.out, "Period: 20408163"));
	CHECK(contains(raw.out, "Duration: 2.5s"));
	CHECK(contains(raw.out, "samples/count cpu/nanoseconds"));
	CHECK(contains(raw.out, "[kernel.kallsyms]"));

	const CommandResult top = go_pprof({"-top", "-sample_index=samples"}, file);
	REQUIRE_MESSAGE(top.status == 0, top.err);
	CHECK(contains(top.out, "File: app"));
	CHECK(contains(top.out, "Total samples = 1000"));
	const std::vector<std::string> lines = split_lines(top.out);
	auto header = std::find_if(lines.begin(), lines.end(),
				   [](const std::string &l) { return contains(l, "flat  flat%"); });
	REQUIRE(header != lines.end());
	REQUIRE(header + 1 != lines.end());
	// The hottest leaf: 400 of 1000 samples.
	CHECK(contains(header[1], "400 40.00% 40.00%"));
	CHECK(header[1].ends_with(" clear_page_erms"));

	const CommandResult cpu = go_pprof({"-top", "-sample_index=cpu"}, file);
	REQUIRE_MESSAGE(cpu.status == 0, cpu.err);
	CHECK(contains(cpu.out, "Total samples = 20408.16ms")); // 1000 x 20408163 ns
}

TEST_CASE("pprof: every stack go tool pprof shows is the same stack write_folded prints")
{
	for (const Profile &profile : {tricky_profile(), many_stacks_profile(2000, 7)}) {
		TempDir dir;
		const std::string file = dir / "profile.pb.gz";
		write_file(file, render(profile));
		// demangle=full: pprof would otherwise shorten C++ names for display.
		const CommandResult traces =
			go_pprof({"-traces", "-sample_index=samples", "-symbolize=demangle=full"}, file);
		REQUIRE_MESSAGE(traces.status == 0, traces.err);
		const auto from_pprof = traces_as_folded(traces.out);
		// Folded output keeps a name's bytes; pprof's strings are UTF-8, with U+FFFD for the rest.
		std::map<std::string, uint64_t> from_folded;
		for (const auto &[stack, count] : folded_lines(profile))
			from_folded[valid_utf8(stack)] += count;
		uint64_t total = 0;
		for (const auto &[stack, count] : from_pprof)
			total += count;
		CHECK(total == profile.total());
		CHECK(from_pprof.size() > profile.samples.size() / 2);
		CHECK(from_pprof == from_folded);
	}
}

TEST_CASE("pprof: a Python frame is its qualified name as function, with its file and the line run")
{
	Profile profile;
	Frame python;
	python.kind = FrameKind::Python;
	python.name = "Spinner.fib";
	python.source_file = "/srv/app/fib.py";
	python.line = 7;
	Frame caller = python;
	caller.name = "<module>";
	caller.line = 12;
	profile.frames = {python, caller};
	Sample sample;
	sample.pid = 7;
	sample.comm = "python3";
	sample.user = {0, 1};
	sample.count = 3;
	profile.samples.push_back(sample);
	const Decoded p = decode(render(profile));
	REQUIRE(p.samples.size() == 1);
	REQUIRE(p.samples[0].locations.size() == 2);
	const Decoded::Location &leaf = p.location(p.samples[0].locations[0]);
	REQUIRE(leaf.lines.size() == 1);
	const Decoded::Function &function = p.function(leaf.lines[0].function);
	CHECK(p.str(function.name) == "Spinner.fib");
	CHECK(p.str(function.file) == "/srv/app/fib.py");
	CHECK(leaf.lines[0].line == 7);
	const Decoded::Location &outer = p.location(p.samples[0].locations[1]);
	REQUIRE(outer.lines.size() == 1);
	CHECK(p.str(p.function(outer.lines[0].function).name) == "<module>");
	CHECK(outer.lines[0].line == 12);
}

} // TEST_SUITE
