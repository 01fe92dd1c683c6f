// base/error.h: the one way an error is carried. The rule:
//
// - An Error is one line for stderr, its context first ("/var/cache/profile: Permission
//   denied"), without the "profile: " prefix (diagnostics::say adds it). Never empty.
// - A function that can fail returns Status (nothing else to give back: ok, or an Error)
//   or Result<T> (a T, or an Error). Both are [[nodiscard]]: the caller looks.
// - "Not there" is not an error: std::optional (Result<std::optional<T>> when looking can
//   fail too).
// - A struct that holds more than how the work went (counts, sizes, a warning) keeps it
//   and says how it went in a Status member; a struct that is nothing when the work
//   fails is a Result's T.
// - Exceptions only for what ends the run: RunError, thrown by the run's own steps (its
//   setup, the load and attach of the BPF program, a library that will not start: zlib,
//   libcurl) and caught once, in main, which prints it and exits 1.
#pragma once

#include <cassert>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

class Error {
public:
	explicit Error(std::string line) : line_(std::move(line)) { assert(!line_.empty()); }
	const std::string &line() const { return line_; }

private:
	std::string line_;
};

namespace error_detail {
inline const std::string no_error;
} // namespace error_detail

// Ok, or an Error.
class [[nodiscard]] Status {
public:
	Status() = default; // ok
	Status(Error error) : error_(std::move(error)) {}

	bool ok() const { return !error_; }
	// The error's line; "" when ok (a test's CHECK then fails, rather than aborts).
	const std::string &error() const { return error_ ? error_->line() : error_detail::no_error; }

private:
	std::optional<Error> error_;
};

// A T, or an Error.
template <typename T>
class [[nodiscard]] Result {
public:
	template <typename U = T>
		requires(std::is_constructible_v<T, U &&> && !std::is_same_v<std::remove_cvref_t<U>, Error> &&
			 !std::is_same_v<std::remove_cvref_t<U>, Result>)
	Result(U &&value) : value_(std::in_place_index<0>, std::forward<U>(value))
	{
	}
	Result(Error error) : value_(std::in_place_index<1>, std::move(error)) {}

	bool ok() const { return value_.index() == 0; }
	// The T: only when ok().
	T &value() &
	{
		assert(ok());
		return std::get<0>(value_);
	}
	const T &value() const &
	{
		assert(ok());
		return std::get<0>(value_);
	}
	T &&value() &&
	{
		assert(ok());
		return std::get<0>(std::move(value_));
	}
	T *operator->() { return &value(); }
	const T *operator->() const { return &value(); }
	T &operator*() & { return value(); }
	const T &operator*() const & { return value(); }
	// The error's line; "" when ok.
	const std::string &error() const { return ok() ? error_detail::no_error : std::get<1>(value_).line(); }
	// Without the T: for a caller that returns Status.
	Status status() const { return ok() ? Status() : Status(std::get<1>(value_)); }

private:
	std::variant<T, Error> value_;
};

// The run cannot go on: one line for stderr, exit status 1.
struct RunError : std::runtime_error {
	using std::runtime_error::runtime_error;
};
