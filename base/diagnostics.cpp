// base/diagnostics.cpp: lines to stderr, or to the sink set, one at a time.
#include "base/diagnostics.h"

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

} // namespace

void say(const char *format, ...)
{
	va_list args;
	va_start(args, format);
	va_list again;
	va_copy(again, args);
	const int n = std::vsnprintf(nullptr, 0, format, args);
	va_end(args);
	std::string text = "profile: ";
	if (n > 0) {
		const size_t prefix = text.size();
		text.resize(prefix + size_t(n) + 1);
		std::vsnprintf(text.data() + prefix, size_t(n) + 1, format, again);
		text.resize(prefix + size_t(n));
	}
	va_end(again);
	std::lock_guard guard(lock);
	emit(text);
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
