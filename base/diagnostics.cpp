// base/diagnostics.cpp: lines to stderr, or to the sink set, one at a time.
#include "base/diagnostics.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <utility>

namespace diagnostics {
namespace {

std::mutex lock;
Sink sink;
bool progress_shown = false; // a progress line stands unended on stderr

// Under the lock: a line to the sink, or to stderr after any progress line is cleared.
void emit(const std::string &text)
{
	if (sink) {
		sink(text);
		return;
	}
	if (progress_shown) {
		std::fputs("\r\033[K", stderr);
		progress_shown = false;
	}
	std::fprintf(stderr, "%s\n", text.c_str());
}

// "profile: " and the formatted text.
std::string said(const char *format, va_list args)
{
	va_list again;
	va_copy(again, args);
	const int n = std::vsnprintf(nullptr, 0, format, args);
	std::string text = "profile: ";
	if (n > 0) {
		const size_t prefix = text.size();
		text.resize(prefix + size_t(n) + 1);
		std::vsnprintf(text.data() + prefix, size_t(n) + 1, format, again);
		text.resize(prefix + size_t(n));
	}
	va_end(again);
	return text;
}

} // namespace

void say(const char *format, ...)
{
	va_list args;
	va_start(args, format);
	const std::string text = said(format, args);
	va_end(args);
	std::lock_guard guard(lock);
	emit(text);
}

void last_words(const char *format, ...)
{
	va_list args;
	va_start(args, format);
	const std::string text = said(format, args) + "\n";
	va_end(args);
	std::unique_lock guard(lock, std::try_to_lock);
	if (guard.owns_lock() && sink) {
		sink(text.substr(0, text.size() - 1));
		return;
	}
	const int flags = fcntl(STDERR_FILENO, F_GETFL);
	if (flags >= 0)
		fcntl(STDERR_FILENO, F_SETFL, flags | O_NONBLOCK);
	(void)!write(STDERR_FILENO, text.data(), text.size());
}

void line(const std::string &text)
{
	std::lock_guard guard(lock);
	emit(text);
}

void progress(const std::string &text)
{
	std::lock_guard guard(lock);
	if (sink)
		return;
	std::fprintf(stderr, "\r\033[K%s", text.c_str());
	std::fflush(stderr);
	progress_shown = !text.empty();
}

void set_sink(Sink new_sink)
{
	std::lock_guard guard(lock);
	sink = std::move(new_sink);
}

} // namespace diagnostics
