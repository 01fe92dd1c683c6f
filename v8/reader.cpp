// v8/reader.cpp: classify sampled processes, send the walk each Node one's layout, and name
// code objects as the walk reports them.
#include "v8/reader.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>
#include <unordered_map>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "base/fd.h"
#include "proc/memory.h"
#include "runtime/kernel_asks.h"
#include "v8/names.h"
#include "v8/runtime.h"

struct V8Reader::Impl {
	Impl(const RuntimeMaps &maps, int gcs, AttachUprobe attach)
		: maps(maps), gcs(gcs), seen(maps.seen, sizeof(runtime_code)), files(std::move(attach))
	{
	}
	RuntimeMaps maps;
	int gcs; // v8_gcs: the GCs counted, by pid (-1: none)
	SeenRecords seen; // code objects met for the first time
	V8Files files;
	V8Names names;
	std::unordered_map<uint32_t, V8Layout> processes; // Node ones, by pid
	std::set<std::string> said;                       // files already said unreadable
	std::set<std::string> versions;
	uint64_t named = 0, unnamed = 0;
	double naming_ms = 0;

	void classify(uint32_t pid, MapsReads &reads)
	{
		v8_process entry{};
		processes.erase(pid);
		if (auto found = files.detect(pid, reads)) {
			if (found->ok()) {
				v8_process &walk = processes.emplace(pid, found->value()).first->second.walk;
				walk.gc_counted = walk.gc_counted && start_gc_count(pid);
				entry = walk;
				versions.insert(found->value().version());
				forget_runtime_codes(maps, pid); // a new image under the same pid (exec)
			} else if (said.insert(found->error()).second) {
				diagnostics::say("JavaScript frames not named in PID %u: %s", pid, found->error().c_str());
			}
		}
		bpf_map_update_elem(maps.processes, &pid, &entry, BPF_ANY);
	}

	// Whether the kernel counts the GCs of process pid, whose file's uprobes are attached:
	// its count made, at 0, unless it is there already (only the uprobes write it after).
	bool start_gc_count(uint32_t pid)
	{
		const uint64_t zero = 0;
		return gcs >= 0 && (bpf_map_update_elem(gcs, &pid, &zero, BPF_NOEXIST) == 0 || errno == EEXIST);
	}

	// The GCs counted in the processes followed, for -v: the uprobes' hits.
	uint64_t gcs_counted() const
	{
		uint64_t sum = 0, count;
		for (const auto &[pid, layout] : processes)
			if (gcs >= 0 && bpf_map_lookup_elem(gcs, &pid, &count) == 0)
				sum += count;
		return sum;
	}

	void name_fresh(const std::vector<runtime_code> &fresh)
	{
		const double start = clocks::thread_cpu_ms();
		uint32_t open_pid = 0;
		UniqueFd mem;
		for (const runtime_code &code : fresh) {
			const auto process = processes.find(code.pid);
			if (process != processes.end() && (!mem || open_pid != code.pid)) {
				mem = open_process_memory(code.pid);
				open_pid = code.pid;
			}
			V8RootMaps met;
			if (process != processes.end() && mem && names.learn(code, process->second, mem.get(), &met)) {
				named++;
				take_maps(code.pid, process->second.walk, met);
			} else {
				unnamed++;
			}
		}
		naming_ms += clocks::thread_cpu_ms() - start;
	}

	// The walk's entry for the process gets the read-only maps met that it lacks (the first
	// met: a process whose isolates each had maps of their own would read the others').
	void take_maps(uint32_t pid, v8_process &walk, const V8RootMaps &met)
	{
		bool changed = false;
		for (auto [known, seen] : {std::pair{&walk.map_shared, met.shared}, std::pair{&walk.map_bytecode, met.bytecode},
					   std::pair{&walk.map_code, met.code}})
			if (seen && !*known) {
				*known = seen;
				changed = true;
			}
		if (changed)
			bpf_map_update_elem(maps.processes, &pid, &walk, BPF_ANY);
	}
};

V8Reader::V8Reader(const RuntimeMaps &maps, int gcs, AttachUprobe attach)
	: impl_(std::make_unique<Impl>(maps, gcs, std::move(attach)))
{
}

V8Reader::~V8Reader() = default;

void V8Reader::prepare(const std::vector<uint32_t> &pids, MapsReads &maps)
{
	for (uint32_t pid : pids)
		impl_->classify(pid, maps);
}

void V8Reader::tick(MapsReads &maps)
{
	answer_asked_pids(impl_->maps.wanted, [&](uint32_t pid) { impl_->classify(pid, maps); });
	if (const std::vector<runtime_code> fresh = take_seen<runtime_code>(impl_->seen); !fresh.empty())
		impl_->name_fresh(fresh);
}

bool V8Reader::name(uint32_t pid, uint64_t frame, RuntimeFrameName &out) const
{
	return impl_->names.name(pid, V8_FRAME_ID(frame), uint32_t(V8_FRAME_OFFSET(frame)), out);
}

void V8Reader::end_window()
{
	impl_->names.end_window(forgetting_in(impl_->maps));
}

std::string V8Reader::stats() const
{
	std::string versions;
	for (const std::string &version : impl_->versions)
		versions += (versions.empty() ? " (V8 " : ", ") + version;
	size_t maps_known = 0;
	for (const auto &[pid, layout] : impl_->processes)
		maps_known += layout.walk.map_shared != 0;
	char line[448];
	snprintf(line, sizeof(line), "js: %zu processes followed%s, metadata of %zu files read in %.1f ms, %" PRIu64
		 " code objects named (%" PRIu64 " not), naming CPU %.1f ms; the walk knows the read-only maps of %zu; "
		 "GCs counted in %zu files (uprobes found and attached in %.1f ms; %" PRIu64 " hits)",
		 impl_->processes.size(), versions.empty() ? "" : (versions + ")").c_str(), impl_->files.files(),
		 impl_->files.read_ms(), impl_->named, impl_->unnamed, impl_->naming_ms, maps_known,
		 impl_->files.gc_counted(), impl_->files.gc_ms(), impl_->gcs_counted());
	return line;
}
