// hotspot/runtime.cpp: a JVM in a process: its libjvm.so, the tables it exports, and the
// few words of its memory that say its version and where its compiled code lies.
#include "hotspot/runtime.h"

#include <chrono>
#include <cstdlib>
#include <memory>

#include "base/fd.h"
#include "elf/elf.h"
#include "hotspot/vmstructs.h"
#include "proc/maps.h"
#include "proc/memory.h"

namespace {

bool is_libjvm(const MapEntry &m)
{
	return m.file_backed() && (m.path.ends_with("/libjvm.so") || m.path == "libjvm.so");
}

} // namespace

HotSpotDetection detect_hotspot(uint32_t pid)
{
	HotSpotDetection found;
	const std::string proc = "/proc/" + std::to_string(pid);
	ProcessMaps maps;
	const MapEntry *first = nullptr; // libjvm's first mapping, from which its load bias follows
	if (!ProcessMaps::load(proc + "/maps", maps))
		return found;
	for (const MapEntry &m : maps.entries())
		if (is_libjvm(m) && (!first || (m.inode == first->inode && m.offset < first->offset)))
			first = &m;
	if (!first)
		return found;
	found.libjvm = first->path;
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
	found.kind = HotSpotDetection::Java;
	return found;
}
