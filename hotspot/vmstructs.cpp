// hotspot/vmstructs.cpp: the Serviceability Agent's tables of a JVM, read from its memory
// through a cache of the pages the names lie in.
#include "hotspot/vmstructs.h"

#include <cstring>
#include <map>
#include <memory>
#include <vector>

namespace {

constexpr uint64_t kPage = 4096;

// The JVM's memory, a page at a time: the tables' names lie together in libjvm's .rodata.
class PageCache {
public:
	explicit PageCache(const ReadMemory &read) : read_(read) {}

	bool read(uint64_t address, void *out, size_t size)
	{
		auto *bytes = static_cast<uint8_t *>(out);
		while (size) {
			const uint8_t *page = page_of(address);
			if (!page)
				return false;
			const size_t within = address % kPage, n = std::min<size_t>(size, kPage - within);
			std::memcpy(bytes, page + within, n);
			bytes += n, address += n, size -= n;
		}
		return true;
	}

	// A NUL-terminated name, at most kMaxHotSpotTableName long; nothing when unreadable.
	std::optional<std::string> name(uint64_t address)
	{
		std::string out;
		while (out.size() < kMaxHotSpotTableName) {
			const uint8_t *page = page_of(address);
			if (!page)
				return std::nullopt;
			const size_t within = address % kPage, n = kPage - within;
			const void *end = std::memchr(page + within, 0, n);
			if (end) {
				out.append(reinterpret_cast<const char *>(page + within),
					   static_cast<const uint8_t *>(end) - (page + within));
				return out.size() <= kMaxHotSpotTableName ? std::optional(out) : std::nullopt;
			}
			out.append(reinterpret_cast<const char *>(page + within), n);
			address += n;
		}
		return std::nullopt;
	}

private:
	const uint8_t *page_of(uint64_t address)
	{
		const uint64_t start = address - address % kPage;
		auto [at, added] = pages_.try_emplace(start);
		if (added) {
			at->second.resize(kPage);
			if (!read_(start, at->second.data(), kPage))
				at->second.clear();
		}
		return at->second.empty() ? nullptr : at->second.data();
	}

	const ReadMemory &read_;
	std::map<uint64_t, std::vector<uint8_t>> pages_;
};

// One table's layout: where it starts, its stride, and the offsets of the entry's members
// (name first; -1 for a member the table has not).
struct TableLayout {
	uint64_t base = 0, stride = 0;
	uint64_t offsets[5] = {};
};

Status table_layout(const HotSpotSymbolAddress &symbol, PageCache &memory, std::string_view table,
		    std::initializer_list<std::string_view> members, TableLayout &out)
{
	const auto base = symbol(table);
	if (!base)
		return Error("its VM tables are not exported");
	if (!memory.read(*base, &out.base, 8))
		return Error("its VM tables cannot be read");
	const std::string entry = std::string(table.substr(0, table.size() - 1)) + "Entry"; // VMStructs -> VMStructEntry
	size_t i = 0;
	for (std::string_view member : members) {
		const auto at = symbol(entry + std::string(member));
		if (!at)
			return Error("its VM tables are not exported");
		uint64_t value = 0;
		if (!memory.read(*at, &value, 8))
			return Error("its VM tables cannot be read");
		if (member == "ArrayStride")
			out.stride = value;
		else
			out.offsets[i++] = value;
	}
	if (out.base == 0 || out.stride == 0)
		return Error("its VM tables are not set up yet");
	for (size_t k = 0; k < i; k++)
		if (out.stride > 256 || out.offsets[k] + 8 > out.stride)
			return Error("its VM tables have an unknown layout");
	return {};
}

// Calls each(entry bytes) for each entry of a table, up to the one whose name is null.
template <typename Each>
Status each_entry(PageCache &memory, const TableLayout &table, Each each)
{
	std::vector<uint8_t> entry(table.stride);
	for (size_t i = 0; i < kMaxHotSpotTableEntries; i++) {
		if (!memory.read(table.base + i * table.stride, entry.data(), entry.size()))
			return Error("its VM tables cannot be read");
		uint64_t name = 0;
		std::memcpy(&name, entry.data() + table.offsets[0], 8);
		if (name == 0)
			return {};
		each(entry);
	}
	return Error("its VM tables have no end");
}

template <typename T>
T member(const std::vector<uint8_t> &entry, uint64_t offset)
{
	T value;
	std::memcpy(&value, entry.data() + offset, sizeof(value));
	return value;
}

} // namespace

