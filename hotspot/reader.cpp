// hotspot/reader.cpp: classify sampled processes, send the walk what it needs of each JVM,
// and name the Java frames of stored stacks.
#include "hotspot/reader.h"

#include <bpf/bpf.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <linux/types.h>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "base/fd.h"
#include "hotspot/hotspot.h"
#include "hotspot/metadata_pages.h"
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
	p.block_length = uint16_t(l.block_length);
	p.block_size = uint16_t(l.heap_block_size);
	p.blob_name = uint16_t(l.blob_name);
	p.blob_frame_size = uint16_t(l.blob_frame_size);
	p.blob_code_begin = uint16_t(l.blob_code_begin);
	p.blob_frame_complete = uint16_t(l.blob_frame_complete);
	p.nmethod_method = uint16_t(l.nmethod_method);
	p.nmethod_compile_id = uint16_t(l.nmethod_compile_id);
	p.method_const = uint16_t(l.method_const);
	p.const_size = uint16_t(l.const_size);
	p.header_read = uint16_t(8 + std::max({l.blob_name, l.blob_frame_size, l.blob_code_begin, l.blob_frame_complete,
					       l.nmethod_method, l.nmethod_compile_id}));
	p.interpreter_method = int16_t(8 * l.interpreter_method);
	p.interpreter_bcp = int16_t(8 * l.interpreter_bcp);
	p.unloaded = found.unloaded_classes;
	p.image_low = found.image_low;
	p.image_high = found.image_high;
	for (size_t i = 0; i < std::min<size_t>(found.fixed.size(), HOTSPOT_FIXED_BLOBS); i++) {
		p.fixed_low[i] = found.fixed[i].low;
		p.fixed_high[i] = found.fixed[i].high;
		p.fixed_name[i] = found.fixed[i].name;
		p.fixed_frameless[i] = found.fixed[i].frameless;
	}
	return p;
}

// Takes process pid's entries out of a map keyed by (pid, address): their range, where
// erase_if walked every process's (a classify of each process met, Java or not, walked the
// tens of thousands of methods an agent names in half an hour).
template <typename Map>
void erase_process(Map &map, uint32_t pid)
{
	map.erase(map.lower_bound({pid, 0}), map.upper_bound({pid, UINT64_MAX}));
}

} // namespace

struct HotSpotReader::Impl {
	explicit Impl(const RuntimeMaps &maps) : maps(maps), seen(maps.seen, sizeof(runtime_code)) {}
	RuntimeMaps maps;
	SeenRecords seen; // methods and compiled methods met for the first time
	struct Process {
		HotSpotLayout layout;
		std::shared_ptr<UniqueFd> mem;
		uint64_t unloaded_at = 0; // where its count of classes unloaded is (0: none)
		uint64_t unloaded = 0;    // that count when its methods were last read
		// That count before the first sample of the window the reports name now, and before
		// the next one's (read when a window ends: the next window's samples began when its
		// maps were drained, before that): a frame named at the end by its Method* is named
		// only when no class was unloaded since (raw_name).
		uint64_t raw_since = 0, raw_next = 0;
		ReadMemory read() const
		{
			const int fd = mem && *mem ? mem->get() : -1;
			return [fd](uint64_t address, void *out, size_t size) {
				return fd >= 0 && read_process_memory(fd, address, out, size);
			};
		}
		// The count of classes unloaded now: 0 without one; nothing when it cannot be read.
		std::optional<uint64_t> unloaded_now() const
		{
			uint64_t count = 0;
			if (unloaded_at && !read_value(read(), unloaded_at, count))
				return std::nullopt;
			return count;
		}
		// What raw_since and raw_next hold: that count, or one no count equals when there is
		// none or it cannot be read (no method's frame is named at the end then).
		uint64_t raw_mark() const { return unloaded_at ? unloaded_now().value_or(kNoMark) : kNoMark; }
		static constexpr uint64_t kNoMark = ~0ULL;
	};
	std::unordered_map<uint32_t, Process> processes; // JVMs, by pid
	std::set<std::string> said;                        // notes already printed
	// A method as the reports name it, with its line table; by pid and Method* (null: it
	// could not be read).
	struct Method {
		HotSpotMethodName name;
		std::vector<uint8_t> lines;
	};
	using MethodRef = std::shared_ptr<const Method>;
	mutable std::map<std::pair<uint32_t, uint64_t>, MethodRef> methods;
	// What the walk met, by its id (unique in the run), read while its JVM lived and kept
	// whole (another image under the pid reads other things at those addresses): a stub by
	// its name; an interpreted method; a compiled one, with its debug information and every
	// method its scopes name, by Method*.
	struct Met {
		uint32_t pid;
		std::string stub;
		MethodRef method;
		std::optional<HotSpotCompiled> code;
		std::unordered_map<uint64_t, MethodRef> inlined;
		KeptCode kept;
	};
	std::unordered_map<uint64_t, Met> met_ids;
	uint64_t window = 0; // the continuous run's windows closed
	// The names of frames by id this window, by pid and frame.
	mutable std::map<std::pair<uint32_t, uint64_t>, std::optional<RuntimeFrameName>> named;
	mutable uint64_t methods_named = 0, unnamed = 0;
	uint64_t compiled_read = 0, interpreted_read = 0, stubs_read = 0, met_unread = 0;
	mutable double naming_ms = 0;
	double reading_ms = 0;

