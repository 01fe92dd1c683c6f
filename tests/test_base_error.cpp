// tests/test_base_error.cpp: Status and Result, the one way an error is carried.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

namespace {

Status fails_when(bool fail)
{
	if (fail)
		return Error("/var/cache/profile: Permission denied");
	return {};
}

Result<std::vector<int>> numbers(bool fail)
{
	if (fail)
		return Error("no numbers");
	return std::vector<int>{1, 2, 3};
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("error: a Status is ok, or one line of error")
{
	CHECK(Status().ok());
	CHECK(Status().error() == "");
	CHECK(fails_when(false).ok());
	const Status failed = fails_when(true);
	CHECK(!failed.ok());
	CHECK(failed.error() == "/var/cache/profile: Permission denied");
}

TEST_CASE("error: a Result is a value, or one line of error; a Status without the value")
{
	Result<std::vector<int>> good = numbers(false);
	REQUIRE(good.ok());
	CHECK(good.value() == std::vector<int>{1, 2, 3});
	CHECK(good->size() == 3);
	CHECK(good.error() == "");
	CHECK(good.status().ok());
	const std::vector<int> moved = std::move(good).value();
	CHECK(moved.size() == 3);

	const Result<std::vector<int>> bad = numbers(true);
	CHECK(!bad.ok());
	CHECK(bad.error() == "no numbers");
	CHECK(!bad.status().ok());
	CHECK(bad.status().error() == "no numbers");

	// A string value is never taken for an error, nor an error for a value.
	const Result<std::string> text = std::string("no numbers");
	CHECK(text.ok());
	CHECK(*text == "no numbers");

	// Nothing there is no error: a Result of an optional.
	const Result<std::optional<int>> absent = std::nullopt;
	REQUIRE(absent.ok());
	CHECK(!absent.value());
	const Result<std::optional<int>> present = 7;
	CHECK(present.value() == 7);
}

TEST_CASE("error: RunError ends the run with one line")
{
	try {
		throw RunError("cannot load the BPF program: Operation not permitted");
	} catch (const std::runtime_error &e) {
		CHECK(std::string(e.what()) == "cannot load the BPF program: Operation not permitted");
	}
}

} // TEST_SUITE("unit")
