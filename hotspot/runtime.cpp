// hotspot/runtime.cpp: a JVM in a process: its libjvm.so, the tables it exports, and the
// few words of its memory that say its version and where its compiled code lies.
#include "hotspot/runtime.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "base/fd.h"
#include "elf/elf.h"
#include "hotspot/names.h"
#include "hotspot/vmstructs.h"
#include "proc/maps.h"
#include "proc/memory.h"

namespace {

bool is_libjvm(const MapEntry &m)
{
	return m.file_backed() && (m.path.ends_with("/libjvm.so") || m.path == "libjvm.so");
}

} // namespace

HotSpotDetection detect_hotspot(uint32_t pid, MapsReads &reads)
{
	HotSpotDetection found;
	const std::string proc = "/proc/" + std::to_string(pid);
	const MapEntry *first = nullptr; // libjvm's first mapping, from which its load bias follows
	const ProcessMaps *listed = reads.of(pid);
	if (!listed)
		return found;
	const ProcessMaps &maps = *listed;
	for (const MapEntry &m : maps.entries())
		if (is_libjvm(m) && maps.executes(m) && (!first || (m.inode == first->inode && m.offset < first->offset)))
			first = &m;
	if (!first)
		return found;
	found.libjvm = first->path;
	// libjvm's image never written: the run of its mappings, none writable and each where
	// the one before ends, around its code (a copy of the file mapped elsewhere, to be read,
	// is not it: that memory may be let go and used again). The entries are sorted.
	const std::vector<MapEntry> &all = maps.entries();
	const auto unwritten = [&](size_t i) { return FileKey::of(all[i]) == FileKey::of(*first) && all[i].perms[1] != 'w'; };
	size_t low = size_t(first - all.data()), high = low;
	while (low > 0 && unwritten(low - 1) && all[low - 1].end == all[low].start)
		low--;
	while (high + 1 < all.size() && unwritten(high + 1) && all[high + 1].start == all[high].end)
		high++;
	found.image_low = all[low].start;
	found.image_high = all[high].end;
	const auto started = std::chrono::steady_clock::now();

	UniqueFd fd = open_read_only((proc + "/root" + first->path).c_str());
	if (!fd || !same_file(fd.get(), *first))
		return found;
	std::unique_ptr<ElfFile> elf = ElfFile::open(fd.get());
	const std::optional<uint64_t> first_address = elf ? elf->address_of_file_offset(first->offset) : std::nullopt;
	if (!first_address) {
		found.kind = HotSpotDetection::Unknown;
		found.note = first->path + " is not an ELF file this profiler reads";
		return found;
	}
	found.bias = first->start - *first_address;
	found.mem = std::make_shared<UniqueFd>(open_process_memory(pid));
	if (!*found.mem)
		return found;
	const ReadMemory read = [&](uint64_t address, void *out, size_t size) {
		return read_process_memory(found.mem->get(), address, out, size);
	};
	const HotSpotSymbolAddress symbol = [&](std::string_view name) -> std::optional<uint64_t> {
		const auto value = find_elf_symbol(*elf, "gHotSpot" + std::string(name));
		return value ? std::optional(found.bias + value->address) : std::nullopt;
	};
	Result<HotSpotTables> tables = HotSpotTables::read(symbol, read);
	found.read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
	if (!tables.ok()) {
		const bool starting = tables.error().find("not set up yet") != std::string::npos;
		found.kind = starting ? HotSpotDetection::NotYet : HotSpotDetection::Unknown;
		found.note = first->path + ": " + tables.error();
		return found;
	}
	Result<HotSpotLayout> layout = hotspot_layout(*tables);
	if (!layout.ok()) {
		found.kind = HotSpotDetection::Unknown;
		found.note = first->path + ": " + layout.error();
		return found;
	}
	found.layout = *layout;
	found.version = hotspot_version(found.layout, read);
	// From JDK 20 on, a compressed stream's numbers never hold a zero byte (UNSIGNED5's
	// excluded byte): they decode differently.
	found.layout.unsigned5_excluded = std::atoi(found.version.c_str()) >= 20 ? 1 : 0;
	Result<HotSpotHeaps> heaps = hotspot_heaps(found.layout, read);
	if (!heaps.ok()) {
		found.kind = HotSpotDetection::NotYet;
		found.note = first->path + ": " + heaps.error();
		return found;
	}
	found.heaps = *heaps;
	bool generated = false;
	found.fixed = hotspot_fixed_blobs(found.heaps, found.layout, read, &generated);
	if (!generated) {
		found.kind = HotSpotDetection::NotYet;
		found.note = first->path + ": its interpreter is not generated yet";
		return found;
	}
	// Its perf data, by the tables or by libjvm's own symbol (the tables of some JDKs omit it).
	uint64_t prologue_at = tables->field("PerfMemory", "_prologue").value_or(0), prologue = 0;
	if (const auto symbol = !prologue_at ? find_elf_symbol(*elf, "_ZN10PerfMemory9_prologueE") : std::nullopt)
		prologue_at = found.bias + symbol->address;
	if (prologue_at && read_value(read, prologue_at, prologue))
		found.unloaded_classes = hotspot_perf_counter(prologue, read, "java.cls.unloadedClasses");
	found.kind = HotSpotDetection::Java;
	return found;
}

uint64_t hotspot_perf_counter(uint64_t prologue, const ReadMemory &read, std::string_view name)
{
	// PerfDataPrologue: magic 0xcafec0c0 (big-endian), byte order (1: little), major and
	// minor version, accessible; used bytes, overflow; a time stamp; where the entries
	// start and how many there are.
	struct {
		uint8_t magic[4], byte_order, major, minor, accessible;
		uint32_t used, overflow;
		uint64_t mod_time_stamp;
		uint32_t entry_offset, num_entries;
	} head;
	static_assert(sizeof(head) == 32);
	if (!prologue || !read(prologue, &head, sizeof(head)) || std::memcmp(head.magic, "\xca\xfe\xc0\xc0", 4) ||
	    head.byte_order != 1 || head.used > kMaxHotSpotPerfData || head.entry_offset < sizeof(head) ||
	    head.entry_offset > head.used)
		return 0;
	std::vector<uint8_t> data(head.used);
	if (!read(prologue, data.data(), data.size()))
		return 0;
	// PerfDataEntry: its length, its name's offset, a vector's length (0: a scalar), its type
	// ('J': a jlong), flags, units, variability, its data's offset; the name, NUL-ended.
	struct {
		uint32_t entry_length, name_offset, vector_length;
		uint8_t data_type, flags, data_units, data_variability;
		uint32_t data_offset;
	} entry;
	static_assert(sizeof(entry) == 20);
	for (uint32_t at = head.entry_offset, i = 0; i < head.num_entries && data.size() - at >= sizeof(entry); i++) {
		std::memcpy(&entry, &data[at], sizeof(entry));
		if (entry.entry_length < sizeof(entry) || entry.entry_length > data.size() - at)
			break;
		const char *text = reinterpret_cast<const char *>(&data[at]);
		if (entry.data_type == 'J' && entry.vector_length == 0 && entry.name_offset >= sizeof(entry) &&
		    entry.name_offset < entry.entry_length && entry.data_offset <= entry.entry_length - 8 &&
		    std::string_view(text + entry.name_offset, strnlen(text + entry.name_offset, entry.entry_length - entry.name_offset)) ==
			    name)
			return prologue + at + entry.data_offset;
		at += entry.entry_length;
	}
	return 0;
}