	void classify(uint32_t pid, MapsReads &reads);
	void learn(const runtime_code &met);
	MetadataPages metadata; // what learn reads of methods, through one tick
	uint64_t serials = 0;   // JVMs classified (hotspot_process's serial)
	MethodRef method(uint32_t pid, uint64_t address, const ReadMemory &read) const;
	MethodRef read_method(const Process &process, uint64_t address, const ReadMemory &read) const;
	std::optional<RuntimeFrameName> raw_name(uint32_t pid, uint64_t frame) const;
	static std::optional<RuntimeFrameName> method_frame(const MethodRef &m, const HotSpotLayout &layout, uint32_t bci,
							    bool has_bci);
	std::optional<RuntimeFrameName> read_name(uint32_t pid, uint64_t frame) const;
};

void HotSpotReader::Impl::classify(uint32_t pid, MapsReads &reads)
{
	HotSpotDetection found = detect_hotspot(pid, reads);
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
		const auto in_frame = [](int16_t bytes) { return bytes < 0 && bytes >= -8 * HOTSPOT_FRAME_WORDS && !(bytes % 8); };
		value.serial = ++serials;
		if (value.block_size + value.header_read > HOTSPOT_HEADER_READ || value.block_used >= value.block_size ||
		    value.block_length + 8 > value.block_size || value.block_length % 8 || !in_frame(value.interpreter_method) ||
		    !in_frame(value.interpreter_bcp)) {
			if (said.insert("header").second)
				diagnostics::say("Java frames not shown for PID %u: its code blobs' or interpreter frames' "
						 "fields lie past what the walk reads of each", pid);
			value = hotspot_process{};
		}
	}
	if (value.is_java) {
		const bool again = processes.contains(pid); // a new image (exec), mid-window
		Process &process = processes[pid] = Process{found.layout, found.mem, found.unloaded_classes};
		if (!process.unloaded_at && said.insert("no perf data").second)
			diagnostics::say("Java frames of PID %u are checked without its count of classes unloaded "
					 "(it keeps no perf data: -XX:-UsePerfData): a method whose class is unloaded "
					 "just after a sample may be named as the one in its place, and methods' frames "
					 "named at the end are shown [java]", pid);
		// Read before the walk is told of the JVM: before its first sample. This window's
		// frames of the image before an exec are not named: this JVM's memory does not hold
		// them.
		process.raw_next = process.raw_mark();
		process.raw_since = again ? Process::kNoMark : process.raw_next;
		forget_runtime_codes(maps, pid); // a new image under the same pid (exec)
	} else {
		processes.erase(pid);
	}
	// A pid's methods and names are its image's: another image's are not them.
	erase_process(named, pid);
	erase_process(methods, pid);
	bpf_map_update_elem(maps.processes, &pid, &value, BPF_ANY);
}

HotSpotReader::Impl::MethodRef HotSpotReader::Impl::read_method(const Process &process, uint64_t address,
								 const ReadMemory &read) const
{
	auto name = read_hotspot_method(process.layout, read, address);
	(name ? methods_named : unnamed)++;
	return name ? std::make_shared<const Method>(
			      Method{std::move(*name), read_hotspot_line_table(process.layout, read, address)})
		    : nullptr;
}

HotSpotReader::Impl::MethodRef HotSpotReader::Impl::method(uint32_t pid, uint64_t address,
							    const ReadMemory &read) const
{
	auto [at, added] = methods.try_emplace({pid, address});
	if (added) {
		auto it = processes.find(pid);
		if (it == processes.end())
			return nullptr;
		at->second = read_method(it->second, address, read);
	}
	return at->second;
}

// A method's frame; its line and -v's bytecode index when the frame has one.
std::optional<RuntimeFrameName> HotSpotReader::Impl::method_frame(const MethodRef &m, const HotSpotLayout &layout,
								  uint32_t bci, bool has_bci)
{
	if (!m)
		return std::nullopt;
	RuntimeFrameName name{m->name.qualified(), m->name.file,
			      has_bci ? hotspot_line_of(m->lines, bci, layout.unsigned5_excluded) : 0};
	name.detail = m->name.signature + (has_bci ? " bci " + std::to_string(bci) : "");
	return name;
}

