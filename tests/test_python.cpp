// tests/test_python.cpp: CPython frames: the version table and line tables against the
// interpreters on this machine, and the real ./profile on Debian's python3.11 and on every
// pyenv CPython 3.8 to 3.13 present: the known split, roots, zlib under its caller, threads.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "python/layout.h"
#include "python/names.h"
#include "python/runtime.h"
#include "base/fd.h"
#include "elf/elf.h"
#include "syms/symbolizer.h"
#include "tests/support.h"

namespace {

struct Interpreter {
	std::string path;
	std::string label; // "Debian 3.11", "pyenv 3.12.1"
};

// Debian's /usr/bin/python3.11 (the test set-up installs it), then every pyenv CPython of a
// version the profiler knows.
std::vector<Interpreter> interpreters()
{
	std::vector<Interpreter> found;
	if (access("/usr/bin/python3.11", X_OK) == 0)
		found.push_back({"/usr/bin/python3.11", "Debian 3.11"});
	std::string root;
	if (const char *env = getenv("PYENV_ROOT"))
		root = env;
	else if (const char *home = getenv("HOME"))
		root = std::string(home) + "/.pyenv";
	std::error_code ec;
	std::set<std::string> versions;
	for (const auto &entry : std::filesystem::directory_iterator(root + "/versions", ec))
		versions.insert(entry.path().filename().string());
	for (const std::string &version : versions) {
		int minor = -1;
		if (std::sscanf(version.c_str(), "3.%d", &minor) != 1 || !python_layout(minor))
			continue;
		const std::string path = root + "/versions/" + version + "/bin/python3";
		if (access(path.c_str(), X_OK) == 0)
			found.push_back({path, "pyenv " + version});
	}
	return found;
}

// True, after saying the test skips (a failure on CI, which installs python3), when no
// interpreter was found.
bool none_found(const std::vector<Interpreter> &found)
{
	if (!found.empty())
		return false;
	skip_test("no CPython 3.8 to 3.13 here (apt-get install python3.11)");
	return true;
}

const std::string kWorkloads = "tests/workloads/python/";

// The first interpreter (Debian's 3.11 where it is installed), once the test is known to run
// as root; none, after saying the test skips, when there is no interpreter.
std::optional<Interpreter> first_interpreter()
{
	require_root();
	const auto found = interpreters();
	if (none_found(found))
		return std::nullopt;
	return found.front();
}

// A program of the first interpreter that writes to a file of a temporary folder: its args,
// then that file's path; it says "ready" when it is under way. Gone (killed, the folder
// removed) with what this returns.
struct PythonProgram {
	Interpreter py;
	TempDir dir;
	std::string file;
	std::unique_ptr<Background> program;
};

// The program started and ready; none, after saying the test skips, when there is no
// interpreter (as first_interpreter).
std::unique_ptr<PythonProgram> start_first_interpreter(const std::vector<std::string> &args,
						       const std::string &file)
{
	const std::optional<Interpreter> first = first_interpreter();
	if (!first)
		return nullptr;
	auto started = std::make_unique<PythonProgram>();
	started->py = *first;
	CAPTURE(started->py.label);
	started->file = started->dir / file;
	std::vector<std::string> argv = {started->py.path};
	argv.insert(argv.end(), args.begin(), args.end());
	argv.push_back(started->file);
	started->program = std::make_unique<Background>(argv);
	REQUIRE(started->program->read_line() == "ready");
	return started;
}

// The first interpreter (Debian's 3.11 where it is installed), and the first pyenv one
// before 3.11 when there is one: the two ways of chaining frames and naming code.
std::vector<Interpreter> first_and_one_before_3_11()
{
	const auto found = interpreters();
	std::vector<Interpreter> chosen;
	for (const Interpreter &py : found)
		if (chosen.empty() || ((py.label.starts_with("pyenv 3.8") || py.label.starts_with("pyenv 3.9") ||
					py.label.starts_with("pyenv 3.10")) && chosen.size() == 1))
			chosen.push_back(py);
	return chosen;
}

// Runs a workload of tests/workloads/python (SCRIPT SECONDS REPORT_FILE; it prints "ready"
// once started) under profile -p -U --folded for `sampled` seconds at 499 Hz, and waits for
// it to end: profile's result, and the workload's report in `report`.
CommandResult sample_workload(const Interpreter &py, const std::string &script, int seconds, int sampled,
			      const std::string &report_file, std::string &report)
{
	Background program({py.path, kWorkloads + script, std::to_string(seconds), report_file});
	REQUIRE(program.read_line() == "ready");
	auto r = profile({"-p", std::to_string(program.pid()), "-U", "-f", "499", "--folded", std::to_string(sampled)});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	program.wait();
	report = read_file(report_file);
	return r;
}

// A folded line as profile wrote it, for a failure's message.
std::string folded_line(const FoldedLine &l)
{
	std::string stack;
	for (const std::string &f : l.frames)
		stack += (stack.empty() ? "" : ";") + f;
	return stack + " " + std::to_string(l.count);
}


bool is_root_frame(const std::string &frame)
{
	static const std::set<std::string> roots = {"_start", "__libc_start_main", "__libc_start_main_impl",
						    "__libc_start_call_main", "start_thread", "clone3", "clone"};
	return roots.count(frame) > 0;
}

// Samples whose stack holds a frame starting with `prefix`.
uint64_t with_prefix(const std::vector<FoldedLine> &lines, const std::string &prefix)
{
	uint64_t n = 0;
	for (const FoldedLine &l : lines)
		for (const std::string &f : l.frames)
			if (f.starts_with(prefix)) {
				n += l.count;
				break;
			}
	return n;
}

// What split.py measured so far (its TRUTH_FILE): thread CPU seconds in busy, in compressing.
struct SplitSeconds {
	double busy = 0, compressing = 0;
};

// split.py writes the file after its first round, then rewrites it in place after every
// round (read_settled).
SplitSeconds split_seconds(const std::string &truth)
{
	const std::string text = read_settled(truth);
	SplitSeconds spent;
	const bool read = bool(std::istringstream(text) >> spent.busy >> spent.compressing);
	REQUIRE_MESSAGE(read, truth << ": \"" << text << "\"");
	return spent;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("python: file names give the minor version; only 3.8 to 3.13 have a layout")
{
	CHECK(python_minor_of_file_name("libpython3.11.so.1.0") == 11);
	CHECK(python_minor_of_file_name("libpython3.8.so") == 8);
	CHECK(python_minor_of_file_name("python3.13") == 13);
	CHECK(python_minor_of_file_name("libpython3.8d.so.1.0") == 8);
	CHECK(python_minor_of_file_name("python3") == -1);
	CHECK(python_minor_of_file_name("libpython3.so") == -1);
	CHECK(python_minor_of_file_name("python3.11-config") == -1);
	CHECK(python_minor_of_file_name("pypy3.10") == -1);
	for (int minor = 8; minor <= 13; minor++)
		CHECK(python_layout(minor) != nullptr);
	CHECK(python_layout(7) == nullptr);
	CHECK(python_layout(14) == nullptr);
}

TEST_CASE("python: frames read as py-spy writes them: function (file:line), the file by its last part")
{
	Frame frame;
	frame.kind = FrameKind::Python;
	frame.name = "Spinner.fib";
	frame.source_file = "/srv/app/fib.py";
	frame.line = 2;
	CHECK(frame_label(frame) == "Spinner.fib (fib.py:2)");
	frame.line = 0;
	CHECK(frame_label(frame) == "Spinner.fib (fib.py)");
	// A code object never named (its process gone before it was read).
	Frame unnamed;
	unnamed.kind = FrameKind::Python;
	unnamed.name = "[python]";
	CHECK(frame_label(unnamed) == "[python]");
}

TEST_CASE("python: hostile line tables give a line or 0, and never read past their end")
{
	uint64_t state = 0x9e3779b97f4a7c15ull;
	auto next = [&] {
		state ^= state << 13, state ^= state >> 7, state ^= state << 17;
		return state;
	};
	for (int round = 0; round < 20000; round++) {
		std::vector<uint8_t> table(next() % 64);
		for (uint8_t &b : table)
			b = uint8_t(next());
		const uint32_t index = uint32_t(next() % 256);
		for (LineTable kind : {LineTable::Lnotab, LineTable::Linetable, LineTable::Locations}) {
			// An exact-size copy on the heap: a read past it is one the sanitizers see.
			std::unique_ptr<uint8_t[]> copy(new uint8_t[table.size() + 1]);
			std::copy(table.begin(), table.end(), copy.get());
			const uint32_t line = python_line(kind, {copy.get(), table.size()}, int(next() % 1000), index);
			CHECK(line <= (1u << 24));
		}
	}
}

TEST_CASE("python: the README's flame graph is profile's own, of split.py, with its Python frames in place")
{
	// scripts/python-flamegraph.sh makes it; the README shows it.
	const std::string svg = read_file("doc/python-flamegraph.svg");
	CHECK(svg.find("<title>Flame Graph: ./profile -p ") != std::string::npos);
	for (const char *frame : {"&lt;module&gt; (split.py:", "main (split.py:", "busy (split.py:",
				  "compressing (split.py:23)", "deflate"})
		CHECK_MESSAGE(svg.find(std::string("<title>") + frame) != std::string::npos, frame);
	CHECK(read_file("README.md").find("](doc/python-flamegraph.svg)") != std::string::npos);
}

} // TEST_SUITE("unit")

TEST_SUITE("component") {

TEST_CASE("python: line tables decode as each interpreter's own co_lines or findlinestarts says")
{
	// Each interpreter prints, for functions of its own standard library, the line table,
	// the first line, and the line of every instruction (by 2-byte code unit).
	const char *script = R"(
import dis, sys, json, inspect, textwrap, email.message, json.decoder
codes = []
for mod in (json.decoder, email.message, textwrap):
    for name, f in inspect.getmembers(mod, inspect.isfunction):
        codes.append(f.__code__)
    for name, c in inspect.getmembers(mod, inspect.isclass):
        for n, f in inspect.getmembers(c, inspect.isfunction):
            codes.append(f.__code__)
for c in codes[:80]:
    n = len(c.co_code) // 2
    lines = [0] * n
    if sys.version_info >= (3, 10):
        for start, end, line in c.co_lines():
            for i in range(start // 2, min(end // 2, n)):
                lines[i] = line or 0
        table = c.co_linetable
    else:
        starts = list(dis.findlinestarts(c))
        for i in range(n):
            for off, line in starts:
                if off <= 2 * i:
                    lines[i] = line
        table = c.co_lnotab
    print(c.co_firstlineno, table.hex(), ",".join(map(str, lines)))
)";
	const auto found = interpreters();
	if (none_found(found))
		return;
	for (const Interpreter &py : found) {
		CAPTURE(py.label);
		auto r = run_command({py.path, "-c", script});
		REQUIRE_MESSAGE(r.status == 0, r.err);
		int minor = 0;
		std::sscanf(py.label.c_str() + py.label.find("3."), "3.%d", &minor);
		const PythonLayout *layout = python_layout(minor);
		REQUIRE(layout);
		size_t codes = 0, wrong = 0;
		for (const std::string &line : split_lines(r.out)) {
			std::istringstream in(line);
			int first = 0;
			std::string hex, expected;
			in >> first >> hex >> expected;
			std::vector<uint8_t> table;
			for (size_t i = 0; i + 1 < hex.size(); i += 2)
				table.push_back(uint8_t(std::stoi(hex.substr(i, 2), nullptr, 16)));
			std::istringstream lines(expected);
			std::string item;
			for (uint32_t index = 0; std::getline(lines, item, ','); index++) {
				const uint32_t want = uint32_t(std::stoul(item));
				const uint32_t got = python_line(layout->lines, table, first, index);
				if (want && got != want && wrong++ < 5)
					FAIL_CHECK("code at line " << first << ", unit " << index << ": " << got << " for " << want);
			}
			codes++;
		}
		CHECK(codes >= 40);
		CHECK(wrong == 0);
	}
}

TEST_CASE("python: the eval function's cold part is found from the unwind tables where no symbol names it")
{
	const auto found = interpreters();
	if (none_found(found))
		return;
	size_t checked = 0;
	for (const Interpreter &py : found) {
		CAPTURE(py.label);
		// The file that holds the runtime: pyenv's libpython, Debian's binary.
		std::string path = py.path;
		const std::filesystem::path lib_dir = std::filesystem::path(py.path).parent_path().parent_path() / "lib";
		std::error_code ec;
		for (const auto &entry : std::filesystem::directory_iterator(lib_dir, ec))
			if (entry.path().filename().string().starts_with("libpython3.") &&
			    entry.path().filename().string().ends_with(".so.1.0"))
				path = entry.path().string();
		UniqueFd fd = open_read_only(path.c_str());
		REQUIRE(fd);
		auto elf = ElfFile::open(fd.get());
		REQUIRE(elf);
		const auto eval = find_elf_symbol(*elf, "_PyEval_EvalFrameDefault");
		REQUIRE(eval);
		const auto cold = find_cold_part(*elf, *eval);
		const auto named = find_elf_symbol(*elf, "_PyEval_EvalFrameDefault.cold");
		INFO(path << ": found " << (cold ? cold->address : 0) << "+" << (cold ? cold->size : 0) << ", named "
			  << (named ? named->address : 0) << "+" << (named ? named->size : 0));
		if (named && cold) {
			// Where the symbols name it, what the tables give holds it (pyenv's are a few
			// bytes, too few jumps to be found: their symbol names them).
			CHECK(cold->address <= named->address);
			CHECK(cold->address + cold->size >= named->address + named->size);
			checked++;
		} else if (py.label == "Debian 3.11") {
			// Stripped: 13.9 KiB of error paths, outside the function, that no symbol it
			// keeps covers.
			REQUIRE(cold);
			CHECK((cold->address + cold->size <= eval->address || cold->address >= eval->address + eval->size));
			CHECK(cold->size >= 1024);
			CHECK(elf->find_symbol(cold->address) == nullptr);
			CHECK(elf->find_symbol(cold->address + cold->size - 1) == nullptr);
			checked++;
		}
	}
	CHECK(checked > 0);
}

} // TEST_SUITE("component")

TEST_SUITE("integration") {

TEST_CASE("python: a sample in Debian's python3.11's unnamed cold part has its Python frames in place")
{
	require_root();
	const auto found = interpreters();
	if (found.empty() || found.front().label != "Debian 3.11") {
		skip_test("Debian's /usr/bin/python3.11 is missing (apt-get install python3.11)");
		return;
	}
	UniqueFd fd = open_read_only("/usr/bin/python3.11");
	REQUIRE(fd);
	auto elf = ElfFile::open(fd.get());
	REQUIRE(elf);
	const auto eval = find_elf_symbol(*elf, "_PyEval_EvalFrameDefault");
	REQUIRE(eval);
	const auto cold = find_cold_part(*elf, *eval);
	REQUIRE(cold);
	// A frame written [python3.11+0xADDR] in the cold part.
	auto in_cold = [&](const std::string &frame) {
		unsigned long long at = 0;
		return std::sscanf(frame.c_str(), "[python3.11+0x%llx]", &at) == 1 && at >= cold->address &&
		       at < cold->address + cold->size;
	};
	// A local read before it is set: the error is made in the cold part.
	Background program({"/usr/bin/python3.11", "-c",
			    "def unbound(n):\n"
			    "    for i in range(n):\n"
			    "        try:\n"
			    "            if i < 0: v = 1\n"
			    "            v\n"
			    "        except UnboundLocalError: pass\n"
			    "print('ready', flush=True)\n"
			    "while True:\n"
			    "    unbound(1000)\n"}); // killed at the end
	REQUIRE(program.read_line() == "ready");
	const std::string pid = std::to_string(program.pid());
	// As the interpreter is: some samples pass through the cold part.
	auto native = profile({"-p", pid, "-U", "-f", "499", "--no-python", "--folded", "1"});
	REQUIRE_MESSAGE(native.status == 0, native.err);
	uint64_t through_cold = 0, native_all = 0;
	for (const FoldedLine &l : parse_folded(native.out)) {
		native_all += l.count;
		through_cold += std::any_of(l.frames.begin(), l.frames.end(), in_cold) ? l.count : 0;
	}
	INFO(through_cold << " of " << native_all << " samples through the cold part (--no-python)");
	REQUIRE(through_cold >= 3);
	// With them: no frame is left in the cold part, and every sample has its Python frames.
	auto r = profile({"-p", pid, "-U", "-f", "499", "--folded", "1"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	uint64_t all = 0, wrong = 0;
	std::string wrong_lines;
	for (const FoldedLine &l : parse_folded(r.out)) {
		all += l.count;
		const bool module = std::any_of(l.frames.begin(), l.frames.end(),
						[](const std::string &f) { return f.starts_with("<module> (<string>:"); });
		if (!module || std::any_of(l.frames.begin(), l.frames.end(), in_cold)) {
			wrong_lines += "wrong: " + folded_line(l) + "\n";
			wrong += l.count;
		}
	}
	CHECK(all >= 20);
	CHECK_MESSAGE(wrong == 0, wrong_lines);
}

TEST_CASE("python: the known split, roots through the Python frames, and zlib under its caller" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	const auto found = interpreters();
	if (found.empty() || found.front().label != "Debian 3.11") {
		// CI installs python3 (scripts/install-deps.sh): a skip there is a failure.
		skip_test("Debian's /usr/bin/python3.11 is missing (apt-get install python3.11)");
		if (found.empty())
			return;
	}
	// Every interpreter at once, in one run of 3 s that tells their processes apart (-E):
	// one after another they took most of a minute of the suite's time. Each runs until the
	// test ends (killed then), and the split it measured from the profile's start to its
	// end is the truth the profile is judged by.
	TempDir dir;
	std::vector<std::unique_ptr<Background>> programs;
	std::string pids;
	for (size_t k = 0; k < found.size(); k++) {
		programs.push_back(std::make_unique<Background>(std::vector<std::string>{
			found[k].path, kWorkloads + "split.py", "60", dir / ("truth" + std::to_string(k))}));
		REQUIRE(programs.back()->read_line() == "ready");
		pids += (k ? "," : "") + std::to_string(programs.back()->pid());
	}
	std::vector<SplitSeconds> before;
	for (size_t k = 0; k < found.size(); k++)
		before.push_back(split_seconds(dir / ("truth" + std::to_string(k))));
	const auto r = profile({"-p", pids, "-U", "-E", "-f", "499", "--folded", "3"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	std::vector<SplitSeconds> after;
	for (size_t k = 0; k < found.size(); k++)
		after.push_back(split_seconds(dir / ("truth" + std::to_string(k))));
	const auto all_lines = parse_folded(r.out);
	INFO("stderr:\n" << r.err);
	for (size_t k = 0; k < found.size(); k++) {
		const Interpreter &py = found[k];
		CAPTURE(py.label);
		const double busy_s = after[k].busy - before[k].busy,
			     compressing_s = after[k].compressing - before[k].compressing;
		CAPTURE(busy_s);
		CAPTURE(compressing_s);
		REQUIRE(busy_s + compressing_s > 0);
		// This process's lines: -E roots each stack in "comm-PID".
		const std::string root_suffix = "-" + std::to_string(programs[k]->pid());
		std::vector<FoldedLine> lines;
		for (const FoldedLine &l : all_lines)
			if (l.frames[0].ends_with(root_suffix))
				lines.push_back(l);
		const uint64_t busy = with_prefix(lines, "busy (split.py:");
		const uint64_t compressing = with_prefix(lines, "compressing (split.py:");
		// About 400 on a quiet machine (seven programs share two CPUs); a loaded one gives
		// them less (78 with a load of 13 on two CPUs). sampled_share bounds the share by the
		// count it has; with 50, a profile with the two functions swapped (about 1 - share)
		// is still well outside its bound.
		REQUIRE(busy + compressing > 50);
		const SampledShare share = sampled_share(busy, busy + compressing, busy_s / (busy_s + compressing_s));
		CHECK_MESSAGE(share.ok, share);

		// Every sample but a few reaches the root through the module's frame.
		uint64_t all = 0, whole = 0, deflate = 0, deflate_under = 0;
		for (const FoldedLine &l : lines) {
			all += l.count;
			bool module = false;
			for (const std::string &f : l.frames)
				module |= f.starts_with("<module> (split.py:");
			whole += l.frames.size() > 1 && is_root_frame(l.frames[1]) && module ? l.count : 0;
			// zlib's deflate, and above it (its callers) compressing at the line that calls.
			for (size_t i = 0; i < l.frames.size(); i++)
				if (l.frames[i] == "deflate") {
					deflate += l.count;
					bool caller = false;
					for (size_t j = 0; j < i; j++)
						caller |= l.frames[j] == "compressing (split.py:23)";
					deflate_under += caller ? l.count : 0;
					break;
				}
		}
		CHECK_MESSAGE(double(whole) >= 0.95 * double(all), whole << " of " << all << " samples reach the root");
		CHECK(deflate > 0);
		CHECK_MESSAGE(deflate_under * 100 >= deflate * 95, deflate_under << " of " << deflate);
		// No eval frame is left where its Python frames belong but for a few.
		CHECK(samples_with(lines, "_PyEval_EvalFrameDefault") * 100 <= all * 2);
	}
}

TEST_CASE("python: each thread's samples name its own function, never another thread's")
{
	require_root();
	const auto found = interpreters();
	if (none_found(found))
		return;
	const std::vector<std::pair<std::string, std::string>> threads = {
		{"py-spin-a", "spin_a (threads.py:"}, {"py-spin-b", "spin_b (threads.py:"},
		{"py-sleep", "sleeper (threads.py:"}, {"py-hash", "hasher (threads.py:"}};
	// Every interpreter at once, in one run that tells their processes apart (-E roots a
	// stack in "THREAD_COMM-PID"): one after another they took 20 s of the suite's time.
	std::vector<std::unique_ptr<Background>> programs;
	std::string pids;
	for (const Interpreter &py : found) {
		programs.push_back(std::make_unique<Background>(
			std::vector<std::string>{py.path, kWorkloads + "threads.py", "30"})); // killed at the end
		REQUIRE(programs.back()->read_line() == "ready");
		pids += (pids.empty() ? "" : ",") + std::to_string(programs.back()->pid());
	}
	auto r = profile({"-p", pids, "-U", "-E", "-f", "499", "--folded", "3"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	const auto lines = parse_folded(r.out);
	INFO("stderr:\n" << r.err);
	for (size_t k = 0; k < found.size(); k++) {
		CAPTURE(found[k].label);
		const std::string pid = std::to_string(programs[k]->pid());
		for (const auto &[comm, function] : threads) {
			CAPTURE(comm);
			const std::string root = comm + "-" + pid;
			uint64_t samples = 0, own = 0, other = 0;
			for (const FoldedLine &l : lines) {
				if (l.frames[0] != root)
					continue;
				samples += l.count;
				for (const auto &[other_comm, other_function] : threads)
					for (const std::string &f : l.frames)
						if (f.starts_with(other_function)) {
							(other_comm == comm ? own : other) += l.count;
							break;
						}
			}
			CHECK(other == 0);
			// The sleeper is seldom on a CPU; the three others are often, even on a busy
			// machine (a hundred samples or more each on a quiet one, with seven
			// interpreters' threads sharing two CPUs).
			if (comm != "py-sleep") {
				CHECK(samples >= 20);
				CHECK(own * 100 >= samples * 95);
			}
		}
	}
}

TEST_CASE("python: --off-cpu names the Python functions a thread waits in, each with its share of the time")
{
	const auto started = start_first_interpreter({kWorkloads + "offcpu.py", "60"}, "truth"); // killed at the end
	if (!started)
		return;
	CAPTURE(started->py.label);
	const std::string &truth = started->file;
	const Background &program = *started->program;
	// offcpu.py's two running totals: nanoseconds off the CPU in sleep_three, in sleep_one.
	auto spent = [&] {
		const std::string bytes = read_file(truth);
		REQUIRE(bytes.size() == 16);
		uint64_t ns[2];
		std::memcpy(ns, bytes.data(), sizeof(ns));
		return std::pair<double, double>(double(ns[0]), double(ns[1]));
	};
	std::pair<double, double> before, after;
	const OffCpuRun run = off_cpu_run({"-p", std::to_string(program.pid()), "-U"}, 3, [&] { before = spent(); },
					  [&] { after = spent(); });
	REQUIRE_MESSAGE(run.status == 0, run.err);
	// The frames are each function's line of time.sleep.
	const double three = double(samples_with(run.lines, "sleep_three (offcpu.py:11)"));
	const double one = double(samples_with(run.lines, "sleep_one (offcpu.py:15)"));
	const double measured_three = (after.first - before.first) / 1000, measured_one = (after.second - before.second) / 1000;
	INFO("profiled " << three << " and " << one << " us, measured " << measured_three << " and " << measured_one
			 << " us; stderr:\n" << run.err);
	REQUIRE(three + one > 0);
	REQUIRE(measured_three + measured_one > 0);
	CHECK(std::fabs(three / (three + one) - measured_three / (measured_three + measured_one)) <= 0.03);
	CHECK(std::fabs((three + one) - (measured_three + measured_one)) <= 0.1 * (measured_three + measured_one));
}

TEST_CASE("python: --off-cpu names every Python frame of a thread's first blocked stacks, a score of code objects new at once")
{
	// Two threads, each blocked in os.read at the bottom of 20 functions of its own; a
	// child (not profiled) writes a byte to each pipe every 0.1 s.
	const auto started = start_first_interpreter(
		{"-c", "import os, sys, threading, time\n"
		       "pipes = [os.pipe() for _ in range(2)]\n"
		       "src = ''\n"
		       "for t in range(2):\n"
		       "    src += 'def t%d_f19(fd):\\n    while True:\\n        os.read(fd, 1)\\n' % t\n"
		       "    for d in range(18, -1, -1):\n"
		       "        src += 'def t%d_f%d(fd):\\n    return t%d_f%d(fd)\\n' % (t, d, t, d + 1)\n"
		       "exec(compile(src, 'chain.py', 'exec'), globals())\n"
		       "for t in range(2):\n"
		       "    threading.Thread(target=globals()['t%d_f0' % t], args=(pipes[t][0],), daemon=True).start()\n"
		       "if os.fork() == 0:\n"
		       "    for r, w in pipes:\n"
		       "        os.close(r)\n"
		       "    try:\n" // until EPIPE, once the parent is gone
		       "        while True:\n"
		       "            time.sleep(0.1)\n"
		       "            for r, w in pipes:\n"
		       "                os.write(w, b'x')\n"
		       "    finally:\n"
		       "        os._exit(0)\n"
		       "print('ready', flush=True)\n"
		       "threading.Event().wait()\n"},
		"unused");
	if (!started)
		return;
	CAPTURE(started->py.label);
	const OffCpuRun run = off_cpu_run({"-p", std::to_string(started->program->pid())}, 2, [] {}, [] {});
	REQUIRE_MESSAGE(run.status == 0, run.err);
	// The first walk on a CPU meets 23 code objects it has not seen (the chain, threading's);
	// each is to have its place in the kernel's map there and then.
	uint64_t chained = 0, unnamed = 0;
	std::string all_lines;
	for (const FoldedLine &l : run.lines) {
		bool chain = false, python = false;
		for (const std::string &f : l.frames) {
			chain |= f.starts_with("t0_f19 (chain.py:") || f.starts_with("t1_f19 (chain.py:");
			python |= f == "[python]";
		}
		if (!chain && !python)
			continue;
		chained += l.count;
		unnamed += python ? l.count : 0;
		all_lines += std::to_string(l.count) + (python ? " with [python]" : "") + "\n";
	}
	REQUIRE(chained > 0);
	CHECK_MESSAGE(unnamed == 0, unnamed << " us of " << chained << " in stacks with an unnamed Python frame\n" << all_lines);
}

TEST_CASE("python: 10,000 distinct code objects of a live process are all named, each right")
{
	const auto started = start_first_interpreter(
		{"-c", "import sys, time\n"
		       "src = ''.join('def f%d(x):\\n    return x + %d\\n' % (i, i) for i in range(10000))\n"
		       "ns = {}\n"
		       "exec(compile(src, 'many.py', 'exec'), ns)\n"
		       "with open(sys.argv[1], 'w') as out:\n"
		       "    for i in range(10000):\n"
		       "        out.write('%d f%d\\n' % (id(ns['f%d' % i].__code__), i))\n"
		       "print('ready', flush=True)\n"
		       "time.sleep(60)\n"},
		"ids");
	if (!started)
		return;
	CAPTURE(started->py.label);
	const std::string &ids = started->file;
	const Background &program = *started->program;
	MapsReads maps;
	const PythonDetection detected = detect_python(uint32_t(program.pid()), maps);
	REQUIRE_MESSAGE(detected.kind == PythonDetection::Python, detected.note);
	std::vector<std::pair<uint64_t, std::string>> codes;
	for (const std::string &line : split_lines(read_file(ids))) {
		std::istringstream in(line);
		uint64_t code = 0;
		std::string name;
		in >> code >> name;
		codes.emplace_back(code, name);
	}
	REQUIRE(codes.size() == 10000);
	PythonNames names;
	UniqueFd mem = open_read_only(("/proc/" + std::to_string(program.pid()) + "/mem").c_str());
	REQUIRE(mem);
	// What the walk sends: each code object with its fingerprint and an id.
	const uint32_t pid = uint32_t(program.pid());
	std::vector<python_code> seen;
	for (const auto &[code, name] : codes) {
		const auto fingerprint = python_code_fingerprint(mem.get(), code, detected.layout);
		REQUIRE(fingerprint);
		seen.push_back(python_code{pid, 0, code, *fingerprint, seen.size() + 1});
	}
	// How long it takes is scripts/bench-python.sh's to say (timed checks flake on a
	// loaded machine); here, that every one is named right.
	for (const python_code &code : seen)
		names.learn(code, detected.process.code_type, detected.layout, mem.get());
	REQUIRE(names.size() == 10000);
	size_t right = 0;
	for (size_t i = 0; i < codes.size(); i++) {
		PythonFrameName frame;
		if (names.name(pid, seen[i].id, 0, frame) && frame.function == codes[i].second && frame.file == "many.py")
			right++;
	}
	CHECK(right == codes.size());
	// What is not a code object is not named: the word after one's start, a str.
	python_code wrong = seen[0];
	wrong.code += 8;
	wrong.id = 0;
	CHECK_FALSE(names.learn(wrong, detected.process.code_type, detected.layout, mem.get()));
	// Nor is a code object whose fingerprint is not the one the walk read: another one, at
	// an address that a freed one had.
	wrong = seen[1];
	wrong.fingerprint = seen[0].fingerprint;
	wrong.id = 0;
	CHECK_FALSE(names.learn(wrong, detected.process.code_type, detected.layout, mem.get()));
	PythonFrameName unnamed;
	CHECK_FALSE(names.name(pid, 0, 0, unnamed));
}

TEST_CASE("python: a code object freed and its address taken by another is named as the new one")
{
	require_root();
	// Names by co_qualname (3.11) and by co_name (before 3.11).
	const auto chosen = first_and_one_before_3_11();
	if (none_found(chosen))
		return;
	TempDir dir;
	for (const Interpreter &py : chosen) {
		CAPTURE(py.label);
		std::string report;
		const auto r = sample_workload(py, "reuse.py", 2, 1, dir / "reuse", report);
		uint32_t loop_line = 0, ran = 0, reused = 0;
		std::istringstream(report) >> loop_line >> ran >> reused;
		INFO("stderr:\n" << r.err);
		// Addresses were taken again, by functions of the other depth: the check can fail.
		REQUIRE(reused >= 5);
		uint64_t in_loop = 0, wrong = 0;
		std::string wrong_lines;
		for (const FoldedLine &l : parse_folded(r.out)) {
			std::vector<std::string> rec;
			for (const std::string &f : l.frames)
				if (f.starts_with("rec_"))
					rec.push_back(f);
			if (rec.empty())
				continue;
			// rec_D_N (reuse_gen.py:LINE): D frames of it in its loop, at most D before.
			const std::string function = rec.back().substr(0, rec.back().find(' '));
			const unsigned depth = unsigned(std::stoul(function.substr(4)));
			unsigned line = 0;
			std::sscanf(rec.back().c_str() + rec.back().find(':') + 1, "%u", &line);
			bool right = depth == 3 || depth == 7;
			for (const std::string &f : rec)
				right &= f.starts_with(function + " (reuse_gen.py:");
			if (line >= loop_line) {
				right &= rec.size() == depth;
				in_loop += l.count;
			} else {
				right &= rec.size() <= depth;
			}
			if (!right) {
				wrong_lines += "wrong: " + folded_line(l) + "\n";
				wrong += l.count;
			}
		}
		INFO(ran << " functions ran, " << reused << " at an address of the other depth; " << in_loop
			 << " samples in their loops");
		CHECK(in_loop >= 30);
		CHECK_MESSAGE(wrong == 0, wrong_lines);
	}
}

TEST_CASE("python: a recursion deeper than the walk's 127 frames ends in [truncated], never in wrong frames")
{
	require_root();
	// 3.11: Python calls without a native frame between; before 3.11: native eval frames
	// between every two.
	const auto chosen = first_and_one_before_3_11();
	if (none_found(chosen))
		return;
	for (const Interpreter &py : chosen) {
		CAPTURE(py.label);
		Background program({py.path, "-c",
				    "import sys\n"
				    "sys.setrecursionlimit(1000)\n"
				    "def deep(n):\n"
				    "    if n:\n"
				    "        return deep(n - 1)\n"
				    "    print('ready', flush=True)\n"
				    "    t = 0\n"
				    "    while True:\n"
				    "        t += 1\n"
				    "def top():\n"
				    "    deep(200)\n"
				    "top()\n"}); // killed at the end
		REQUIRE(program.read_line() == "ready");
		auto r = profile({"-p", std::to_string(program.pid()), "-U", "-f", "499", "--folded", "1"});
		REQUIRE_MESSAGE(r.status == 0, r.err);
		INFO("stderr:\n" << r.err);
		uint64_t all = 0, cut = 0, wrong = 0;
		std::string wrong_lines;
		size_t python_frames = 0;
		for (const FoldedLine &l : parse_folded(r.out)) {
			all += l.count;
			// Root first: the mark, then only deep's frames (top and <module> are past the
			// limit) and the interpreter's own between and below them.
			size_t deep = 0;
			bool right = l.frames.size() >= 3 && l.frames[1] == "[truncated]";
			for (const std::string &f : l.frames) {
				const bool python = f.find(" (") != std::string::npos;
				deep += python && f.starts_with("deep (<string>:");
				right &= !python || f.starts_with("deep (<string>:");
			}
			right &= deep > 0;
			cut += l.frames.size() >= 2 && l.frames[1] == "[truncated]" ? l.count : 0;
			python_frames = std::max(python_frames, deep);
			if (!right) {
				wrong_lines += "wrong: " + folded_line(l) + "\n";
				wrong += l.count;
			}
		}
		INFO(python_frames << " Python frames of 200 shown, " << cut << " of " << all << " samples cut");
		CHECK(all >= 20);
		CHECK_MESSAGE(wrong == 0, wrong_lines);
		CHECK(python_frames >= 20);
	}
}

TEST_CASE("python: a corrupt libpython in a process gives native stacks and one line, never a crash")
{
	require_root();
	const std::string python = "/usr/bin/python3.11";
	if (access(python.c_str(), X_OK) != 0) {
		skip_test(python + " is missing (apt-get install python3.11)");
		return;
	}
	TempDir dir;
	// The interpreter itself, cut short: headers that promise sections past the end.
	const std::string whole = read_file(python);
	REQUIRE(whole.size() > 65536);
	const std::vector<std::pair<std::string, std::string>> bad = {
		{"garbage", std::string(4096, 'x')},
		{"truncated", whole.substr(0, 65536)},
		{"empty", ""},
	};
	for (const auto &[what, bytes] : bad) {
		CAPTURE(what);
		std::filesystem::create_directories(dir / what);
		const std::string mapped = dir / (what + "/libpython3.11.so.1.0");
		write_file(mapped, bytes.empty() ? std::string(1, '\0') : bytes);
		// The process maps it as a library would be, executable (a libpython is preferred to
		// the binary; one mapped only to be read is none the process runs).
		Background program({python, "-c",
				    "import mmap, sys\n"
				    "f = open(sys.argv[1], 'rb')\n"
				    "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC)\n"
				    "def spin():\n"
				    "    t = 0\n"
				    "    while True:\n"
				    "        t += 1\n"
				    "print('ready', flush=True)\n"
				    "spin()\n",
				    mapped});
		REQUIRE(program.read_line() == "ready");
		MapsReads maps;
		const PythonDetection detected = detect_python(uint32_t(program.pid()), maps);
		CHECK(detected.kind == PythonDetection::Unknown);
		CHECK(!detected.note.empty());
		auto r = profile({"-p", std::to_string(program.pid()), "-U", "-f", "199", "--folded", "1"});
		REQUIRE_MESSAGE(r.status == 0, r.err);
		const auto lines = parse_folded(r.out);
		CHECK(total(lines) > 0);
		CHECK(with_prefix(lines, "spin (") == 0);
		CHECK(samples_with(lines, "_PyEval_EvalFrameDefault") > 0);
		size_t said = 0;
		for (const std::string &line : split_lines(r.err))
			said += contains(line, "Python frames not shown") ? 1 : 0;
		CHECK(said == 1);
	}
}

TEST_CASE("python: a whole-machine run names three interpreters' functions, one of them exited mid-run")
{
	require_root();
	const auto found = interpreters();
	if (found.size() < 3) {
		skip_test("fewer than three CPython versions here (pyenv's 3.8 to 3.13 and Debian's python3.11)");
		return;
	}
	// The first, the last and one between: Debian's 3.11 and two pyenv versions when present.
	const std::vector<Interpreter> three = {found.front(), found[found.size() / 2], found.back()};
	TempDir dir;
	const std::string split = read_file(kWorkloads + "split.py");
	std::vector<std::unique_ptr<Background>> programs;
	for (size_t i = 0; i < three.size(); i++) {
		const std::string script = dir / ("machine" + std::to_string(i) + ".py");
		write_file(script, split);
		// The first exits after 3 seconds, within the run (whose start takes a second or two
		// on a busy machine).
		programs.push_back(std::make_unique<Background>(std::vector<std::string>{
			three[i].path, script, i == 0 ? "3" : "30", dir / ("truth" + std::to_string(i))}));
		REQUIRE(programs.back()->read_line() == "ready");
	}
	auto r = profile({"-f", "99", "-U", "--folded", "5"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	const auto lines = parse_folded(r.out);
	INFO("stderr:\n" << r.err);
	for (size_t i = 0; i < three.size(); i++) {
		CAPTURE(three[i].label);
		const std::string file = "machine" + std::to_string(i) + ".py:";
		CHECK(with_prefix(lines, "busy (" + file) > 0);
		CHECK(with_prefix(lines, "compressing (" + file) > 0);
	}
	CHECK(read_file(dir / "truth0") != "");
}

} // TEST_SUITE("integration")
