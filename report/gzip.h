// report/gzip.h: gzip, as pprof files and OTLP requests are compressed.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

// data as one gzip member, at zlib's fastest level (as Go's runtime/pprof: a few percent
// larger, much quicker). Throws RunError when zlib cannot compress (it has no memory).
void write_gzip(std::ostream &out, std::string_view data);
std::string gzipped(std::string_view data);
