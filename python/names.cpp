// python/names.cpp: code objects read from a live process, and their line tables decoded
// (the formats of CPython's Objects/lnotab_notes.txt and Objects/locations.md).
#include "python/names.h"

#include <cstring>

#include "python/runtime.h"

namespace {

constexpr size_t kMaxName = 1024;      // characters of a name or file name kept
constexpr size_t kMaxTable = 1u << 20; // bytes of a line table read
// A line past this is a table we misread, not a source file: no line.
constexpr int64_t kMaxLine = 1 << 24;

uint32_t checked_line(int64_t line)
{
	return line > 0 && line <= kMaxLine ? uint32_t(line) : 0;
}

void append_utf8(std::string &out, uint32_t c)
{
	if (c < 0x80) {
		out += char(c);
	} else if (c < 0x800) {
		out += char(0xc0 | c >> 6);
		out += char(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		out += char(0xe0 | c >> 12);
		out += char(0x80 | (c >> 6 & 0x3f));
		out += char(0x80 | (c & 0x3f));
	} else if (c < 0x110000) {
		out += char(0xf0 | c >> 18);
		out += char(0x80 | (c >> 12 & 0x3f));
		out += char(0x80 | (c >> 6 & 0x3f));
		out += char(0x80 | (c & 0x3f));
	}
}

// A str object: compact ones only (every str a code object holds is).
bool read_string(int mem, uint64_t address, const PythonLayout &layout, std::string &out)
{
	struct {
		uint64_t refcount, type;
		int64_t length;
		int64_t hash;
		uint32_t state;
	} head{};
	if (!address || !read_process_memory(mem, address, &head, sizeof(head)))
		return false;
	const uint32_t kind = head.state >> 2 & 7, compact = head.state >> 5 & 1, ascii = head.state >> 6 & 1;
	if (!compact || head.length < 0 || (kind != 1 && kind != 2 && kind != 4))
		return false;
	const size_t length = std::min<size_t>(size_t(head.length), kMaxName);
	std::vector<uint8_t> data(length * kind);
	if (!read_process_memory(mem, address + (ascii ? layout.ascii_data : layout.compact_data), data.data(),
				 data.size()))
		return false;
	out.clear();
	for (size_t i = 0; i < length; i++) {
		uint32_t c = 0;
		std::memcpy(&c, data.data() + i * kind, kind);
		if (ascii && c >= 0x80)
			return false;
		append_utf8(out, c);
	}
	return true;
}

// A bytes object's contents.
bool read_bytes(int mem, uint64_t address, std::vector<uint8_t> &out)
{
	int64_t size = 0;
	if (!address || !read_process_memory(mem, address + 16, &size, sizeof(size)) || size < 0 ||
	    size_t(size) > kMaxTable)
		return false;
	out.resize(size_t(size));
	return out.empty() || read_process_memory(mem, address + 32, out.data(), out.size());
}

// ≤3.9: (bytecode bytes, signed line delta) pairs; the line of a byte offset is the one of
// the last pair that starts at or before it.
uint32_t lnotab_line(std::span<const uint8_t> table, int64_t line, uint32_t offset)
{
	uint32_t address = 0;
	for (size_t i = 0; i + 1 < table.size(); i += 2) {
		address += table[i];
		if (address > offset)
			break;
		line += int8_t(table[i + 1]);
	}
	return checked_line(line);
}

// 3.10: (bytecode bytes, signed line delta, -128 for none) pairs, each a range.
uint32_t linetable_line(std::span<const uint8_t> table, int64_t line, uint32_t offset)
{
	uint32_t end = 0;
	for (size_t i = 0; i + 1 < table.size(); i += 2) {
		const uint32_t start = end;
		end += table[i];
		const int8_t delta = int8_t(table[i + 1]);
		const bool none = delta == -128;
		if (!none)
			line += delta;
		if (offset >= start && offset < end)
			return none ? 0 : checked_line(line);
	}
	return 0;
}

// 3.11+: entries of 1 to 8 code units; a first byte 1CCCCLLL (code, length - 1), then the
// line as the code says.
struct Varints {
	std::span<const uint8_t> table;
	size_t at = 0;
	uint32_t read()
	{
		uint32_t value = 0;
		for (int shift = 0; at < table.size() && shift < 32; shift += 6) {
			const uint8_t b = table[at++];
			value |= uint32_t(b & 63) << shift;
			if (!(b & 64))
				break;
		}
		return value;
	}
	int32_t read_signed()
	{
		const uint32_t value = read();
		return value & 1 ? -int32_t(value >> 1) : int32_t(value >> 1);
	}
};

uint32_t locations_line(std::span<const uint8_t> table, int64_t line, uint32_t index)
{
	Varints in{table};
	uint32_t end = 0;
	while (in.at < table.size()) {
		const uint8_t first = table[in.at++];
		if (!(first & 0x80))
			return 0; // not the start of an entry: a table we do not read
		const int code = first >> 3 & 15;
		const uint32_t start = end;
		end += (first & 7) + 1;
		bool none = false;
		if (code == 15) {
			none = true;
		} else if (code == 14) {
			line += in.read_signed();
			in.read(), in.read(), in.read(); // end line, columns
		} else if (code == 13) {
			line += in.read_signed();
		} else if (code >= 10) {
			line += code - 10;
			in.at += 2; // columns
		} else {
			in.at += 1; // column
		}
		if (index >= start && index < end)
			return none ? 0 : checked_line(line);
	}
	return 0;
}

} // namespace

uint32_t python_line(LineTable kind, std::span<const uint8_t> table, int first_line, uint32_t index)
{
	switch (kind) {
	case LineTable::Lnotab:
		return lnotab_line(table, first_line, index * 2);
	case LineTable::Linetable:
		return linetable_line(table, first_line, index * 2);
	case LineTable::Locations:
		return locations_line(table, first_line, index);
	}
	return 0;
}

namespace {

// The code object's first bytes, when it is one (its type is code_type).
bool read_code(int mem_fd, uint64_t code, uint64_t code_type, uint8_t (&object)[kPythonCodeRead])
{
	uint64_t type = 0;
	if (!read_process_memory(mem_fd, code, object, sizeof(object)))
		return false;
	std::memcpy(&type, object + 8, sizeof(type));
	return type == code_type;
}

uint64_t code_field(const uint8_t (&object)[kPythonCodeRead], uint16_t offset)
{
	uint64_t value = 0;
	std::memcpy(&value, object + offset, sizeof(value));
	return value;
}

bool fingerprint_of(int mem_fd, const uint8_t (&object)[kPythonCodeRead], const PythonLayout &layout, uint64_t &out)
{
	const uint64_t name = code_field(object, python_fingerprint_name(layout));
	uint64_t head[2]; // the name's length and hash
	int32_t first_line = 0;
	if (!read_process_memory(mem_fd, name + 16, head, sizeof(head)))
		return false;
	std::memcpy(&first_line, object + layout.code_firstlineno, sizeof(first_line));
	out = python_fingerprint(name, code_field(object, layout.code_filename), first_line, head[0], head[1]);
	return true;
}

} // namespace

std::optional<uint64_t> python_code_fingerprint(int mem_fd, uint64_t code, const PythonLayout &layout)
{
	uint8_t object[kPythonCodeRead];
	uint64_t out = 0;
	if (!read_process_memory(mem_fd, code, object, sizeof(object)) || !fingerprint_of(mem_fd, object, layout, out))
		return std::nullopt;
	return out;
}

bool PythonNames::learn(const python_code &seen, uint64_t code_type, const PythonLayout &layout, int mem_fd)
{
	uint8_t object[kPythonCodeRead];
	uint64_t fingerprint = 0;
	if (!read_code(mem_fd, seen.code, code_type, object) || !fingerprint_of(mem_fd, object, layout, fingerprint) ||
	    fingerprint != seen.fingerprint)
		return false;
	Code named;
	int32_t first_line = 0;
	std::memcpy(&first_line, object + layout.code_firstlineno, sizeof(first_line));
	named.first_line = first_line;
	named.lines = layout.lines;
	const bool qualified = layout.code_qualname >= 0 &&
			       read_string(mem_fd, code_field(object, uint16_t(layout.code_qualname)), layout, named.function);
	if (!qualified && !read_string(mem_fd, code_field(object, layout.code_name), layout, named.function))
		return false;
	if (!read_string(mem_fd, code_field(object, layout.code_filename), layout, named.file))
		return false;
	read_bytes(mem_fd, code_field(object, layout.code_lines), named.table);
	// The fingerprint again: the object freed and its address taken while it was read.
	uint64_t after = 0;
	if (!read_code(mem_fd, seen.code, code_type, object) || !fingerprint_of(mem_fd, object, layout, after) ||
	    after != fingerprint)
		return false;
	named.kept = {{seen.pid, 0, seen.code}, window_};
	codes_.insert_or_assign(Key{seen.pid, seen.id}, std::move(named));
	return true;
}

void PythonNames::end_window(const ForgetCode &forget)
{
	forget_unnamed_codes(codes_, ++window_, forget);
}

bool PythonNames::name(uint32_t pid, uint64_t id, uint32_t index, PythonFrameName &out) const
{
	auto it = codes_.find({pid, id});
	if (it == codes_.end())
		return false;
	const Code &c = it->second;
	c.kept.window = window_;
	out.function = c.function;
	out.file = c.file;
	out.line = index == PYTHON_NO_INDEX ? 0 : python_line(c.lines, c.table, c.first_line, index);
	return true;
}
