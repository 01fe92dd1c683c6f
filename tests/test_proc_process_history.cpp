// tests/test_proc_process_history.cpp: process histories from made-up side-band records, and
// from the real kernel.
#include <doctest/doctest.h>

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "sampler/sampler.h"
#include "sampler/side_band.h"
#include "proc/process_history.h"
#include "tests/perf_records.h"
#include "tests/support.h"

namespace {

std::string path_at(const ProcessHistory &h, uint32_t pid, uint64_t time, uint64_t address)
{
	const ProcessImage *image = h.image_at(pid, time);
	if (!image)
		return "<no process>";
	const MapEntry *m = image->find(address);
	return m ? m->path : "<no mapping>";
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("a fork copies the parent's mappings; an exec starts an empty image")
{
	ProcessHistory h;
	MapEntry bash;
	bash.start = 0x1000;
	bash.end = 0x2000;
	bash.perms = {'r', '-', 'x', 'p'};
	bash.path = "/bin/bash";
	h.add_snapshot(10, "bash", {bash}, 100);

	REQUIRE(h.apply(task(PERF_RECORD_FORK, 11, 10, 11, 200)));
	CHECK(path_at(h, 11, 250, 0x1800) == "/bin/bash");
	CHECK(h.image_at(11, 250)->comm == "bash");

	REQUIRE(h.apply(comm(11, "make", 300, true)));
	REQUIRE(h.apply(mmap2(11, 0x5000, 0x1000, 0, "/usr/bin/make", 310)));
	// Before the exec the child was bash; after it, make, with none of bash's mappings.
	CHECK(path_at(h, 11, 250, 0x1800) == "/bin/bash");
	CHECK(path_at(h, 11, 400, 0x1800) == "<no mapping>");
	CHECK(path_at(h, 11, 400, 0x5800) == "/usr/bin/make");
	CHECK(h.image_at(11, 400)->comm == "make");
	// The parent is untouched by its child's mappings.
	CHECK(path_at(h, 10, 400, 0x5800) == "<no mapping>");
}

TEST_CASE("records that arrive out of order still land in the right image")
{
	ProcessHistory h;
	REQUIRE(h.apply(comm(20, "new", 500, true)));
	REQUIRE(h.apply(mmap2(20, 0x7000, 0x1000, 0, "/new", 510)));
	REQUIRE(h.apply(mmap2(20, 0x7000, 0x1000, 0, "/old", 100))); // before the exec
	CHECK(path_at(h, 20, 600, 0x7000) == "/new");
}

TEST_CASE("a new mapping replaces the part of an old one it overlaps")
{
	ProcessHistory h;
	h.apply(mmap2(30, 0x1000, 0x3000, 0, "/a", 10));
	h.apply(mmap2(30, 0x2000, 0x1000, 0, "/b", 20));
	CHECK(path_at(h, 30, 30, 0x1800) == "/a");
	CHECK(path_at(h, 30, 30, 0x2800) == "/b");
	CHECK(path_at(h, 30, 30, 0x3800) == "/a");
	CHECK(h.image_at(30, 30)->find(0x3800)->offset == 0x2000);
	CHECK(h.image_at(30, 30)->maps->size() == 3);
}

TEST_CASE("one mapping over several: those inside go, the ends it cuts keep their outer parts")
{
	ProcessHistory h;
	h.apply(mmap2(31, 0x1000, 0x2000, 0, "/a", 10)); // 0x1000-0x3000
	h.apply(mmap2(31, 0x3000, 0x1000, 0, "/b", 11)); // 0x3000-0x4000
	h.apply(mmap2(31, 0x4000, 0x2000, 0, "/c", 12)); // 0x4000-0x6000
	h.apply(mmap2(31, 0x8000, 0x1000, 0, "/d", 13));
	h.apply(mmap2(31, 0x2000, 0x3000, 0, "/e", 20)); // 0x2000-0x5000
	const ProcessImage *image = h.image_at(31, 30);
	REQUIRE(image->maps->size() == 4);
	CHECK(path_at(h, 31, 30, 0x1800) == "/a");
	CHECK((*image->maps)[0].end == 0x2000);
	CHECK(path_at(h, 31, 30, 0x3800) == "/e");
	CHECK(path_at(h, 31, 30, 0x5800) == "/c");
	CHECK(image->find(0x5800)->start == 0x5000);
	CHECK(image->find(0x5800)->offset == 0x1000);
	CHECK(path_at(h, 31, 30, 0x8800) == "/d");
	// Exactly where others were: replaced whole.
	h.apply(mmap2(31, 0x8000, 0x1000, 0, "/f", 40));
	CHECK(path_at(h, 31, 50, 0x8800) == "/f");
	CHECK(h.image_at(31, 50)->maps->size() == 4);
}

TEST_CASE("after a fork without exec, what either side maps is its own")
{
	ProcessHistory h;
	h.apply(mmap2(40, 0x1000, 0x1000, 0, "/shared", 10));
	REQUIRE(h.apply(task(PERF_RECORD_FORK, 41, 40, 41, 20)));
	h.apply(mmap2(40, 0x2000, 0x1000, 0, "/parent-only", 30));
	h.apply(mmap2(41, 0x3000, 0x1000, 0, "/child-only", 31));
	h.apply(mmap2(41, 0x1000, 0x1000, 0, "/child-over-shared", 32));
	CHECK(path_at(h, 40, 40, 0x1800) == "/shared");
	CHECK(path_at(h, 40, 40, 0x2800) == "/parent-only");
	CHECK(path_at(h, 40, 40, 0x3800) == "<no mapping>");
	CHECK(path_at(h, 41, 40, 0x1800) == "/child-over-shared");
	CHECK(path_at(h, 41, 40, 0x2800) == "<no mapping>");
	CHECK(path_at(h, 41, 40, 0x3800) == "/child-only");
}

TEST_CASE("non-executable mappings and threads change nothing; anonymous JIT code is kept")
{
	ProcessHistory h;
	h.apply(mmap2(40, 0x1000, 0x1000, 0, "/data", 10, PROT_READ));
	CHECK(path_at(h, 40, 20, 0x1000) == "<no process>");
	h.apply(mmap2(40, 0x9000, 0x1000, 0, "//anon", 10));
	REQUIRE(h.image_at(40, 20)->find(0x9000));
	CHECK(h.image_at(40, 20)->find(0x9000)->path.empty());
	h.apply(task(PERF_RECORD_EXIT, 40, 40, 41, 30)); // a thread of 40 exits
	CHECK(!h.exited(40));
}

TEST_CASE("exited processes are forgotten once nothing wants them kept")
{
	ProcessHistory h;
	h.apply(comm(50, "short", 10, true));
	h.apply(comm(51, "sampled", 10, true));
	h.apply(task(PERF_RECORD_EXIT, 50, 1, 50, 20));
	h.apply(task(PERF_RECORD_EXIT, 51, 1, 51, 20));
	CHECK(h.exited(50));
	h.forget_exited([](uint32_t pid) { return pid == 51; });
	CHECK(!h.image_at(50, 30));
	CHECK(h.image_at(51, 30));
	CHECK(h.process_count() == 1);
	// Asked again at each call: once its samples are in, it goes too.
	h.forget_exited([](uint32_t pid) { return pid == 51; });
	CHECK(h.image_at(51, 30));
	h.forget_exited([](uint32_t) { return false; });
	CHECK(!h.image_at(51, 30));
	CHECK(h.process_count() == 0);
}

TEST_CASE("malformed records are refused without effect")
{
	ProcessHistory h;
	auto good = mmap2(60, 0x1000, 0x1000, 0, "/x", 10);
	auto short_record = good;
	short_record.resize(20);
	CHECK(!h.apply(short_record));
	auto no_nul = good;
	std::fill(no_nul.begin() + 8 + 64, no_nul.end() - 16, 'A');
	CHECK(!h.apply(no_nul));
	CHECK(!h.apply({}));
	CHECK(h.process_count() == 0);
	CHECK(h.apply(good));
	CHECK(h.process_count() == 1);
}

TEST_CASE("BPF programs that come and go while sampling are kept, the newest first")
{
	ProcessHistory h;
	REQUIRE(h.apply(ksymbol(0xffffffffc0001000, 0x80, 0, "bpf_prog_6deef7357e7b4530_first", 10)));
	REQUIRE(h.apply(ksymbol(0xffffffffc0002000, 0x40, 0, "bpf_trampoline_6442", 11, PERF_RECORD_KSYMBOL_TYPE_OOL)));
	const KernelSymbolRecord *first = h.kernel_symbol(0xffffffffc000107f);
	REQUIRE(first);
	CHECK(first->name == "bpf_prog_6deef7357e7b4530_first");
	CHECK(first->bpf);
	CHECK(first->since_ns == 10);
	CHECK(!h.kernel_symbol(0xffffffffc0001080));
	CHECK(!h.kernel_symbol(0xffffffffc0000fff));
	CHECK(!h.kernel_symbol(0xffffffffc0002000)->bpf);

	// Unloaded: still known (its samples were taken while it ran); then its place reused.
	REQUIRE(h.apply(ksymbol(0xffffffffc0001000, 0x80, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER,
				"bpf_prog_6deef7357e7b4530_first", 20)));
	CHECK(h.kernel_symbol(0xffffffffc0001010)->until_ns == 20);
	REQUIRE(h.apply(ksymbol(0xffffffffc0001000, 0x100, 0, "bpf_prog_0123456789abcdef_second", 30)));
	CHECK(h.kernel_symbol(0xffffffffc0001010)->name == "bpf_prog_0123456789abcdef_second");
	CHECK(h.kernel_symbol(0xffffffffc00010f0)->name == "bpf_prog_0123456789abcdef_second");

	// A record cut short changes nothing.
	auto cut = ksymbol(0xffffffffc0009000, 0x10, 0, "bpf_prog_cut", 40);
	std::fill(cut.begin() + 8 + 16, cut.end() - 16, 'A');
	CHECK(!h.apply(cut));
	CHECK(!h.kernel_symbol(0xffffffffc0009000));
}


TEST_CASE("JIT memory reused: a sample is named by the program that was there at its time")
{
	const uint64_t x = 0xffffffffc0000bd0;
	ProcessHistory h;
	REQUIRE(h.apply(ksymbol(x, 0x22, 0, "bpf_prog_1111111111111111_old", 10)));
	REQUIRE(h.apply(ksymbol(x, 0x22, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, "bpf_prog_1111111111111111_old", 20)));
	REQUIRE(h.apply(ksymbol(x - 8, 0x40, 0, "bpf_prog_2222222222222222_new", 30)));
	auto at = [&](uint64_t address, uint64_t time) {
		const KernelSymbolRecord *k = h.kernel_symbol(address, time);
		return k ? k->name : std::string("(none)");
	};
	CHECK(at(x + 0x10, 10) == "bpf_prog_1111111111111111_old");
	CHECK(at(x + 0x10, 19) == "bpf_prog_1111111111111111_old");
	CHECK(at(x + 0x10, 30) == "bpf_prog_2222222222222222_new");
	CHECK(at(x + 0x10, UINT64_MAX) == "bpf_prog_2222222222222222_new");
	// Between the two, or before both: the one loaded nearest in time.
	CHECK(at(x + 0x10, 22) == "bpf_prog_1111111111111111_old");
	CHECK(at(x + 0x10, 28) == "bpf_prog_2222222222222222_new");
	CHECK(at(x + 0x10, 1) == "bpf_prog_1111111111111111_old");
	// Only the new program reaches that far.
	CHECK(at(x + 0x30, 10) == "bpf_prog_2222222222222222_new");
	CHECK(at(x + 0x38, 10) == "(none)");
	CHECK(at(x - 9, 30) == "(none)");

	// Loaded, unloaded and loaded again at one address under one name: the unregistration
	// ends the life that is still open.
	REQUIRE(h.apply(ksymbol(x + 0x100, 0x10, 0, "bpf_prog_3333333333333333_again", 40)));
	REQUIRE(h.apply(ksymbol(x + 0x100, 0x10, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, "bpf_prog_3333333333333333_again", 50)));
	REQUIRE(h.apply(ksymbol(x + 0x100, 0x10, 0, "bpf_prog_3333333333333333_again", 60)));
	REQUIRE(h.apply(ksymbol(x + 0x100, 0x10, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, "bpf_prog_3333333333333333_again", 70)));
	CHECK(h.kernel_symbol(x + 0x100, 45)->until_ns == 50);
	CHECK(h.kernel_symbol(x + 0x100, 65)->since_ns == 60);
	CHECK(h.kernel_symbol(x + 0x100, 65)->until_ns == 70);
}

TEST_CASE("kernel symbols unloaded before a time are forgotten; those loaded still, or after, stay")
{
	const uint64_t x = 0xffffffffc0004000;
	ProcessHistory h;
	REQUIRE(h.apply(ksymbol(x, 0x20, 0, "bpf_prog_1111111111111111_gone", 10)));
	REQUIRE(h.apply(ksymbol(x, 0x20, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, "bpf_prog_1111111111111111_gone", 20)));
	REQUIRE(h.apply(ksymbol(x + 0x100, 0x20, 0, "bpf_prog_2222222222222222_late", 30)));
	REQUIRE(h.apply(ksymbol(x + 0x100, 0x20, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, "bpf_prog_2222222222222222_late", 50)));
	REQUIRE(h.apply(ksymbol(x + 0x200, 0x20, 0, "bpf_prog_3333333333333333_live", 5)));
	CHECK(h.kernel_symbol_count() == 3);
	h.forget_kernel_symbols(40);
	CHECK(h.kernel_symbol_count() == 2);
	CHECK(!h.kernel_symbol(x + 0x10, 15));
	CHECK(h.kernel_symbol(x + 0x110, 45)->name == "bpf_prog_2222222222222222_late");
	CHECK(h.kernel_symbol(x + 0x210, 45)->name == "bpf_prog_3333333333333333_live");
}

TEST_CASE("side band: records the kernel left undated get the times around them")
{
	auto time_of = [](const std::vector<uint8_t> &r) { return ProcessHistory::record_time(r); };
	std::vector<std::vector<uint8_t>> ring = {
		ksymbol(0xffffffffc0001000, 16, 0, "bpf_prog_a", 0), // before any dated record
		ksymbol(0xffffffffc0002000, 16, 0, "bpf_prog_b", 120),
		ksymbol(0xffffffffc0003000, 16, 0, "bpf_prog_c", 0),
		ksymbol(0xffffffffc0003000, 16, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, "bpf_prog_c", 0),
		ksymbol(0xffffffffc0002000, 16, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, "bpf_prog_b", 150),
		ksymbol(0xffffffffc0001000, 16, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, "bpf_prog_a", 0), // the last
	};
	auto spans_of = [](std::vector<std::vector<uint8_t>> &records) {
		return std::vector<std::span<uint8_t>>(records.begin(), records.end());
	};
	CHECK(ProcessHistory::date_undated(spans_of(ring), 100, 200) == 200);
	CHECK(time_of(ring[0]) == 100); // registered: the earliest it can be
	CHECK(time_of(ring[1]) == 120);
	CHECK(time_of(ring[2]) == 120);
	CHECK(time_of(ring[3]) == 150); // unregistered: the latest it can be
	CHECK(time_of(ring[4]) == 150);
	CHECK(time_of(ring[5]) == 200);
	// The history built from them names each program inside its life.
	ProcessHistory h;
	for (const auto &record : ring)
		REQUIRE(h.apply(record));
	CHECK(h.kernel_symbol(0xffffffffc0003008, 130)->name == "bpf_prog_c");
	CHECK(h.kernel_symbol(0xffffffffc0003008, 130)->until_ns == 150);
	CHECK(h.kernel_symbol(0xffffffffc0001008, 199)->until_ns == 200);
	// A batch of nothing but dated records is left as it was.
	std::vector<std::vector<uint8_t>> dated = {ksymbol(0xffffffffc0001000, 16, 0, "bpf_prog_a", 300)};
	const auto copy = dated;
	CHECK(ProcessHistory::date_undated(spans_of(dated), 250, 260) == 300);
	CHECK(dated == copy);
}

TEST_CASE("a process that maps code in a loop cannot grow its image without bound")
{
	ProcessHistory h;
	const size_t n = ProcessHistory::kMaxMappingsPerImage + 1000;
	for (size_t i = 0; i < n; i++)
		REQUIRE(h.apply(mmap2(70, 0x100000 + i * 0x2000, 0x1000, 0, "/jit", 10 + i)));
	CHECK(h.image_at(70, n + 10)->maps->size() == ProcessHistory::kMaxMappingsPerImage);
	CHECK(h.dropped_mappings() == 1000);
	// A mapping over a known one still replaces it.
	REQUIRE(h.apply(mmap2(70, 0x100000, 0x1000, 0, "/new", n + 20)));
	CHECK(path_at(h, 70, n + 30, 0x100000) == "/new");
}

TEST_CASE("each process's cgroup is read when it is learned of and after its exec, and kept after its exit")
{
	const std::string id = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";
	TempDir proc;
	auto move_to = [&](uint32_t pid, const std::string &path) {
		write_file(proc / (std::to_string(pid) + "/cgroup"), "1:name=systemd:/x\n0::" + path + "\n");
	};
	auto cgroup_of = [](const ProcessHistory &h, uint32_t pid, uint64_t time) -> std::string {
		const ProcessImage *image = h.image_at(pid, time);
		if (!image)
			return "<no process>";
		return image->cgroup ? image->cgroup->path + "|" + image->cgroup->container : "<none>";
	};
	ProcessHistory h(proc.path().string());
	move_to(10, "/system.slice/containerd.service");
	h.add_snapshot(10, "containerd-shim", {}, 100);
	CHECK(cgroup_of(h, 10, 100) == "/system.slice/containerd.service|");

	// The runtime forks, moves the child into the container's group, and the child execs.
	move_to(11, "/system.slice/containerd.service");
	REQUIRE(h.apply(task(PERF_RECORD_FORK, 11, 10, 11, 200)));
	CHECK(cgroup_of(h, 11, 250) == "/system.slice/containerd.service|");
	CHECK(h.image_at(11, 250)->cgroup == h.image_at(10, 250)->cgroup); // shared, not copied
	move_to(11, "/system.slice/docker-" + id + ".scope");
	REQUIRE(h.apply(comm(11, "nginx", 300, true)));
	// Read once it has samples, or has run a while; until then, what it had.
	std::set<uint32_t> sampled;
	auto has_samples = [&](uint32_t pid) { return sampled.count(pid) > 0; };
	CHECK(cgroup_of(h, 11, 350) == "/system.slice/containerd.service|");
	h.settle_labels(has_samples, 400, 1000);
	CHECK(cgroup_of(h, 11, 350) == "/system.slice/containerd.service|");
	sampled.insert(11);
	h.settle_labels(has_samples, 400, 1000);
	CHECK(cgroup_of(h, 11, 250) == "/system.slice/containerd.service|");
	CHECK(cgroup_of(h, 11, 350) == "/system.slice/docker-" + id + ".scope|" + id);
	// Not sampled, but running for longer than after_ns: read then.
	move_to(13, "/system.slice/containerd.service");
	REQUIRE(h.apply(task(PERF_RECORD_FORK, 13, 10, 13, 310)));
	move_to(13, "/system.slice/crio-" + id + ".scope");
	REQUIRE(h.apply(comm(13, "sleep", 320, true)));
	h.settle_labels(has_samples, 1000, 1000);
	CHECK(cgroup_of(h, 13, 330) == "/system.slice/containerd.service|");
	h.settle_labels(has_samples, 1320, 1000);
	CHECK(cgroup_of(h, 13, 330) == "/system.slice/crio-" + id + ".scope|" + id);

	// A child forked in the container, gone before its fork record is read: its parent's.
	REQUIRE(h.apply(task(PERF_RECORD_FORK, 12, 11, 12, 400)));
	CHECK(cgroup_of(h, 12, 450) == "/system.slice/docker-" + id + ".scope|" + id);
	// An exec whose process is gone by then keeps what it had.
	REQUIRE(h.apply(comm(12, "worker", 500, true)));
	sampled.insert(12);
	h.settle_labels(has_samples, 510, 1000);
	CHECK(cgroup_of(h, 12, 550) == "/system.slice/docker-" + id + ".scope|" + id);

	// A process first seen by a mapping (begun between the side band and the snapshot).
	move_to(20, "/user.slice/user-1000.slice/session-3.scope");
	REQUIRE(h.apply(mmap2(20, 0x5000, 0x1000, 0, "/usr/bin/vim", 600)));
	CHECK(cgroup_of(h, 20, 650) == "/user.slice/user-1000.slice/session-3.scope|");

	// Exited, its files gone: the labels stay for its samples.
	REQUIRE(h.apply(task(PERF_RECORD_EXIT, 11, 10, 11, 700)));
	std::filesystem::remove_all(proc / "11");
	CHECK(cgroup_of(h, 11, 800) == "/system.slice/docker-" + id + ".scope|" + id);

	// No proc root: nothing read.
	ProcessHistory none("");
	none.add_snapshot(10, "containerd-shim", {}, 100);
	CHECK(cgroup_of(none, 10, 100) == "<none>");
}

TEST_CASE("records of pid 0, processes outside profile's PID namespace, are left out")
{
	ProcessHistory h("");
	REQUIRE(h.apply(mmap2(0, 0x5000, 0x1000, 0, "/usr/bin/host-program", 100)));
	REQUIRE(h.apply(comm(0, "host-program", 110, true)));
	CHECK(h.process_count() == 0);
	// The first process of a new namespace, forked from outside it.
	REQUIRE(h.apply(task(PERF_RECORD_FORK, 1, 0, 1, 200)));
	REQUIRE(h.image_at(1, 250));
	CHECK(h.image_at(1, 250)->maps->empty());
}

TEST_CASE("lost records are counted")
{
	ProcessHistory h;
	CHECK(h.apply(Record(PERF_RECORD_LOST).add(uint64_t(1)).add(uint64_t(7)).at(5)));
	CHECK(h.lost_records() == 7);
}

} // TEST_SUITE

TEST_SUITE("integration") {

TEST_CASE("the kernel's side-band records follow a process that has exited")
{
	REQUIRE_MESSAGE(geteuid() == 0, "needs root: use `make test`");
	std::vector<int> cpus = online_cpus();
	SideBand side_band(cpus);
	ProcessHistory history;
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snapshot_processes(history, uint64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec);
	CHECK(history.image_at(getpid(), 0));

	// execv with an argv made before the fork: execl is not on POSIX's list of
	// async-signal-safe functions before its 2016 edition, and builds its argv in the child.
	char true_name[] = "true";
	char *const argv[] = {true_name, nullptr};
	pid_t child = fork();
	if (child == 0) {
		execv("/bin/true", argv);
		_exit(127);
	}
	REQUIRE(child > 0);
	waitpid(child, nullptr, 0);
	side_band.poll(history);
	CHECK(history.exited(child));
	clock_gettime(CLOCK_MONOTONIC, &ts);
	const ProcessImage *image = history.image_at(child, uint64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec);
	REQUIRE(image);
	CHECK(image->comm == "true");
	bool has_true = false, has_libc = false;
	for (const MapEntry &m : *image->maps) {
		has_true |= m.path.ends_with("/true");
		has_libc |= m.path.find("libc.so") != std::string::npos;
	}
	CHECK(has_true);
	CHECK(has_libc);
}

} // TEST_SUITE
