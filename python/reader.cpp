// python/reader.cpp: classify sampled processes, send the walk what it needs of each
// CPython one, and name code objects as the walk reports them.
#include "python/reader.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <set>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "base/fd.h"
#include "proc/memory.h"
#include "python/runtime.h"
#include "runtime/kernel_asks.h"

struct PythonReader::Impl {
	explicit Impl(const RuntimeMaps &maps) : maps(maps), seen(maps.seen, sizeof(python_code)) {}
	RuntimeMaps maps;
	SeenRecords seen; // code objects met for the first time
	PythonNames names;
	struct Process {
		PythonLayout layout;
		uint64_t code_type;
	};
	std::unordered_map<uint32_t, Process> processes; // CPython ones, by pid
	std::set<std::string> said;                        // notes already printed
	Stats stats;

	void classify(uint32_t pid, MapsReads &reads);
	void name_fresh(const std::vector<python_code> &fresh);
};

void PythonReader::Impl::classify(uint32_t pid, MapsReads &reads)
{
	PythonDetection found = detect_python(pid, reads);
	if (found.kind == PythonDetection::NotYet) {
		// Not Python's for now, and asked about again at its next sample; the entry says
		// so to the walk, which keeps a stack off the CPU only in a process that has one.
		python_process value{};
		value.not_yet = 1;
		bpf_map_update_elem(maps.processes, &pid, &value, BPF_ANY);
		return;
	}
	if (!found.note.empty() && said.insert(found.note).second)
		diagnostics::say("Python frames not shown for PID %u: %s", pid, found.note.c_str());
	python_process value{};
	if (found.kind == PythonDetection::Python) {
		value = found.process;
		// A new image under the same pid (exec): the walk is to report its code objects
		// afresh. What was named of the old image stays, for the samples taken before.
		static_assert(sizeof(python_code_key) == sizeof(runtime_code_key) &&
			      offsetof(python_code_key, pid) == offsetof(runtime_code_key, pid));
		forget_runtime_codes(maps, pid);
		processes[pid] = Process{found.layout, value.code_type};
		stats.processes++;
	} else {
		processes.erase(pid);
	}
	bpf_map_update_elem(maps.processes, &pid, &value, BPF_ANY);
}

void PythonReader::Impl::name_fresh(const std::vector<python_code> &fresh)
{
	if (fresh.empty())
		return;
	const double start = clocks::thread_cpu_ms();
	uint32_t open_pid = 0;
	UniqueFd mem;
	for (const python_code &code : fresh) {
		auto it = processes.find(code.pid);
		if (it == processes.end()) {
			stats.unnamed++;
			continue;
		}
		if (!mem || open_pid != code.pid) {
			mem = open_process_memory(code.pid);
			open_pid = code.pid;
		}
		if (mem && names.learn(code, it->second.code_type, it->second.layout, mem.get()))
			stats.codes++;
		else
			stats.unnamed++;
	}
	stats.naming_ms += clocks::thread_cpu_ms() - start;
}

PythonReader::PythonReader(const RuntimeMaps &maps) : impl_(std::make_unique<Impl>(maps)) {}

PythonReader::~PythonReader() = default;

void PythonReader::prepare(const std::vector<uint32_t> &pids, MapsReads &maps)
{
	for (uint32_t pid : pids)
		impl_->classify(pid, maps);
}

void PythonReader::tick(MapsReads &maps)
{
	Impl &d = *impl_;
	answer_asked_pids(d.maps.wanted, [&](uint32_t pid) { d.classify(pid, maps); });
	d.name_fresh(take_seen<python_code>(d.seen));
}

void PythonReader::end_window()
{
	impl_->names.end_window(forgetting_in(impl_->maps));
}

const PythonNames &PythonReader::names() const
{
	return impl_->names;
}

bool PythonReader::name(uint32_t pid, uint64_t frame, RuntimeFrameName &out) const
{
	return impl_->names.name(pid, PYTHON_FRAME_ID(frame), uint32_t(PYTHON_FRAME_INDEX(frame)), out);
}

PythonReader::Stats PythonReader::counts() const
{
	return impl_->stats;
}

std::string PythonReader::stats() const
{
	const Stats &s = impl_->stats;
	char line[160];
	snprintf(line, sizeof(line), "python: %u processes followed, %" PRIu64 " code objects named (%" PRIu64
		 " not), naming CPU %.1f ms", s.processes, s.codes, s.unnamed, s.naming_ms);
	return line;
}
