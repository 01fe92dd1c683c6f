// report/utf8.cpp: arbitrary bytes made valid UTF-8.
#include "report/utf8.h"

#include <cstdint>

std::string valid_utf8(std::string_view text, bool xml, size_t *chars)
{
	static const char replacement[] = "\xef\xbf\xbd";
	std::string out;
	out.reserve(text.size());
	size_t count = 0;
	const auto *p = reinterpret_cast<const unsigned char *>(text.data());
	const auto *end = p + text.size();
	while (p < end) {
		const unsigned char c = *p;
		count++;
		if (c < 0x80) {
			out += xml && (c < 0x20 || c == 0x7f) ? ' ' : char(c);
			p++;
			continue;
		}
		// Lead bytes: C2-DF start 2 bytes, E0-EF 3, F0-F4 4; anything else is invalid here.
		const int length = c >= 0xc2 && c <= 0xdf   ? 2
				   : c >= 0xe0 && c <= 0xef ? 3
				   : c >= 0xf0 && c <= 0xf4 ? 4
							    : 0;
		uint32_t code = length == 2 ? c & 0x1f : length == 3 ? c & 0x0f : c & 0x07;
		bool valid = length > 0 && end - p >= length;
		for (int i = 1; valid && i < length; i++) {
			valid = (p[i] & 0xc0) == 0x80;
			code = code << 6 | (p[i] & 0x3f);
		}
		// Overlong forms, surrogates, beyond U+10FFFF, and XML's two non-characters.
		if (valid && ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) ||
			      (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff ||
			      (xml && (code == 0xfffe || code == 0xffff))))
			valid = false;
		if (valid) {
			out.append(reinterpret_cast<const char *>(p), size_t(length));
			p += length;
		} else {
			out += replacement;
			p++;
		}
	}
	if (chars)
		*chars = count;
	return out;
}
