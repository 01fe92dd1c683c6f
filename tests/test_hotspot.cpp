// tests/test_hotspot.cpp: HotSpot JVMs: the Serviceability Agent's tables read from fake
// memory (their bad forms too), and from each JDK on this machine running holdout.Split:
// its layout, version and code heaps, and its compiled methods found and named; profiled,
// Split's methods in the split it measured, and holdout.Churn's classes, made, compiled and
// unloaded as it runs, never named as another's.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <bpf/bpf.h>

#include "base/fd.h"
#include "hotspot/hotspot.h"
#include "hotspot/layout.h"
#include "hotspot/metadata_pages.h"
#include "hotspot/names.h"
#include "hotspot/reader.h"
#include "hotspot/runtime.h"
#include "hotspot/scopes.h"
#include "hotspot/vmstructs.h"
#include "proc/memory.h"
#include "tests/support.h"

namespace {

// A process's memory made by hand: the pages written to, zeros where nothing was put; the
// rest unreadable.
class FakeMemory {
public:
	void put(uint64_t address, const void *bytes, size_t size)
	{
		const auto *b = static_cast<const uint8_t *>(bytes);
		for (size_t i = 0; i < size; i++) {
			std::vector<uint8_t> &page = pages_[(address + i) / 4096];
			page.resize(4096);
			page[(address + i) % 4096] = b[i];
		}
	}
	void put_word(uint64_t address, uint64_t value) { put(address, &value, 8); }
	void put_text(uint64_t address, const std::string &text) { put(address, text.c_str(), text.size() + 1); }
	ReadMemory reader() const
	{
		return [this](uint64_t address, void *out, size_t size) {
			auto *o = static_cast<uint8_t *>(out);
			for (size_t i = 0; i < size; i++) {
				auto at = pages_.find((address + i) / 4096);
				if (at == pages_.end())
					return false;
				o[i] = at->second[(address + i) % 4096];
			}
			return true;
		};
	}

private:
	std::map<uint64_t, std::vector<uint8_t>> pages_;
};

// The three tables in fake memory, each with its stride and members' offsets as HotSpot
// lays them out (x86-64), holding the entries given; symbols at 0x1000 on.
struct FakeJvm {
	FakeMemory memory;
	std::map<std::string, uint64_t> symbols;
	uint64_t next_text = 0x100000;

