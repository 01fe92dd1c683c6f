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
	uint32_t u_leaf = add(FrameKind::User, "read_zeros");
	uint32_t u_main = add(FrameKind::User, "main");
	uint32_t u_unnamed = add(FrameKind::User, "", "/usr/lib/libfoo.so", 0x1a2b);
	uint32_t u_unknown = add(FrameKind::User, "");
	p.samples.push_back({42, "hot", {k_leaf, k_root}, {u_leaf, u_main}, 30});
	p.samples.push_back({42, "cold", {}, {u_unnamed, u_unknown}, 5});
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

TEST_CASE("formats by name and by extension")
{
	CHECK(format_from_name("svg") == ReportFormat::Svg);
	CHECK(!format_from_name("png"));
	CHECK(format_from_path("a/b.pb.gz") == ReportFormat::Pprof);
	CHECK(format_from_path("x.folded") == ReportFormat::Folded);
	CHECK(!format_from_path("x.gz"));
}

} // TEST_SUITE
