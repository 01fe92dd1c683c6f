// tests/test_hardening.cpp: the profiler against what others control: poisoned ELF files in
// profiled processes, planted symlinks, signals, closed pipes, full maps, a second run.
#include <doctest/doctest.h>

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "elf/elf.h"
#include "syms/symbolizer.h"
#include "tests/fixtures/fixture_files.h"
#include "tests/support.h"

namespace {

// n processes of build/workloads/stacks, each its own stack, busy 5 % of the time for
// `seconds`:
// n keys of the counts map, however quiet the rest of the machine is. At nice 19: 48 of
// them want more than 2 CPUs, and at equal priority the profiler's own start and end
// (loading, naming) took seconds longer than its sampling.
std::vector<std::unique_ptr<Background>> one_stack_processes(int n, const std::string &seconds = "30")
{
	std::vector<std::unique_ptr<Background>> programs;
	for (int i = 0; i < n; i++)
		programs.push_back(std::make_unique<Background>(std::vector<std::string>{
			"/usr/bin/nice", "-n", "19", workload("stacks"), std::to_string(i * 4), seconds, "50"}));
	return programs;
}

// A fresh directory for one test, under the test output folder (not /tmp, which may be
// noexec), removed with everything in it when the test ends: these tests run as root, and
// whatever root left in a user's tree, `make clean` could not remove.
TempDir scratch_dir()
{
	return TempDir(output_dir());
}

std::vector<uint8_t> file_bytes(const std::string &path)
{
	std::string text = read_text(path);
	REQUIRE_MESSAGE(!text.empty(), "missing " << path << " (run: make workloads fixtures)");
	return std::vector<uint8_t>(text.begin(), text.end());
}

void write_file(const std::string &path, const std::vector<uint8_t> &bytes, mode_t mode)
{
	unlink(path.c_str());
	int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	REQUIRE_MESSAGE(fd >= 0, "cannot create " << path << ": " << strerror(errno));
	REQUIRE(write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size()));
	close(fd);
}

// --- ELF files whose program headers still run but whose section headers lie -------------

// A copy of an ELF64 file to damage; accessors read and write the headers in place.
struct ElfImage {
	std::vector<uint8_t> bytes;

	template <typename T>
	T get(uint64_t offset) const
	{
		T value;
		REQUIRE(offset + sizeof(T) <= bytes.size());
		std::memcpy(&value, bytes.data() + offset, sizeof(T));
		return value;
	}
	template <typename T>
	void set(uint64_t offset, const T &value)
	{
		REQUIRE(offset + sizeof(T) <= bytes.size());
		std::memcpy(bytes.data() + offset, &value, sizeof(T));
	}

	Elf64_Ehdr header() const { return get<Elf64_Ehdr>(0); }
	void set_header(const Elf64_Ehdr &h) { set(0, h); }
	size_t section_count() const { return header().e_shnum; }
	uint64_t section_offset(size_t i) const { return header().e_shoff + i * sizeof(Elf64_Shdr); }
	Elf64_Shdr section(size_t i) const { return get<Elf64_Shdr>(section_offset(i)); }
	void set_section(size_t i, const Elf64_Shdr &sh) { set(section_offset(i), sh); }
	// Every section header, passed by reference to edit, with its index.
	void edit_sections(const std::function<void(size_t, Elf64_Shdr &)> &edit)
	{
		for (size_t i = 0; i < section_count(); i++) {
			Elf64_Shdr sh = section(i);
			edit(i, sh);
			set_section(i, sh);
		}
	}
	size_t find_section(uint32_t type) const
	{
		for (size_t i = 0; i < section_count(); i++)
			if (section(i).sh_type == type)
				return i;
		FAIL("no section of type " << type);
		return 0;
	}
};

struct Poison {
	const char *name; // also the program's comm: at most 15 characters
	const char *what;
	std::function<void(ElfImage &)> apply;
};