	uint64_t text(const std::string &s)
	{
		const uint64_t at = next_text;
		memory.put_text(at, s);
		next_text += s.size() + 1;
		return at;
	}
	void symbol(const std::string &name, uint64_t value)
	{
		const uint64_t at = 0x1000 + 8 * symbols.size();
		symbols["gHotSpot" + name] = at;
		memory.put_word(at, value);
	}
	// VMStructEntry: typeName, fieldName, typeString, isStatic (int32), offset, address.
	void structs(const std::vector<std::tuple<std::string, std::string, uint64_t, uint64_t>> &entries)
	{
		const uint64_t base = 0x200000;
		for (size_t i = 0; i < entries.size(); i++) {
			const auto &[type, field, offset, address] = entries[i];
			memory.put_word(base + 48 * i, text(type));
			memory.put_word(base + 48 * i + 8, text(field));
			memory.put_word(base + 48 * i + 16, 0);
			memory.put_word(base + 48 * i + 24, address != 0);
			memory.put_word(base + 48 * i + 32, offset);
			memory.put_word(base + 48 * i + 40, address);
		}
		for (int k = 0; k < 6; k++)
			memory.put_word(base + 48 * entries.size() + 8 * k, 0);
		symbol("VMStructs", base);
		symbol("VMStructEntryArrayStride", 48);
		symbol("VMStructEntryTypeNameOffset", 0);
		symbol("VMStructEntryFieldNameOffset", 8);
		symbol("VMStructEntryIsStaticOffset", 24);
		symbol("VMStructEntryTypeStringOffset", 16);
		symbol("VMStructEntryOffsetOffset", 32);
		symbol("VMStructEntryAddressOffset", 40);
	}
	// VMTypeEntry: typeName, superclassName, isOop, isInteger, isUnsigned (int32s), size.
	void types(const std::vector<std::pair<std::string, uint64_t>> &entries)
	{
		const uint64_t base = 0x300000;
		for (size_t i = 0; i < entries.size(); i++) {
			memory.put_word(base + 40 * i, text(entries[i].first));
			for (int k = 1; k < 4; k++)
				memory.put_word(base + 40 * i + 8 * k, 0);
			memory.put_word(base + 40 * i + 32, entries[i].second);
		}
		for (int k = 0; k < 5; k++)
			memory.put_word(base + 40 * entries.size() + 8 * k, 0);
		symbol("VMTypes", base);
		symbol("VMTypeEntryArrayStride", 40);
		symbol("VMTypeEntryTypeNameOffset", 0);
		symbol("VMTypeEntrySizeOffset", 32);
	}
	// VMIntConstantEntry: name, value (int32).
	void constants(const std::vector<std::pair<std::string, int32_t>> &entries)
	{
		const uint64_t base = 0x400000;
		for (size_t i = 0; i < entries.size(); i++) {
			memory.put_word(base + 16 * i, text(entries[i].first));
			memory.put_word(base + 16 * i + 8, uint64_t(uint32_t(entries[i].second)));
		}
		memory.put_word(base + 16 * entries.size(), 0);
		memory.put_word(base + 16 * entries.size() + 8, 0);
		symbol("VMIntConstants", base);
		symbol("VMIntConstantEntryArrayStride", 16);
		symbol("VMIntConstantEntryNameOffset", 0);
		symbol("VMIntConstantEntryValueOffset", 8);
	}
	Result<HotSpotTables> read() const
	{
		return HotSpotTables::read(
			[this](std::string_view name) -> std::optional<uint64_t> {
				auto at = symbols.find("gHotSpot" + std::string(name));
				return at == symbols.end() ? std::nullopt : std::optional(at->second);
			},
			memory.reader());
	}
};

FakeJvm small_jvm()
{
	FakeJvm jvm;
	jvm.structs({{"CodeBlob", "_frame_size", 0x2c, 0}, {"CodeCache", "_heaps", 0, 0x7f0000001000}});
	jvm.types({{"ConstMethod", 56}, {"HeapBlock", 16}});
	jvm.constants({{"frame::interpreter_frame_method_offset", -3}});
	return jvm;
}

// HotSpot's writers, as compressedStream.cpp and method.cpp write: UNSIGNED5 with `excluded`
// low bytes never written (1 from JDK 20 on), signed numbers zigzagged, a line table's pairs.
void put_number(std::vector<uint8_t> &out, uint32_t value, uint8_t excluded)
{
	const uint32_t low = 256 - 64 - excluded; // L: values a single byte holds
	for (int i = 0; i < 4 && value >= low; i++) {
		out.push_back(uint8_t(excluded + low + (value - low) % 64));
		value = (value - low) / 64;
	}
	out.push_back(uint8_t(excluded + value));
}

std::vector<uint8_t> line_table(const std::vector<std::pair<uint32_t, uint32_t>> &pairs, uint8_t excluded)
{
	std::vector<uint8_t> out;
	uint32_t bci = 0, line = 0;
	for (const auto &[b, l] : pairs) {
		const int32_t bci_delta = int32_t(b - bci), line_delta = int32_t(l - line);
		bci = b, line = l;
		if (bci_delta >= 0 && bci_delta < 32 && line_delta >= 0 && line_delta < 8 && (bci_delta << 3 | line_delta) != 0xff) {
			out.push_back(uint8_t(bci_delta << 3 | line_delta));
		} else {
			out.push_back(0xff);
			put_number(out, uint32_t(bci_delta << 1) ^ uint32_t(bci_delta >> 31), excluded);
			put_number(out, uint32_t(line_delta << 1) ^ uint32_t(line_delta >> 31), excluded);
		}
	}
	out.push_back(0);
	return out;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("hotspot: the VM tables read from memory give fields' offsets, statics' addresses, sizes and constants")
{
	FakeJvm jvm = small_jvm();
	Result<HotSpotTables> tables = jvm.read();
	REQUIRE_MESSAGE(tables.ok(), tables.error());
	CHECK(tables->field("CodeBlob", "_frame_size") == 0x2c);
	CHECK(tables->field("CodeCache", "_heaps") == 0x7f0000001000);
	CHECK(!tables->field("CodeBlob", "_name"));
	CHECK(tables->size_of("ConstMethod") == 56);
	CHECK(tables->constant("frame::interpreter_frame_method_offset") == -3);
	CHECK(tables->field_count() == 2);
	CHECK(tables->type_count() == 2);
	CHECK(tables->constant_count() == 1);
	// A table this small lacks most of what a walk needs, and says the first missing.
	Result<HotSpotLayout> layout = hotspot_layout(*tables);
	REQUIRE(!layout.ok());
	CHECK(layout.error().starts_with("its VM tables lack "));
}

TEST_CASE("hotspot: bad VM tables give a reason, never a read without end")
{
	SUBCASE("not exported")
	{
		FakeJvm jvm = small_jvm();
		jvm.symbols.erase("gHotSpotVMTypes");
		CHECK(jvm.read().error() == "its VM tables are not exported");
	}
	SUBCASE("a JVM starting: the table's pointer not set yet")
	{
		FakeJvm jvm = small_jvm();
		jvm.memory.put_word(jvm.symbols["gHotSpotVMStructs"], 0);
		CHECK(jvm.read().error() == "its VM tables are not set up yet");
	}
	SUBCASE("a member past the stride")
	{
		FakeJvm jvm = small_jvm();
		jvm.memory.put_word(jvm.symbols["gHotSpotVMStructEntryAddressOffset"], 44);
		CHECK(jvm.read().error() == "its VM tables have an unknown layout");
	}
	SUBCASE("no end: the terminating entry unreadable")
	{
		FakeJvm jvm = small_jvm();
		jvm.memory.put_word(jvm.symbols["gHotSpotVMIntConstants"], 0x500000);
		CHECK(jvm.read().error() == "its VM tables cannot be read");
	}
	SUBCASE("a name that cannot be read")
	{
		FakeJvm jvm = small_jvm();
		jvm.memory.put_word(0x200000, 0x900000);
		CHECK(jvm.read().error() == "its VM tables' names cannot be read");
	}
	SUBCASE("a name without its end")
	{
		FakeJvm jvm = small_jvm();
		const std::string endless(kMaxHotSpotTableName + 10, 'x');
		jvm.memory.put(0x900000, endless.data(), endless.size());
		jvm.memory.put_word(0x200000, 0x900000);
		CHECK(jvm.read().error() == "its VM tables' names cannot be read");
	}
}

TEST_CASE("hotspot: metadata read a page at a time reads as the memory does, each page once, until classes are unloaded")
{
	FakeMemory memory;
	for (uint64_t i = 0; i < 1024; i++) // two pages, 0x10000 and 0x11000, of words 0, 1, ...
		memory.put_word(0x10000 + 8 * i, i);
	size_t direct_reads = 0;
	const ReadMemory direct = [&](uint64_t address, void *out, size_t size) {
		direct_reads++;
		return memory.reader()(address, out, size);
	};
	MetadataPages pages;
	pages.start(7, 0);
	const ReadMemory paged = pages.reader(direct);
	// Fields of both pages, one across their boundary: two reads of the process in all.
	uint64_t word = 0;
	for (uint64_t i : {3, 0, 511, 1000, 2, 700}) {
		REQUIRE(read_value(paged, 0x10000 + 8 * i, word));
		CHECK(word == i);
	}
	uint8_t across[16];
	REQUIRE(paged(0x10ff8, across, sizeof(across)));
	CHECK(std::memcmp(across, "\xff\x01\0\0\0\0\0\0\0\x02\0\0\0\0\0\0", 16) == 0);
	CHECK(direct_reads == 2);
	CHECK(pages.size() == 2);
	// A read from a page kept onto one the process does not map goes to the process as
	// asked, and fails as the memory does.
	memory.put_word(0x20ff8, 42);
	REQUIRE(read_value(paged, 0x20ff8, word));
	CHECK(word == 42);
	CHECK(pages.size() == 3);
	CHECK_FALSE(paged(0x20ff8, across, sizeof(across)));
	// The memory changes: the pages kept still read as they were, until the count of classes
	// unloaded moves (or another process is read), and every page is read again.
	memory.put_word(0x10000, 99);
	REQUIRE(read_value(paged, 0x10000, word));
	CHECK(word == 0);
	pages.start(7, 0);
	REQUIRE(read_value(paged, 0x10000, word));
	CHECK(word == 0);
	pages.start(7, 1);
	REQUIRE(read_value(paged, 0x10000, word));
	CHECK(word == 99);
	memory.put_word(0x10000, 100);
	pages.start(8, 1);
	REQUIRE(read_value(paged, 0x10000, word));
	CHECK(word == 100);
	// Reads larger than a page go to the process as they are.
	std::vector<uint8_t> big(2 * 4096);
	const size_t before = direct_reads;
	REQUIRE(paged(0x10000, big.data(), big.size()));
	CHECK(direct_reads == before + 1);
}

TEST_CASE("hotspot: the interpreter's blob and the call stub's are found by their pcs through the segment map, and "
	  "fields read as null mean not generated yet; the call stub's has no frame of its own")
{
	// One code heap at 0x10000 of 64-byte segments, its map at 0x8000; each blob after a
	// 16-byte block header whose byte 8 says it is used; a blob's name at 0, size at 8.
	HotSpotLayout l;
	l.interpreter_code = 0x2000;   // AbstractInterpreter::_code: a StubQueue*
	l.queue_buffer = 8;            // StubQueue::_stub_buffer
	l.call_stub_return = 0x2100;   // StubRoutines::_call_stub_return_address
	l.heap_block_size = 16;
	l.block_used = 8;
	l.blob_name = 0;
	l.blob_size = 8;
	l.blob_frame_size = 12;
	HotSpotHeaps heaps;
	heaps.log2_segment = 6;
	heaps.heaps.push_back({0x10000, 0x20000, 0x8000, 0x8400});
	FakeMemory memory;
	// Blocks: the interpreter's, segments 0 to 9 (a 624-byte blob), and the stubs', 10 to 12.
	const auto block = [&](uint64_t first, uint64_t count, uint64_t name, int32_t size, int32_t frame_size) {
		for (uint64_t i = 0; i < count; i++) {
			const uint8_t back = uint8_t(i);
			memory.put(0x8000 + first + i, &back, 1);
		}
		const uint64_t at = 0x10000 + (first << 6);
		const uint8_t used = 1;
		memory.put(at + 8, &used, 1);
		memory.put_word(at + 16, name);
		memory.put(at + 16 + 8, &size, 4);
		memory.put(at + 16 + 12, &frame_size, 4);
	};
	memory.put_text(0x3000, "Interpreter");
	memory.put_text(0x3100, "StubRoutines (1)");
	block(0, 10, 0x3000, 10 * 64 - 16, 4);
	block(10, 3, 0x3100, 3 * 64 - 16, 0);
	memory.put_word(0x2000, 0x4000);               // the StubQueue
	memory.put_word(0x4008, 0x10000 + 16 + 0x100); // its buffer, in the interpreter's blob
	memory.put_word(0x2100, 0x10000 + (11 << 6) + 5); // the call stub's return, in the stubs'
	bool generated = false;
	const std::vector<HotSpotFixedBlob> fixed = hotspot_fixed_blobs(heaps, l, memory.reader(), &generated);
	CHECK(generated);
	REQUIRE(fixed.size() == 2);
	CHECK(fixed[0].low == 0x10010);
	CHECK(fixed[0].high == 0x10000 + 10 * 64);
	CHECK(std::memcmp(&fixed[0].name, "Interpre", 8) == 0);
	CHECK(fixed[1].low == 0x10000 + (10 << 6) + 16);
	CHECK(fixed[1].high == 0x10000 + 13 * 64);
	CHECK(std::memcmp(&fixed[1].name, "StubRout", 8) == 0);
	// The stubs' blob has no frame of its own: the walk reads no header of it.
	CHECK(!fixed[0].frameless);
	CHECK(fixed[1].frameless);

	// The call stub not generated yet: its field reads as null.
	memory.put_word(0x2100, 0);
	CHECK(hotspot_fixed_blobs(heaps, l, memory.reader(), &generated).size() == 1);
	CHECK(!generated);
	// Neither: the interpreter's queue null too.
	memory.put_word(0x2000, 0);
	CHECK(hotspot_fixed_blobs(heaps, l, memory.reader(), &generated).empty());
	CHECK(!generated);
	// Fields that cannot be read say nothing of it; a JDK without them has no fixed blobs.
	HotSpotLayout unreadable = l;
	unreadable.interpreter_code = 0x7000;
	unreadable.call_stub_return = 0x7100;
	CHECK(hotspot_fixed_blobs(heaps, unreadable, memory.reader(), &generated).empty());
	CHECK(generated);
	HotSpotLayout none = l;
	none.interpreter_code = none.call_stub_return = 0;
	CHECK(hotspot_fixed_blobs(heaps, none, memory.reader(), &generated).empty());
	CHECK(generated);
	// A blob that states a size not holding its pc, or none, is not taken.
	memory.put_word(0x2000, 0x4000);
	const int32_t short_size = 0x80;
	memory.put(0x10000 + 16 + 8, &short_size, 4);
	CHECK(hotspot_fixed_blobs(heaps, l, memory.reader(), &generated).empty());
}

TEST_CASE("hotspot: a counter of the perf data is found by its name, and bad perf data gives none, never a read without end")
{
	// A prologue at 0x20000, then entries as HotSpot writes them: a vector, a counter of
	// another name, the counter.
	const uint64_t at = 0x20000;
	std::vector<uint8_t> data(32);
	const auto entry = [&](const std::string &name, char type, uint32_t vector_length, uint64_t value) {
		const uint32_t begin = uint32_t(data.size()), name_offset = 20, data_offset = uint32_t((20 + name.size() + 1 + 7) & ~7u);
		data.resize(begin + data_offset + 8);
		const uint32_t length = uint32_t(data.size()) - begin;
		std::memcpy(&data[begin], &length, 4);
		std::memcpy(&data[begin + 4], &name_offset, 4);
		std::memcpy(&data[begin + 8], &vector_length, 4);
		data[begin + 12] = uint8_t(type);
		std::memcpy(&data[begin + 16], &data_offset, 4);
		std::memcpy(&data[begin + name_offset], name.c_str(), name.size() + 1);
		std::memcpy(&data[begin + data_offset], &value, 8);
		return at + begin + data_offset;
	};
	entry("sun.rt.javaCommand", 'B', 8, 0);
	const uint64_t loaded = entry("java.cls.loadedClasses", 'J', 0, 700);
	const uint64_t unloaded = entry("java.cls.unloadedClasses", 'J', 0, 42);
	const auto prologue = [&](const std::vector<uint8_t> &bytes, uint32_t entries) {
		std::vector<uint8_t> out = bytes;
		const uint8_t magic[8] = {0xca, 0xfe, 0xc0, 0xc0, 1, 2, 0, 1};
		const uint32_t used = uint32_t(out.size()), entry_offset = 32;
		std::memcpy(&out[0], magic, 8);
		std::memcpy(&out[8], &used, 4);
		std::memcpy(&out[24], &entry_offset, 4);
		std::memcpy(&out[28], &entries, 4);
		return out;
	};
	const auto found = [&](const std::vector<uint8_t> &bytes, const std::string &name) {
		FakeMemory memory;
		memory.put(at, bytes.data(), bytes.size());
		return hotspot_perf_counter(at, memory.reader(), name);
	};
	const std::vector<uint8_t> good = prologue(data, 3);
	CHECK(found(good, "java.cls.unloadedClasses") == unloaded);
	CHECK(found(good, "java.cls.loadedClasses") == loaded);
	CHECK(found(good, "java.cls.unloadedClass") == 0);
	CHECK(found(good, "sun.rt.javaCommand") == 0); // a vector, not a counter
	CHECK(found(prologue(data, 2), "java.cls.unloadedClasses") == 0); // past the entries counted
	std::vector<uint8_t> bad = good;
	bad[0] = 0;
	CHECK(found(bad, "java.cls.unloadedClasses") == 0); // no magic
	bad = good;
	bad[4] = 0;
	CHECK(found(bad, "java.cls.unloadedClasses") == 0); // big-endian
	bad = good;
	std::memset(&bad[32], 0, 4); // an entry of length 0: the walk stops
	CHECK(found(bad, "java.cls.unloadedClasses") == 0);
	bad = good;
	const uint32_t huge = kMaxHotSpotPerfData + 1;
	std::memcpy(&bad[8], &huge, 4); // more used than is read
	CHECK(found(bad, "java.cls.unloadedClasses") == 0);
	bad = good;
	std::memcpy(&bad[8], "\x40\x00\x00\x00", 4); // used ends within the entries
	CHECK(found(bad, "java.cls.unloadedClasses") == 0);
	CHECK(hotspot_perf_counter(0, FakeMemory().reader(), "java.cls.unloadedClasses") == 0);
}

TEST_CASE("hotspot: UNSIGNED5 numbers decode as HotSpot writes them, before and after JDK 20")
{
	for (const uint8_t excluded : {0, 1}) {
		CAPTURE(int(excluded));
		std::vector<uint8_t> bytes;
		const std::vector<uint32_t> numbers = {0, 1, 190, 191, 192, 1000, 12345, 1u << 20, 0x7fffffff};
		for (uint32_t n : numbers)
			put_number(bytes, n, excluded);
		if (excluded) // no zero byte inside a number
			CHECK(std::find(bytes.begin(), bytes.end(), 0) == bytes.end());
		Unsigned5Reader read(bytes, excluded);
		for (uint32_t n : numbers)
			CHECK(read.number() == n);
		CHECK(read.ok());
		CHECK(read.position() == bytes.size());
		read.number(); // past the end
		CHECK_FALSE(read.ok());
	}
	// Hand-made: 1000 is 232, 12 (JDK 17) and 233, 13 (JDK 20 on).
	CHECK(Unsigned5Reader(std::vector<uint8_t>{232, 12}, 0).number() == 1000);
	CHECK(Unsigned5Reader(std::vector<uint8_t>{233, 13}, 1).number() == 1000);
	const std::vector<uint8_t> zero = {0};
	Unsigned5Reader excluded_byte(zero, 1);
	excluded_byte.number();
	CHECK_FALSE(excluded_byte.ok());
}

TEST_CASE("hotspot: a method's line table gives each bytecode index its line, the nearest before when none is its own")
{
	for (const uint8_t excluded : {0, 1}) {
		CAPTURE(int(excluded));
		// Short pairs and long ones (a bci jump of 32 or more, a line back or 8 on).
		const std::vector<uint8_t> table =
			line_table({{0, 10}, {5, 11}, {40, 20}, {44, 12}, {300, 300}}, excluded);
		CHECK(hotspot_line_table_size(table, excluded) == table.size());
		CHECK(hotspot_line_of(table, 0, excluded) == 10);
		CHECK(hotspot_line_of(table, 4, excluded) == 10);
		CHECK(hotspot_line_of(table, 5, excluded) == 11);
		CHECK(hotspot_line_of(table, 39, excluded) == 11);
		CHECK(hotspot_line_of(table, 40, excluded) == 20);
		CHECK(hotspot_line_of(table, 44, excluded) == 12);
		CHECK(hotspot_line_of(table, 299, excluded) == 12);
		CHECK(hotspot_line_of(table, 5000, excluded) == 300);
		// Cut short: its size is unknown (read more), its whole entries still answer (the
		// first pair is a long one, 3 bytes; the second a short one).
		const std::vector<uint8_t> cut(table.begin(), table.begin() + 4);
		CHECK(hotspot_line_table_size(cut, excluded) == 0);
		CHECK(hotspot_line_of(cut, 6, excluded) == 11);
		CHECK(hotspot_line_of(std::vector<uint8_t>{}, 6, excluded) == 0);
	}
}

TEST_CASE("hotspot: a compiled method's scopes give the methods inlined at a pc, innermost first, and nothing doubtful")
{
	const uint8_t x = 1;
	HotSpotCompiledScopes code;
	code.metadata = {0x1000, 0x2000, 0};
	// Offset 0 is no scope. The outer scope (method 1, bci 5) at 1, the inlined one
	// (method 2, bci 3) at its end, its sender the outer: bcis are written plus one.
	code.scopes = {0};
	auto scope = [&](uint32_t sender, uint32_t method, uint32_t bci_plus_one) {
		const uint32_t at = uint32_t(code.scopes.size());
		put_number(code.scopes, sender, x);
		put_number(code.scopes, method, x);
		put_number(code.scopes, bci_plus_one, x);
		return at;
	};
	const uint32_t outer = scope(0, 1, 6), inner = scope(outer, 2, 4), bad_method = scope(0, 3, 1),
		       unknown_method = scope(0, 9, 1), forward = scope(1000, 1, 1);
	code.pcs = {{-1, 0}, {10, inner}, {20, outer}, {30, bad_method}, {40, unknown_method}, {50, forward}, {60, 0}};
	auto chain = [&](uint32_t pc) {
		std::string text;
		for (const HotSpotScope &s : hotspot_scopes_at(code, pc, x))
			text += (text.empty() ? "" : " ") + std::to_string(s.method) + "@" + std::to_string(s.bci);
		return text;
	};
	CHECK(chain(10) == "8192@3 4096@5"); // a call's return address: its own PcDesc
	CHECK(chain(0) == "8192@3 4096@5");  // before it: the next one
	CHECK(chain(15) == "4096@5");
	CHECK(chain(20) == "4096@5");
	CHECK(chain(30) == "");  // a method index to no method
	CHECK(chain(40) == "");  // past the metadata
	CHECK(chain(50) == "");  // a sender after its callee: cut short, not guessed
	CHECK(chain(55) == "");  // the last with a scope before it is that one
	code.scopes.resize(outer + 1); // the data cut inside the outer scope
	CHECK(chain(20) == "");
}

} // TEST_SUITE("unit")

namespace {

// A JDK of this machine: its java and its label ("Debian 17", "Temurin 25").
struct Jdk {
	std::string java, label;
	int major = 0;
};

// Debian's OpenJDK 17 and Temurin 25, where installed (the test set-up installs them).
std::vector<Jdk> jdks()
{
	std::vector<Jdk> found;
	for (const Jdk &jdk : {Jdk{"/usr/lib/jvm/java-17-openjdk-amd64/bin/java", "Debian 17", 17},
			       Jdk{"/usr/lib/jvm/temurin-25-jdk-amd64/bin/java", "Temurin 25", 25}})
		if (access(jdk.java.c_str(), X_OK) == 0)
			found.push_back(jdk);
	return found;
}

// The holdout classes (Split, Churn and its template G0000), compiled once per run of the
// tests into a folder of its own under /tmp, removed at the run's end (not in the tree: the
// tests run as root, and a user's `make clean` could not remove what root left there); for
// Java 11, which every JDK here runs; "" after saying the test skips without javac.
std::string holdout_classes()
{
	static std::string classes;
	if (!classes.empty())
		return classes;
	const std::vector<Jdk> found = jdks();
	if (found.empty()) {
		skip_test("no JDK here (apt-get install openjdk-17-jdk-headless)");
		return "";
	}
	static TempDir compiled;
	const std::string dir = compiled.path().string();
	const std::string javac = std::filesystem::path(found.front().java).parent_path() / "javac";
	CommandResult r = run_command({javac, "--release", "11", "-g", "-d", dir, "tests/workloads/java/holdout/Split.java",
				       "tests/workloads/java/holdout/Churn.java", "tests/workloads/java/holdout/G0000.java"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	classes = dir;
	return classes;
}

// Split running under a JDK for `seconds`, ready, its truth in a file of its own folder.
struct SplitJvm {
	TempDir dir;
	std::unique_ptr<Background> jvm;
	SplitJvm(const Jdk &jdk, const std::string &classes, int seconds)
	{
		jvm = std::make_unique<Background>(std::vector<std::string>{
			jdk.java, "-cp", classes, "holdout.Split", std::to_string(seconds), dir / "truth"});
		REQUIRE(jvm->read_line() == "ready");
	}
};

// The compiled methods in a JVM's code heaps, walked block by block: each nmethod's
// method, named; and whether the segment map finds each from a pc inside it.
struct Compiled {
	std::set<std::string> names; // "holdout.Split.hotA(J)J Split.java"
	std::map<std::string, uint64_t> methods; // the Method* of each, by class and name: "holdout.Split.hotA"
	size_t blobs = 0, found_by_map = 0;
	size_t scoped = 0; // whose debug information reads
	// Every method and line of every scope of hotA's and hotB's compiled code:
	// "holdout.Split.hotA:15".
	std::set<std::string> split_lines;
};

// The line of Split.java that holds text.
uint32_t split_line(const std::string &text)
{
	std::ifstream source("tests/workloads/java/holdout/Split.java");
	std::string line;
	for (uint32_t n = 1; std::getline(source, line); n++)
		if (line.find(text) != std::string::npos)
			return n;
	FAIL("Split.java has no line with " << text);
	return 0;
}

Compiled compiled_methods(const HotSpotDetection &jvm, int mem)
{
	const ReadMemory read = [mem](uint64_t address, void *out, size_t size) {
		return read_process_memory(mem, address, out, size);
	};
	const HotSpotLayout &l = jvm.layout;
	Compiled out;
	for (const HotSpotHeap &heap : jvm.heaps.heaps) {
		for (uint64_t block = heap.low; block < heap.high;) {
			uint32_t length = 0; // a size_t to JDK 21, a uint32_t after: the low half
			uint8_t used = 0;
			if (!read(block + l.block_length, &length, 4) || !read(block + l.block_used, &used, 1) || !length)
				break;
			const uint64_t blob = block + l.heap_block_size;
			int32_t size = 0;
			if (used && read_hotspot_blob_name(l, read, blob) == "nmethod" && read(blob + l.blob_size, &size, 4)) {
				out.blobs++;
				out.found_by_map += find_hotspot_blob(jvm.heaps, l, read, blob + size - 1) == blob;
				uint64_t method = 0;
				int32_t compile_id = 0;
				if (read(blob + l.nmethod_method, &method, 8))
					if (auto name = read_hotspot_method(l, read, method)) {
						out.names.insert(name->qualified() + name->signature + " " + name->file);
						out.methods[name->qualified()] = method;
					}
				const auto code = read(blob + l.nmethod_compile_id, &compile_id, 4)
							  ? read_hotspot_compiled(l, read, blob, hotspot_fingerprint(method, uint32_t(compile_id), 0), 0)
							  : std::nullopt;
				out.scoped += code && code->method == method;
				const auto name = read_hotspot_method(l, read, method);
				if (code && name && (name->method == "hotA" || name->method == "hotB") && name->klass == "holdout.Split")
					for (const auto &[pc, scope] : code->scopes.pcs)
						for (const HotSpotScope &at : hotspot_scopes_at(code->scopes, uint32_t(std::max(pc, 0)),
												l.unsigned5_excluded))
							if (const auto inner = read_hotspot_method(l, read, at.method))
								out.split_lines.insert(
									inner->qualified() + ":" +
									std::to_string(hotspot_line_of(
										read_hotspot_line_table(l, read, at.method), at.bci,
										l.unsigned5_excluded)));
			}
			block += uint64_t(length) << jvm.heaps.log2_segment;
		}
	}
	return out;
}

// A JVM's detection and compiled methods, read every 100 ms until `done` holds of them, for
// 10 s at most: the last read.
std::pair<HotSpotDetection, Compiled> compiled_until(pid_t pid, const std::function<bool(const Compiled &)> &done)
{
	HotSpotDetection found;
	Compiled compiled;
	for (int i = 0; i < 100; i++) {
		MapsReads maps;
		found = detect_hotspot(uint32_t(pid), maps);
		if (found.kind == HotSpotDetection::Java) {
			UniqueFd mem = open_read_only(("/proc/" + std::to_string(pid) + "/mem").c_str());
			compiled = compiled_methods(found, mem.get());
			if (done(compiled))
				break;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	return {std::move(found), std::move(compiled)};
}

} // namespace

TEST_SUITE("component") {

TEST_CASE("hotspot: each JDK's tables give its layout, version and code heaps, and its compiled methods by name")
{
	require_root();
	const std::string classes = holdout_classes();
	if (classes.empty())
		return;
	for (const Jdk &jdk : jdks()) {
		CAPTURE(jdk.label);
		SplitJvm split(jdk, classes, 20);
		// hotA and hotB are compiled within their first rounds.
		const auto [found, compiled] = compiled_until(split.jvm->pid(), [](const Compiled &c) {
			return c.names.count("holdout.Split.hotA(J)J Split.java") && c.names.count("holdout.Split.hotB(J)J Split.java");
		});
		REQUIRE_MESSAGE(found.kind == HotSpotDetection::Java, found.note);
		CHECK(found.libjvm.ends_with("/libjvm.so"));
		CHECK(found.version.starts_with(std::to_string(jdk.major) + "."));
		CHECK(!found.heaps.heaps.empty());
		CHECK(found.read_ms < 50);
		CHECK(found.unloaded_classes != 0); // its perf data's count of classes unloaded
		// The blobs the walk takes by range: the interpreter's and the call stub's, each in a
		// code heap, and libjvm's image never written around its code.
		REQUIRE(found.fixed.size() == 2);
		const auto named = [&](const HotSpotFixedBlob &fixed, const char *name) {
			return std::memcmp(&fixed.name, name, 8) == 0;
		};
		CHECK(named(found.fixed[0], "Interpre"));
		CHECK(named(found.fixed[1], "StubRout"));
		CHECK(found.fixed[1].frameless); // the call stub's frame is rbp's
		for (const HotSpotFixedBlob &fixed : found.fixed) {
			CHECK(fixed.low < fixed.high);
			CHECK(std::any_of(found.heaps.heaps.begin(), found.heaps.heaps.end(), [&](const HotSpotHeap &heap) {
				return fixed.low >= heap.low && fixed.high <= heap.high;
			}));
		}
		CHECK(found.image_low < found.image_high);
		MESSAGE(jdk.label << " " << found.version << ": tables read in " << found.read_ms << " ms, "
				  << found.heaps.heaps.size() << " code heaps, " << compiled.blobs << " nmethods");
		CHECK(compiled.names.count("holdout.Split.hotA(J)J Split.java"));
		CHECK(compiled.names.count("holdout.Split.hotB(J)J Split.java"));
		CHECK(compiled.blobs > 10);
		CHECK(compiled.found_by_map == compiled.blobs);
		// Every compiled method's debug information reads; hotA's and hotB's scopes are
		// theirs alone (nothing inlined into them), each at a line of its own body.
		CHECK(compiled.scoped == compiled.blobs);
		const uint32_t a_first = split_line("static long hotA"), b_first = split_line("static long hotB"),
			       end = split_line("public static void main");
		size_t a_lines = 0, b_lines = 0;
		for (const std::string &at : compiled.split_lines) {
			CAPTURE(at);
			const std::string method = at.substr(0, at.find(':'));
			const uint32_t line = uint32_t(std::stoul(at.substr(at.find(':') + 1)));
			REQUIRE((method == "holdout.Split.hotA" || method == "holdout.Split.hotB"));
			const bool a = method == "holdout.Split.hotA";
			CHECK(line > (a ? a_first : b_first));
			CHECK(line < (a ? b_first : end));
			(a ? a_lines : b_lines)++;
		}
		CHECK(a_lines > 0);
		CHECK(b_lines > 0);
	}
}

TEST_CASE("hotspot: a frame named at the end by its Method* is named only while its JVM has unloaded no class since "
	  "before the window's samples, and a JVM without perf data gets one line")
{
	require_root();
	const std::string classes = holdout_classes();
	if (classes.empty())
		return;
	const Jdk jdk = jdks().front();
	CaughtLines caught;
	const std::vector<std::string> &said = caught.lines;
	// Three JVMs, started at once: Split, Split without perf data, Churn.
	TempDir dir;
	Background split({jdk.java, "-cp", classes, "holdout.Split", "20", dir / "split"});
	Background quiet({jdk.java, "-XX:-UsePerfData", "-cp", classes, "holdout.Split", "20", dir / "quiet"});
	Background churn({jdk.java, "-cp", classes, "holdout.Churn", "20"});
	for (Background *jvm : {&split, &quiet, &churn})
		REQUIRE(jvm->read_line() == "ready");
	// A method's Method*, once the JVM compiled it.
	const auto compiled = [](pid_t pid, const std::string &method) {
		const auto [found, c] = compiled_until(pid, [&](const Compiled &read) { return read.methods.contains(method); });
		const auto it = c.methods.find(method);
		if (it == c.methods.end())
			FAIL(method << " not compiled in PID " << pid);
		return std::pair{it->second, found.unloaded_classes};
	};
	const uint64_t hot_a = compiled(split.pid(), "holdout.Split.hotA").first;
	const uint64_t quiet_hot_a = compiled(quiet.pid(), "holdout.Split.hotA").first;
	const auto [even, unloaded_at] = compiled(churn.pid(), "holdout.Churn.even");
	REQUIRE(unloaded_at != 0);
	UniqueFd churn_mem = open_read_only(("/proc/" + std::to_string(churn.pid()) + "/mem").c_str());
	const auto unloaded = [&] {
		uint64_t count = 0;
		REQUIRE(read_process_memory(churn_mem.get(), unloaded_at, &count, sizeof(count)));
		return count;
	};

	// The maps the reader answers the walk through, as the sampling program has them.
	const auto map = [](bpf_map_type type, uint32_t key, uint32_t value, uint32_t entries) {
		UniqueFd fd(bpf_map_create(type, nullptr, key, value, entries, nullptr));
		REQUIRE(fd);
		return fd;
	};
	const UniqueFd processes = map(BPF_MAP_TYPE_HASH, 4, sizeof(hotspot_process), 16),
		       wanted = map(BPF_MAP_TYPE_HASH, 4, 1, 16),
		       codes = map(BPF_MAP_TYPE_LRU_HASH, sizeof(runtime_code_key), sizeof(runtime_code), 64),
		       seen = map(BPF_MAP_TYPE_RINGBUF, 0, 0, 4096);
	HotSpotReader reader(RuntimeMaps{processes.get(), wanted.get(), codes.get(), seen.get()});
	MapsReads maps;
	reader.prepare({uint32_t(split.pid()), uint32_t(quiet.pid()), uint32_t(churn.pid())}, maps);
	const auto frame = [](uint64_t method) { return HOTSPOT_FRAME(HOTSPOT_COMPILED, HOTSPOT_NO_BCI, method); };

	// Split unloads no class: its frame is named, window after window.
	for (int window = 0; window < 3; window++) {
		CAPTURE(window);
		RuntimeFrameName name;
		REQUIRE(reader.name(uint32_t(split.pid()), frame(hot_a), name));
		CHECK(name.function == "holdout.Split.hotA");
		CHECK(name.file == "Split.java");
		reader.end_window();
	}
	// Churn unloads classes every 20 rounds. Once it has since before the window's first
	// sample, its frames are not named, though Churn.even is still itself: nothing tells it
	// from a method laid out where an unloaded one was. Named just after a window's end, it
	// mostly is; named again in the same window after an unloading, it is not (what named
	// it first is not kept).
	reader.end_window();
	reader.end_window();
	const uint64_t before = unloaded(); // no less than the count the window is checked against
	RuntimeFrameName name;
	const bool named_first = reader.name(uint32_t(churn.pid()), frame(even), name);
	MESSAGE("Churn.even named before an unloading: " << named_first << (named_first ? " as " + name.function : ""));
	CHECK((!named_first || name.function == "holdout.Churn.even"));
	for (int i = 0; i < 100 && unloaded() == before; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	REQUIRE(unloaded() != before);
	CHECK_FALSE(reader.name(uint32_t(churn.pid()), frame(even), name));
	// Without perf data there is no count to check: nothing is named at the end, and one
	// line says so.
	CHECK_FALSE(reader.name(uint32_t(quiet.pid()), frame(quiet_hot_a), name));
	const auto no_perf_data = std::count_if(said.begin(), said.end(), [](const std::string &line) {
		return contains(line, "-XX:-UsePerfData");
	});
	CHECK(no_perf_data == 1);
	CHECK(std::any_of(said.begin(), said.end(), [&](const std::string &line) {
		return contains(line, "PID " + std::to_string(quiet.pid()) + " ");
	}));
}

} // TEST_SUITE("component")

namespace {

// What Split measured so far (its truth file, rewritten every round: read_settled):
// thread CPU seconds in hotA, in hotB.
std::pair<double, double> split_seconds(const std::string &truth)
{
	const std::string text = read_settled(truth);
	double a = 0, b = 0;
	REQUIRE_MESSAGE(bool(std::istringstream(text) >> a >> b), truth << ": \"" << text << "\"");
	return {a, b};
}

// Samples whose stack holds a frame starting with prefix.
uint64_t with_frame(const std::vector<FoldedLine> &lines, const std::string &prefix)
{
	uint64_t n = 0;
	for (const FoldedLine &l : lines)
		n += std::any_of(l.frames.begin(), l.frames.end(), [&](const std::string &f) { return f.starts_with(prefix); })
			     ? l.count
			     : 0;
	return n;
}

} // namespace

TEST_SUITE("integration") {

TEST_CASE("hotspot: each JDK's two methods sharing the main thread, by name, in the split the JVM measured, under their caller and the thread's root")
{
	require_root();
	const std::string classes = holdout_classes();
	if (classes.empty())
		return;
	// Each JDK present (holdout_classes skipped without any): Debian's 17, which the test
	// set-up installs, and Temurin 25 where it is.
	const std::vector<Jdk> found = jdks();
	// Every JDK's JVM in one run that tells them apart (-E), and a second, short, with
	// --no-java: JVMs are slow to start, and each serves both.
	std::vector<std::unique_ptr<SplitJvm>> jvms;
	std::string pids;
	for (const Jdk &jdk : found) {
		jvms.push_back(std::make_unique<SplitJvm>(jdk, classes, 60));
		pids += (pids.empty() ? "" : ",") + std::to_string(jvms.back()->jvm->pid());
	}
	// And one that exits 2 s after it is ready, a second or more before the run ends: its
	// methods and stubs are read while it lives, and named after it is gone.
	SplitJvm short_lived(found.front(), classes, 2);
	const std::string gone_root = "java-" + std::to_string(short_lived.jvm->pid());
	pids += "," + std::to_string(short_lived.jvm->pid());
	std::vector<std::pair<double, double>> before, after;
	for (const auto &jvm : jvms)
		before.push_back(split_seconds(jvm->dir / "truth"));
	const auto r = profile({"-p", pids, "-E", "-f", "499", "--folded", "3"});
	// Exited before the run ended: a zombie now (its status not taken yet).
	std::string state;
	std::ifstream(("/proc/" + std::to_string(short_lived.jvm->pid()) + "/stat").c_str()) >> state >> state >> state;
	CHECK(state == "Z");
	REQUIRE_MESSAGE(r.status == 0, r.err);
	for (const auto &jvm : jvms)
		after.push_back(split_seconds(jvm->dir / "truth"));
	INFO("stderr:\n" << r.err);
	const auto all_lines = parse_folded(r.out);
	for (size_t k = 0; k < jvms.size(); k++) {
		CAPTURE(found[k].label);
		const double a_s = after[k].first - before[k].first, b_s = after[k].second - before[k].second;
		REQUIRE(a_s + b_s > 0);
		// The main thread's lines: -E roots each stack in "comm-PID".
		const std::string root = "java-" + std::to_string(jvms[k]->jvm->pid());
		std::vector<FoldedLine> lines;
		uint64_t all = 0;
		for (const FoldedLine &l : all_lines)
			if (l.frames[0] == root) {
				lines.push_back(l);
				all += l.count;
			}
		const uint64_t a = with_frame(lines, "holdout.Split.hotA (Split.java"),
			       b = with_frame(lines, "holdout.Split.hotB (Split.java");
		REQUIRE(a + b > 100);
		const SampledShare share = sampled_share(a, a + b, a_s / (a_s + b_s));
		CHECK_MESSAGE(share.ok, share);
		// Most of the thread's samples are under a method named, and those reach the
		// thread's root through main.
		uint64_t named = 0, whole = 0;
		for (const FoldedLine &l : lines) {
			const bool method = std::any_of(l.frames.begin(), l.frames.end(), [](const std::string &f) {
				return f.find(" (") != std::string::npos && f.find(".java") != std::string::npos;
			});
			named += method ? l.count : 0;
			const bool under_main = std::any_of(l.frames.begin(), l.frames.end(), [](const std::string &f) {
				return f.starts_with("holdout.Split.main (Split.java:");
			});
			whole += method && under_main && l.frames.size() > 1 && l.frames[1] == "clone3" ? l.count : 0;
		}
		// Lines: each method's at a line of its own body, main's at its call.
		const std::string a_line = std::to_string(split_line("sink += hotA(")),
				  b_line = std::to_string(split_line("sink += hotB("));
		const uint32_t a_first = split_line("static long hotA"), b_first = split_line("static long hotB"),
			       main_first = split_line("public static void main");
		uint64_t lined = 0;
		for (const FoldedLine &l : lines)
			for (size_t i = 1; i < l.frames.size(); i++) {
				const std::string &f = l.frames[i];
				const bool is_a = f.starts_with("holdout.Split.hotA (Split.java:"),
					   is_b = f.starts_with("holdout.Split.hotB (Split.java:");
				if (!is_a && !is_b)
					continue;
				CAPTURE(f);
				const uint32_t line = uint32_t(std::stoul(f.substr(f.find(':') + 1)));
				CHECK(line > (is_a ? a_first : b_first));
				CHECK(line < (is_a ? b_first : main_first));
				CHECK(l.frames[i - 1] == "holdout.Split.main (Split.java:" + (is_a ? a_line : b_line) + ")");
				lined += l.count;
			}
		CHECK(lined == a + b);
		MESSAGE(found[k].label << ": hotA " << a << ", hotB " << b << " samples (" << share << "); " << named
					<< " of " << all << " named, " << whole << " under main and the root");
		CHECK(named * 100 >= all * 85);
		CHECK(whole * 100 >= named * 95);
	}
	uint64_t gone_samples = 0, gone_unnamed = 0, gone_hot = 0;
	for (const FoldedLine &l : all_lines)
		if (l.frames[0] == gone_root) {
			gone_samples += l.count;
			gone_unnamed += std::count(l.frames.begin(), l.frames.end(), "[java]") ? l.count : 0;
			gone_hot += std::any_of(l.frames.begin(), l.frames.end(),
						[](const std::string &f) { return f.starts_with("holdout.Split.hot"); })
					    ? l.count
					    : 0;
		}
	MESSAGE("a JVM gone before the run's end: " << gone_samples << " samples, " << gone_hot << " in hotA or hotB, "
						   << gone_unnamed << " with [java]");
	CHECK(gone_samples > 20);
	CHECK(gone_hot * 100 >= gone_samples * 85);
	// A method first met within its last tick (20 ms) before the JVM's exit cannot be read:
	// the odd sample. Named at the end, as before, all but none would be [java].
	CHECK(gone_unnamed * 100 <= gone_samples);
	// --no-java: the same JVMs, with no Java frame.
	const auto off = profile({"-p", pids, "--no-java", "-f", "499", "--folded", "1"});
	REQUIRE_MESSAGE(off.status == 0, off.err);
	CHECK(off.out.find("holdout.Split") == std::string::npos);
	CHECK(off.out.find("java") != std::string::npos);
}

TEST_CASE("hotspot: a JVM that churns compiled code and unloads its classes has every Java frame named as its own "
	  "method, or [java JIT]")
{
	require_root();
	const std::string classes = holdout_classes();
	if (classes.empty())
		return;
	// Each JDK's JVM at once, sampled by one run, apart by their root frames.
	const std::vector<Jdk> found = jdks();
	std::vector<std::unique_ptr<Background>> jvms;
	std::string pids;
	for (const Jdk &jdk : found) {
		jvms.push_back(std::make_unique<Background>(
			std::vector<std::string>{jdk.java, "-cp", classes, "holdout.Churn", "4"}));
		REQUIRE(jvms.back()->read_line() == "ready");
		pids += (pids.empty() ? "" : ",") + std::to_string(jvms.back()->pid());
	}
	const auto r = profile({"-p", pids, "-E", "-f", "999", "--folded", "2"});
	REQUIRE_MESSAGE(r.status == 0, r.err);
	const auto lines = parse_folded(r.out);
	// "holdout.Churn.even (Churn.java:48)", "holdout.G0012.applyAsLong (G0012.java:11)_[i]".
	const std::regex java(R"(([\w$.]+)\.([\w$<>]+) \(([\w$]+)\.java(?::(\d+))?\)(?:_\[i\])?)");
	const std::set<std::string> churn_methods = {"main", "even", "odd", "renamed", "define", "<init>"};
	for (size_t k = 0; k < jvms.size(); k++) {
		CAPTURE(found[k].label);
		const std::string root = "java-" + std::to_string(jvms[k]->pid());
		// The classes the JVM unloaded by its end: their compiled code was freed as it ran.
		const std::string unloaded = jvms[k]->read_line();
		CHECK(jvms[k]->wait() == 0);
		CHECK_MESSAGE(std::stoul(unloaded.substr(unloaded.find(' ') + 1)) >= 20, unloaded);
		uint64_t frames = 0, in_generated = 0, wrong = 0;
		std::string wrong_ones;
		for (const FoldedLine &l : lines) {
			if (l.frames.empty() || l.frames[0] != root)
				continue;
			std::string caller; // the Java method last met, root to leaf ("" past a cut)
			for (const std::string &f : l.frames) {
				std::smatch m;
				if (f == "[truncated]")
					caller.clear();
				if (!std::regex_match(f, m, java))
					continue;
				const std::string klass = m[1], method = m[2], file = m[3];
				bool right = !klass.starts_with("holdout.");
				if (std::regex_match(klass, std::regex(R"(holdout\.G\d{4})"))) {
					// Its own class's file; its method called by even or odd as its number is
					// (its constructor, by reflection), where the walk was not cut short
					// between them.
					const std::string called_by = std::stoul(klass.substr(9)) % 2 ? "holdout.Churn.odd" : "holdout.Churn.even";
					right = file == klass.substr(8) &&
						(method == "<init>" || (method == "applyAsLong" && (caller == called_by || caller.empty())));
					in_generated += l.count;
				} else if (klass == "holdout.Churn" || klass == "holdout.Churn$Loader") {
					right = file == "Churn" && churn_methods.count(method);
				}
				frames += l.count;
				caller = klass + "." + method;
				if (!right) {
					wrong += l.count;
					wrong_ones += f + ", in:";
					for (const std::string &g : l.frames)
						wrong_ones += " " + g + ";";
					wrong_ones += "\n";
				}
			}
		}
		INFO(frames << " Java frames, " << in_generated << " in generated classes; wrong:\n" << wrong_ones);
		MESSAGE(found[k].label << ": " << frames << " Java frames, " << in_generated << " in generated classes, "
				       << unloaded);
		CHECK(frames > 200);
		CHECK(in_generated > 20);
		CHECK(wrong == 0);
	}
}

} // TEST_SUITE("integration")
