// profile.cpp: the run: parse options, load and attach, wait, read the maps, symbolize,
// write the report.
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "cli/options.h"
#include "report/output_file.h"
#include "report/report.h"
#include "sampler/collected.h"
#include "sampler/map_memory.h"
#include "sampler/sampler.h"
#include "sampler/side_band.h"
#include "sampler/targets.h"
#include "sampler/unwinder.h"
#include "syms/cgroup.h"
#include "syms/fd.h"
#include "syms/process_history.h"
#include "syms/symbolizer.h"

namespace {

int64_t clock_ns(clockid_t clock)
{
	timespec ts;
	clock_gettime(clock, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// True once nobody can read what goes to stdout: `profile | head` after head is gone.
bool stdout_closed()
{
	pollfd out{STDOUT_FILENO, 0, 0};
	return poll(&out, 1, 0) == 1 && (out.revents & (POLLERR | POLLHUP));
}

// Where the time after sampling goes, wall clock and this thread's CPU, for PROFILE_DEBUG.
class PhaseClock {
public:
	PhaseClock() { mark(""); }
	void mark(const char *name)
	{
		marks_.push_back({name, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_THREAD_CPUTIME_ID)});
	}
	// "read 8.8 ms (CPU 3.0), symbolize ..." : each phase since the mark before it.
	std::string summary() const
	{
		std::string text;
		for (size_t i = 1; i < marks_.size(); i++) {
			char phase[128];
			std::snprintf(phase, sizeof(phase), "%s%s %.1f ms (CPU %.1f)", i > 1 ? ", " : "", marks_[i].name,
				      (marks_[i].wall - marks_[i - 1].wall) / 1e6, (marks_[i].cpu - marks_[i - 1].cpu) / 1e6);
			text += phase;
		}
		return text;
	}

private:
	struct Mark {
		const char *name;
		int64_t wall, cpu;
	};
	std::vector<Mark> marks_;
};

enum class End { Duration, Signal, ReaderGone, TargetsExited };

// Blocks until the duration has passed, SIGINT/SIGTERM arrives (both were blocked
// before attaching, so a signal sent at any moment is seen here), every process or
// thread of -p or -L has exited, or, with watch_stdout, the reader of stdout goes away;
// calling `tick` about every tick_ns meanwhile.
template <typename Tick>
End wait_for_end(const Options &options, const sigset_t &stop_signals, bool watch_stdout, TargetWatch &targets,
		 int64_t tick_ns, Tick tick)
{
	const int64_t start = clock_ns(CLOCK_MONOTONIC);
	while (true) {
		int64_t left = INT64_MAX;
		if (options.duration_s) {
			left = int64_t(*options.duration_s) * 1000000000 - (clock_ns(CLOCK_MONOTONIC) - start);
			if (left <= 0)
				return End::Duration;
		}
		int64_t slice = std::min<int64_t>(left, tick_ns);
		timespec timeout{time_t(slice / 1000000000), long(slice % 1000000000)};
		if (sigtimedwait(&stop_signals, nullptr, &timeout) > 0)
			return End::Signal;
		tick();
		if (targets.all_exited())
			return End::TargetsExited;
		if (watch_stdout && stdout_closed())
			return End::ReaderGone;
	}
}

// The account CLI.md asks for: the last stderr line when anything was lost.
void report_losses(const RawProfile &raw, const Options &options)
{

	if (raw.truncated)
		fprintf(stderr, "profile: %" PRIu64 " samples have stacks cut at %u frames "
				"(raise --perf-max-stack-depth)\n", raw.truncated, raw.depth_limit);
	const sample_stats &t = raw.totals;
	const uint64_t lost = lost_samples(t);
	// taken is the kernel's own count: should it ever differ from stored + lost, the line
	// shows it rather than hide it.
	if (!lost && raw.taken == raw.stored)
		return;
	std::string causes;
	auto cause = [&](uint64_t n, const std::string &what) {
		if (!n)
			return;
		causes += causes.empty() ? "" : "; ";
		causes += std::to_string(n) + " " + what;
	};
	cause(t.lost_counts_full, "with the counts map full (raise --hash-storage-size, now " +
					  std::to_string(options.hash_storage_size) + ")");
	cause(t.lost_stack_collision, "in stack map collisions (raise --stack-storage-size, now " +
					      std::to_string(options.stack_storage_size) + ")");
	cause(t.lost_stack_full, "with the stack map full (raise --stack-storage-size, now " +
					 std::to_string(options.stack_storage_size) + ")");
	cause(t.lost_stack_other, "on other stack errors");
	fprintf(stderr, "profile: %" PRIu64 " samples taken, %" PRIu64 " stored, %" PRIu64 " lost: %s\n",
		raw.taken, raw.stored, lost, causes.c_str());
}

// How user stacks were walked, when tables were used: one stderr line.
void report_unwinding(const RawProfile &raw, const Unwinder::Stats &tables)
{
	const sample_stats &t = raw.totals;
	const uint64_t walked = t.unwound_tables + t.unwound_fp_pending + t.unwound_fp_no_table + t.unwound_cut;
	if (!walked)
		return;
	auto share = [&](uint64_t n) { return 100.0 * double(n) / double(walked); };
	std::string line = "profile: user stacks: ";
	char part[160];
	std::snprintf(part, sizeof(part), "%.1f %% from unwind tables", share(t.unwound_tables));
	line += part;
	if (t.unwound_fp_pending) {
		std::snprintf(part, sizeof(part), ", %.1f %% by frame pointers while tables were built",
			      share(t.unwound_fp_pending));
		line += part;
	}
	if (t.unwound_fp_no_table) {
		std::snprintf(part, sizeof(part), ", %.1f %% by frame pointers through code without tables (JIT, no CFI)",
			      share(t.unwound_fp_no_table));
		line += part;
	}
	std::snprintf(part, sizeof(part), ", %.1f %% cut short", share(t.unwound_cut));
	line += part;
	// In the kernel's array a row takes its size rounded up to 8 bytes.
	std::snprintf(part, sizeof(part), " (%u tables, %.1f MiB", tables.ready,
		      double(tables.rows) * ((sizeof(unwind_row) + 7) & ~size_t(7)) / (1 << 20));
	line += part;
	if (tables.from_cache) {
		std::snprintf(part, sizeof(part), ", %u from the cache", tables.from_cache);
		line += part;
	}
	line += ")";
	fprintf(stderr, "%s\n", line.c_str());
	if (tables.no_room)
		fprintf(stderr, "profile: %u unwind tables (%" PRIu64 " rows) did not fit in the kernel: their code was "
				"walked by frame pointers (raise --unwind-table-size, now %u)\n",
			tables.no_room, tables.no_room_rows, tables.row_capacity);
}

// A run that collected nothing, or nothing but empty stacks, says why in one line: what it
// sampled was gone, used no CPU, ran elsewhere than -C, or had no stack of the kind -K or
// -U keeps. Samples taken and lost are report_losses' to tell.
void explain_empty(const Profile &profile, const RawProfile &raw, const Options &options, TargetWatch &targets)
{
	auto say = [](const std::string &line) { fprintf(stderr, "profile: %s\n", line.c_str()); };
	const uint64_t total = profile.total();
	if (total) {
		bool kernel_frames = false, user_frames = false;
		for (const Sample &sample : profile.samples) {
			kernel_frames |= !sample.kernel.empty();
			user_frames |= !sample.user.empty();
		}
		if (!options.user_stacks && !kernel_frames)
			say("none of the " + std::to_string(total) + " samples has a kernel stack: the code sampled "
			    "ran in user space (without -K the report shows its user stacks)");
		if (!options.kernel_stacks && !user_frames)
			say("none of the " + std::to_string(total) + " samples has a user stack: the code sampled "
			    "ran in the kernel, as kernel threads do (without -U the report shows its kernel stacks)");
		return;
	}
	if (raw.taken)
		return;
	const std::string cpu = std::to_string(options.cpu);
	if (targets.empty()) {
		say(std::string("nothing sampled: ") + (options.cpu >= 0 ? "CPU " + cpu + " was" : "every CPU was") +
		    " idle while sampled (the samples of idle CPUs are dropped without -I)");
		return;
	}
	std::vector<uint32_t> exited = targets.exited(), running;
	for (uint32_t id : targets.ids())
		if (std::find(exited.begin(), exited.end(), id) == exited.end())
			running.push_back(id);
	auto who = [&](const std::vector<uint32_t> &ids) {
		std::string text = targets.threads() ? "TID" : "PID";
		text += ids.size() > 1 ? "s " : " ";
		for (size_t i = 0; i < ids.size(); i++)
			text += (i ? "," : "") + std::to_string(ids[i]);
		return text;
	};
	if (running.empty()) {
		say("nothing sampled: " + who(exited) + " exited before " + (exited.size() > 1 ? "their" : "its") +
		    " first sample");
		return;
	}
	const double used = targets.cpu_seconds();
	char seconds[32];
	std::snprintf(seconds, sizeof(seconds), "%.2f", used);
	if (used < 0.005) // less than one clock tick
		say("nothing sampled: " + who(running) + " used no CPU time while sampled (" +
		    (running.size() > 1 ? "they" : "it") + " slept or waited; only time on a CPU is sampled)");
	else if (options.cpu >= 0)
		say("nothing sampled: " + who(running) + " used " + seconds + " s of CPU time, none of it on CPU " +
		    cpu + " when a sample was taken (-C " + cpu + ")");
	else
		say("nothing sampled: " + who(running) + " used only " + seconds + " s of CPU time, less than a "
		    "sample's worth (" + (options.frequency ? std::to_string(options.frequency) + " Hz" :
							      "-c " + std::to_string(options.period)) +
		    "): raise -f, or sample longer");
}

// The maps' sizes as the sampler will create them on this kernel (see Sampler::Sampler).
MapSizes map_sizes(const Options &options)
{
	MapSizes sizes;
	sizes.stack_entries = options.stack_storage_size;
	sizes.count_entries = options.hash_storage_size;
	sizes.unwind_rows = options.unwind_table_size;
	utsname name{};
	int major = 0, minor = 0;
	if (uname(&name) == 0)
		std::sscanf(name.release, "%d.%d", &major, &minor);
	auto at_least = [&](int want_major, int want_minor) {
		return major > want_major || (major == want_major && minor >= want_minor);
	};
	// The sampler's own test of what the table unwinder needs: without it auto walks frame
	// pointers.
	sizes.unwinding = options.unwind != UnwindMode::FramePointers && options.user_stacks && unwinder_support().empty();
	// The kernel cuts stacks at kernel.perf_event_max_stack, the unwinder at its deepest walk.
	std::string text;
	sizes.depth = options.max_stack_depth;
	if (read_whole_file("/proc/sys/kernel/perf_event_max_stack", text) && std::atol(text.c_str()) > 0)
		sizes.depth = std::min<uint32_t>(sizes.depth, uint32_t(std::atol(text.c_str())));
	if (sizes.unwinding)
		sizes.depth = std::min<uint32_t>(sizes.depth, UNWIND_MAX_DEPTH);
	sizes.generations = getenv("PROFILE_NO_DRAIN") ? 1 : 2;
	// Before 6.1 the sampler's hash maps are preallocated.
	sizes.preallocated_hashes = !at_least(6, 1);
	return sizes;
}

// MemAvailable, in bytes; 0 when unknown.
uint64_t available_memory()
{
	std::string meminfo;
	if (!read_whole_file("/proc/meminfo", meminfo))
		return 0;
	const size_t at = meminfo.find("MemAvailable:");
	return at == std::string::npos ? 0 : std::strtoull(meminfo.c_str() + at + 13, nullptr, 10) * 1024;
}

// Values the parser cannot judge alone: they depend on this machine. "" when all is well;
// notes gets what stderr should say before the run (a thread id -p made its process).
std::string check_against_machine(Options &options, std::vector<std::string> &notes)
{
	if (std::string wrong = resolve_pids(options.pids, notes); !wrong.empty())
		return wrong;
	for (uint32_t tid : options.tids)
		if (access(("/proc/" + std::to_string(tid)).c_str(), F_OK) != 0)
			return "no thread with TID " + std::to_string(tid);
	if (std::string wrong = resolve_cgroups(options.cgroups); !wrong.empty())
		return wrong;
	if (options.cpu >= 0) {
		std::vector<int> online = online_cpus();
		if (std::find(online.begin(), online.end(), options.cpu) == online.end())
			return "CPU " + std::to_string(options.cpu) + " is not online (see /sys/devices/system/cpu/online)";
	}
	if (!options.output_path.empty())
		if (std::string error = check_output_file(options.output_path); !error.empty())
			return error;
	// A map size that takes gigabytes of kernel memory costs seconds to create and free, and
	// one beyond what the machine has fails, or reclaims its page cache first.
	MapMemoryVerdict map_cost = judge_map_memory(map_sizes(options), available_memory());
	if (!map_cost.error.empty())
		return map_cost.error;
	if (!map_cost.warning.empty())
		notes.push_back(map_cost.warning);
	if (options.frequency) {
		std::string text;
		uint64_t max_rate = 0;
		if (read_whole_file("/proc/sys/kernel/perf_event_max_sample_rate", text))
			max_rate = std::strtoull(text.c_str(), nullptr, 10);
		if (max_rate && options.frequency > max_rate)
			return "-f " + std::to_string(options.frequency) + " is above the kernel's limit of " +
			       std::to_string(max_rate) + " Hz (kernel.perf_event_max_sample_rate)";
	}
	return "";
}

int run(const Options &options)
{
	PhaseClock startup;
	check_privileges();
	check_kernel_support();

	sigset_t stop_signals;
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
	signal(SIGPIPE, SIG_IGN); // a closed stdout shows up as a failed write, handled below

	Sampler sampler(options);
	startup.mark("load");
	SymbolizerOptions symbolizer_options;
	symbolizer_options.want_lines = options.report.verbose;
	if (geteuid() == 0 && !getenv("PROFILE_NO_KALLSYMS_CACHE"))
		symbolizer_options.kernel_cache_dir = "/run/profile";
	Symbolizer symbolizer(symbolizer_options);

	// Kernel symbols do not depend on what is sampled: index them while sampling runs.
	// Reading /proc/kallsyms is most of a run's own CPU, so -U, which never needs it,
	// skips it.
	std::thread kernel_symbols;
	double kernel_symbols_cpu_ms = 0;
	if (options.kernel_stacks)
		kernel_symbols = std::thread([&] {
			symbolizer.load_kernel_symbols();
			kernel_symbols_cpu_ms = clock_ns(CLOCK_THREAD_CPUTIME_ID) / 1e6;
		});
	struct Joiner {
		std::thread &t;
		~Joiner()
		{
			if (t.joinable())
				t.join();
		}
	} joiner{kernel_symbols};

	// Follow every process from before the first sample, so that those which exit
	// before the end can still be named: the side band first, then the snapshot, so
	// nothing falls between them.
	ProcessHistory history;
	SideBand side_band(online_cpus());
	startup.mark("side band");
	snapshot_processes(history, uint64_t(clock_ns(CLOCK_MONOTONIC)));
	startup.mark("snapshot");
	// User addresses are located in the history, which knows processes that are gone too.
	symbolizer.set_process_history(&history);
	// The table unwinder's user half: mappings of sampled processes, tables of objects.
	std::optional<Unwinder> unwinder;
	if (Sampler::UnwindMaps maps = sampler.unwind_maps(); maps.processes >= 0) {
		const bool cache = geteuid() == 0 && !getenv("PROFILE_NO_UNWIND_CACHE");
		unwinder.emplace(maps, cache ? "/run/profile/unwind" : "");
		unwinder->prepare(history, options.pids);
		startup.mark("unwind tables asked");
	}
	// What the report does not show is not kept apart: a long run that meets many
	// short-lived processes keeps what its report holds, not every process.
	Collected collected(report_detail(options.format, options.report));
	// A batch the sampler drained is located once the side band has told every mapping
	// its samples ran in; after that, an exited process is needed only while the maps
	// may still hold samples of it.
	auto follow_processes = [&] {
		std::optional<RawProfile> batch = sampler.tick();
		side_band.poll(history);
		if (unwinder)
			unwinder->tick(history);
		if (batch)
			collected.add(*batch, symbolizer);
		history.forget_exited([&](uint32_t pid) { return sampler.has_samples(pid); });
	};

	// What -p or -L names, from now on: its CPU time, and whether it still runs.
	TargetWatch targets(!options.pids.empty() ? options.pids : options.tids, options.pids.empty());
	const int64_t start_real = clock_ns(CLOCK_REALTIME), start = clock_ns(CLOCK_MONOTONIC);
	sampler.attach();
	startup.mark("attach");
	const bool to_stdout = options.output_path.empty();
	if (options.format == ReportFormat::Stacks && to_stdout)
		std::cout << header_line(options) << std::endl;
	else
		fprintf(stderr, "%s\n", header_line(options).c_str());
	// The table unwinder waits for user space to send a new process's mappings and its
	// objects' tables: the sooner, the fewer of its samples take frame-pointer steps.
	if (wait_for_end(options, stop_signals, to_stdout, targets, unwinder ? 20000000 : 100000000,
			 follow_processes) == End::TargetsExited)
		fprintf(stderr, "profile: every %s sampled has exited\n", targets.threads() ? "thread" : "process");
	sampler.detach();
	const int64_t end = clock_ns(CLOCK_MONOTONIC);
	Unwinder::Stats tables;
	if (unwinder) {
		unwinder->stop();
		tables = unwinder->stats();
	}
	PhaseClock phases;

	RawProfile raw = sampler.read();
	side_band.poll(history);
	collected.add(raw, symbolizer);
	phases.mark("read");
	if (kernel_symbols.joinable())
		kernel_symbols.join();
	phases.mark("kernel symbols wait");
	Profile profile = collected.name(symbolizer);
	phases.mark("symbolize");
	profile.command = options.command_line;
	profile.frequency = options.frequency;
	profile.period = options.period;
	profile.period_ns = options.frequency ? 1000000000 / options.frequency : options.period;
	profile.duration_s = double(end - start) / 1e9;
	profile.start_time_ns = start_real;
	profile.kernel_stacks = options.kernel_stacks;
	profile.user_stacks = options.user_stacks;
	profile.single_pid = targets.single_process();

	if (unwinder)
		report_unwinding(raw, tables);

	// A report that cannot be written is said in one line, and the account of losses
	// still ends stderr.
	int status = 0;
	bool write_stdout = to_stdout;
	if (!to_stdout) {
		std::string error = write_output_file(options.output_path, [&](std::ostream &out) {
			write_report(out, options.format, profile, options.report);
		});
		if (error.empty()) {
			fprintf(stderr, "profile: wrote %s (%" PRIu64 " samples, %zu stacks)\n",
				options.output_path.c_str(), profile.total(), profile.samples.size());
		} else if (options.format == ReportFormat::Pprof && isatty(STDOUT_FILENO)) {
			fprintf(stderr, "profile: %s\n", error.c_str()); // gzip is no text for a terminal
			status = 1;
		} else {
			// It was writable at the start and failed at the end (a full disk): what was
			// collected goes to stdout rather than nowhere.
			fprintf(stderr, "profile: %s; the report goes to stdout instead\n", error.c_str());
			status = 1;
			write_stdout = true;
		}
	}
	if (write_stdout) {
		std::cout.flush(); // the header line, when it went there
		int error = write_to_fd(STDOUT_FILENO, [&](std::ostream &out) {
			write_report(out, options.format, profile, options.report);
		});
		// A reader that went away (| head) ends the run quietly.
		if (error && error != EPIPE) {
			fprintf(stderr, "profile: cannot write the report: %s\n", strerror(error));
			status = 1;
		}
	}
	if (getenv("PROFILE_DEBUG")) {
		phases.mark("report");
		fprintf(stderr, "profile: before sampling: %s; kernel symbols' thread CPU %.1f ms%s\n",
			startup.summary().c_str(), kernel_symbols_cpu_ms,
			symbolizer.stats().kallsyms_reread ? " (the cache did not hold every address: read again)" : "");
		fprintf(stderr, "profile: after sampling: %s; %zu keys, %zu stacks, %zu objects, %" PRIu64 " drains, "
				"%zu processes followed; whole run's CPU %.1f ms\n",
			phases.summary().c_str(), collected.entry_count(), collected.stack_count(),
			symbolizer.object_count(), raw.drains, history.process_count(),
			clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e6);
		if (unwinder)
			fprintf(stderr, "profile: unwind tables: %u asked for, %u in the kernel (%u from the cache, %" PRIu64
					" rows of %u), %u without CFI, %u without room, %u unfinished; built in %.1f ms "
					"(CPU %.1f); mappings of %u processes sent, %u mappings left out\n",
				tables.objects, tables.ready, tables.from_cache, tables.rows, tables.row_capacity,
				tables.no_table, tables.no_room, tables.not_finished, tables.build_wall_ms,
				tables.build_cpu_ms, tables.processes, tables.dropped_mappings);
	}
	explain_empty(profile, raw, options, targets);
	report_losses(raw, options);
	return status;
}

} // namespace

int main(int argc, char **argv)
{
	std::ios::sync_with_stdio(false);
	auto parsed = parse_options(argc, argv);
	if (auto *usage = std::get_if<UsageError>(&parsed)) {
		fprintf(stderr, "profile: %s (see profile --help)\n", usage->message.c_str());
		return 2;
	}
	Options &options = std::get<Options>(parsed);
	if (options.help) {
		std::cout << help_text();
		return 0;
	}
	if (options.version) {
		std::cout << "profile " << PROFILE_VERSION << '\n';
		return 0;
	}
	std::vector<std::string> notes;
	if (std::string wrong = check_against_machine(options, notes); !wrong.empty()) {
		fprintf(stderr, "profile: %s\n", wrong.c_str());
		return 2;
	}
	for (const std::string &note : notes)
		fprintf(stderr, "profile: %s\n", note.c_str());
	try {
		return run(options);
	} catch (const RunError &e) {
		fprintf(stderr, "profile: %s\n", e.what());
		return 1;
	}
}