// Each leaves the program headers alone (the program must still run) and breaks what a
// symbolizer reads: section headers, symbol and string tables, notes.
std::vector<Poison> poisons()
{
	return {
		{"psn-shoff-eof", "section headers past the end of the file",
		 [](ElfImage &elf) {
			 Elf64_Ehdr h = elf.header();
			 h.e_shoff = elf.bytes.size() + 4096;
			 elf.set_header(h);
		 }},
		{"psn-shoff-max", "section header offset near 2^64, 65535 of them",
		 [](ElfImage &elf) {
			 Elf64_Ehdr h = elf.header();
			 h.e_shoff = UINT64_MAX - 63;
			 h.e_shnum = 0xffff;
			 elf.set_header(h);
		 }},
		{"psn-sizes", "every section's size near 2^64",
		 [](ElfImage &elf) {
			 uint64_t end = elf.bytes.size();
			 elf.edit_sections([&](size_t i, Elf64_Shdr &sh) {
				 sh.sh_size = UINT64_MAX - i;
				 if (i % 2)
					 sh.sh_offset = end - 1;
			 });
		 }},
		{"psn-names", "symbol and section names off the end of their string tables",
		 [](ElfImage &elf) {
			 size_t symtab = elf.find_section(SHT_SYMTAB);
			 Elf64_Shdr table = elf.section(symtab);
			 for (uint64_t at = table.sh_offset; at + sizeof(Elf64_Sym) <= table.sh_offset + table.sh_size;
			      at += sizeof(Elf64_Sym)) {
				 Elf64_Sym sym = elf.get<Elf64_Sym>(at);
				 sym.st_name = 0xfffffff0u - uint32_t(at % 16);
				 elf.set(at, sym);
			 }
			 // The table's strings shrink to one byte: even a name of 1 runs off the end.
			 Elf64_Shdr strings = elf.section(table.sh_link);
			 strings.sh_size = 1;
			 elf.set_section(table.sh_link, strings);
			 elf.edit_sections([](size_t, Elf64_Shdr &sh) { sh.sh_name = 0xffffffffu; });
			 Elf64_Ehdr h = elf.header();
			 h.e_shstrndx = uint16_t(symtab); // the section names "live" in a symbol table
			 elf.set_header(h);
		 }},
		{"psn-links", "sh_link pointing anywhere: past the table, at itself, at .bss",
		 [](ElfImage &elf) {
			 size_t count = elf.section_count(), bss = elf.find_section(SHT_NOBITS);
			 elf.edit_sections([&](size_t i, Elf64_Shdr &sh) {
				 const uint32_t targets[] = {0xffffffffu, uint32_t(i), uint32_t(count), uint32_t(bss), 0};
				 sh.sh_link = targets[i % 5];
			 });
		 }},
		{"psn-overlap", "every section over the whole file, headers included",
		 [](ElfImage &elf) {
			 uint64_t size = elf.bytes.size();
			 elf.edit_sections([&](size_t, Elf64_Shdr &sh) {
				 sh.sh_offset = 0;
				 sh.sh_size = size;
				 sh.sh_entsize = 0;
			 });
		 }},
		{"psn-empty", "every section of size zero",
		 [](ElfImage &elf) { elf.edit_sections([](size_t, Elf64_Shdr &sh) { sh.sh_size = 0; }); }},
		{"psn-xnum", "extended numbering: 2^32-1 sections claimed in section 0",
		 [](ElfImage &elf) {
			 Elf64_Shdr first = elf.section(0);
			 first.sh_size = 0xffffffffu;
			 first.sh_link = 0xfffffff0u;
			 elf.set_section(0, first);
			 Elf64_Ehdr h = elf.header();
			 h.e_shnum = 0;
			 h.e_shstrndx = SHN_XINDEX;
			 elf.set_header(h);
		 }},
		{"psn-symbols", "symbols at the top of the address space, sizes of 2^64-1, all at once",
		 [](ElfImage &elf) {
			 Elf64_Shdr table = elf.section(elf.find_section(SHT_SYMTAB));
			 int k = 0;
			 for (uint64_t at = table.sh_offset + sizeof(Elf64_Sym);
			      at + sizeof(Elf64_Sym) <= table.sh_offset + table.sh_size; at += sizeof(Elf64_Sym), k++) {
				 Elf64_Sym sym = elf.get<Elf64_Sym>(at);
				 sym.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
				 sym.st_shndx = 1;
				 sym.st_value = k % 3 == 0 ? UINT64_MAX - uint64_t(k) : k % 3 == 1 ? 0x1000 : sym.st_value;
				 sym.st_size = k % 2 ? UINT64_MAX : 0;
				 elf.set(at, sym);
			 }
		 }},
		{"psn-notes", "notes (program headers too) with offsets and sizes past the end",
		 [](ElfImage &elf) {
			 Elf64_Ehdr h = elf.header();
			 for (size_t i = 0; i < h.e_phnum; i++) {
				 uint64_t at = h.e_phoff + i * sizeof(Elf64_Phdr);
				 Elf64_Phdr ph = elf.get<Elf64_Phdr>(at);
				 if (ph.p_type != PT_NOTE)
					 continue;
				 ph.p_offset = UINT64_MAX - 16;
				 ph.p_filesz = UINT64_MAX;
				 elf.set(at, ph);
			 }
			 elf.edit_sections([&](size_t, Elf64_Shdr &sh) {
				 if (sh.sh_type == SHT_NOTE)
					 sh.sh_offset = elf.bytes.size() - 2;
			 });
		 }},
	};
}

// The split workload with one poison applied, written as an executable named after it.
std::string poisoned_program(const std::string &dir, const Poison &poison)
{
	ElfImage elf{file_bytes(workload("split"))};
	poison.apply(elf);
	std::string path = dir + "/" + poison.name;
	write_file(path, elf.bytes, 0755);
	return path;
}

// --- running the profiler ------------------------------------------------------------------

// Nothing a sanitizer or the C++ runtime says belongs on the profiler's stderr.
void check_clean_stderr(const std::string &err)
{
	for (const char *bad : {"AddressSanitizer", "LeakSanitizer", "runtime error", "terminate called",
				"Broken pipe", "Segmentation", "Aborted"})
		CHECK_MESSAGE(!contains(err, bad), "stderr says " << bad << ":\n" << err);
}

