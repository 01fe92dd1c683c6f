// report/gzip.cpp: one gzip member, as readers of .pb.gz and servers taking gzip expect.
#include "report/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include "base/error.h"

void write_gzip(std::ostream &out, std::string_view data)
{
	struct Deflater {
		z_stream stream{};
		Deflater()
		{
			// 15 + 16: the largest window, with a gzip header rather than a zlib one.
			// Fastest level, as Go's runtime/pprof: a few percent larger, much quicker.
			// zlib fails only without memory: the run cannot go on.
			if (deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
					 Z_DEFAULT_STRATEGY) != Z_OK)
				throw RunError("zlib: cannot start compression");
		}
		~Deflater() { deflateEnd(&stream); }
	} deflater;
	z_stream &z = deflater.stream;
	std::vector<char> buffer(1 << 16);
	size_t offset = 0;
	int status = Z_OK;
	while (status != Z_STREAM_END) {
		if (z.avail_in == 0 && offset < data.size()) {
			// avail_in is 32 bits: feed a larger message in pieces.
			const size_t piece = std::min<size_t>(data.size() - offset, 1u << 30);
			z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data() + offset));
			z.avail_in = uInt(piece);
			offset += piece;
		}
		z.next_out = reinterpret_cast<Bytef *>(buffer.data());
		z.avail_out = uInt(buffer.size());
		status = deflate(&z, offset == data.size() ? Z_FINISH : Z_NO_FLUSH);
		if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR)
			throw RunError("zlib: compression failed");
		out.write(buffer.data(), std::streamsize(buffer.size() - z.avail_out));
	}
}


std::string gzipped(std::string_view data)
{
	std::ostringstream out;
	write_gzip(out, data);
	return std::move(out).str();
}
