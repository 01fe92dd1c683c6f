// report/protobuf.h: the few protobuf wire-format pieces the pprof and OTLP writers need,
// and a reader of the short answers a server sends back.
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
	// fixed64 fields: eight bytes, little-endian.
	void add_fixed64(uint32_t field, uint64_t value)
	{
		if (value == 0)
			return;
		key(field, fixed64_type);
		for (int i = 0; i < 8; i++)
			data_ += char(value >> (8 * i));
	}

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
	static constexpr uint32_t varint_type = 0, fixed64_type = 1, length_type = 2;

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

// Reads a message's fields one at a time: what a server's answer says, never a whole
// profile. Stops at the first malformed byte.
class ProtoReader {
public:
	explicit ProtoReader(std::string_view data) : data_(data) {}

	// The next field: its number, and its value (varints and fixed ones in number, the
	// rest in bytes). False at the end, or when the rest cannot be read (bad() then says so).
	bool next(uint32_t &field, uint64_t &number, std::string_view &bytes)
	{
		if (at_ >= data_.size() || bad_)
			return false;
		uint64_t key = 0;
		if (!varint(key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
			return fail();
		field = uint32_t(key >> 3);
		bytes = {};
		number = 0;
		switch (key & 7) {
		case 0:
			return varint(number) || fail();
		case 1:
		case 5: {
			const size_t size = (key & 7) == 1 ? 8 : 4;
			if (data_.size() - at_ < size)
				return fail();
			for (size_t i = 0; i < size; i++)
				number |= uint64_t(static_cast<unsigned char>(data_[at_ + i])) << (8 * i);
			at_ += size;
			return true;
		}
		case 2: {
			uint64_t size = 0;
			if (!varint(size) || size > data_.size() - at_)
				return fail();
			bytes = data_.substr(at_, size);
			at_ += size;
			return true;
		}
		default:
			return fail();
		}
	}
	bool bad() const { return bad_; }

private:
	bool varint(uint64_t &value)
	{
		value = 0;
		for (int shift = 0; shift < 64 && at_ < data_.size(); shift += 7) {
			const auto byte = static_cast<unsigned char>(data_[at_++]);
			value |= uint64_t(byte & 0x7f) << shift;
			if (!(byte & 0x80))
				return true;
		}
		return false;
	}
	bool fail()
	{
		bad_ = true;
		return false;
	}

	std::string_view data_;
	size_t at_ = 0;
	bool bad_ = false;
};