// User + system CPU time a process has used, from /proc/PID/stat.
double cpu_seconds(pid_t pid)
{
	std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
	std::stringstream fields(stat.substr(stat.rfind(')') + 2));
	std::string field;
	uint64_t utime = 0, stime = 0;
	for (int i = 3; fields >> field; i++) {
		if (i == 14)
			utime = std::stoull(field);
		if (i == 15) {
			stime = std::stoull(field);
			break;
		}
	}
	return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

// The profiler with its stdout on a pipe the test controls: `profile ... | head -1`.
struct PipedRun : PipedProcess {
	explicit PipedRun(const std::vector<std::string> &args) : PipedProcess(profile_command(args))
	{
		REQUIRE(pid() > 0);
	}
	// Reads stderr (and stdout, while the test has not closed it) to the end, then waits:
	// exit status (128+signal), or -1 after the timeout.
	int finish(std::string &stderr_text, double timeout_s, std::string *stdout_text = nullptr)
	{
		const double deadline = now() + timeout_s;
		while (now() < deadline && open())
			pump(100, stdout_text, &stderr_text);
		if (open())
			return -1;
		return wait();
	}
};

// Closes the reader's end of the run's stdout and waits: the run ends with status 0, and
// every stderr line is one a quiet run may print: the header (where it goes to stderr),
// the account of losses, the note on stacks cut short, how user stacks were walked.
void check_quiet_end(PipedRun &run, bool header_on_stderr)
{
	run.close_out();
	std::string err;
	int status = run.finish(err, 20);
	INFO("stderr: " << err);
	CHECK(status == 0);
	check_clean_stderr(err);
	for (const std::string &line : split_lines(err))
		CHECK_MESSAGE(((header_on_stderr && line.starts_with("Sampling at")) || contains(line, " lost: ") ||
			       contains(line, "stacks cut at") || line.starts_with("profile: user stacks: ")),
			      "unexpected stderr line: " << line);
}

std::string bpftool()
{
	for (const char *path : {"/usr/sbin/bpftool", "/usr/bin/bpftool", "/usr/local/sbin/bpftool"})
		if (access(path, X_OK) == 0)
			return path;
	FAIL("bpftool not found (scripts/install-deps.sh installs it)");
	return "";
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("hostile ELF: every poison parses to something safe, and the program headers still count")
{
	std::vector<uint8_t> original = file_bytes(fixture_path("hello-pie"));
	std::unique_ptr<ElfFile> clean = ElfFile::from_bytes(original);
	REQUIRE(clean);
	REQUIRE(!clean->build_id().empty());
	for (const Poison &poison : poisons()) {
		CAPTURE(poison.name);
		ElfImage elf{original};
		poison.apply(elf);
		std::unique_ptr<ElfFile> parsed = ElfFile::from_bytes(elf.bytes);
		REQUIRE(parsed); // the ELF header itself is intact
		// The loaded segments come from the program headers, which no poison touches.
		CHECK(parsed->address_of_file_offset(0x1000) == clean->address_of_file_offset(0x1000));
		for (uint64_t address : {uint64_t(0), uint64_t(0x1000), uint64_t(0x1139), UINT64_MAX})
			if (const ElfFile::Symbol *symbol = parsed->find_symbol(address)) {
				CHECK(symbol->start <= address);
				CHECK(address < symbol->end);
			}
		(void)parsed->section_data(".text");
		(void)parsed->section_data(".debug_line");
		// Only the poison aimed at the notes hides the build id.
		CHECK(parsed->build_id() == (std::string(poison.name) == "psn-notes" ? "" : clean->build_id()));
	}
}

TEST_CASE("hostile ELF: a file its owner truncates while it is read does not bring the reader down")
{
	// A mapping of it would raise SIGBUS at the first read past the new end; ElfFile
	// keeps its own copy of any file someone other than root can write.
	require_root();
	TempDir scratch = scratch_dir();
	std::string dir = scratch.path();
	std::string path = dir + "/owned-by-nobody";
	std::vector<uint8_t> bytes = file_bytes(fixture_path("hello-pie"));
	write_file(path, bytes, 0755);
	int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
	REQUIRE(fd >= 0);
	REQUIRE(fchown(fd, 65534, 65534) == 0);
	std::unique_ptr<ElfFile> elf = ElfFile::open(fd);
	REQUIRE(elf);
	REQUIRE(ftruncate(fd, 0) == 0);
	close(fd);
	CHECK(elf->symbol_count() > 0);
	uint64_t main_address = 0;
	for (const NmSymbol &s : read_nm("hello-pie.nm"))
		if (s.name == "main")
			main_address = s.address;
	const ElfFile::Symbol *found = elf->find_symbol(main_address);
	REQUIRE(found);
	CHECK(found->name == "main");
}

TEST_CASE("a mapped path's symlinks resolve inside the process's root, never out of it")
{
	// A fake /proc: PID 4242 maps /lib/outside.so and /lib/inside.so and has no map_files,
	// so the symbolizer must open the paths through /proc/4242/root, a folder here.
	TempDir scratch = scratch_dir();
	std::string dir = scratch.path();
	std::string fixture = fixture_path("hello-pie");
	std::unique_ptr<char, decltype(&free)> resolved(realpath(fixture.c_str(), nullptr), &free);
	std::string fixture_abs = resolved ? resolved.get() : "";
	REQUIRE_MESSAGE(!fixture_abs.empty(), "missing fixture " << fixture << " (run: make fixtures)");

	std::string root = dir + "/container";
	REQUIRE(mkdir(root.c_str(), 0755) == 0);
	REQUIRE(mkdir((root + "/lib").c_str(), 0755) == 0);
	REQUIRE(mkdir((root + "/inside").c_str(), 0755) == 0);
	write_file(root + "/inside/hello-pie", file_bytes(fixture), 0755);
	// Absolute and climbing links both point at the real fixture outside the root; the
	// last one stays inside and must work.
	REQUIRE(symlink(fixture_abs.c_str(), (root + "/lib/absolute.so").c_str()) == 0);
	std::string climb = "../../../../../../../../../.." + fixture_abs;
	REQUIRE(symlink(climb.c_str(), (root + "/lib/climbing.so").c_str()) == 0);
	REQUIRE(symlink(("/proc/self/root" + fixture_abs).c_str(), (root + "/lib/magic.so").c_str()) == 0);
	REQUIRE(symlink("/inside/hello-pie", (root + "/lib/inside.so").c_str()) == 0);

	std::string pid_dir = dir + "/4242";
	REQUIRE(mkdir(pid_dir.c_str(), 0755) == 0);
	std::unique_ptr<char, decltype(&free)> root_abs(realpath(root.c_str(), nullptr), &free);
	REQUIRE(root_abs);
	REQUIRE(symlink(root_abs.get(), (pid_dir + "/root").c_str()) == 0);

	// fixture_leaf's file offset, through the executable segment readelf listed.
	uint64_t leaf = 0;
	for (const NmSymbol &s : read_nm("hello-pie.nm"))
		if (s.name == "fixture_leaf")
			leaf = s.address;
	REQUIRE(leaf);
	std::unique_ptr<ElfFile> elf = ElfFile::from_bytes(file_bytes(fixture));
	REQUIRE(elf);
	uint64_t leaf_offset = 0;
	for (uint64_t offset = 0; offset < 0x100000; offset += 0x10)
		if (elf->address_of_file_offset(offset) == leaf - leaf % 0x10) {
			leaf_offset = offset + leaf % 0x10;
			break;
		}
	REQUIRE(leaf_offset);

	const char *names[] = {"absolute.so", "climbing.so", "magic.so", "inside.so"};
	std::ofstream maps(pid_dir + "/maps");
	for (int i = 0; i < 4; i++) {
		// Each line names the device and inode of the file it should lead to (the
		// symbolizer reads no other): the escapes, the real fixture outside the root.
		struct stat target;
		REQUIRE(stat(i < 3 ? fixture_abs.c_str() : (root + "/inside/hello-pie").c_str(), &target) == 0);
		char line[256];
		uint64_t start = 0x10000000ull * uint64_t(i + 1);
		std::snprintf(line, sizeof(line), "%lx-%lx r-xp %08x %02x:%02x %lu /lib/%s\n", (unsigned long)start,
			      (unsigned long)(start + 0x100000), 0, major(target.st_dev), minor(target.st_dev),
			      (unsigned long)target.st_ino, names[i]);
		maps << line;
	}
	maps.close();

	SymbolizerOptions options;
	options.proc_root = dir;
	options.kallsyms_path = "/nonexistent";
	Symbolizer symbolizer(options);
	for (int i = 0; i < 4; i++) {
		CAPTURE(names[i]);
		Frame frame = symbolizer.user_frame(4242, 0x10000000ull * uint64_t(i + 1) + leaf_offset);
		if (i < 3)
			CHECK(frame.name.empty()); // the file outside the root was not read
		else
			CHECK(frame.name == "fixture_leaf");
	}
	CHECK(symbolizer.stats().elf_files_parsed == 1);
}

} // TEST_SUITE


TEST_SUITE("integration") {

TEST_CASE("processes in another mount namespace are named from their own files, never the host's at that path")
{
	require_root();
	// On the host, DIR/app/hot and DIR/app/gone are exec_after. In each process's own mount
	// namespace a tmpfs covers DIR/app and both names are split: same paths, other files.
	TempDir dir;
	REQUIRE(mkdir((dir / "app").c_str(), 0755) == 0);
	for (const char *name : {"hot", "gone"})
		write_file(dir / ("app/" + std::string(name)), file_bytes(workload("exec_after")), 0755);
	const std::string in_namespace = "mount -t tmpfs none \"$0/app\" && cp \"$1\" \"$0/app/$2\" && "
					 "exec \"$0/app/$2\" \"$3\"";
	auto start = [&](const std::string &name, const std::string &seconds) {
		return std::make_unique<Background>(std::vector<std::string>{
			"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", in_namespace, dir.path(),
			workload("split"), name, seconds});
	};
	// The workloads start once the run samples (its start takes a while on a loaded
	// machine, and "gone" lives 1.5 s): then "gone" exits, and its namespace with it,
	// before the report.
	PipedProcess run(profile_command({"--folded", "-f", "199", "3"}));
	REQUIRE(run.pid() >= 0);
	std::string out, err;
	for (const double end = now() + 30; !contains(err, "Sampling at") && run.open() && now() < end;)
		run.pump(100, &out, &err);
	REQUIRE_MESSAGE(contains(err, "Sampling at"), err);
	auto hot = start("hot", "6");
	auto gone = start("gone", "1.5");
	while (run.open())
		run.pump(100, &out, &err);
	INFO("stderr: " << err);
	REQUIRE(run.wait() == 0);
	CHECK(gone->wait() == 0);
	auto lines = parse_folded(out);
	// The live one through /proc/PID/map_files or /proc/PID/root: named.
	CHECK(samples_of_with(lines, "hot", "split_hot_three") > 10);
	CHECK(samples_of_with(lines, "hot", "main") > 10);
	// The one that is gone cannot be read any more; the host's file at its path is another
	// file (device and inode say so) and must not lend it names.
	CHECK(samples_of(lines, "gone") > 10);
	for (const char *comm : {"hot", "gone"}) {
		CAPTURE(comm);
		CHECK(samples_of_with(lines, comm, "after_exec_hot") == 0);
	}
}

TEST_CASE("processes running poisoned ELF files: no crash, no hang, every other process named" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	TempDir scratch = scratch_dir();
	std::string dir = scratch.path();
	std::vector<std::unique_ptr<Background>> programs;
	std::vector<Poison> all = poisons();
	// 30 s, killed at the end: they must outlive the profiler's start, which under ASan on
	// a slow day took longer than the 8 s they once ran.
	for (const Poison &poison : all)
		programs.push_back(std::make_unique<Background>(std::vector<std::string>{poisoned_program(dir, poison), "30"}));
	Background split({workload("split"), "30"});
	Background syscalls({workload("syscalls"), "30"});
	usleep(200000);
	for (size_t i = 0; i < all.size(); i++) {
		INFO(all[i].name << " (" << all[i].what << ") did not start");
		REQUIRE(kill(programs[i]->pid(), 0) == 0);
		REQUIRE(waitpid(programs[i]->pid(), nullptr, WNOHANG) == 0);
	}

	auto r = profile({"--folded", "-f", "199", "3"}, 40); // every process
	INFO("stderr: " << r.err);
	REQUIRE(r.status == 0);
	// No hang: a 3 s run, then every process's files named. Not a speed check: under ASan
	// it took 11 to 13 s as root, and 22 s run by a user on a busier hour (2026-11-29).
	CHECK(r.seconds < 30);
	check_clean_stderr(r.err);
	auto lines = parse_folded(r.out);
	for (const Poison &poison : all)
		CHECK_MESSAGE(samples_of(lines, poison.name) > 0, std::string(poison.name) << " was never sampled");
	// The clean processes keep their names: user frames down to main, kernel frames too.
	CHECK(samples_of_with(lines, "split", "split_hot_three") > 0); // not only the poisoned copies' samples
	for (const auto &l : lines)
		if (l.frames[0] == "split" && l.frames.back() == "split_hot_three")
			CHECK(l.frames[l.frames.size() - 2] == "main");
	std::string syscalls_lines; // should the next checks fail
	for (const auto &l : lines)
		if (l.frames[0] == "syscalls") {
			for (const std::string &f : l.frames)
				syscalls_lines += f + ";";
			syscalls_lines += " " + std::to_string(l.count) + "\n";
		}
	CHECK_MESSAGE(samples_of_with(lines, "syscalls", "main") > 0, "syscalls' stacks:\n" << syscalls_lines);
	CHECK(samples_of_with(lines, "syscalls", "vfs_read") > 0);
}

TEST_CASE("SIGINT and SIGTERM with -o write the whole file and exit 0" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	Background split({workload("split"), "30"});
	TempDir scratch = scratch_dir();
	std::string dir = scratch.path();
	for (int sig : {SIGINT, SIGTERM}) {
		std::string path = dir + "/out-" + std::to_string(sig) + ".folded";
		PipedRun run({"-p", std::to_string(split.pid()), "-f", "99", "-o", path});
		// With -o the header goes to stderr, once sampling has started.
		std::string header = run.read_err_line();
		REQUIRE(header.starts_with("Sampling at 99 Hertz"));
		usleep(1500000);
		const double start = now();
		REQUIRE(kill(run.pid(), sig) == 0);
		std::string err;
		int status = run.finish(err, 30);
		INFO("signal " << sig << ": " << err);
		CHECK(status == 0);
		CHECK(now() - start < 10);
		CHECK(contains(err, "profile: wrote " + path));
		check_clean_stderr(err);
		auto lines = parse_folded(read_text(path));
		CHECK(samples_with(lines, "split_hot_three") > 0);
		// Only the report is left in the folder: no temporary file stayed behind.
		CHECK(run_command({"/bin/ls", "-A", dir}).out.find(".tmp") == std::string::npos);
	}
}

TEST_CASE("a closed stdout ends the run quietly, with status 0")
{
	require_root();
	Background split({workload("split"), "30"});

	SUBCASE("--folded 2 | head -1: the reader is gone before the report")
	{
		PipedRun run({"--folded", "-f", "99", "2"});
		// The header, maybe the account of losses; nothing about the pipe.
		check_quiet_end(run, true);
	}
	SUBCASE("default format | head -1: the reader takes the header and goes")
	{
		PipedRun run({"-f", "99", "2"});
		CHECK(run.read_out_line().starts_with("Sampling at 99 Hertz"));
		check_quiet_end(run, false);
	}
	SUBCASE("no duration: the run ends when the reader goes")
	{
		PipedRun run({"-p", std::to_string(split.pid()), "-f", "99"});
		CHECK(run.read_out_line().starts_with("Sampling at 99 Hertz"));
		const double start = now();
		run.close_out();
		std::string err;
		int status = run.finish(err, 10);
		INFO("stderr: " << err);
		CHECK(status == 0);
		CHECK(now() - start < 5);
		check_clean_stderr(err);
	}
}

TEST_CASE("after SIGKILL no program or perf event link stays attached")
{
	require_root();
	Background run({profile_bin(), "-f", "49"});
	// The header opens stdout once every CPU is attached.
	REQUIRE(run.read_line().starts_with("Sampling at 49 Hertz"));
	auto ids = bpf_ids_of(run.pid());
	REQUIRE(ids["prog"].size() >= 1);
	REQUIRE(ids["link"].size() >= 1); // one per CPU
	std::string tool = bpftool();
	for (uint32_t id : ids["prog"]) {
		auto shown = run_command({tool, "prog", "show", "id", std::to_string(id)});
		REQUIRE(shown.status == 0);
		// The sampler, or a hook that keeps processes' mappings for the table walk, or one
		// that follows CPython processes for the Python walk.
		REQUIRE((contains(shown.out, "do_sample") || contains(shown.out, " on_") ||
			 contains(shown.out, " python_on_")));
	}
	REQUIRE(kill(run.pid(), SIGKILL) == 0);
	CHECK(run.wait() == 128 + SIGKILL);

	// The kernel frees them once the last fd is gone; give it a moment.
	bool gone = false;
	for (int attempt = 0; attempt < 50 && !gone; attempt++) {
		gone = true;
		for (uint32_t id : ids["prog"])
			gone &= run_command({tool, "prog", "show", "id", std::to_string(id)}).status != 0;
		for (uint32_t id : ids["link"])
			gone &= run_command({tool, "link", "show", "id", std::to_string(id)}).status != 0;
		if (!gone)
			usleep(100000);
	}
	CHECK(gone);
	// And nothing of any past run holds a perf event link to a do_sample program.
	auto links = run_command({tool, "link", "show"});
	for (uint32_t id : ids["prog"])
		CHECK(!contains(links.out, "prog " + std::to_string(id) + " "));
}

TEST_CASE("two runs at once keep their own filters and both report in full")
{
	require_root();
	Background split({workload("split"), "30"});
	Background syscalls({workload("syscalls"), "30"});
	struct Run {
		pid_t target;
		const char *hot;
		std::unique_ptr<PipedRun> run;
		double cpu_at_start = 0;
	} runs[] = {{split.pid(), "split_hot_three", nullptr}, {syscalls.pid(), "main", nullptr}};
	for (Run &r : runs)
		r.run = std::make_unique<PipedRun>(
			std::vector<std::string>{"-p", std::to_string(r.target), "-E", "--folded", "-f", "199", "3"});
	for (Run &r : runs) {
		REQUIRE(r.run->read_err_line().starts_with("Sampling at 199 Hertz")); // attached
		r.cpu_at_start = cpu_seconds(r.target);
	}
	for (Run &r : runs) {
		std::string pid = std::to_string(r.target), out, err;
		const int status = r.run->finish(err, 30, &out);
		const double cpu = cpu_seconds(r.target) - r.cpu_at_start;
		INFO("run for " << pid << ": " << err);
		REQUIRE(status == 0);
		check_clean_stderr(err);
		CHECK(!contains(err, " lost: "));
		auto lines = parse_folded(out);
		uint64_t total = 0;
		for (const auto &l : lines) {
			CHECK(l.frames[0].ends_with("-" + pid));
			total += l.count;
		}
		// Every CPU-second the process had while this run sampled it is there, at 199 Hz
		// (the window measured here is a little longer than the sampling: the report).
		INFO("cpu seconds " << cpu << ", samples " << total);
		CHECK(total > 0.6 * cpu * 199);
		CHECK(total < 1.5 * cpu * 199 + 20);
		CHECK(samples_with(lines, r.hot) > total / 2);
	}
}

TEST_CASE("with tiny maps: what was stored is printed, and taken = stored + lost, cause by cause")
{
	require_root();
	// Two runs of 3 s: the workloads outlive both however long a run's start and end take
	// (the first run on a fresh machine builds every table); they are killed at the end.
	// At nice 19, as one_stack_processes: the profiler's own start and end are not starved.
	Background split({"/usr/bin/nice", "-n", "19", workload("split"), "20"});
	Background syscalls({"/usr/bin/nice", "-n", "19", workload("syscalls"), "20"});
	Background threads({"/usr/bin/nice", "-n", "19", workload("threads"), "20"});
	// 24 more processes, each its own stack, so that more keys come than 16 can hold
	// however quiet the rest of the machine is (three workloads alone may not fill them).
	auto more = one_stack_processes(24, "20");
	// Draining the maps while sampling can keep up even with maps this small: off, so that
	// they fill and the kernel's own account is what is checked. (Draining's account:
	// "maps smaller than the run", below.)
	ScopedEnv no_drain("PROFILE_NO_DRAIN", "1");
	for (const char *which : {"-d", "-U"}) { // user + kernel stacks, then user stacks only
		auto r = profile({which, "--stack-storage-size", "16", "--hash-storage-size", "16", "--folded", "-f",
				  "499", "3"});
		INFO(which << " stderr: " << r.err);
		REQUIRE(r.status == 0);
		check_clean_stderr(r.err);
		auto err_lines = split_lines(r.err);
		REQUIRE(!err_lines.empty());
		std::smatch m;
		const std::string &last = err_lines.back();
		REQUIRE(std::regex_match(last, m, std::regex("profile: ([0-9]+) samples? taken, ([0-9]+) stored, ([0-9]+) lost: (.+)")));
		uint64_t taken = std::stoull(m[1]), stored = std::stoull(m[2]), lost = std::stoull(m[3]);
		CHECK(taken == stored + lost);
		CHECK(lost > 0);
		CHECK(stored > 0);
		// "N in stack map collisions (raise ...); M with the counts map full (...)"
		uint64_t by_cause = 0;
		std::string causes = m[4];
		std::regex cause("(^|; )([0-9]+) (in stack map collisions|with the counts map full|with the stack map full|on other stack errors)");
		for (auto it = std::sregex_iterator(causes.begin(), causes.end(), cause); it != std::sregex_iterator(); ++it)
			by_cause += std::stoull((*it)[2]);
		CHECK(by_cause == lost);
		uint64_t printed = 0;
		for (const auto &l : parse_folded(r.out))
			printed += l.count;
		CHECK(printed == stored);
	}
}

TEST_CASE("a report that cannot be written: refused before sampling, or sent to stdout, losses still said")
{
	require_root();
	TempDir dir;
	SUBCASE("-o into a directory that does not exist: one line, exit 2, nothing sampled")
	{
		auto r = profile({"-f", "99", "-o", dir / "missing/cpu.svg", "5"});
		CHECK(r.status == 2);
		CHECK(r.out == "");
		CHECK(r.err == "profile: cannot write " + (dir / "missing/cpu.svg") + ": directory " +
				       (dir / "missing") + ": No such file or directory\n");
	}
	Background split({workload("split"), "30"});
	// A 4-key map that fills, however quiet the machine: something to account for.
	auto more = one_stack_processes(8);
	ScopedEnv no_drain("PROFILE_NO_DRAIN", "1");
	SUBCASE("-o onto a full device: the report goes to stdout, exit 1, the losses last")
	{
		auto r = profile({"--format", "folded", "-f", "499", "--hash-storage-size", "4", "-o", "/dev/full", "1"});
		INFO("stderr: " << r.err);
		CHECK(r.status == 1);
		auto lines = split_lines(r.err);
		REQUIRE(lines.size() >= 2);
		CHECK(contains(r.err, "profile: cannot write /dev/full: No space left on device; the report goes to "
				      "stdout instead\n"));
		CHECK(lines.back().starts_with("profile: "));
		CHECK(contains(lines.back(), " lost: "));
		CHECK(total(parse_folded(r.out)) > 0);
	}
	SUBCASE("stdout on a full device: the error, then the losses, exit 1")
	{
		auto r = run_command({"/bin/sh", "-c",
				      "exec \"$0\" --folded -f 499 --hash-storage-size 4 1 > /dev/full", profile_bin()});
		INFO("stderr: " << r.err);
		CHECK(r.status == 1);
		auto lines = split_lines(r.err);
		REQUIRE(lines.size() >= 2);
		CHECK(lines[lines.size() - 2] == "profile: cannot write the report: No space left on device");
		CHECK(contains(lines.back(), " lost: "));
	}
}

TEST_CASE("maps smaller than the run: drained into user space while sampling, every sample counted once")
{
	require_root();
	// 48 processes, each its own stack: more keys than the counts map holds at once. In a
	// group of their own, sampled alone: the rest of a busy machine took room in the maps
	// (32 of 48 lines, in a run on a shared machine).
	// Alive through both runs, however slow a loaded machine makes the first (they are
	// killed when the test ends).
	auto programs = one_stack_processes(48, "300");
	TestCgroup group(cgroup2_mount_or_fail(), "stacks");
	for (const auto &program : programs)
		std::ofstream(group.path() + "/cgroup.procs") << program->pid();
	const std::vector<std::string> args = {"--folded", "-E", "-U", "--hash-storage-size", "32", "--stack-storage-size",
					       "64", "--cgroup", group.path(), "-f", "499", "4"};
	auto keys_of_stacks = [](const std::vector<FoldedLine> &lines) {
		size_t n = 0;
		for (const FoldedLine &line : lines)
			n += line.frames.size() > 0 && line.frames[0].starts_with("stacks-");
		return n;
	};
	auto r = profile(args);
	INFO("stderr: " << r.err);
	REQUIRE(r.status == 0);
	auto lines = parse_folded(r.out);
	// One line per process: all 48, where one filling of the maps holds 32.
	CHECK(keys_of_stacks(lines) >= 40);
	// 48 keys cannot all fit in the first second, before the first drain: some are lost,
	// and the account of them must still add up.
	std::smatch m;
	const std::string last = split_lines(r.err).empty() ? "" : split_lines(r.err).back();
	REQUIRE(std::regex_match(last, m, std::regex("profile: ([0-9]+) samples? taken, ([0-9]+) stored, ([0-9]+) lost: .+")));
	CHECK(std::stoull(m[1]) == std::stoull(m[2]) + std::stoull(m[3]));
	CHECK(total(lines) == std::stoull(m[2]));

	// The same run with draining off keeps what fits once: the check above can fail.
	for (const auto &program : programs)
		REQUIRE(kill(program->pid(), 0) == 0);
	ScopedEnv no_drain("PROFILE_NO_DRAIN", "1");
	auto undrained = profile(args);
	REQUIRE(undrained.status == 0);
	INFO("undrained stderr: " << undrained.err);
	const size_t undrained_keys = keys_of_stacks(parse_folded(undrained.out));
	CHECK(undrained_keys > 0);
	CHECK(undrained_keys <= 32);
}

TEST_CASE("processes drained and forgotten while sampling are named; without -E their keys merge across PIDs" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	// A new process every 50 ms, each gone before the next, for as long as the profiler
	// runs: with 256-key maps, drained many times while sampling, each batch located while
	// its processes were still known. (A store keyed by content takes no new stack once
	// full, where a stack map still finds the odd empty bucket: 64 keys lost most samples.)
	const std::string loop = "while :; do " + workload("split") + " 0.05; done";
	ScopedEnv debug("PROFILE_DEBUG", "1");
	// In a group of their own, sampled alone: the map's keys are theirs, not those of
	// whatever else the machine runs, which differs from one run to the next.
	TestCgroup group(cgroup2_mount_or_fail(), "churn");
	struct Run {
		std::vector<FoldedLine> lines;
		uint64_t keys = 0, drains = 0;
	};
	auto run = [&](bool fold_pid) {
		Background churn({"/bin/sh", "-c", "echo $$ > " + group.path() + "/cgroup.procs && " + loop});
		std::vector<std::string> args = {"--folded", "-U", "--hash-storage-size", "256", "--stack-storage-size",
						 "256", "--cgroup", group.path(), "-f", "499", "3"};
		if (fold_pid)
			args.push_back("-E");
		auto r = profile(args);
		INFO("stderr: " << r.err);
		REQUIRE(r.status == 0);
		std::smatch m;
		REQUIRE(std::regex_search(r.err, m, std::regex("; ([0-9]+) keys, [0-9]+ stacks, [0-9]+ objects, ([0-9]+) drains")));
		return Run{parse_folded(r.out), std::stoull(m[1]), std::stoull(m[2])};
	};
	// The hot leaf's samples, and the processes they came from (-E: "split-PID").
	auto hot = [](const Run &run, std::set<std::string> &processes) {
		uint64_t n = 0;
		for (const FoldedLine &line : run.lines)
			if (line.frames[0].starts_with("split") && line.frames.back() == "split_hot_three") {
				n += line.count;
				processes.insert(line.frames[0]);
			}
		return n;
	};

	Run merged = run(false);
	std::set<std::string> comms;
	CHECK(merged.drains >= 2);
	CHECK(hot(merged, comms) >= 100);

	Run per_pid = run(true);
	std::set<std::string> pids;
	CHECK(per_pid.drains >= 2);
	CHECK(hot(per_pid, pids) >= 100);
	INFO(pids.size() << " processes named, " << per_pid.keys << " keys");
	CHECK(pids.size() >= 15);
	// Without -E every process's stacks were one key per distinct stack; with it, each
	// process has its own.
	CHECK(per_pid.keys >= merged.keys + pids.size());
}

TEST_CASE("every fd the profiler holds is close-on-exec")
{
	require_root();
	// The test's own fds must not leak into the profiler and be mistaken for its own.
	DIR *self = opendir("/proc/self/fd");
	REQUIRE(self);
	while (dirent *e = readdir(self))
		if (int fd = atoi(e->d_name); fd > 2)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	closedir(self);

	Background split({workload("split"), "30"});
	PipedRun run({"-f", "49", "3"});
	REQUIRE(run.read_out_line().starts_with("Sampling at 49 Hertz"));
	usleep(500000); // the kernel symbols are being read now, on a second thread
	std::string dir = "/proc/" + std::to_string(run.pid()) + "/fdinfo";
	DIR *d = opendir(dir.c_str());
	REQUIRE(d);
	int checked = 0;
	while (dirent *e = readdir(d)) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd <= 2)
			continue;
		std::ifstream in(dir + "/" + e->d_name);
		std::string line;
		while (std::getline(in, line))
			if (line.starts_with("flags:")) {
				unsigned long flags = std::stoul(line.substr(6), nullptr, 8);
				char target[256] = {};
				(void)readlink(("/proc/" + std::to_string(run.pid()) + "/fd/" + e->d_name).c_str(), target,
					       sizeof(target) - 1);
				CHECK_MESSAGE((flags & O_CLOEXEC), "fd " << fd << " (" << target << ") lacks O_CLOEXEC");
				checked++;
			}
	}
	closedir(d);
	CHECK(checked >= 3); // perf events, BPF maps and programs at least
	std::string err, out;
	CHECK(run.finish(err, 30, &out) == 0);
}

TEST_CASE("-o onto a planted symlink replaces the link and never writes through it")
{
	require_root();
	Background split({workload("split"), "30"}); // something to sample, so the report is not empty
	TempDir scratch = scratch_dir();
	std::string dir = scratch.path();
	write_file(dir + "/victim", {'k', 'e', 'e', 'p'}, 0644);
	REQUIRE(symlink((dir + "/victim").c_str(), (dir + "/out.folded").c_str()) == 0);
	// A dangling link: following it would create a file where the link points.
	REQUIRE(symlink((dir + "/created-through-link").c_str(), (dir + "/dangling.txt").c_str()) == 0);

	for (const char *name : {"out.folded", "dangling.txt"}) {
		std::string path = dir + "/" + name;
		auto r = profile({"-o", path, "-f", "49", "1"});
		INFO(name << ": " << r.err);
		CHECK(r.status == 0);
		struct stat st;
		REQUIRE(lstat(path.c_str(), &st) == 0);
		CHECK(S_ISREG(st.st_mode));
		CHECK(st.st_size > 0);
	}
	CHECK(read_text(dir + "/victim") == "keep");
	CHECK(access((dir + "/created-through-link").c_str(), F_OK) != 0);
}

} // TEST_SUITE
