// tests/test_runtimes.cpp: the runtimes' seam: each runtime's row, its frames told from
// native addresses by their tag, its --no-NAME switch, and a run's readers.
#include <doctest/doctest.h>

#include <linux/types.h>

#include <set>

#include "cli/options.h"
#include "profile.h"
#include "python/python.h"
#include "python/room.h"
#include "runtimes/runtimes.h"

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
	Runtimes none(~0u, [](const char *) { return -1; });
	CHECK(none.empty());
	const RuntimeFrameName unnamed = none.name(python_room, 1, PYTHON_FRAME(1, 0));
	CHECK(unnamed.function == "[python]");
	CHECK(unnamed.file.empty());
	CHECK(unnamed.line == 0);
	CHECK(none.stats().empty());
	// Turned off: its maps are not even asked for.
	std::vector<std::string> asked;
	Runtimes off(0, [&](const char *name) {
		asked.push_back(name);
		return -1;
	});
	CHECK(off.empty());
	CHECK(asked.empty());
}

} // TEST_SUITE("unit")
