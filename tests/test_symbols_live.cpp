// tests/test_symbols_live.cpp: the real ./profile, as root, naming what BCC's profile leaves
// [unknown]: a process that exits before the end, a library loaded with dlopen, a stripped
// binary with its debug file, JIT code listed in a perf map, the two images of an exec, and
// a BPF program in kernel stacks.
// Every run is three at once, over the same workloads: the default, folded and verbose reports.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>

#include "elf/elf.h"
#include "base/fd.h"
#include "tests/support.h"
#include "tests/test_report_data.h"

namespace {

// ./profile running in the background with both outputs captured, so that a test can
// start its workloads once sampling has begun.
class ProfileRun {
public:
	explicit ProfileRun(const std::vector<std::string> &args) : process_(profile_command(args))
	{
		REQUIRE(process_.pid() >= 0);
	}

	// Reads until the header line ("Sampling at ...", on stdout or stderr) is there.
	bool started(double timeout_s = 20)
	{
		const double end = now() + timeout_s;
		while (now() < end) {
			for (const std::string *text : {&out, &err}) {
				size_t header = text->find("Sampling at");
				if (header != std::string::npos && text->find('\n', header) != std::string::npos)
					return true;
			}
			if (!process_.open())
				return false;
			process_.pump(100, &out, &err);
		}
		return false;
	}

	// Ends sampling as Ctrl-C does: the report follows.
	void interrupt() { kill(process_.pid(), SIGINT); }

	// Reads what either output has, waiting up to timeout_ms.
	void pump(int timeout_ms) { process_.pump(timeout_ms, &out, &err); }

	// Reads both outputs to their end; the exit status.
	int finish(double timeout_s = 60)
	{
		const double end = now() + timeout_s;
		while (process_.open()) {
			process_.pump(100, &out, &err);
			if (now() > end) {
				kill(process_.pid(), SIGKILL);
				break;
			}
		}
		return process_.wait();
	}