Result<HotSpotTables> HotSpotTables::read(const HotSpotSymbolAddress &symbol, const ReadMemory &read)
{
	PageCache memory(read);
	TableLayout structs, types, constants;
	for (Status status : {table_layout(symbol, memory, "VMStructs",
					   {"ArrayStride", "TypeNameOffset", "FieldNameOffset", "OffsetOffset", "AddressOffset",
					    "TypeStringOffset"},
					   structs),
			      table_layout(symbol, memory, "VMTypes", {"ArrayStride", "TypeNameOffset", "SizeOffset"}, types),
			      table_layout(symbol, memory, "VMIntConstants", {"ArrayStride", "NameOffset", "ValueOffset"},
					   constants)})
		if (!status.ok())
			return Error(status.error());

	HotSpotTables tables;
	bool unreadable = false;
	auto name_at = [&](const std::vector<uint8_t> &entry, uint64_t offset) {
		auto name = memory.name(member<uint64_t>(entry, offset));
		unreadable |= !name;
		return name.value_or("");
	};
	Status read_structs = each_entry(memory, structs, [&](const std::vector<uint8_t> &entry) {
		const std::string type = name_at(entry, structs.offsets[0]);
		if (member<uint64_t>(entry, structs.offsets[1]) == 0)
			return;
		const std::string field = name_at(entry, structs.offsets[1]);
		const uint64_t address = member<uint64_t>(entry, structs.offsets[3]);
		tables.fields_[type + "::" + field] = address ? address : member<uint64_t>(entry, structs.offsets[2]);
		if (const uint64_t type_string = member<uint64_t>(entry, structs.offsets[4]))
			tables.field_types_[type + "::" + field] = memory.name(type_string).value_or("");
	});
	Status read_types = each_entry(memory, types, [&](const std::vector<uint8_t> &entry) {
		tables.sizes_[name_at(entry, types.offsets[0])] = member<uint64_t>(entry, types.offsets[1]);
	});
	Status read_constants = each_entry(memory, constants, [&](const std::vector<uint8_t> &entry) {
		tables.constants_[name_at(entry, constants.offsets[0])] = member<int32_t>(entry, constants.offsets[1]);
	});
	for (const Status &status : {read_structs, read_types, read_constants})
		if (!status.ok())
			return Error(status.error());
	if (unreadable)
		return Error("its VM tables' names cannot be read");
	return tables;
}

std::optional<uint64_t> HotSpotTables::field(std::string_view type, std::string_view name) const
{
	auto at = fields_.find(std::string(type) + "::" + std::string(name));
	return at == fields_.end() ? std::nullopt : std::optional(at->second);
}

std::optional<std::string> HotSpotTables::field_type(std::string_view type, std::string_view name) const
{
	auto at = field_types_.find(std::string(type) + "::" + std::string(name));
	return at == field_types_.end() ? std::nullopt : std::optional(at->second);
}

std::optional<uint64_t> HotSpotTables::size_of(std::string_view type) const
{
	auto at = sizes_.find(std::string(type));
	return at == sizes_.end() ? std::nullopt : std::optional(at->second);
}

std::optional<int64_t> HotSpotTables::constant(std::string_view name) const
{
	auto at = constants_.find(std::string(name));
	return at == constants_.end() ? std::nullopt : std::optional(at->second);
}
