// tests/proto_wire.h: the protobuf wire format as the tests read it, written here from the
// encoding's specification (not the product's encoder), and gunzip.
#pragma once

#include <doctest/doctest.h>

#include <zlib.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

inline std::string gunzip(const std::string &data)
{
	z_stream z{};
	REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK); // gzip only: a zlib or raw stream fails
	z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
	z.avail_in = uInt(data.size());
	std::string out;
	char buffer[65536];
	int status;
	do {
		z.next_out = reinterpret_cast<Bytef *>(buffer);
		z.avail_out = sizeof(buffer);
		status = inflate(&z, Z_NO_FLUSH);
		out.append(buffer, sizeof(buffer) - z.avail_out);
	} while (status == Z_OK);
	inflateEnd(&z);
	REQUIRE_MESSAGE(status == Z_STREAM_END, "not a whole gzip stream");
	CHECK(z.avail_in == 0);
	return out;
}

// A protobuf message as (field, value) pairs: varints and fixed-size values in value, the
// rest in bytes; wire its wire type.
struct Field {
	uint32_t number = 0;
	uint32_t wire = 0;
	uint64_t value = 0;
	std::string bytes;
};

inline uint64_t varint(std::string_view data, size_t &at)
{
	uint64_t value = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		REQUIRE_MESSAGE(at < data.size(), "varint runs past the end");
		const auto byte = static_cast<unsigned char>(data[at++]);
		value |= uint64_t(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return value;
	}
	FAIL("varint longer than 10 bytes");
	return 0;
}

inline std::vector<Field> fields(std::string_view data)
{
	std::vector<Field> out;
	for (size_t at = 0; at < data.size();) {
		const uint64_t key = varint(data, at);
		Field field;
		field.number = uint32_t(key >> 3);
		field.wire = uint32_t(key & 7);
		REQUIRE_MESSAGE(field.number != 0, "field number 0");
		switch (field.wire) {
		case 0:
			field.value = varint(data, at);
			break;
		case 1:
		case 5: {
			const size_t size = field.wire == 1 ? 8 : 4;
			REQUIRE(at + size <= data.size());
			for (size_t i = 0; i < size; i++)
				field.value |= uint64_t(static_cast<unsigned char>(data[at + i])) << (8 * i);
			at += size;
			break;
		}
		case 2: {
			const uint64_t length = varint(data, at);
			REQUIRE(at + length <= data.size());
			field.bytes = data.substr(at, length);
			at += length;
			break;
		}
		default:
			FAIL("wire type " << field.wire << " (groups) is used by neither profile.proto nor OTLP");
		}
		out.push_back(field);
	}
	return out;
}

// A repeated varint field, packed or not.
inline void add_repeated(std::vector<uint64_t> &to, const Field &field)
{
	if (field.wire == 0) {
		to.push_back(field.value);
		return;
	}
	for (size_t at = 0; at < field.bytes.size();)
		to.push_back(varint(field.bytes, at));
}
