// tests/test_report_data.cpp: made-up profiles and tool lookups for the SVG and pprof tests.
#include "tests/test_report_data.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "report/report.h"
#include "tests/support.h"

namespace {

uint32_t add_frame(Profile &p, FrameKind kind, std::string name, uint64_t address,
		   std::string module = "", uint64_t map_start = 0, uint64_t map_end = 0,
		   uint64_t map_offset = 0)
{
	Frame f;
	f.kind = kind;
	f.name = std::move(name);
	f.address = address;
	f.module = std::move(module);
	f.map_start = map_start;
	f.map_end = map_end;
	f.map_offset = map_offset;
	if (kind == FrameKind::Native && !f.module.empty())
		f.module_offset = address - map_start + map_offset;
	p.frames.push_back(std::move(f));
	return uint32_t(p.frames.size() - 1);
}

} // namespace

Profile tricky_profile()
{
	Profile p;
	p.command = "profile -p 100 -o 'a<b>&c.svg' 2";
	p.frequency = 49;
	p.period_ns = 1000000000 / 49;
	p.duration_s = 2.5;
	p.start_time_ns = 1700000000123456789;

	const uint64_t kernel = 0xffffffff81000000;
	const uint32_t k_clear = add_frame(p, FrameKind::Kernel, "clear_page_erms", kernel + 0x10);
	const uint32_t k_syscall = add_frame(p, FrameKind::Kernel, "do_syscall_64", kernel + 0x220);
	const uint32_t k_entry =
		add_frame(p, FrameKind::Kernel, "entry_SYSCALL_64_after_hwframe", kernel + 0x3330);
	const uint32_t k_unknown = add_frame(p, FrameKind::Kernel, "", kernel + 0x44440);

	const char *app = "/usr/bin/app";
	const uint64_t app_start = 0x555555554000, app_end = 0x555555600000;
	auto app_frame = [&](std::string name, uint64_t offset) {
		return add_frame(p, FrameKind::Native, std::move(name), app_start + offset, app,
				 app_start, app_end, 0);
	};
	const uint32_t u_main = app_frame("main", 0x1100);
	const uint32_t u_push =
		app_frame("std::vector<int, std::allocator<int> >::push_back(int const&)", 0x2200);
	const uint32_t u_format = app_frame("fmt::format<'x', \"y\">(std::string&&) & <&>", 0x3300);
	const uint32_t u_bad_utf8 = app_frame("bad\xff\xfe utf8\x01name\xe2\x82", 0x4400);
	const uint32_t u_inline = app_frame("inline_helper(Foo<Bar>&)", 0x5500);
	p.frames[u_inline].inlined = true;
	p.frames[u_inline].source_file = "/src/app/helper.h";
	p.frames[u_inline].line = 12;
	const uint32_t u_caller = app_frame("caller_of_inline()", 0x5500);
	p.frames[u_caller].source_file = "/src/app/main.cpp";
	p.frames[u_caller].line = 40;
	const uint32_t u_new = app_frame("operator new(unsigned long)", 0x6600);

	const uint32_t u_libc =
		add_frame(p, FrameKind::Native, "", 0x7ffff7c29d90, "/usr/lib/x86_64-linux-gnu/libc.so.6",
			  0x7ffff7c28000, 0x7ffff7dbd000, 0x28000);
	p.frames[u_libc].build_id = "0123456789abcdef0123456789abcdef01234567";
	const uint32_t u_unknown = add_frame(p, FrameKind::Native, "", 0x1234);

	// pid, comm, kernel frames leaf first, user frames leaf first, count
	p.samples.push_back({100, "app", {k_clear, k_syscall, k_entry}, {u_push, u_main}, 400});
	p.samples.push_back({100, "app", {}, {u_format, u_main}, 300});
	p.samples.push_back({100, "app", {}, {u_inline, u_caller, u_main}, 150});
	p.samples.push_back({200, "x<y>&z", {}, {u_libc, u_unknown}, 100});
	p.samples.push_back({200, "x<y>&z", {k_unknown}, {u_bad_utf8}, 49});
	p.samples.push_back({100, "app", {}, {u_new, u_push, u_main}, 1});
	return p;
}

