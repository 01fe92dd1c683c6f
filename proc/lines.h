// proc/lines.h: text taken line by line, for the parsers of /proc and /tmp files.
#pragma once

#include <cstddef>
#include <string_view>

// Calls fn with each line of text, its '\n' left out (a '\r' before it stays in). A last
// line without a '\n' is a line too; nothing follows a final '\n'.
template <typename Fn>
void for_each_line(std::string_view text, Fn &&fn)
{
	while (!text.empty()) {
		size_t eol = text.find('\n');
		std::string_view line = text.substr(0, eol);
		text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
		fn(line);
	}
}