	std::string out, err;

private:
	PipedProcess process_;
};

// One stack of any of the three reports: the process and its frames, leaf first.
struct Stack {
	std::string comm;
	std::vector<std::string> frames; // as printed: "name", or "0x... name+0x.. (module) ..." under -v
	uint64_t count = 0;
};

// BCC's layout (default and -v): frame lines, "    -                comm (pid)", the count, a blank line.
std::vector<Stack> parse_stacks(const std::string &out)
{
	std::vector<Stack> stacks;
	Stack current;
	std::vector<std::string> lines = split_lines(out);
	for (size_t i = 1; i < lines.size(); i++) { // line 0 is the header
		const std::string &line = lines[i];
		if (line.empty()) {
			current = Stack();
			continue;
		}
		if (line.starts_with("    -                ")) {
			std::string rest = line.substr(21);
			current.comm = rest.substr(0, rest.rfind(" ("));
			if (i + 1 < lines.size())
				current.count = std::strtoull(lines[i + 1].c_str(), nullptr, 10);
			stacks.push_back(current);
			i++;
			continue;
		}
		if (line.starts_with("    "))
			current.frames.push_back(line.substr(4));
	}
	return stacks;
}

// --folded, turned leaf first.
std::vector<Stack> folded_stacks(const std::string &out)
{
	std::vector<Stack> stacks;
	for (const FoldedLine &line : parse_folded(out))
		stacks.push_back(Stack{line.frames[0], {line.frames.rbegin(), line.frames.rend() - 1}, line.count});
	return stacks;
}

// A verbose frame line, "0x7f.. name+0x.. (module) file:line", as its name and the rest.
bool verbose_names(const std::string &frame, const std::string &name)
{
	size_t space = frame.find(' ');
	return frame.starts_with("0x") && space != std::string::npos && frame.compare(space + 1, name.size() + 3, name + "+0x") == 0;
}

// The three reports of one window of time, system-wide.
struct Reports {
	std::vector<Stack> stacks, folded, verbose;
	std::string verbose_text;
};

// Starts the three runs, waits until all sample, runs `workloads`, and `seconds` after
// they began ends all three with SIGINT, then collects them. Each run thus covers the
// workloads' whole lives, however far apart the three began sampling: on a loaded machine
// under ASan the first could otherwise spend most of a fixed duration before the
// workloads started and see only their first second (where the BCC report's JIT leaf was
// once found under main in no stack).
Reports profile_system(int seconds, const std::function<void()> &workloads)
{
	// A duration as a backstop only: SIGINT ends each run.
	std::vector<std::string> common = {"-f", "99"};
	auto with = [&](std::vector<std::string> extra) {
		extra.insert(extra.begin(), common.begin(), common.end());
		extra.push_back(std::to_string(seconds + 120));
		return extra;
	};
	ProfileRun stacks(with({})), folded(with({"--folded"})), verbose(with({"-v"}));
	REQUIRE_MESSAGE(stacks.started(), stacks.err);
	REQUIRE_MESSAGE(folded.started(), folded.err);
	REQUIRE_MESSAGE(verbose.started(), verbose.err);
	const double start = now();
	workloads();
	// Their output is read meanwhile, so that no pipe fills.
	while (now() < start + seconds)
		for (ProfileRun *run : {&stacks, &folded, &verbose})
			run->pump(30);
	for (ProfileRun *run : {&stacks, &folded, &verbose})
		run->interrupt();
	Reports reports;
	for (ProfileRun *run : {&stacks, &folded, &verbose}) {
		int status = run->finish();
		INFO("stderr: " << run->err);
		REQUIRE(status == 0);
	}
	reports.stacks = parse_stacks(stacks.out);
	reports.folded = folded_stacks(folded.out);
	reports.verbose = parse_stacks(verbose.out);
	reports.verbose_text = verbose.out;
	return reports;
}

// Samples of comm whose frames include one that `names` accepts.
uint64_t samples_of(const std::vector<Stack> &stacks, const std::string &comm,
		    const std::function<bool(const std::string &)> &names)
{
	uint64_t n = 0;
	for (const Stack &stack : stacks)
		if (stack.comm == comm)
			for (const std::string &frame : stack.frames)
				if (names(frame)) {
					n += stack.count;
					break;
				}
	return n;
}

// The frame is named `name` in all three reports, in stacks of comm, under main.
void check_named(const Reports &reports, const std::string &comm, const std::string &name,
		 const std::string &module_part)
{
	INFO(comm << " / " << name);
	auto plain = [&](const std::string &frame) { return frame == name; };
	CHECK(samples_of(reports.stacks, comm, plain) > 10);
	CHECK(samples_of(reports.folded, comm, plain) > 10);
	CHECK(samples_of(reports.verbose, comm, [&](const std::string &frame) {
		      return verbose_names(frame, name) && contains(frame, module_part);
	      }) > 10);
	// The leaf's callers are named too: the stack goes on to main.
	auto under_main = [&](const std::vector<Stack> &stacks, bool verbose) {
		for (const Stack &stack : stacks)
			for (size_t i = 0; stack.comm == comm && i + 1 < stack.frames.size(); i++)
				if ((verbose ? verbose_names(stack.frames[i], name) : stack.frames[i] == name) &&
				    (verbose ? verbose_names(stack.frames[i + 1], "main") : stack.frames[i + 1] == "main"))
					return true;
		return false;
	};
	// Should one fail: the BCC report's stacks of comm that hold the leaf.
	auto shown = [&] {
		std::string text;
		for (const Stack &stack : reports.stacks)
			if (stack.comm == comm && std::find(stack.frames.begin(), stack.frames.end(), name) != stack.frames.end()) {
				for (const std::string &frame : stack.frames)
					text += frame + ";";
				text += " " + std::to_string(stack.count) + "\n";
			}
		return text;
	};
	CHECK_MESSAGE(under_main(reports.stacks, false), shown());
	CHECK(under_main(reports.folded, false));
	CHECK(under_main(reports.verbose, true));
}

// The line of the workload's source that holds `part` (1-based), 0 when none does.
uint32_t line_of(const std::string &source, const std::string &part)
{
	std::string path = output_dir() + "/../tests/workloads/" + source, text;
	if (!read_whole_file(path.c_str(), text))
		return 0;
	std::vector<std::string> lines = split_lines(text);
	for (size_t i = 0; i < lines.size(); i++)
		if (contains(lines[i], part))
			return uint32_t(i + 1);
	return 0;
}

// Under -v, the leaf `name` shows the workload's source file, and main above it the line
// of the call (a return address is looked up as the call before it).
void check_lines(const Reports &reports, const std::string &comm, const std::string &name, const std::string &source)
{
	INFO(comm << " / " << name << " in " << source);
	uint32_t call = line_of(source, name + "();"); // the call, not the definition
	REQUIRE(call > 0);
	bool leaf = false, caller = false;
	for (const Stack &stack : reports.verbose)
		for (size_t i = 0; stack.comm == comm && i + 1 < stack.frames.size(); i++)
			if (verbose_names(stack.frames[i], name) && contains(stack.frames[i], "/tests/workloads/" + source + ":")) {
				leaf = true;
				caller |= verbose_names(stack.frames[i + 1], "main") &&
					  stack.frames[i + 1].ends_with("/tests/workloads/" + source + ":" + std::to_string(call));
			}
	CHECK(leaf);
	CHECK(caller);
}

} // namespace

