// report/window.cpp: naming the windows of --interval.
#include "report/window.h"

#include <time.h>

#include <cstdio>
#include <vector>

std::string expand_time_fields(const std::string &pattern, int64_t realtime_ns)
{
	if (pattern.find('%') == std::string::npos)
		return pattern;
	const time_t seconds = time_t(realtime_ns / 1000000000);
	tm local{};
	localtime_r(&seconds, &local);
	// strftime returns 0 both for "too small" and for an empty result: grow a few times.
	for (size_t size = pattern.size() * 4 + 64; size <= 65536; size *= 4) {
		std::vector<char> out(size);
		const size_t n = strftime(out.data(), out.size(), pattern.c_str(), &local);
		if (n > 0)
			return std::string(out.data(), n);
	}
	return "";
}

std::string unused_window_path(const std::string &path, const std::set<std::string> &taken)
{
	if (!taken.count(path))
		return path;
	// The extension: from the last dot of the file name (not a leading one), or from the
	// one before it when the last is a compression's (.gz).
	const size_t base = path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1;
	auto dot_before = [&](size_t end) {
		const size_t dot = end > base ? path.rfind('.', end - 1) : std::string::npos;
		return dot != std::string::npos && dot > base ? dot : std::string::npos;
	};
	size_t dot = dot_before(path.size());
	if (dot != std::string::npos && path.compare(dot, std::string::npos, ".gz") == 0 &&
	    dot_before(dot) != std::string::npos)
		dot = dot_before(dot);
	const size_t at = dot == std::string::npos ? path.size() : dot;
	for (unsigned n = 1;; n++) {
		std::string candidate = path.substr(0, at) + "." + std::to_string(n) + path.substr(at);
		if (!taken.count(candidate))
			return candidate;
	}
}

std::string rfc3339_time(int64_t realtime_ns)
{
	const time_t seconds = time_t(realtime_ns / 1000000000);
	tm local{};
	localtime_r(&seconds, &local);
	char date[32], zone[8];
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &local);
	strftime(zone, sizeof(zone), "%z", &local); // +0000
	char text[64];
	std::snprintf(text, sizeof(text), "%s.%03d%.3s:%.2s", date, int(realtime_ns / 1000000 % 1000), zone, zone + 3);
	return text;
}

std::string window_account(uint64_t taken, uint64_t stored, uint64_t lost, bool off_cpu)
{
	const char *what = off_cpu ? (taken == 1 ? " time off the CPU, " : " times off the CPU, ")
				   : (taken == 1 ? " sample taken, " : " samples taken, ");
	std::string text = std::to_string(taken) + what + std::to_string(stored) + " stored";
	if (lost)
		text += ", " + std::to_string(lost) + " lost";
	return text;
}

std::string window_line(int64_t start_ns, int64_t end_ns, const std::string &account)
{
	return "# window " + rfc3339_time(start_ns) + " " + rfc3339_time(end_ns) + ": " + account;
}
