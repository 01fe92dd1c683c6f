// tests/test_report_stacks.cpp: BCC's multi-line layout and folded lines, from a made-up profile.
#include <doctest/doctest.h>

#include <sstream>

#include "report/report.h"

namespace {

// Two stacks of one process: a hot one through the kernel, a cold user-only one.
Profile sample_profile()
{
	Profile p;
	auto add = [&](FrameKind kind, std::string name, std::string module = "", uint64_t offset = 0) {
		Frame f;
		f.kind = kind;
		f.name = std::move(name);
		f.module = std::move(module);
		f.module_offset = offset;
		f.address = 0x1000 + p.frames.size();
		p.frames.push_back(f);
		return uint32_t(p.frames.size() - 1);
	};
	uint32_t k_leaf = add(FrameKind::Kernel, "clear_page_erms");
	uint32_t k_root = add(FrameKind::Kernel, "entry_SYSCALL_64");
	uint32_t u_leaf = add(FrameKind::Native, "read_zeros");
	uint32_t u_main = add(FrameKind::Native, "main");
	uint32_t u_unnamed = add(FrameKind::Native, "", "/usr/lib/libfoo.so", 0x1a2b);
	uint32_t u_unknown = add(FrameKind::Native, "");
	p.samples.push_back({42, "hot", {k_leaf, k_root}, {u_leaf, u_main}, 30});
	p.samples.push_back({42, "cold", {}, {u_unnamed, u_unknown}, 5});
	return p;
}

// One address of an -O2 program: two functions inlined into mix_block, innermost first,
// each a frame of its own at the address of the function they were inlined into.
Profile inlined_profile()
{
	Profile p;
	auto add = [&](std::string name, uint64_t address, bool inlined) {
		Frame f;
		f.name = std::move(name);
		f.address = address;
		f.module = "/usr/bin/app";
		f.inlined = inlined;
		p.frames.push_back(f);
		return uint32_t(p.frames.size() - 1);
	};
	uint32_t scramble = add("scramble(unsigned long)", 0x11d7, true);
	uint32_t mix = add("Mixer::mix(unsigned long)", 0x11d7, true);
	uint32_t block = add("mix_block(Mixer&, int)", 0x11d7, false);
	uint32_t main = add("main", 0x148c, false);
	p.samples.push_back({42, "app", {}, {scramble, mix, block, main}, 9});
	return p;
}

std::string render(ReportFormat format, ReportOptions options = {})
{
	std::ostringstream out;
	write_report(out, format, sample_profile(), options);
	return out.str();
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("stacks: kernel then user frames, leaf first, comm line, count, hottest last")
{
	CHECK(render(ReportFormat::Stacks) ==
	      "    [libfoo.so+0x1a2b]\n"
	      "    [unknown]\n"
	      "    -                cold (42)\n"
	      "        5\n\n"
	      "    clear_page_erms\n"
	      "    entry_SYSCALL_64\n"
	      "    read_zeros\n"
	      "    main\n"
	      "    -                hot (42)\n"
	      "        30\n\n");
}

TEST_CASE("off the CPU: counts are nanoseconds, shown as rounded microseconds; folded drops what rounds to 0")
{
	Profile p = sample_profile();
	p.off_cpu = true;
	p.samples[0].count = 3'000'499; // 3000.499 us
	p.samples[1].count = 1'500;     // 1.5 us
	p.samples.push_back(p.samples[1]);
	p.samples.back().comm = "brief";
	p.samples.back().count = 499;   // under half a microsecond
	std::ostringstream folded, stacks;
	write_report(folded, ReportFormat::Folded, p, {});
	write_report(stacks, ReportFormat::Stacks, p, {});
	CHECK(folded.str() == "cold;[unknown];[libfoo.so+0x1a2b] 2\n"
			      "hot;main;read_zeros;entry_SYSCALL_64;clear_page_erms 3000\n");
	CHECK(stacks.str().find("    -                brief (42)\n        0 µs off-CPU\n\n") != std::string::npos);
	CHECK(stacks.str().ends_with("    -                hot (42)\n        3000 µs off-CPU\n\n"));
}

TEST_CASE("stacks: -d delimits kernel from user, -a annotates kernel frames")
{
	ReportOptions options;
	options.delimited = true;
	options.annotations = true;
	std::string out = render(ReportFormat::Stacks, options);
	CHECK(out.find("    clear_page_erms_[k]\n    entry_SYSCALL_64_[k]\n    --\n    read_zeros\n") != std::string::npos);
	// No delimiter where there is no kernel stack.
	CHECK(out.find("cold") > out.find("[unknown]"));
	CHECK(out.find("--\n    [libfoo") == std::string::npos);
}

TEST_CASE("stacks: -v gives address, offset and module")
{
	ReportOptions options;
	options.verbose = true;
	std::string out = render(ReportFormat::Stacks, options);
	CHECK(out.find("    0x1000 clear_page_erms+0x0 [kernel]\n") != std::string::npos);
	CHECK(out.find("    0x1004 [libfoo.so+0x1a2b] (/usr/lib/libfoo.so)\n") != std::string::npos);
}

TEST_CASE("folded: root first, user then kernel, -d and -E")
{
	CHECK(render(ReportFormat::Folded) ==
	      "cold;[unknown];[libfoo.so+0x1a2b] 5\n"
	      "hot;main;read_zeros;entry_SYSCALL_64;clear_page_erms 30\n");
	ReportOptions options;
	options.delimited = true;
	options.fold_pid = true;
	options.annotations = true;
	CHECK(render(ReportFormat::Folded, options) ==
	      "cold-42;[unknown];[libfoo.so+0x1a2b] 5\n"
	      "hot-42;main;read_zeros;-;entry_SYSCALL_64_[k];clear_page_erms_[k] 30\n");
}

TEST_CASE("folded and stacks: inlined functions are frames of their own; -a marks them _[i]")
{
	std::ostringstream folded, stacks, annotated, annotated_stacks;
	write_folded(folded, inlined_profile(), {});
	CHECK(folded.str() == "app;main;mix_block(Mixer&, int);Mixer::mix(unsigned long);scramble(unsigned long) 9\n");
	write_stacks(stacks, inlined_profile(), {});
	CHECK(stacks.str() == "    scramble(unsigned long)\n"
			      "    Mixer::mix(unsigned long)\n"
			      "    mix_block(Mixer&, int)\n"
			      "    main\n"
			      "    -                app (42)\n"
			      "        9\n\n");
	// As stackcollapse-perf.pl marks them, for flamegraph.pl's palettes.
	ReportOptions options;
	options.annotations = true;
	write_folded(annotated, inlined_profile(), options);
	CHECK(annotated.str() ==
	      "app;main;mix_block(Mixer&, int);Mixer::mix(unsigned long)_[i];scramble(unsigned long)_[i] 9\n");
	write_stacks(annotated_stacks, inlined_profile(), options);
	CHECK(annotated_stacks.str().starts_with("    scramble(unsigned long)_[i]\n    Mixer::mix(unsigned long)_[i]\n"
						 "    mix_block(Mixer&, int)\n"));
}

TEST_CASE("stacks: -v marks inlined frames [inlined], with no offset of their own")
{
	ReportOptions options;
	options.verbose = true;
	std::ostringstream out;
	write_stacks(out, inlined_profile(), options);
	CHECK(out.str().starts_with("    0x11d7 scramble(unsigned long) (/usr/bin/app) [inlined]\n"
				    "    0x11d7 Mixer::mix(unsigned long) (/usr/bin/app) [inlined]\n"
				    "    0x11d7 mix_block(Mixer&, int)+0x0 (/usr/bin/app)\n"));
}

TEST_CASE("stacks: -v gives a runtime's frame its place, its detail and [inlined]; a frame with no address its text alone")
{
	Profile p;
	auto java = [&](std::string name, uint32_t line, std::string detail, bool inlined) {
		Frame f;
		f.kind = FrameKind::Java;
		f.name = std::move(name);
		f.source_file = "Inl.java";
		f.line = line;
		f.detail = std::move(detail);
		f.inlined = inlined;
		p.frames.push_back(f);
		return uint32_t(p.frames.size() - 1);
	};
	const uint32_t step = java("Inl.step", 7, "(JJ)J bci 3", true), work = java("Inl.work", 12, "(I)J bci 12", false);
	Frame truncated;
	truncated.name = "[truncated]";
	p.frames.push_back(truncated);
	p.samples.push_back({42, "java", {}, {step, work, uint32_t(p.frames.size() - 1)}, 3});
	ReportOptions options;
	options.verbose = true;
	std::ostringstream out;
	write_stacks(out, p, options);
	CHECK(out.str().starts_with("    Inl.step (Inl.java:7) (JJ)J bci 3 [inlined] [java]\n"
				    "    Inl.work (Inl.java:12) (I)J bci 12 [java]\n"
				    "    [truncated]\n"));
}

TEST_CASE("folded: -E's root names a process's container by its id's first 12 characters")
{
	Profile p = sample_profile();
	p.samples[0].cgroup = "/system.slice/docker-9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d.scope";
	p.samples[0].container = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";
	p.samples[1].cgroup = "/system.slice/cron.service"; // a cgroup, no container: unchanged
	ReportOptions options;
	options.fold_pid = true;
	std::ostringstream out;
	write_folded(out, p, options);
	CHECK(out.str() == "cold-42;[unknown];[libfoo.so+0x1a2b] 5\n"
			   "hot-42@9ec39b91f3d7;main;read_zeros;entry_SYSCALL_64;clear_page_erms 30\n");
	// Without -E, no process: no container.
	out.str("");
	write_folded(out, p, {});
	CHECK(out.str() == "cold;[unknown];[libfoo.so+0x1a2b] 5\n"
			   "hot;main;read_zeros;entry_SYSCALL_64;clear_page_erms 30\n");
}

TEST_CASE("folded: a ';' in a name cannot split a frame")
{
	Profile p;
	Frame f;
	f.name = "operator;weird";
	p.frames.push_back(f);
	p.samples.push_back({1, "a;b", {}, {0}, 3});
	std::ostringstream out;
	write_folded(out, p, {});
	CHECK(out.str() == "a:b;operator:weird 3\n");
}

TEST_CASE("stacks and folded: samples that name the same frames merge, their counts added")
{
	// Two addresses in one function, as the kernel keeps them apart: one stack once named.
	Profile p;
	for (uint64_t address : {0x1000, 0x1008}) {
		Frame f;
		f.name = "hot_loop";
		f.address = address;
		p.frames.push_back(f);
	}
	p.samples.push_back({7, "app", {}, {0}, 3});
	p.samples.push_back({7, "app", {}, {1}, 4});
	p.samples.push_back({8, "app", {}, {1}, 5}); // another process: a stack of its own, but not folded
	std::ostringstream stacks, folded;
	write_stacks(stacks, p, {});
	write_folded(folded, p, {});
	CHECK(stacks.str() == "    hot_loop\n    -                app (8)\n        5\n\n"
			      "    hot_loop\n    -                app (7)\n        7\n\n");
	CHECK(folded.str() == "app;hot_loop 12\n");
}

TEST_CASE("stacks and folded: 50,000 distinct stacks sharing 2,000 frames are all written")
{
	// 2,000 frames shared by every stack, as a real profile's are.
	Profile p;
	for (uint32_t i = 0; i < 2000; i++) {
		Frame f;
		f.kind = i < 500 ? FrameKind::Kernel : FrameKind::Native;
		f.address = 0x400000 + 16 * i;
		f.name = "function_" + std::to_string(i);
		p.frames.push_back(f);
	}
	for (uint32_t s = 0; s < 50000; s++) {
		Sample sample{1000 + s % 300, "comm" + std::to_string(s % 40), {}, {}, s % 50 + 1};
		for (uint32_t k = 0; k < 8; k++)
			sample.kernel.push_back((s / 7 + k * 61) % 500);
		for (uint32_t u = 0; u < 24; u++)
			sample.user.push_back(500 + (s + u * 389) % 1500);
		p.samples.push_back(std::move(sample));
	}
	for (ReportFormat format : {ReportFormat::Stacks, ReportFormat::Folded}) {
		std::ostringstream out;
		write_report(out, format, p, {});
		CHECK(out.str().find("function_1999") != std::string::npos);
	}
}

TEST_CASE("formats by name and by extension")
{
	CHECK(format_from_name("svg") == ReportFormat::Svg);
	CHECK(!format_from_name("png"));
	CHECK(format_from_path("a/b.pb.gz") == ReportFormat::Pprof);
	CHECK(format_from_path("x.folded") == ReportFormat::Folded);
	CHECK(!format_from_path("x.gz"));
}

TEST_CASE("what each report shows besides names: PIDs and addresses")
{
	ReportOptions plain, verbose, fold_pid;
	verbose.verbose = true;
	fold_pid.fold_pid = true;
	auto shows = [](ReportFormat format, const ReportOptions &options) {
		ReportDetail d = report_detail(format, options);
		return std::pair(d.pids, d.addresses);
	};
	CHECK(shows(ReportFormat::Stacks, plain) == std::pair(true, false));
	CHECK(shows(ReportFormat::Stacks, verbose) == std::pair(true, true));
	CHECK(shows(ReportFormat::Folded, plain) == std::pair(false, false));
	CHECK(shows(ReportFormat::Folded, verbose) == std::pair(false, false));
	CHECK(shows(ReportFormat::Folded, fold_pid) == std::pair(true, false));
	CHECK(shows(ReportFormat::Svg, plain) == std::pair(false, false));
	CHECK(shows(ReportFormat::Svg, fold_pid) == std::pair(true, false));
	CHECK(shows(ReportFormat::Pprof, plain) == std::pair(true, true));
}

} // TEST_SUITE
