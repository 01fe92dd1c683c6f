// proc/kallsyms.cpp: kernel function names from /proc/kallsyms, looked up by address.
#include "proc/kallsyms.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <unistd.h>

#include "base/fd.h"
#include "elf/demangle.h"

namespace {

// Hex digit values by character, -1 for anything else: one load per digit.
constexpr auto hex_values = [] {
	std::array<int8_t, 256> values{};
	values.fill(-1);
	for (int c = '0'; c <= '9'; c++)
		values[c] = static_cast<int8_t>(c - '0');
	for (int c = 'a'; c <= 'f'; c++)
		values[c] = values[c - 'a' + 'A'] = static_cast<int8_t>(c - 'a' + 10);
	return values;
}();

bool is_text_type(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

// A line of kallsyms that names a text symbol: "ADDR TYPE NAME[\t[MODULE]]".
struct TextLine {
	uint64_t address;
	std::string_view name;  // at least one character
	std::string_view after; // what follows the name: the module, if any, after a tab
};

// False for any other line, and for address 0, what unprivileged readers see
// (kptr_restrict): nothing to look up there.
bool parse_text_line(std::string_view line, TextLine &out)
{
	uint64_t address = 0;
	size_t digits = 0;
	for (int d; digits < line.size() && (d = hex_values[static_cast<uint8_t>(line[digits])]) >= 0; digits++)
		address = address << 4 | static_cast<uint64_t>(d);
	// "ADDR T N": a space, the type, a space, then at least one character of name.
	const std::string_view rest = line.substr(digits);
	if (digits == 0 || digits > 16 || rest.size() < 4 || rest[0] != ' ' || rest[2] != ' ')
		return false;
	if (!is_text_type(rest[1]) || address == 0)
		return false;
	const std::string_view name_and_after = rest.substr(3);
	const size_t tab = name_and_after.find('\t');
	out.address = address;
	out.name = name_and_after.substr(0, tab);
	out.after = tab == std::string_view::npos ? std::string_view() : name_and_after.substr(tab);
	return !out.name.empty();
}

} // namespace

// Lines are added as they are read, so /proc/kallsyms (5 MB of text) never has to be
// held whole.
class KernelSymbols::Builder {
public:
	explicit Builder(size_t expected_bytes)
	{
		result_.modules_.push_back(Module{});
		// About a third of each line is a name, half the lines are text symbols.
		result_.names_.reserve(expected_bytes / 3);
		result_.symbols_.reserve(expected_bytes / 40);
	}

	// Whole lines only: text ends at a line's end (or at the end of the input).
	void add(std::string_view text)
	{
		const char *p = text.data();
		const char *end = p + text.size();
		while (p < end) {
			const char *line_end = static_cast<const char *>(memchr(p, '\n', end - p));
			if (!line_end)
				line_end = end;
			add_line(p, line_end);
			p = line_end + 1;
		}
	}

	KernelSymbols finish()
	{
		auto &symbols = result_.symbols_;
		// kallsyms lists vmlinux in address order, then modules and BPF programs, which
		// need not be: most often there is nothing to sort.
		if (!std::is_sorted(symbols.begin(), symbols.end(), by_address))
			std::stable_sort(symbols.begin(), symbols.end(), by_address);
		// One symbol per address: the name people know.
		size_t kept = 0;
		for (size_t i = 0; i < symbols.size();) {
			size_t best = i, j = i + 1;
			for (; j < symbols.size() && symbols[j].address == symbols[i].address; j++)
				if (preferred(symbols[j], symbols[best]))
					best = j;
			symbols[kept++] = symbols[best];
			i = j;
		}
		// No shrink_to_fit: copying megabytes costs more than the reserve left untouched,
		// which never becomes resident.
		symbols.resize(kept);
		for (const Symbol &s : symbols) {
			Module &mod = result_.modules_[s.module];
			mod.lowest = std::min(mod.lowest, s.address);
			if (s.module == 0)
				result_.core_end_ = std::max(result_.core_end_, s.address);
		}
		return std::move(result_);
	}

private:
	static bool by_address(const Symbol &a, const Symbol &b) { return a.address < b.address; }

	std::string_view name_of(const Symbol &s) const
	{
		return std::string_view(result_.names_).substr(s.name_offset, s.name_size);
	}

	// Of several names at one address, the one people know: "srso_alias_untrain_ret"
	// over "_text", "getname" over "__x64_sys_...". Fewer leading underscores wins, then
	// the name first in byte order.
	bool preferred(const Symbol &a, const Symbol &b) const
	{
		std::string_view an = name_of(a), bn = name_of(b);
		size_t au = leading_underscores(an), bu = leading_underscores(bn);
		return au != bu ? au < bu : an < bn;
	}

