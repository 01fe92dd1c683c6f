// report/protobuf.h: the few protobuf wire-format pieces the pprof writer needs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// Appends fields to a message. Submessages are written into their own ProtoMessage and
// then added whole, since the wire format puts a length before them.
class ProtoMessage {
public:
	// Scalars that are 0 are left out, as proto3 does: readers take absence as 0.
	void add_uint(uint32_t field, uint64_t value)
	{
		if (value == 0)
			return;
		key(field, varint_type);
		varint(value);
	}
	// int64 fields go on the wire as their two's complement, ten bytes when negative.
	void add_int(uint32_t field, int64_t value) { add_uint(field, uint64_t(value)); }
	void add_bool(uint32_t field, bool value) { add_uint(field, value ? 1 : 0); }

	// Strings, bytes and submessages. Repeated string fields keep empty entries
	// (string_table[0] must be ""), so nothing is skipped here.
	void add_bytes(uint32_t field, std::string_view bytes)
	{
		key(field, length_type);
		varint(bytes.size());
		data_.append(bytes);
	}
	void add_message(uint32_t field, const ProtoMessage &message)
	{
		add_bytes(field, message.data_);
	}

	// A packed repeated varint field: one key and length for the whole list.
	void add_packed(uint32_t field, const std::vector<uint64_t> &values)
	{
		if (values.empty())
			return;
		size_t size = 0;
		for (uint64_t v : values)
			size += varint_size(v);
		key(field, length_type);
		varint(size);
		for (uint64_t v : values)
			varint(v);
	}

	// Fields of the same message written elsewhere: a message is its fields, in any order.
	void append(const ProtoMessage &fields) { data_ += fields.data_; }

	const std::string &data() const { return data_; }
	std::string take() { return std::move(data_); }
	void clear() { data_.clear(); }

private:
	static constexpr uint32_t varint_type = 0, length_type = 2;

	void key(uint32_t field, uint32_t type) { varint(uint64_t(field) << 3 | type); }
	void varint(uint64_t value)
	{
		while (value >= 0x80) {
			data_ += char((value & 0x7f) | 0x80);
			value >>= 7;
		}
		data_ += char(value);
	}
	static size_t varint_size(uint64_t value)
	{
		size_t n = 1;
		while (value >= 0x80) {
			value >>= 7;
			n++;
		}
		return n;
	}

	std::string data_;
};