// A frame whose id the walk did not have (its ring or map full), named at the end by its
// Method* or code blob as they are now. A Method* may be another method's by now, in the
// memory of a class unloaded since the sample: it is read, afresh, only when the JVM counts
// no class unloaded since before the window's first sample, before nor after the read
// (nothing is named without the count: -XX:-UsePerfData).
std::optional<RuntimeFrameName> HotSpotReader::Impl::raw_name(uint32_t pid, uint64_t frame) const
{
	auto it = processes.find(pid);
	if (it == processes.end())
		return std::nullopt;
	const Process &process = it->second;
	const ReadMemory read = process.read();
	if (HOTSPOT_FRAME_KIND(frame) == HOTSPOT_STUB) {
		const auto name = read_hotspot_blob_name(process.layout, read, HOTSPOT_FRAME_ADDRESS(frame));
		return name ? std::optional<RuntimeFrameName>({"[" + *name + "]", "", 0}) : std::nullopt;
	}
	const auto unchanged = [&] { return process.raw_since != Process::kNoMark && process.raw_mark() == process.raw_since; };
	if (!unchanged())
		return std::nullopt;
	const MethodRef m = read_method(process, HOTSPOT_FRAME_ADDRESS(frame), read);
	if (!unchanged())
		return std::nullopt;
	const uint64_t bci = HOTSPOT_FRAME_BCI(frame);
	return method_frame(m, process.layout, uint32_t(bci), HOTSPOT_FRAME_KIND(frame) == HOTSPOT_INTERPRETED && bci != HOTSPOT_NO_BCI);
}

// A method or compiled method the walk met, read now, while the JVM lives (the code cache
// is swept, classes are unloaded, the JVM may exit first), if it is still the one the walk
// met: a compiled method with its debug information and every method it inlined.
void HotSpotReader::Impl::learn(const runtime_code &met)
{
	auto it = processes.find(met.pid);
	if (it == processes.end()) {
		met_unread++;
		return;
	}
	Process &process = it->second;
	const HotSpotLayout &layout = process.layout;
	const ReadMemory read = process.read();
	// The count of classes unloaded, before and after the reads: a method is read only if no
	// class was unloaded since the walk met it (its fingerprint holds the count then), nor
	// while it is read. Methods read before an unloading are read again.
	const std::optional<uint64_t> before = process.unloaded_now();
	if (!before) {
		met_unread++;
		return;
	}
	const uint64_t unloaded = *before;
	if (unloaded != process.unloaded) {
		erase_process(methods, met.pid);
		process.unloaded = unloaded;
	}
	metadata.start(met.pid, unloaded);
	const ReadMemory paged = metadata.reader(read);
	Met known{met.pid, "", nullptr, std::nullopt, {}, {}};
	if (met.kind == HOTSPOT_CODE_METHOD) {
		uint64_t const_method = 0;
		if (read(met.object + layout.method_const, &const_method, sizeof(const_method)) &&
		    hotspot_fingerprint(met.object, const_method, unloaded) == met.fingerprint)
			known.method = method(met.pid, met.object, paged);
		interpreted_read += bool(known.method);
	} else if (met.kind == HOTSPOT_CODE_STUB) {
		uint64_t name_start = 0; // the name's first 8 bytes, as the walk read them
		const auto name = read_hotspot_blob_name(layout, read, met.object, &name_start);
		if (name && hotspot_fingerprint(met.object, name_start, 0) == met.fingerprint)
			known.stub = "[" + *name + "]";
		stubs_read += !known.stub.empty();
	} else if ((known.code = read_hotspot_compiled(layout, read, met.object, met.fingerprint, unloaded))) {
		known.method = method(met.pid, known.code->method, paged);
		// PcDescs share their scopes: each chain is read once.
		std::unordered_set<uint32_t> scopes;
		for (const auto &[pc, scope] : known.code->scopes.pcs)
			if (scopes.insert(scope).second)
				for (const HotSpotScope &inlined :
				     hotspot_scope_chain(known.code->scopes, scope, layout.unsigned5_excluded))
					if (!known.inlined.contains(inlined.method))
						known.inlined.emplace(inlined.method, method(met.pid, inlined.method, paged));
		compiled_read += bool(known.method);
	}
	const std::optional<uint64_t> after = process.unloaded_now();
	if ((!known.method && known.stub.empty()) || !after || (known.stub.empty() && *after != unloaded)) {
		met_unread++;
		return;
	}
	known.kept = {{met.pid, met.kind, met.object}, window};
	met_ids.emplace(met.id, std::move(known));
}