	void add_line(const char *q, const char *line_end)
	{
		TextLine text;
		if (!parse_text_line(std::string_view(q, static_cast<size_t>(line_end - q)), text) ||
		    text.name.size() > UINT16_MAX)
			return;
		const uint64_t address = text.address;
		const char *name = text.name.data();
		const size_t name_size = text.name.size();

		// A module, when there is one, follows the name after a tab.
		uint16_t module = 0;
		const char *m = name + name_size;
		while (m < line_end && (*m == '\t' || *m == ' '))
			m++;
		if (m < line_end && *m == '[') {
			const char *m_end = static_cast<const char *>(memchr(m, ']', line_end - m));
			if (m_end && m_end > m + 1) {
				std::string_view module_name(m + 1, static_cast<size_t>(m_end - m - 1));
				// Lines of one module come together: look it up once.
				if (module_name != result_.modules_[last_module_].name) {
					auto &modules = result_.modules_;
					auto it = std::find_if(modules.begin() + 1, modules.end(),
							       [&](const Module &mod) { return mod.name == module_name; });
					if (it == modules.end()) {
						if (modules.size() > UINT16_MAX)
							return;
						modules.push_back(Module{std::string(module_name)});
						it = modules.end() - 1;
					}
					last_module_ = static_cast<uint16_t>(it - modules.begin());
				}
				module = last_module_;
			}
		}

		if (result_.names_.size() + name_size > UINT32_MAX)
			return;
		result_.symbols_.push_back(Symbol{address, static_cast<uint32_t>(result_.names_.size()),
						  static_cast<uint16_t>(name_size), module});
		result_.names_.append(name, name_size);
	}

	KernelSymbols result_;
	uint16_t last_module_ = 0;
};

KernelSymbols KernelSymbols::parse(std::string_view text)
{
	Builder builder(text.size());
	builder.add(text);
	return builder.finish();
}

KernelSymbols KernelSymbols::load(const std::string &path)
{
	UniqueFd fd = open_read_only(path.c_str());
	if (!fd)
		return KernelSymbols{};
	// Reserved, not touched: only what the names use becomes resident.
	Builder builder(8 << 20);
	std::vector<char> buffer(256 * 1024);
	size_t kept = 0; // the start of a line not yet ended, moved to the front
	for (;;) {
		if (kept == buffer.size())
			buffer.resize(buffer.size() * 2); // a line longer than the buffer
		ssize_t n = read(fd.get(), buffer.data() + kept, buffer.size() - kept);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return KernelSymbols{};
		if (n == 0)
			break;
		const size_t filled = kept + size_t(n);
		const char *last_newline = static_cast<const char *>(memrchr(buffer.data(), '\n', filled));
		const size_t whole = last_newline ? size_t(last_newline - buffer.data()) + 1 : 0;
		builder.add(std::string_view(buffer.data(), whole));
		kept = filled - whole;
		std::memmove(buffer.data(), buffer.data() + whole, kept);
	}
	builder.add(std::string_view(buffer.data(), kept));
	return builder.finish();
}

std::optional<KernelSymbols::Match> KernelSymbols::find(uint64_t address) const
{
	if (symbols_.empty() || address < symbols_.front().address || address > symbols_.back().address)
		return std::nullopt;
	auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
				   [](uint64_t a, const Symbol &s) { return a < s.address; });
	const Symbol &s = *(it - 1);
	const Module &mod = modules_[s.module];
	Match match;
	match.name = std::string_view(names_).substr(s.name_offset, s.name_size);
	match.offset = address - s.address;
	match.module = mod.name;
	match.module_offset = s.module == 0 ? address : address - mod.lowest;
	return match;
}

std::vector<KernelTextRange> kernel_text_ranges(std::string_view text, std::span<const std::string_view> names)
{
	std::vector<KernelTextRange> ranges(names.size());
	std::vector<uint64_t> addresses; // every text symbol's
	addresses.reserve(text.size() / 40);
	while (!text.empty()) {
		const size_t newline = text.find('\n');
		const std::string_view line = text.substr(0, newline);
		text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
		TextLine symbol;
		if (!parse_text_line(line, symbol))
			continue;
		addresses.push_back(symbol.address);
		for (size_t i = 0; i < names.size(); i++)
			if (symbol.name == names[i] && !ranges[i].start)
				ranges[i].start = symbol.address;
	}
	std::sort(addresses.begin(), addresses.end());
	for (KernelTextRange &range : ranges) {
		auto next = std::upper_bound(addresses.begin(), addresses.end(), range.start);
		if (range.start && next != addresses.end())
			range.end = *next;
		else
			range = {};
	}
	return ranges;
}