TEST_SUITE("integration") {

TEST_CASE("one system-wide run names an exited process, a dlopen'd library, a stripped binary and JIT code" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	{
		// The premise: the binary itself holds no name of its functions.
		UniqueFd fd = open_read_only(workload("debuglink").c_str());
		REQUIRE(fd);
		auto elf = ElfFile::open(fd.get());
		REQUIRE(elf);
		REQUIRE(!elf->has_section(".symtab"));
		REQUIRE(elf->has_section(".gnu_debuglink"));
	}
	std::unique_ptr<Background> split, dlopened, stripped, jit;
	Reports reports = profile_system(4, [&] {
		// split runs 2 of the 4 seconds: it is gone well before the report.
		split = std::make_unique<Background>(std::vector<std::string>{workload("split"), "2"});
		dlopened = std::make_unique<Background>(
			std::vector<std::string>{workload("dlopen"), workload("libplugin.so"), "3.5", "0.5"});
		stripped = std::make_unique<Background>(std::vector<std::string>{workload("debuglink"), "3.5"});
		jit = std::make_unique<Background>(std::vector<std::string>{workload("jit"), "3.5"});
	});
	const std::string perf_map = "/tmp/perf-" + std::to_string(jit->pid()) + ".map";
	struct Remove {
		std::string path;
		~Remove() { unlink(path.c_str()); }
	} remove{perf_map};
	CHECK(split->wait() == 0);

	check_named(reports, "split", "split_hot_three", "/split)");
	check_named(reports, "dlopen", "plugin_hot", "/libplugin.so)");
	check_named(reports, "debuglink", "debuglink_hot", "/debuglink)");
	check_named(reports, "jit", "jit_spin_loop", "(" + perf_map + ")");
	// -v: file:line from DWARF, in the binary or in its separate debug file.
	check_lines(reports, "split", "split_hot_three", "split.c");
	check_lines(reports, "debuglink", "debuglink_hot", "debuglink.c");
	// libc's own frames are named from Debian's libc6-dbg debug file, as perf names them.
	CHECK(samples_of(reports.folded, "split", [](const std::string &f) { return f == "__libc_start_call_main"; }) > 0);
}

TEST_CASE("an exec inside one PID keeps the two images' names apart")
{
	require_root();
	// exec_before and exec_after are non-PIE: their code lies at the same addresses, and
	// only the time of a sample tells which program ran it.
	std::unique_ptr<Background> program;
	// 6 s for 3 s of work: on a loaded machine the three profilers attach at different
	// moments, and the exec'd half must fall inside every one's window.
	Reports reports = profile_system(6, [&] {
		program = std::make_unique<Background>(
			std::vector<std::string>{workload("exec_before"), workload("exec_after"), "1.5", "1.5"});
	});
	CHECK(program->wait() == 0);
	check_named(reports, "exec_before", "before_exec_hot", "/exec_before)");
	check_named(reports, "exec_after", "after_exec_hot", "/exec_after)");
	for (const auto *stacks : {&reports.stacks, &reports.folded}) {
		CHECK(samples_of(*stacks, "exec_before", [](const std::string &f) { return f == "after_exec_hot"; }) == 0);
		CHECK(samples_of(*stacks, "exec_after", [](const std::string &f) { return f == "before_exec_hot"; }) == 0);
	}
	CHECK(samples_of(reports.verbose, "exec_after",
			 [](const std::string &f) { return contains(f, "/exec_before)"); }) == 0);
}

TEST_CASE("kernel stacks name a running BPF program as kallsyms does, with [bpf] under -v")
{
	require_root();
	std::unique_ptr<Background> loop;
	Reports reports = profile_system(3, [&] {
		loop = std::make_unique<Background>(std::vector<std::string>{workload("bpf_loop"), "2.5"});
	});
	CHECK(loop->wait() == 0);
	auto program = [](const std::string &frame) {
		return frame.starts_with("bpf_prog_") && frame.ends_with("_profile_hot");
	};
	CHECK(samples_of(reports.stacks, "bpf_loop", program) > 10);
	CHECK(samples_of(reports.folded, "bpf_loop", program) > 10);
	CHECK(samples_of(reports.verbose, "bpf_loop", [](const std::string &frame) {
		      return contains(frame, " bpf_prog_") && contains(frame, "_profile_hot+0x") && frame.ends_with(" [bpf]");
	      }) > 10);
	// The kernel function that ran it is named too, plain in the default report.
	CHECK(samples_of(reports.stacks, "bpf_loop", [](const std::string &f) { return f == "bpf_test_run"; }) > 10);
	CHECK(samples_of(reports.verbose, "bpf_loop",
			 [](const std::string &f) { return contains(f, " bpf_test_run+0x") && f.ends_with(" [kernel]"); }) > 10);
}

// build/workloads/inlined: C++ at -O2 whose hot loop is workload::Mixer::mix and
// workload::scramble, always inlined into workload::mix_block, and std::accumulate inlined
// into workload::sum_block. Three runs at once over it: folded, folded with --no-inline,
// and pprof, which go tool pprof reads back.
TEST_CASE("inlined functions are frames of their own in folded stacks and pprof, and --no-inline drops them")
{
	require_root();
	if (find_tool("go").empty())
		return skip_test("go is not installed (apt-get install golang-go)");
	Background program({workload("inlined"), "30"});
	const std::string pid = std::to_string(program.pid());
	TempDir dir;
	PipedProcess with(profile_command({"-U", "-F", "99", "-p", pid, "--folded", "4"}));
	PipedProcess without(profile_command({"-U", "-F", "99", "-p", pid, "--no-inline", "--folded", "4"}));
	PipedProcess pprof(profile_command({"-U", "-F", "99", "-p", pid, "-o", dir / "cpu.pb.gz", "4"}));
	std::string with_out, with_err, without_out, without_err, pprof_out, pprof_err;
	while (with.open() || without.open() || pprof.open()) {
		with.pump(100, &with_out, &with_err);
		without.pump(100, &without_out, &without_err);
		pprof.pump(100, &pprof_out, &pprof_err);
	}
	REQUIRE_MESSAGE(with.wait() == 0, with_err);
	REQUIRE_MESSAGE(without.wait() == 0, without_err);
	REQUIRE_MESSAGE(pprof.wait() == 0, pprof_err);
	// pprof's own reading: each inlined line of a location "(inline)", above the function
	// it was inlined into, names without their parameters.
	uint64_t pprof_inlined = 0;
	for (const Trace &trace : pprof_traces(dir / "cpu.pb.gz")) {
		const std::vector<std::string> &f = trace.frames;
		for (size_t i = 0; i + 2 < f.size(); i++)
			if (f[i] == "workload::scramble (inline)") {
				CHECK(f[i + 1] == "workload::Mixer::mix (inline)");
				CHECK(f[i + 2] == "workload::mix_block");
				pprof_inlined += trace.count;
			}
	}
	CHECK(pprof_inlined > 0);
	const std::vector<FoldedLine> inlined = parse_folded(with_out), plain = parse_folded(without_out);
	INFO("default:\n" << with_out << "--no-inline:\n" << without_out);

	const std::string block = "workload::mix_block(workload::Mixer&, int)", mix = "workload::Mixer::mix(unsigned long)",
			  scramble = "workload::scramble(unsigned long)", sum = "workload::sum_block(std::vector<unsigned long, std::allocator<unsigned long> > const&)";
	CHECK(samples_of_with(inlined, "inlined", scramble) > 0);
	CHECK(samples_of_with(inlined, "inlined", mix) > 0);
	CHECK(samples_of_with(plain, "inlined", block) > 0);
	// Root first: each inlined function right above the function it was inlined into.
	for (const FoldedLine &line : inlined) {
		for (size_t i = 0; i < line.frames.size(); i++) {
			CAPTURE(line.frames[i]);
			if (line.frames[i] == mix)
				CHECK(line.frames[i - 1] == block);
			if (line.frames[i] == scramble)
				CHECK(line.frames[i - 1] == mix);
			if (line.frames[i].find("std::accumulate<") != std::string::npos)
				CHECK(line.frames[i - 1] == sum);
		}
	}
	uint64_t accumulate = 0;
	for (const FoldedLine &line : inlined)
		if (std::any_of(line.frames.begin(), line.frames.end(),
				[](const std::string &f) { return f.find("std::accumulate<") != std::string::npos; }))
			accumulate += line.count;
	CHECK(accumulate > 0);
	// --no-inline: only functions with code of their own, mix_block the leaf of its stacks.
	for (const FoldedLine &line : plain) {
		for (const std::string &frame : line.frames) {
			CHECK(frame != mix);
			CHECK(frame != scramble);
			CHECK(frame.find("std::accumulate<") == std::string::npos);
		}
		if (std::find(line.frames.begin(), line.frames.end(), block) != line.frames.end())
			CHECK(line.frames.back() == block);
	}
}

} // TEST_SUITE
