// proc/perf_map.cpp: JIT-compiled function names from /tmp/perf-PID.map, looked up by address.
#include "proc/perf_map.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <map>

#include "base/fd.h"
#include "proc/lines.h"

namespace {

// Hex digits, with or without "0x", advancing s; false when there are none or too many.
bool parse_hex(std::string_view &s, uint64_t &value)
{
	if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s.remove_prefix(2);
	value = 0;
	size_t i = 0;
	for (; i < s.size(); i++) {
		char c = s[i];
		int d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		if (i == 16)
			return false;
		value = value << 4 | uint64_t(d);
	}
	if (i == 0)
		return false;
	s.remove_prefix(i);
	return true;
}

bool skip_blanks(std::string_view &s)
{
	size_t n = 0;
	while (n < s.size() && (s[n] == ' ' || s[n] == '\t'))
		n++;
	s.remove_prefix(n);
	return n > 0;
}

} // namespace

PerfMap PerfMap::parse(std::string_view text)
{
	PerfMap map;
	for_each_line(text, [&](std::string_view line) {
		uint64_t start, size;
		if (!parse_hex(line, start) || !skip_blanks(line) || !parse_hex(line, size) || !skip_blanks(line))
			return;
		while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
			line.remove_suffix(1);
		if (line.empty() || size == 0 || start + size < start || map.symbols_.size() >= UINT32_MAX)
			return;
		map.symbols_.push_back(Symbol{start, start + size, std::string(line)});
	});

	// Latest line first, each keeps what no later line already took.
	std::map<uint64_t, uint64_t> taken; // start -> end, disjoint
	for (size_t i = map.symbols_.size(); i-- > 0;) {
		const uint64_t start = map.symbols_[i].start, end = map.symbols_[i].end;
		auto it = taken.upper_bound(start);
		uint64_t cursor = start;
		if (it != taken.begin())
			cursor = std::max(cursor, std::prev(it)->second);
		for (; cursor < end; ++it) {
			if (it == taken.end() || it->first >= end) {
				map.pieces_.push_back(Piece{cursor, end, uint32_t(i)});
				break;
			}
			if (it->first > cursor)
				map.pieces_.push_back(Piece{cursor, it->first, uint32_t(i)});
			cursor = std::max(cursor, it->second);
		}
		// Merge [start, end) into what is taken.
		uint64_t merged_start = start, merged_end = end;
		auto first = taken.upper_bound(start);
		if (first != taken.begin() && std::prev(first)->second >= start)
			--first;
		auto last = first;
		while (last != taken.end() && last->first <= end) {
			merged_start = std::min(merged_start, last->first);
			merged_end = std::max(merged_end, last->second);
			++last;
		}
		taken.erase(first, last);
		taken.emplace(merged_start, merged_end);
	}
	std::sort(map.pieces_.begin(), map.pieces_.end(), [](const Piece &a, const Piece &b) { return a.start < b.start; });
	return map;
}

std::optional<PerfMap> PerfMap::load(const std::string &path, uid_t owner, int root_dir)
{
	// O_NONBLOCK: a FIFO put in its place must not stall the report.
	UniqueFd fd = root_dir >= 0 ? open_in_root(root_dir, path, true)
				    : UniqueFd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
	struct stat st;
	if (!fd || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != owner) ||
	    uint64_t(st.st_size) > kMaxSize)
		return std::nullopt;
	std::string text(size_t(st.st_size), '\0');
	text.resize(read_up_to(fd.get(), text.data(), text.size()));
	return parse(text);
}

const PerfMap::Symbol *PerfMap::find(uint64_t address) const
{
	auto it = std::upper_bound(pieces_.begin(), pieces_.end(), address,
				   [](uint64_t a, const Piece &p) { return a < p.start; });
	if (it == pieces_.begin())
		return nullptr;
	--it;
	return address < it->end ? &symbols_[it->symbol] : nullptr;
}
