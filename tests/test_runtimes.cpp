// tests/test_runtimes.cpp: the runtimes' seam: each runtime's row, its frames told from
// native addresses by their tag, its --no-NAME switch, and a run's readers.
#include <doctest/doctest.h>

#include <bpf/bpf.h>
#include <linux/types.h>
#include <sys/mman.h>
#include <unistd.h>

#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/fd.h"
#include "cli/options.h"
#include "hotspot/runtime.h"
#include "profile.h"
#include "python/python.h"
#include "python/room.h"
#include "python/runtime.h"
#include "runtime/kernel_asks.h"
#include "runtimes/runtimes.h"
#include "tests/support.h"
#include "v8/runtime.h"

TEST_SUITE("unit") {

TEST_CASE("runtimes: each row has its own name, tag and frame kind, and its frames are told from native ones by tag")
{
	std::set<std::string> names;
	std::set<uint64_t> tags;
	std::set<FrameKind> kinds;
	REQUIRE(!runtime_rooms().empty());
	for (const RuntimeRoom *room : runtime_rooms()) {
		CHECK(names.insert(room->name).second);
		CHECK(tags.insert(room->tag).second);
		CHECK(kinds.insert(room->kind).second);
		// A tag no user address and no mark of the walk has.
		CHECK((room->tag & ~RUNTIME_TAG_MASK) == 0);
		CHECK(room->tag != 0);
		CHECK(room->tag != RUNTIME_TAG_OF(TRUNCATED_FRAME));
		CHECK(frame_kind_rule(room->kind).runtime);
		// Bracketed, as the reports show what has no name: "[python]", "[v8 JIT]".
		CHECK(std::string(room->unnamed).starts_with("["));
		CHECK(std::string(room->unnamed).ends_with("]"));
		CHECK(runtime_room_of_frame(room->tag | 0x1234) == room);
	}
	CHECK(runtime_room_of_frame(PYTHON_FRAME(7, 3)) == &python_room);
	CHECK(runtime_room_of_frame(0x7f1234567890) == nullptr); // a user address
	CHECK(runtime_room_of_frame(TRUNCATED_FRAME) == nullptr);
	CHECK(runtime_room_of_frame(0) == nullptr);
}

TEST_CASE("runtimes: --no-NAME turns off that runtime's walk alone, and is in --help")
{
	for (const RuntimeRoom *room : runtime_rooms()) {
		std::string arg = std::string("--no-") + room->name;
		std::vector<char *> argv = {const_cast<char *>("profile"), arg.data(), nullptr};
		Result<Options> parsed = parse_options(2, argv.data());
		REQUIRE(parsed.ok());
		CHECK(parsed.value().runtimes_off == RUNTIME_BIT(room->tag));
		bool listed = false;
		for (const OptionRow &row : option_rows())
			listed |= row.synopsis.find(std::string("--no-") + room->name) != std::string::npos;
		CHECK_MESSAGE(listed, arg << " is not in --help");
	}
	std::vector<char *> argv = {const_cast<char *>("profile"), nullptr};
	Result<Options> parsed = parse_options(1, argv.data());
	REQUIRE(parsed.ok());
	CHECK(parsed.value().runtimes_off == 0);
}

TEST_CASE("runtimes: a run follows a runtime only when it is on and the program has its maps; an unfollowed frame shows its room's label")
{
	// No map by any name: no reader.
	Runtimes none(~0u, {[](const char *) { return -1; }});
	CHECK(none.empty());
	const RuntimeFrameName unnamed = none.name(python_room, 1, PYTHON_FRAME(1, 0));
	CHECK(unnamed.function == "[python]");
	CHECK(unnamed.file.empty());
	CHECK(unnamed.line == 0);
	CHECK(none.stats().empty());
	// Turned off: its maps are not even asked for.
	std::vector<std::string> asked;
	Runtimes off(0, {[&](const char *name) {
		asked.push_back(name);
		return -1;
	}});
	CHECK(off.empty());
	CHECK(asked.empty());
}

TEST_CASE("runtimes: a continuous run forgets the ids no frame of its last windows was named by, in user space and in "
	  "the kernel's map")
{
	// A kernel map of objects told, as RUNTIME_CODES_MAP's (a plain hash here).
	const int map = bpf_map_create(BPF_MAP_TYPE_HASH, "test_codes", sizeof(runtime_code_key), sizeof(runtime_code),
				       16, nullptr);
	if (map < 0) {
		skip_test("cannot create a BPF map (not root)");
		return;
	}
	struct Named {
		std::string name;
		KeptCode kept;
	};
	std::unordered_map<uint64_t, Named> names;
	for (uint64_t id = 1; id <= 3; id++) {
		const runtime_code_key key{7, 0, 0x1000 * id};
		const runtime_code value{7, 0, key.object, 0, 0, id};
		REQUIRE(bpf_map_update_elem(map, &key, &value, BPF_ANY) == 0);
		names[id] = {"f" + std::to_string(id), {key, 0}};
	}
	// And its front's generation (an array of one word, as RUNTIME_CODES_MAP's).
	RuntimeMaps maps;
	maps.codes = map;
	maps.generation = bpf_map_create(BPF_MAP_TYPE_ARRAY, "test_generation", sizeof(uint32_t), sizeof(uint64_t), 1,
					 nullptr);
	REQUIRE(maps.generation >= 0);
	const auto generation = [&] {
		const uint32_t zero = 0;
		uint64_t value = 0;
		REQUIRE(bpf_map_lookup_elem(maps.generation, &zero, &value) == 0);
		return value;
	};
	const ForgetCode forget = forgetting_in(maps);
	uint64_t window = 0;
	for (; window < kKeptWindows; window++) {
		names[2].kept.window = window; // named in every window
		forget_unnamed_codes(names, window + 1, forget);
	}
	CHECK(names.size() == 3); // none unnamed for more than kKeptWindows windows yet
	CHECK(generation() == 0); // nothing forgotten: the kernel's front of the map holds
	names[2].kept.window = window;
	names[3].kept.window = 1;
	forget_unnamed_codes(names, ++window, forget);
	CHECK(names.count(1) == 0); // last named in window 0
	CHECK(names.count(2) == 1);
	CHECK(names.count(3) == 1); // in window 1: kept to window 1 + kKeptWindows
	runtime_code value{};
	for (uint64_t id = 1; id <= 3; id++) {
		const runtime_code_key key{7, 0, 0x1000 * id};
		CAPTURE(id);
		CHECK((bpf_map_lookup_elem(map, &key, &value) == 0) == (id != 1));
	}
	CHECK(generation() == 1); // one forgotten: the front's entries answer nothing now
	forget_unnamed_codes(names, ++window, forget);
	forget_unnamed_codes(names, ++window, forget);
	CHECK(names.count(3) == 0);
	CHECK(names.count(2) == 1);
	CHECK(generation() == 2);
	// An exec: the process's objects go, and the generation moves on again.
	forget_runtime_codes(maps, 7);
	CHECK(bpf_map_get_next_key(map, nullptr, &value) != 0);
	CHECK(generation() == 3);
	close(maps.generation);
	close(map);
}

} // TEST_SUITE("unit")

