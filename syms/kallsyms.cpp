// syms/kallsyms.cpp: kernel function names from /proc/kallsyms, looked up by address.
#include "syms/kallsyms.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "syms/fd.h"

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

// Of several names at one address, the one people know: "srso_alias_untrain_ret" over
// "_text", "getname" over "__x64_sys_...". Fewer leading underscores wins.
size_t leading_underscores(std::string_view name)
{
	size_t n = 0;
	while (n < name.size() && name[n] == '_')
		n++;
	return n;
}

} // namespace

KernelSymbols KernelSymbols::parse(std::string_view text)
{
	KernelSymbols result;
	result.modules_.push_back(Module{});
	// About a third of each line is the name; reserving avoids regrowing the arena.
	result.names_.reserve(text.size() / 2);
	result.symbols_.reserve(text.size() / 40);

	const char *p = text.data();
	const char *end = p + text.size();
	std::string_view last_module; // lines of one module come together: look it up once
	uint16_t last_module_index = 0;

	while (p < end) {
		const char *line_end = static_cast<const char *>(memchr(p, '\n', end - p));
		if (!line_end)
			line_end = end;
		const char *q = p;
		p = line_end + 1;

		uint64_t address = 0;
		int digits = 0;
		for (int d; q < line_end && (d = hex_values[static_cast<uint8_t>(*q)]) >= 0; q++, digits++)
			address = address << 4 | static_cast<uint64_t>(d);
		// "ADDR T N": a space, the type, a space, then at least one character of name.
		if (digits == 0 || digits > 16 || line_end - q < 4 || q[0] != ' ' || q[2] != ' ')
			continue;
		char type = q[1];
		// Address 0 is what unprivileged readers see (kptr_restrict): nothing to look up.
		if (!is_text_type(type) || address == 0)
			continue;
		const char *name = q + 3;
		// A module, when there is one, follows the name after a tab.
		const char *name_end = static_cast<const char *>(memchr(name, '\t', line_end - name));
		if (!name_end)
			name_end = line_end;
		size_t name_size = static_cast<size_t>(name_end - name);
		if (name_size == 0 || name_size > UINT16_MAX)
			continue;

		uint16_t module = 0;
		const char *m = name_end;
		while (m < line_end && (*m == '\t' || *m == ' '))
			m++;
		if (m < line_end && *m == '[') {
			const char *m_end = static_cast<const char *>(memchr(m, ']', line_end - m));
			if (m_end && m_end > m + 1) {
				std::string_view module_name(m + 1, static_cast<size_t>(m_end - m - 1));
				if (module_name != last_module) {
					auto it = std::find_if(result.modules_.begin() + 1, result.modules_.end(),
							       [&](const Module &mod) { return mod.name == module_name; });
					if (it == result.modules_.end()) {
						if (result.modules_.size() > UINT16_MAX)
							continue;
						result.modules_.push_back(Module{std::string(module_name)});
						it = result.modules_.end() - 1;
					}
					last_module = module_name;
					last_module_index = static_cast<uint16_t>(it - result.modules_.begin());
				}
				module = last_module_index;
			}
		}

		if (result.names_.size() + name_size > UINT32_MAX)
			break;
		result.symbols_.push_back(Symbol{address, static_cast<uint32_t>(result.names_.size()),
						 static_cast<uint16_t>(name_size), module});
		result.names_.append(name, name_size);
	}

	auto name_of = [&](const Symbol &s) {
		return std::string_view(result.names_).substr(s.name_offset, s.name_size);
	};
	std::sort(result.symbols_.begin(), result.symbols_.end(), [&](const Symbol &a, const Symbol &b) {
		if (a.address != b.address)
			return a.address < b.address;
		std::string_view an = name_of(a), bn = name_of(b);
		size_t au = leading_underscores(an), bu = leading_underscores(bn);
		if (au != bu)
			return au < bu;
		return an < bn;
	});
	// After the sort, the preferred name of each address comes first: keep only it.
	auto last = std::unique(result.symbols_.begin(), result.symbols_.end(),
				[](const Symbol &a, const Symbol &b) { return a.address == b.address; });
	result.symbols_.erase(last, result.symbols_.end());
	result.symbols_.shrink_to_fit();

	for (const Symbol &s : result.symbols_) {
		Module &mod = result.modules_[s.module];
		mod.lowest = std::min(mod.lowest, s.address);
	}
	return result;
}

KernelSymbols KernelSymbols::load(const std::string &path)
{
	std::string text;
	if (!read_whole_file(path.c_str(), text))
		return KernelSymbols{};
	return parse(text);
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
