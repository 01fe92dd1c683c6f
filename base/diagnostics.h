// base/diagnostics.h: the one way any part of the profiler tells the user something: a
// whole line on stderr, "profile: " first, never torn by another thread's line (the table
// builder, the pusher and the main thread all speak). Modules say what they have to say
// here and print nothing themselves; a test or an embedding program sets the sink.
#pragma once

#include <functional>
#include <string>

namespace diagnostics {

// Says "profile: " and the formatted text, as one line.
void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
// Says a line on the way out, just before an _exit: at once, never waiting. Another thread
// may hold the lock while its own line blocks on stderr (a full pipe nobody reads), so this
// one goes past the lock and stdio, with a write that does not block: on a full pipe it is
// lost rather than hold the exit up.
void last_words(const char *format, ...) __attribute__((format(printf, 1, 2)));
// Writes a line as it is, with no prefix (the run's header line, "Sampling at ...").
void line(const std::string &text);
// A progress line for a terminal: written over the last one ("\r"), not ended; progress("")
// clears it. Only the default sink shows it.
void progress(const std::string &text);

// Where whole lines go (each without its newline); an empty sink: stderr again.
using Sink = std::function<void(const std::string &line)>;
void set_sink(Sink sink);

} // namespace diagnostics
