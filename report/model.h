// report/model.h: a finished, symbolized profile, as every report writer reads it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

// Whose code a frame is: the kernel's, native code's (user space's machine code), or a
// language runtime's function, named from the runtime's own structures. What each kind
// looks like in every report is one row of frame_kind_rules (report/model.cpp): a new
// runtime's frames are a kind here and a row there.
enum class FrameKind : uint8_t { Kernel, Native, Python, JavaScript, Java };

// How the reports show a kind of frame.
struct FrameKindRule {
	FrameKind kind;
	// Its tag: -v's "[python]".
	const char *name;
	// Its profile.frame.type in OTLP, as OpenTelemetry's semantic conventions name it.
	const char *frame_type;
	// A runtime's function: no address of its own; labelled "name (file:line)" (the file by
	// its last component, as py-spy shows it) and named in pprof by its name alone.
	bool runtime;
	// Its colour in the flame graph: red, green and blue each from base up to base + spread,
	// by a hash of the name. (Native code takes flamegraph.pl's two: yellow for C++ and Rust
	// names, red for C.)
	uint8_t base[3], spread[3];
};
const FrameKindRule &frame_kind_rule(FrameKind kind);

struct Frame {
	FrameKind kind = FrameKind::Native;
	uint64_t address = 0;       // the sampled instruction pointer
	std::string name;           // demangled symbol; empty when no symbol covers the address
	uint64_t symbol_offset = 0; // address - symbol start, when named
	std::string module;         // kernel: module name ("" for vmlinux); user: file path
	uint64_t module_offset = 0; // user: address in the ELF file's own terms (what addr2line takes)
	std::string build_id;       // hex, when the file has one
	// From DWARF line tables, when debug info has it; for a runtime's function, its file
	// and the line being run, and name its qualified name.
	std::string source_file;
	uint32_t line = 0;
	// Inlined into the next frame: by the compiler (native code, from DWARF), or by a
	// runtime's optimizing compiler.
	bool inlined = false;
	// A runtime's frame: what -v adds after its place (a Java method's signature and
	// bytecode index, "(J)J bci 12"); empty for the others.
	std::string detail;
	// The mapping the address fell in (user frames), for pprof.
	uint64_t map_start = 0, map_end = 0, map_offset = 0;

	bool named() const { return !name.empty(); }
};

// How every report names a frame: the demangled name, "[module+0xoffset]" when only the
// module is known, "[unknown]" otherwise; a Python function as "fib (fib.py:2)".
std::string frame_label(const Frame &frame);

// One counts-map entry after symbolization: frames are indices into Profile::frames,
// leaf first, kernel and user kept apart as the kernel stored them. With --wakers, kernel
// opens with the waker's frames as BCC's offwaketime folds them: its comm, its user stack
// root first, its kernel stack root first, then a "--" frame above the blocked leaf.
struct Sample {
	uint32_t pid = 0;
	std::string comm;
	std::vector<uint32_t> kernel;
	std::vector<uint32_t> user;
	uint64_t count = 0;
	// The process's cgroup v2 path and the container id it names, "" when not known or none.
	std::string cgroup{}, container{};
	std::string waker{}; // --wakers: the waker's comm, "" when no thread woke this one
	uint32_t tid = 0;    // the thread, when the run kept threads apart (SamplerConfig::key_threads)
};

struct Profile {
	std::vector<Frame> frames;
	std::vector<Sample> samples;

	// How the run was made, for titles and pprof headers.
	std::string command;         // the profile command line as typed
	std::string host;            // the host name, "" when not known
	uint64_t frequency = 0;      // Hz, 0 in period mode
	uint64_t period = 0;         // events per sample in period mode, 0 in frequency mode
	uint64_t period_ns = 0;      // CPU time one sample stands for
	double duration_s = 0;       // wall time actually sampled
	int64_t start_time_ns = 0;   // CLOCK_REALTIME at the start of sampling
	bool kernel_stacks = true;
	bool user_stacks = true;
	// The one process the run sampled (-p of one process, or -L of its threads); 0 for a
	// run over the whole machine or several processes, which is no one program's profile.
	uint32_t single_pid = 0;
	// --off-cpu: each count is nanoseconds off the CPU, not samples.
	bool off_cpu = false;

	uint64_t total() const
	{
		uint64_t n = 0;
		for (const Sample &s : samples)
			n += s.count;
		return n;
	}
};

// A count as the text reports show it: samples as they are; --off-cpu's nanoseconds in
// whole microseconds, rounded (as offcputime prints them).
inline uint64_t shown_count(const Profile &profile, uint64_t count)
{
	return profile.off_cpu ? (count + 500) / 1000 : count;
}

// What a report shows of each sample besides its frames' names: samples that differ only
// in what it does not show may be merged before they are named.
struct ReportDetail {
	bool pids = true;      // which process (stacks, pprof, folded and SVG with -E)
	bool addresses = true; // each frame's address and mapping (stacks with -v, pprof)
};
