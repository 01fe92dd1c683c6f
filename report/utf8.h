// report/utf8.h: names are arbitrary bytes (symbols, comms, file names); the SVG's XML and
// pprof's protobuf strings carry only valid UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

// text with each byte that does not begin a valid UTF-8 sequence (a stray or missing
// continuation byte, an overlong form, a surrogate, beyond U+10FFFF) replaced by U+FFFD.
// For XML (xml): control characters become spaces and U+FFFE and U+FFFF, which XML 1.0
// does not allow, become U+FFFD too. chars, when given, receives the code points written.
std::string valid_utf8(std::string_view text, bool xml = false, size_t *chars = nullptr);