TEST_SUITE("component") {

TEST_CASE("runtimes: a process that maps node, libjvm.so or python3.11 only to read them runs none of them; mapped "
	  "executable, each is found")
{
	const std::vector<std::string> files = {"/usr/bin/node", "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so",
						"/usr/bin/python3.11"};
	for (const std::string &file : files)
		if (access(file.c_str(), R_OK) != 0)
			skip_test("needs " + file);
	for (const int protection : {PROT_READ, PROT_READ | PROT_EXEC}) {
		CAPTURE(protection);
		// Each file's first page, as a profiler or a debugger maps it to read its symbols.
		std::vector<std::pair<void *, UniqueFd>> mapped;
		for (const std::string &file : files) {
			UniqueFd fd = open_read_only(file.c_str());
			REQUIRE(fd);
			void *at = mmap(nullptr, 4096, protection, MAP_PRIVATE, fd.get(), 0);
			REQUIRE(at != MAP_FAILED);
			mapped.emplace_back(at, std::move(fd));
		}
		const bool runs = protection & PROT_EXEC;
		// The three ask through one read of the process's maps, as at a tick.
		MapsReads maps;
		V8Files node;
		CHECK(node.detect(uint32_t(getpid()), maps).has_value() == runs);
		CHECK((detect_hotspot(uint32_t(getpid()), maps).kind != HotSpotDetection::NotJava) == runs);
		// Its version is read from the file's name once the file is taken for Python's (its
		// _PyRuntime, in memory not mapped here, is not).
		CHECK(!detect_python(uint32_t(getpid()), maps).version.empty() == runs);
		for (auto &[at, fd] : mapped)
			munmap(at, 4096);
	}
}

} // TEST_SUITE("component")
