// tests/test_report_output_file.cpp: -o writes whole files by rename and never through a symlink.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <thread>

#include "report/output_file.h"
#include "report/report.h"
#include "base/fd.h"
#include "tests/support.h"

namespace {

std::vector<std::string> names_in(const std::string &dir)
{
	std::vector<std::string> names;
	for (const auto &entry : std::filesystem::directory_iterator(dir))
		names.push_back(entry.path().filename());
	std::sort(names.begin(), names.end());
	return names;
}

Status write_text(const std::string &path, const std::string &text)
{
	return write_output_file(path, [&](std::ostream &out) { out << text; });
}

struct Umask {
	mode_t old;
	explicit Umask(mode_t mask) : old(umask(mask)) {}
	~Umask() { umask(old); }
};

} // namespace

TEST_SUITE("unit") {

TEST_CASE("output file: the report appears whole under its name, mode 0644, nothing else left")
{
	Umask mask(022);
	TempDir dir;
	const std::string big(3 << 20, 'x'); // larger than any buffer on the way
	CHECK(write_text(dir / "out.svg", big).ok());
	CHECK(read_file(dir / "out.svg") == big);
	struct stat st;
	REQUIRE(stat((dir / "out.svg").c_str(), &st) == 0);
	CHECK((st.st_mode & 07777) == 0644);
	CHECK(names_in(dir.path()) == std::vector<std::string>{"out.svg"});
}

TEST_CASE("output file: an existing file is replaced by rename, never rewritten in place")
{
	TempDir dir;
	write_file(dir / "out.folded", "old report\n");
	// A reader that opened the old file keeps reading the old file, whole.
	const int reader = open((dir / "out.folded").c_str(), O_RDONLY | O_CLOEXEC);
	REQUIRE(reader >= 0);
	CHECK(write_text(dir / "out.folded", "new report\n").ok());
	char buffer[64] = {};
	CHECK(pread(reader, buffer, sizeof(buffer) - 1, 0) == 11);
	CHECK(std::string(buffer) == "old report\n");
	close(reader);
	CHECK(read_file(dir / "out.folded") == "new report\n");
	CHECK(names_in(dir.path()) == std::vector<std::string>{"out.folded"});
}

TEST_CASE("output file: a symlink planted at the target is replaced, its target untouched")
{
	TempDir dir;
	write_file(dir / "precious", "do not touch\n");
	REQUIRE(symlink((dir / "precious").c_str(), (dir / "out.svg").c_str()) == 0);
	CHECK(write_text(dir / "out.svg", "<svg/>\n").ok());
	CHECK(read_file(dir / "precious") == "do not touch\n");
	struct stat st;
	REQUIRE(lstat((dir / "out.svg").c_str(), &st) == 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK(read_file(dir / "out.svg") == "<svg/>\n");

	// A dangling link must not create the file it points to either.
	REQUIRE(symlink((dir / "created-by-link").c_str(), (dir / "dangling.svg").c_str()) == 0);
	CHECK(write_text(dir / "dangling.svg", "<svg/>\n").ok());
	CHECK(access((dir / "created-by-link").c_str(), F_OK) != 0);
	REQUIRE(lstat((dir / "dangling.svg").c_str(), &st) == 0);
	CHECK(S_ISREG(st.st_mode));
}

TEST_CASE("output file: a failed write leaves the old file and no temporary file")
{
	TempDir dir;
	write_file(dir / "out.txt", "old\n");

	SUBCASE("the writer throws")
	{
		CHECK_THROWS_AS(write_output_file(dir / "out.txt",
						  [](std::ostream &out) {
							  out << "half a rep";
							  throw std::runtime_error("symbolizer died");
						  }),
				std::runtime_error);
	}
	SUBCASE("the disk refuses the data")
	{
		// The file size limit stands in for a full disk: write(2) fails with EFBIG.
		struct rlimit old_limit;
		REQUIRE(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
		auto old_handler = signal(SIGXFSZ, SIG_IGN);
		struct rlimit small = {4096, old_limit.rlim_max};
		REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
		const Status written = write_text(dir / "out.txt", std::string(1 << 20, 'y'));
		setrlimit(RLIMIT_FSIZE, &old_limit);
		signal(SIGXFSZ, old_handler);
		CHECK(written.error() == "cannot write " + (dir / "out.txt") + ": File too large");
	}
	CHECK(read_file(dir / "out.txt") == "old\n");
	CHECK(names_in(dir.path()) == std::vector<std::string>{"out.txt"});
}

TEST_CASE("output file: a directory that cannot be used, or a name that is not a file, is refused")
{
	TempDir dir;
	CHECK(write_text(dir / "missing/out.svg", "x").error() ==
	      "cannot write " + (dir / "missing/out.svg") + ": directory " + (dir / "missing") +
		      ": No such file or directory");
	write_file(dir / "plain", "");
	CHECK(write_text(dir / "plain/out.svg", "x").error() ==
	      "cannot write " + (dir / "plain/out.svg") + ": directory " + (dir / "plain") +
		      ": Not a directory");
	std::filesystem::create_directory(dir / "sub.svg");
	CHECK(write_text(dir / "sub.svg", "x").error() == "cannot write " + (dir / "sub.svg") + ": it is a directory");
	CHECK(write_text(dir / "sub.svg/", "x").error() ==
	      "cannot write " + (dir / "sub.svg/") + ": it names a directory, not a file");
	CHECK(write_text("", "x").error() == "no output file name given");
	CHECK(names_in(dir.path()) == std::vector<std::string>{"plain", "sub.svg"});
	CHECK(names_in(dir / "sub.svg").empty());
}

TEST_CASE("output file: checked before sampling, with the same words, and nothing left behind")
{
	TempDir dir;
	std::filesystem::create_directory(dir / "sub.svg");
	write_file(dir / "plain", "");
	for (const std::string &path : {dir / "missing/out.svg", dir / "plain/out.svg", dir / "sub.svg",
				       dir / "sub.svg/", std::string()})
		CHECK(check_output_file(path).error() == write_text(path, "x").error());
	CHECK(check_output_file(dir / "out.svg").ok());
	CHECK(check_output_file("/dev/null").ok());
	CHECK(names_in(dir.path()) == std::vector<std::string>{"plain", "sub.svg"});
	// A directory the run cannot create files in is refused before it starts.
	if (geteuid() != 0) {
		std::filesystem::create_directory(dir / "locked");
		chmod((dir / "locked").c_str(), 0555);
		CHECK(check_output_file(dir / "locked/out.svg").error() ==
		      "cannot create a file in " + (dir / "locked") + ": Permission denied");
	}
	CHECK(check_output_file("/proc/out.svg").error() == "cannot create a file in /proc: No such file or directory");
}

TEST_CASE("output file: write_to_fd says which error a write met")
{
	UniqueFd full(open("/dev/full", O_WRONLY | O_CLOEXEC));
	REQUIRE(full);
	CHECK(write_to_fd(full.get(), [](std::ostream &out) { out << "x"; }) == ENOSPC);
	UniqueFd null(open("/dev/null", O_WRONLY | O_CLOEXEC));
	REQUIRE(null);
	CHECK(write_to_fd(null.get(), [](std::ostream &out) { out << std::string(1 << 20, 'x'); }) == 0);
}

TEST_CASE("output file: a bare name goes in the current directory")
{
	TempDir dir;
	const auto old = std::filesystem::current_path();
	std::filesystem::current_path(dir.path());
	const Status written = write_text("report.txt", "here\n");
	std::filesystem::current_path(old);
	CHECK(written.ok());
	CHECK(read_file(dir / "report.txt") == "here\n");
}

TEST_CASE("output file: devices, pipes and /dev/stdout are written in place, never replaced")
{
	SUBCASE("/dev/null stays the device")
	{
		CHECK(write_text("/dev/null", "into nothing\n").ok());
		struct stat st;
		REQUIRE(lstat("/dev/null", &st) == 0);
		CHECK(S_ISCHR(st.st_mode));
	}
	SUBCASE("/dev/fd/N writes to the open file, as /dev/stdout does")
	{
		int ends[2];
		REQUIRE(pipe2(ends, O_CLOEXEC) == 0);
		CHECK(write_text("/dev/fd/" + std::to_string(ends[1]), "through the pipe\n").ok());
		close(ends[1]);
		char buffer[64] = {};
		CHECK(read(ends[0], buffer, sizeof(buffer) - 1) == 17);
		CHECK(std::string(buffer) == "through the pipe\n");
		close(ends[0]);
	}
	SUBCASE("a named pipe is fed, and stays a pipe")
	{
		TempDir dir;
		REQUIRE(mkfifo((dir / "pipe").c_str(), 0600) == 0);
		std::string received;
		std::thread reader([&] { received = read_file(dir / "pipe"); });
		CHECK(write_text(dir / "pipe", "to the reader\n").ok());
		reader.join();
		CHECK(received == "to the reader\n");
		struct stat st;
		REQUIRE(lstat((dir / "pipe").c_str(), &st) == 0);
		CHECK(S_ISFIFO(st.st_mode));
	}
	SUBCASE("a block device is refused, and nothing is made in /dev")
	{
		// A node of our own, never a real disk: if the check failed, nothing is lost.
		TempDir dir;
		REQUIRE_MESSAGE(mknod((dir / "disk").c_str(), S_IFBLK | 0600, makedev(7, 250)) == 0,
				"mknod needs root; `make test` runs the tests as root");
		CHECK(write_text(dir / "disk", "x").error() == "cannot write " + (dir / "disk") + ": it is a block device");
		CHECK(write_text("/dev/profile-test-no-such-device", "x").error() ==
		      "cannot write /dev/profile-test-no-such-device: No such file or directory");
		CHECK(access("/dev/profile-test-no-such-device", F_OK) != 0);
	}
}

TEST_CASE("output file: the format follows the extension, --format names it")
{
	CHECK(format_from_path("out.svg") == ReportFormat::Svg);
	CHECK(format_from_path("/tmp/x/cpu.pb.gz") == ReportFormat::Pprof);
	CHECK(format_from_path("cpu.folded") == ReportFormat::Folded);
	CHECK(format_from_path("cpu.txt") == ReportFormat::Stacks);
	CHECK(format_from_path("cpu.svg.txt") == ReportFormat::Stacks);
	CHECK(!format_from_path("cpu.gz"));
	CHECK(!format_from_path("cpu.png"));
	CHECK(!format_from_path("cpu"));
	CHECK(!format_from_path("dir.svg/cpu"));
	CHECK(format_from_name("pprof") == ReportFormat::Pprof);
	CHECK(format_from_name("svg") == ReportFormat::Svg);
	CHECK(!format_from_name("flamegraph"));
}

} // TEST_SUITE
