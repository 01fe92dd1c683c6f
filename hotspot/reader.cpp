// hotspot/reader.cpp: classify sampled processes, send the walk what it needs of each JVM,
// and name the Java frames of stored stacks.
#include "hotspot/reader.h"

#include <bpf/bpf.h>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include <linux/types.h>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "base/fd.h"
#include "hotspot/hotspot.h"
#include "hotspot/names.h"
#include "hotspot/runtime.h"
#include "proc/memory.h"
#include "runtime/kernel_asks.h"

namespace {

// What the walk reads of a JVM, from its detection.
hotspot_process process_of(const HotSpotDetection &found)
{
	const HotSpotLayout &l = found.layout;
	hotspot_process p{};
	p.is_java = 1;
	p.heaps = uint8_t(std::min<size_t>(found.heaps.heaps.size(), HOTSPOT_MAX_HEAPS));
	for (size_t i = 0; i < p.heaps; i++) {
		p.low[i] = found.heaps.heaps[i].low;
		p.high[i] = found.heaps.heaps[i].high;
		p.segmap[i] = found.heaps.heaps[i].segmap_low;
	}
	p.log2_segment = uint8_t(found.heaps.log2_segment);
	p.code_begin_is_offset = l.code_begin_is_offset;
	p.frame_complete_is_short = l.frame_complete_is_short;
	p.block_used = uint16_t(l.block_used);
	p.block_size = uint16_t(l.heap_block_size);
	p.blob_name = uint16_t(l.blob_name);
	p.blob_frame_size = uint16_t(l.blob_frame_size);
	p.blob_code_begin = uint16_t(l.blob_code_begin);
	p.blob_frame_complete = uint16_t(l.blob_frame_complete);
	p.nmethod_method = uint16_t(l.nmethod_method);
	p.method_const = uint16_t(l.method_const);
	p.const_size = uint16_t(l.const_size);
	p.interpreter_method = int16_t(8 * l.interpreter_method);
	p.interpreter_bcp = int16_t(8 * l.interpreter_bcp);
	return p;
}

} // namespace

struct HotSpotReader::Impl {
	HotSpotMaps maps;
	struct Process {
		HotSpotLayout layout;
		std::shared_ptr<UniqueFd> mem;
	};
	std::unordered_map<uint32_t, Process> processes; // JVMs, by pid
	std::set<std::string> said;                        // notes already printed
	mutable std::map<std::pair<uint32_t, uint64_t>, std::optional<RuntimeFrameName>> named;
	mutable uint64_t methods = 0, unnamed = 0;
	mutable double naming_ms = 0;
	double reading_ms = 0;

	void classify(uint32_t pid);
	std::optional<RuntimeFrameName> read_name(uint32_t pid, uint64_t frame) const;
};

void HotSpotReader::Impl::classify(uint32_t pid)
{
	HotSpotDetection found = detect_hotspot(pid);
	reading_ms += found.read_ms;
	hotspot_process value{};
	if (found.kind == HotSpotDetection::NotYet) {
		value.not_yet = 1;
		bpf_map_update_elem(maps.processes, &pid, &value, BPF_ANY);
		return;
	}
	if (!found.note.empty() && said.insert(found.note).second)
		diagnostics::say("Java frames not shown for PID %u: %s", pid, found.note.c_str());
	if (found.kind == HotSpotDetection::Java) {
		value = process_of(found);
		auto mem = std::make_shared<UniqueFd>(open_read_only(("/proc/" + std::to_string(pid) + "/mem").c_str()));
		processes[pid] = Process{found.layout, mem};
	} else {
		processes.erase(pid);
	}
	bpf_map_update_elem(maps.processes, &pid, &value, BPF_ANY);
}

std::optional<RuntimeFrameName> HotSpotReader::Impl::read_name(uint32_t pid, uint64_t frame) const
{
	auto it = processes.find(pid);
	if (it == processes.end() || !*it->second.mem)
		return std::nullopt;
	const int fd = it->second.mem->get();
	const ReadMemory read = [fd](uint64_t address, void *out, size_t size) {
		return read_process_memory(fd, address, out, size);
	};
	const HotSpotLayout &layout = it->second.layout;
	const uint64_t address = HOTSPOT_FRAME_ADDRESS(frame);
	if (HOTSPOT_FRAME_KIND(frame) == HOTSPOT_STUB) {
		const auto name = read_hotspot_blob_name(layout, read, address);
		if (!name)
			return std::nullopt;
		return RuntimeFrameName{"[" + *name + "]", "", 0};
	}
	const auto method = read_hotspot_method(layout, read, address);
	if (!method)
		return std::nullopt;
	return RuntimeFrameName{method->qualified(), method->file, 0};
}

HotSpotReader::HotSpotReader(const HotSpotMaps &maps) : impl_(std::make_unique<Impl>())
{
	impl_->maps = maps;
}

HotSpotReader::~HotSpotReader() = default;

void HotSpotReader::prepare(const std::vector<uint32_t> &pids)
{
	for (uint32_t pid : pids)
		impl_->classify(pid);
}

void HotSpotReader::tick()
{
	Impl &d = *impl_;
	answer_asked_pids(d.maps.wanted, [&](uint32_t pid) { d.classify(pid); });
}

bool HotSpotReader::name(uint32_t pid, uint64_t frame, RuntimeFrameName &out) const
{
	const Impl &d = *impl_;
	// The bytecode index does not change the name (lines are not read yet): one read a method.
	const uint64_t key = frame & ~(HOTSPOT_NO_BCI << 44);
	auto [at, added] = d.named.try_emplace({pid, key});
	if (added) {
		const double start = clocks::thread_cpu_ms();
		at->second = d.read_name(pid, key);
		(at->second ? d.methods : d.unnamed)++;
		d.naming_ms += clocks::thread_cpu_ms() - start;
	}
	if (!at->second)
		return false;
	out = *at->second;
	return true;
}

std::string HotSpotReader::stats() const
{
	const Impl &d = *impl_;
	char line[200];
	snprintf(line, sizeof(line), "java: %zu JVMs followed (tables read in %.1f ms), %" PRIu64 " methods and stubs named (%" PRIu64
		 " not), naming CPU %.1f ms", d.processes.size(), d.reading_ms, d.methods, d.unnamed, d.naming_ms);
	return line;
}