std::optional<RuntimeFrameName> HotSpotReader::Impl::read_name(uint32_t pid, uint64_t frame) const
{
	auto it = processes.find(pid);
	if (it == processes.end())
		return std::nullopt;
	const HotSpotLayout &layout = it->second.layout;
	const uint64_t at = HOTSPOT_FRAME_BCI(frame);
	const auto name_of = [&](const MethodRef &m, uint32_t bci, bool has_bci) {
		return method_frame(m, layout, bci, has_bci);
	};
	const auto found = met_ids.find(HOTSPOT_FRAME_ID(frame));
	if (found == met_ids.end() || found->second.pid != pid)
		return std::nullopt;
	const Met &met = found->second;
	met.kept.window = window;
	if (!met.stub.empty())
		return RuntimeFrameName{met.stub, "", 0};
	if (!met.code) // interpreted
		return name_of(met.method, uint32_t(at), at != HOTSPOT_NO_BCI);
	// Innermost first: each inlined into the next; the last is the compiled method itself.
	const std::vector<HotSpotScope> chain =
		at == HOTSPOT_NO_BCI ? std::vector<HotSpotScope>{}
				     : hotspot_scopes_at(met.code->scopes, uint32_t(at), layout.unsigned5_excluded);
	if (chain.empty())
		return name_of(met.method, 0, false);
	const auto inlined = [&](const HotSpotScope &scope) {
		const auto it = met.inlined.find(scope.method);
		return name_of(it == met.inlined.end() ? nullptr : it->second, scope.bci, true);
	};
	std::optional<RuntimeFrameName> out = inlined(chain.back());
	for (size_t i = 0; out && i + 1 < chain.size(); i++) {
		const auto callee = inlined(chain[i]);
		if (!callee)
			return std::nullopt;
		out->inlined_here.push_back(std::move(*callee));
	}
	return out;
}

HotSpotReader::HotSpotReader(const RuntimeMaps &maps) : impl_(std::make_unique<Impl>(maps)) {}

HotSpotReader::~HotSpotReader() = default;

void HotSpotReader::prepare(const std::vector<uint32_t> &pids, MapsReads &maps)
{
	for (uint32_t pid : pids)
		impl_->classify(pid, maps);
}

void HotSpotReader::tick(MapsReads &maps)
{
	Impl &d = *impl_;
	answer_asked_pids(d.maps.wanted, [&](uint32_t pid) { d.classify(pid, maps); });
	const std::vector<runtime_code> fresh = take_seen<runtime_code>(d.seen);
	if (fresh.empty())
		return;
	const double start = clocks::thread_cpu_ms();
	for (const runtime_code &met : fresh)
		d.learn(met);
	d.metadata.clear();
	d.naming_ms += clocks::thread_cpu_ms() - start;
}

void HotSpotReader::end_window()
{
	Impl &d = *impl_;
	forget_unnamed_codes(d.met_ids, ++d.window, forgetting_in(d.maps));
	for (auto &[pid, process] : d.processes) {
		process.raw_since = process.raw_next;
		process.raw_next = process.raw_mark();
	}
	// What named the frames of the ids forgotten, and the methods only they held.
	d.named.clear();
	std::erase_if(d.methods, [](const auto &entry) { return entry.second.use_count() <= 1; });
}

bool HotSpotReader::name(uint32_t pid, uint64_t frame, RuntimeFrameName &out) const
{
	const Impl &d = *impl_;
	const auto timed = [&](auto read) {
		const double start = clocks::thread_cpu_ms();
		std::optional<RuntimeFrameName> name = read();
		d.naming_ms += clocks::thread_cpu_ms() - start;
		return name;
	};
	const auto give = [&](const std::optional<RuntimeFrameName> &name) {
		if (name)
			out = *name;
		return name.has_value();
	};
	// A frame named by id: once a window. One named by its Method* or code blob is read each
	// time, and a method's checked against the JVM's count of classes unloaded each time:
	// frames are named batch by batch through a window, and a class unloaded since may have
	// put another method at that address.
	if (HOTSPOT_FRAME_KIND(frame) != HOTSPOT_BY_ID)
		return give(timed([&] { return d.raw_name(pid, frame); }));
	auto [at, added] = d.named.try_emplace({pid, frame});
	if (added)
		at->second = timed([&] { return d.read_name(pid, frame); });
	return give(at->second);
}

std::string HotSpotReader::stats() const
{
	const Impl &d = *impl_;
	char line[240];
	snprintf(line, sizeof(line),
		 "java: %zu JVMs followed (tables read in %.1f ms), %" PRIu64 " methods named (%" PRIu64
		 " not); met while the JVM lived: %" PRIu64 " interpreted and %" PRIu64
		 " compiled methods and %" PRIu64 " stubs read (%" PRIu64 " not), naming CPU %.1f ms",
		 d.processes.size(), d.reading_ms, d.methods_named, d.unnamed, d.interpreted_read, d.compiled_read,
		 d.stubs_read, d.met_unread, d.naming_ms);
	return line;
}
