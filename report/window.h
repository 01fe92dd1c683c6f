// report/window.h: naming the windows of --interval: file names from strftime patterns,
// and the line that opens each window's report on stdout.
#pragma once

#include <cstdint>
#include <set>
#include <string>

// pattern with its strftime fields (%Y, %m, %d, %H, %M, %S, ...) filled from the local
// time at realtime_ns (CLOCK_REALTIME). A pattern with no field comes back unchanged.
std::string expand_time_fields(const std::string &pattern, int64_t realtime_ns);

// path, or, when `taken` holds it (a window of this run was written there), the first of
// path with ".1", ".2", ... before its extension that `taken` does not hold: cpu-X.folded,
// cpu-X.1.folded; cpu.pb.gz, cpu.1.pb.gz (".gz" takes the extension before it along); a
// name without an extension gets the number at its end. Windows drift by milliseconds, so
// names of one-second resolution collide, and a pattern coarser than --interval (or with
// no field at all) gives every window of its span one name: no window replaces another.
std::string unused_window_path(const std::string &path, const std::set<std::string> &taken);

// RFC 3339 in local time with milliseconds: "2026-11-23T13:40:01.250+00:00".
std::string rfc3339_time(int64_t realtime_ns);

// How many samples a window holds, for its opening line and the "wrote" line:
// "99 samples taken, 99 stored" (and ", 3 lost" when any were); with --off-cpu, what is
// counted is each time a thread was off the CPU: "99 times off the CPU, 99 stored".
std::string window_account(uint64_t taken, uint64_t stored, uint64_t lost, bool off_cpu = false);

// The line that opens a window's report on stdout:
// "# window 2026-11-23T13:40:01.000+00:00 2026-11-23T13:40:02.000+00:00: 99 samples taken, 99 stored"
std::string window_line(int64_t start_ns, int64_t end_ns, const std::string &account);
