// tests/test_debuginfod.cpp: the real ./profile, as root, naming a stripped program, its
// stripped library and libc from debug files it fetches from Debian's debuginfod, run on
// loopback over what the test build made (workloads/debuginfod/) and libc6-dbg's file; and
// from servers gone wrong (tests/debuginfod_faults.py), which cost one line each.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "elf/elf.h"
#include "base/fd.h"
#include "tests/support.h"
#include "tests/test_report_data.h"

namespace fs = std::filesystem;

namespace {

std::string build_id_of(const std::string &path)
{
	UniqueFd fd = open_read_only(path.c_str());
	REQUIRE_MESSAGE(fd, "cannot open " << path);
	std::unique_ptr<ElfFile> elf = ElfFile::open(fd.get());
	REQUIRE(elf);
	return elf->build_id();
}

// A port nothing listens on now (the kernel's pick for a socket bound to port 0).
int free_port()
{
	UniqueFd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in address{};
	address.sin_family = AF_INET;
	address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t size = sizeof(address);
	REQUIRE(bind(s.get(), reinterpret_cast<sockaddr *>(&address), size) == 0);
	REQUIRE(getsockname(s.get(), reinterpret_cast<sockaddr *>(&address), &size) == 0);
	return ntohs(address.sin_port);
}

// The libc workloads/fetched runs with: the path its loader would pick.
std::string libc_path()
{
	for (const char *path : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", "/lib64/libc.so.6"})
		if (access(path, R_OK) == 0)
			return path;
	return "";
}

// Debian's debuginfod on 127.0.0.1, serving a directory of its own: the debug files of
// workloads/fetched and libfetched.so, and libc's. Ready once all three are served.
class DebuginfodServer {
public:
	// False (after skip_test) when this machine lacks what it takes.
	bool start()
	{
		const std::string server = find_tool("debuginfod"), find = find_tool("debuginfod-find");
		if (server.empty() || find.empty()) {
			skip_test("debuginfod is missing (apt-get install debuginfod)");
			return false;
		}
		const std::string libc = libc_path();
		REQUIRE_MESSAGE(!libc.empty(), "no libc.so.6 found");
		const std::string libc_id = build_id_of(libc);
		const std::string libc_debug = "/usr/lib/debug/.build-id/" + libc_id.substr(0, 2) + "/" + libc_id.substr(2) + ".debug";
		if (access(libc_debug.c_str(), R_OK) != 0) {
			skip_test("libc's debug file " + libc_debug + " is missing (apt-get install libc6-dbg)");
			return false;
		}
		fs::create_directories(dir_.path() / "files");
		for (const auto &entry : fs::directory_iterator(output_dir() + "/workloads/debuginfod"))
			fs::copy_file(entry.path(), dir_.path() / "files" / entry.path().filename());
		fs::copy_file(libc_debug, dir_.path() / "files" / "libc.so.6.debug");

		port_ = free_port();
		// -t 0 -g 0: one scan, no grooming; its log to a file, not to the test's output.
		process_.emplace(std::vector<std::string>{
			"/bin/sh", "-c",
			"exec \"$0\" -F -t 0 -g 0 -p \"$1\" -d \"$2/db.sqlite\" \"$2/files\" >\"$2/log\" 2>&1", server,
			std::to_string(port_), dir_.path().string()});
		const std::vector<std::string> ids = {build_id_of(workload("fetched")), build_id_of(workload("libfetched.so")),
						      libc_id};
		ScopedEnv urls("DEBUGINFOD_URLS", url().c_str());
		ScopedEnv cache("DEBUGINFOD_CACHE_PATH", (dir_ / "probe-cache").c_str());
		for (const std::string &id : ids) {
			bool served = false;
			for (const double end = now() + 30; !served && now() < end; usleep(200000)) {
				// A miss is cached: each try starts from an empty cache.
				fs::remove_all(dir_ / "probe-cache");
				served = run_command({find, "debuginfo", id}, 10).status == 0;
			}
			REQUIRE_MESSAGE(served, "debuginfod did not serve " << id << "; its log: " << read_file(dir_ / "log"));
		}
		return true;
	}
	void stop() { process_.reset(); }
	std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

private:
	TempDir dir_;
	std::optional<Background> process_;
	int port_ = 0;
};

// tests/debuginfod_faults.py answering every request with `answer`.
class FaultyServer {
public:
	explicit FaultyServer(const std::string &answer)
	{
		const std::string python = find_tool("python3");
		REQUIRE_MESSAGE(!python.empty(), "python3 is not installed (scripts/install-deps.sh --test installs it)");
		process_.emplace(std::vector<std::string>{python, output_dir() + "/../tests/debuginfod_faults.py", answer});
		const std::string line = process_->read_line();
		REQUIRE_MESSAGE(line.starts_with("port "), "debuginfod_faults.py said '" << line << "'");
		port_ = std::stoi(line.substr(5));
	}
	std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

private:
	std::optional<Background> process_;
	int port_ = 0;
};

// A frame of a user stack that only a debug file names, left unnamed: [fetched+0x...],
// [libfetched.so+0x...] or [libc.so.6+0x...].
bool unnamed_fetched_frame(const std::string &frame)
{
	return frame.starts_with("[fetched+0x") || frame.starts_with("[libfetched.so+0x") ||
	       frame.starts_with("[libc.so.6+0x");
}

uint64_t samples_with_unnamed(const std::vector<FoldedLine> &lines)
{
	uint64_t n = 0;
	for (const FoldedLine &line : lines)
		if (std::any_of(line.frames.begin(), line.frames.end(), unnamed_fetched_frame))
			n += line.count;
	return n;
}

uint64_t samples_with_prefix(const std::vector<FoldedLine> &lines, const std::string &prefix)
{
	uint64_t n = 0;
	for (const FoldedLine &line : lines)
		if (std::any_of(line.frames.begin(), line.frames.end(),
				[&](const std::string &frame) { return frame.starts_with(prefix); }))
			n += line.count;
	return n;
}

// stderr's lines about debuginfod.
std::vector<std::string> debuginfod_lines(const std::string &err)
{
	std::vector<std::string> found;
	for (const std::string &line : split_lines(err))
		if (line.starts_with("profile: debuginfod:"))
			found.push_back(line);
	return found;
}

} // namespace

TEST_SUITE("integration") {

TEST_CASE("debuginfod: a stripped program, its library and libc named from debug files a local server serves, then from the cache")
{
	require_root();
	DebuginfodServer server;
	if (!server.start())
		return;
	TempDir dir;
	Background fetched({workload("fetched"), "30"});
	REQUIRE(fetched.pid() > 0);
	// No debug file of this machine's: every name comes from the server.
	ScopedEnv no_local("PROFILE_DEBUG_ROOT", (dir / "no-debug-files").c_str());
	ScopedEnv urls("DEBUGINFOD_URLS", server.url().c_str());
	ScopedEnv cache("DEBUGINFOD_CACHE_PATH", (dir / "cache").c_str());
	ScopedEnv debug("PROFILE_DEBUG", "1");
	// A second at 199 Hz: each of the three hot functions takes a third of some 200 samples.
	const std::vector<std::string> args = {"-p", std::to_string(fetched.pid()), "-f", "199", "--folded", "1"};

	CommandResult r = profile(args);
	REQUIRE_MESSAGE(r.status == 0, r.err);
	std::vector<FoldedLine> lines = parse_folded(r.out);
	INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
	CHECK(samples_with(lines, "fetched_hot") > 0);
	CHECK(samples_with(lines, "fetched_lib_hot") > 0);
	CHECK(samples_with_prefix(lines, "msort_with_tmp") > 0); // static in libc
	CHECK(samples_with_unnamed(lines) == 0);
	CHECK(contains(r.err, "profile: debuginfod: 3 debug files asked for, 3 used"));
	CHECK(!contains(r.err, "not used"));

	// -v: file:line from the DWARF of the same files.
	std::vector<std::string> verbose = {"-v"};
	verbose.insert(verbose.end(), args.begin(), args.end() - 2);
	verbose.push_back("1");
	r = profile(verbose);
	REQUIRE_MESSAGE(r.status == 0, r.err);
	CHECK(contains(r.out, "/tests/workloads/fetched.c:"));
	CHECK(contains(r.out, "/tests/workloads/lib/fetched_lib.c:"));

	// With the server gone, the cache has them.
	server.stop();
	r = profile(args);
	REQUIRE_MESSAGE(r.status == 0, r.err);
	lines = parse_folded(r.out);
	CHECK(samples_with(lines, "fetched_lib_hot") > 0);
	CHECK(samples_with_unnamed(lines) == 0);
	CHECK(!contains(r.err, "not used"));

	// --no-debuginfod: not even the cache.
	std::vector<std::string> without = args;
	without.insert(without.begin(), "--no-debuginfod");
	r = profile(without);
	REQUIRE_MESSAGE(r.status == 0, r.err);
	CHECK(samples_with_unnamed(parse_folded(r.out)) > 0);
	CHECK(debuginfod_lines(r.err).empty());
}

TEST_CASE("debuginfod: a server gone wrong costs one line and at most --debuginfod-timeout; the frames stay [file+0x...]" *
	  doctest::test_suite(ASAN_TOO))
{
	require_root();
	TempDir dir;
	Background fetched({workload("fetched"), "120"});
	REQUIRE(fetched.pid() > 0);
	ScopedEnv no_local("PROFILE_DEBUG_ROOT", (dir / "no-debug-files").c_str());
	write_file(dir / "a-file", "a file where the cache's folder would be\n");
	write_file(dir / "junk", std::string(5000, '\x7f'));

	struct Fault {
		const char *what;
		std::string answer;         // debuginfod_faults.py's, or "" for a port nothing listens on
		std::string cache;          // DEBUGINFOD_CACHE_PATH, when not a fresh one
		const char *says;           // in the one line
	};
	const std::vector<Fault> faults = {
		{"404 for everything", "404", "", "not on the servers"},
		{"another build's debug file", "file:" + output_dir() + "/workloads/debuginfod/libfetched.so.debug", "",
		 "its build id is"},
		{"bytes that are no ELF file", "file:" + (dir / "junk"), "", "not an ELF file"},
		{"a stall past the timeout", "stall", "", "within --debuginfod-timeout 2 s"},
		{"a redirect loop", "redirect", "", "debug files not used"},
		{"no server listening", "", "", "debug files not used"},
		{"a cache that cannot be written", "404", dir / "a-file/cache", "debug files not used"},
	};
	// Four runs at a time, each with its own server and cache (their servers' answers and the
	// bound are what each run waits for, not the CPU).
	constexpr size_t at_once = 4;
	for (size_t first = 0; first < faults.size(); first += at_once) {
		struct Run {
			const Fault *fault;
			std::unique_ptr<FaultyServer> server;
			std::unique_ptr<PipedProcess> process;
			double start = 0, seconds = 0;
			std::string out, err;
		};
		std::vector<Run> runs;
		for (size_t i = first; i < std::min(faults.size(), first + at_once); i++) {
			Run run;
			run.fault = &faults[i];
			std::string url = "http://127.0.0.1:" + std::to_string(free_port());
			if (!faults[i].answer.empty()) {
				run.server = std::make_unique<FaultyServer>(faults[i].answer);
				url = run.server->url();
			}
			const std::string cache = !faults[i].cache.empty() ? faults[i].cache : dir / ("cache-" + std::to_string(i));
			ScopedEnv urls("DEBUGINFOD_URLS", url.c_str());
			ScopedEnv cache_path("DEBUGINFOD_CACHE_PATH", cache.c_str());
			run.start = now();
			run.process = std::make_unique<PipedProcess>(profile_command(
				{"-p", std::to_string(fetched.pid()), "--folded", "--debuginfod-timeout", "2", "1"}));
			runs.push_back(std::move(run));
		}
		for (bool running = true; running;) {
			running = false;
			for (Run &run : runs)
				if (run.process->open()) {
					run.process->pump(20, &run.out, &run.err);
					if (!run.process->open())
						run.seconds = now() - run.start;
					running = true;
				}
		}
		for (Run &run : runs) {
			CAPTURE(run.fault->what);
			INFO("stderr:\n" << run.err);
			REQUIRE(run.process->wait() == 0);
			const std::vector<FoldedLine> lines = parse_folded(run.out);
			CHECK(total(lines) > 0);
			CHECK(samples_with_unnamed(lines) > 0);
			CHECK(samples_with(lines, "fetched_hot") == 0);
			const std::vector<std::string> said = debuginfod_lines(run.err);
			REQUIRE(said.size() == 1);
			CHECK(contains(said[0], run.fault->says));
			// A second of sampling, the loading around it (well under 3 s here, four at a
			// time), and the bound.
			CHECK(run.seconds < 1 + 3 + 2);
		}
	}
}

} // TEST_SUITE