Profile many_stacks_profile(size_t stacks, uint64_t seed)
{
	std::mt19937_64 random(seed);
	auto uniform = [&](uint64_t lo, uint64_t hi) {
		return std::uniform_int_distribution<uint64_t>(lo, hi)(random);
	};
	const char *words[] = {"buffer", "cache", "parse", "render", "index", "query", "node",
			       "tree", "hash", "queue", "stream", "codec", "frame", "table",
			       "alloc", "visit", "merge", "scan", "token", "layout"};
	auto word = [&] { return std::string(words[uniform(0, std::size(words) - 1)]); };
	// C++-looking names of 30 to 60 characters.
	auto cpp_name = [&] {
		std::string name;
		do {
			name = word() + "::" + word() + "_" + word() + "<" + word() + ">::" + word() +
			       "_" + std::to_string(uniform(0, 999)) + "(" + word() + " const&)";
		} while (name.size() < 30 || name.size() > 60);
		return name;
	};

	Profile p;
	p.command = "profile -F 99 -o bench.svg 60";
	p.frequency = 99;
	p.period_ns = 1000000000 / 99;
	p.duration_s = 60;

	// A call graph: every function calls a few others, each call from its own address.
	const size_t user_functions = 4000, kernel_functions = 400;
	struct Function {
		std::vector<uint32_t> callees;
		std::vector<uint32_t> frames; // one per call site
	};
	std::vector<Function> user(user_functions), kernel(kernel_functions);
	const uint64_t base = 0x555555554000;
	for (size_t i = 0; i < user_functions; i++) {
		const std::string name = cpp_name();
		for (int site = 0; site < 3; site++)
			user[i].frames.push_back(add_frame(p, FrameKind::Native, name,
							   base + i * 0x100 + uint64_t(site) * 8,
							   "/usr/bin/bench", base, base + 0x1000000, 0));
		for (uint64_t c = uniform(2, 6); c > 0; c--)
			user[i].callees.push_back(uint32_t(uniform(0, user_functions - 1)));
	}
	for (size_t i = 0; i < kernel_functions; i++) {
		kernel[i].frames.push_back(add_frame(p, FrameKind::Kernel, "ksys_" + word() + "_" + word() +
									   std::to_string(i),
						     0xffffffff81000000 + i * 0x40));
		for (uint64_t c = uniform(1, 4); c > 0; c--)
			kernel[i].callees.push_back(uint32_t(uniform(0, kernel_functions - 1)));
	}
	const uint32_t unnamed = add_frame(p, FrameKind::Native, "", 0x7f0000001000, "/usr/lib/libjit.so",
					   0x7f0000000000, 0x7f0000100000, 0);

	// Real programs spend most time on a few call paths: the first callee is the usual one.
	auto pick = [&](size_t callees) {
		size_t i = 0;
		while (i + 1 < callees && uniform(0, 1) == 1)
			i++;
		return i;
	};
	const char *comms[] = {"server", "worker", "indexer", "gc-thread"};
	std::unordered_set<std::string> seen;
	std::vector<uint32_t> root_first;
	while (p.samples.size() < stacks) {
		Sample s;
		const uint64_t process = uniform(0, std::size(comms) - 1);
		s.comm = comms[process];
		s.pid = uint32_t(1000 + process);
		// Callers near the root are few, as in real programs (main, thread entry points).
		uint32_t f = uint32_t(uniform(0, 7));
		root_first.clear();
		for (uint64_t depth = uniform(20, 40); root_first.size() < depth;) {
			root_first.push_back(user[f].frames[uniform(0, 2)]);
			f = user[f].callees[pick(user[f].callees.size())];
		}
		if (uniform(0, 19) == 0)
			root_first.back() = unnamed;
		s.user.assign(root_first.rbegin(), root_first.rend());
		if (uniform(0, 2) == 0) {
			uint32_t k = uint32_t(uniform(0, 3));
			root_first.clear();
			for (uint64_t depth = uniform(4, 12); root_first.size() < depth;) {
				root_first.push_back(kernel[k].frames[0]);
				k = kernel[k].callees[pick(kernel[k].callees.size())];
			}
			s.kernel.assign(root_first.rbegin(), root_first.rend());
		}
		std::string key = s.comm;
		for (uint32_t i : s.user)
			key += "," + std::to_string(i);
		key += "|";
		for (uint32_t i : s.kernel)
			key += "," + std::to_string(i);
		if (!seen.insert(key).second)
			continue;
		// A few hot stacks and a long tail, like Zipf.
		const double rank = double(p.samples.size() + 1);
		s.count = 1 + uint64_t(300.0 / std::pow(rank, 0.8));
		p.samples.push_back(std::move(s));
	}
	std::shuffle(p.samples.begin(), p.samples.end(), random);
	return p;
}

std::string find_tool(const std::string &name)
{
	const char *path = std::getenv("PATH");
	std::stringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (std::string dir; std::getline(dirs, dir, ':');) {
		const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
		if (access(candidate.c_str(), X_OK) == 0)
			return candidate;
	}
	return "";
}

std::vector<Trace> pprof_traces(const std::string &file)
{
	const std::string go = find_tool("go");
	REQUIRE_MESSAGE(!go.empty(), "go is not installed (apt-get install golang-go); CI installs it, so this "
				     "test fails rather than skips");
	const CommandResult r = run_command({go, "tool", "pprof", "-traces", "-sample_index=samples", file}, 120);
	REQUIRE_MESSAGE(r.status == 0, r.err);
	std::vector<Trace> traces;
	// Labels "%10s:  %s" (a longer key unpadded), frames "%10s   %s" with the count on the leaf.
	const std::regex label("^ *([a-z_]+):  (.*)$"), frame("^ {0,10}([0-9]*) {3}(.*)$");
	std::smatch m;
	for (const std::string &line : split_lines(r.out)) {
		if (line.starts_with("-----------+")) {
			traces.emplace_back();
		} else if (traces.empty()) {
			continue; // the header
		} else if (std::regex_match(line, m, label) && traces.back().frames.empty()) {
			traces.back().labels[m[1]] = m[2];
		} else if (std::regex_match(line, m, frame)) {
			if (m[1].length())
				traces.back().count = std::stoull(m[1]);
			traces.back().frames.push_back(m[2]);
		}
	}
	// The last separator opens no sample.
	std::erase_if(traces, [](const Trace &t) { return t.frames.empty() && t.labels.empty(); });
	return traces;
}

std::map<std::string, uint64_t> folded_lines(const Profile &profile)
{
	std::ostringstream out;
	ReportOptions options;
	options.fold_pid = true;
	write_folded(out, profile, options);
	std::map<std::string, uint64_t> stacks;
	for (const std::string &line : split_lines(out.str())) {
		const size_t space = line.rfind(' ');
		stacks[line.substr(0, space)] += std::stoull(line.substr(space + 1));
	}
	return stacks;
}
