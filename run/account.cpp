// run/account.cpp: the stderr lines that account for what a run sampled.
#include "run/account.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "base/diagnostics.h"

// The account doc/cli.md promises: the last stderr line when anything was lost.
void report_losses(const RawProfile &raw, const Options &options, uint32_t budget_percent)
{

	// Off the CPU, what is counted is each time a thread left it.
	auto noun = [&](uint64_t n) {
		return std::string(options.off_cpu ? (n == 1 ? "time off the CPU" : "times off the CPU")
						    : (n == 1 ? "sample" : "samples"));
	};
	if (raw.truncated)
		diagnostics::say("%" PRIu64 " %s %s cut at %u frames (raise --perf-max-stack-depth)", raw.truncated,
			noun(raw.truncated).c_str(), raw.truncated == 1 ? "has its stack" : "have stacks", raw.depth_limit);
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
	cause(t.lost_thread_start, "with no kernel memory to keep where a thread left the CPU");
	cause(t.lost_budget, "over the CPU budget (the kernel side may take " + std::to_string(budget_percent) +
				     " % of each CPU: see man profile)");
	diagnostics::say("%" PRIu64 " %s taken, %" PRIu64 " stored, %" PRIu64 " lost: %s",
		raw.taken, noun(raw.taken).c_str(), raw.stored, lost, causes.c_str());
}

// How user stacks were walked, when tables were used: one stderr line.
void report_unwinding(const RawProfile &raw, const Unwinder::Stats &tables)
{
	const sample_stats &t = raw.totals;
	const uint64_t walked =
		t.unwound_tables + t.unwound_pending + t.unwound_fp_no_table + t.unwound_cut + t.unwound_raw;
	if (!walked)
		return;
	auto share = [&](uint64_t n) { return 100.0 * double(n) / double(walked); };
	std::string line = "profile: user stacks: ";
	char part[160];
	std::snprintf(part, sizeof(part), "%.1f %% from unwind tables", share(t.unwound_tables));
	line += part;
	if (t.unwound_again) {
		std::snprintf(part, sizeof(part), " (%.1f %% as the thread's last walk left them: same registers and stack)",
			      share(t.unwound_again));
		line += part;
	}
	if (t.unwound_pending) {
		std::snprintf(part, sizeof(part), ", %.1f %% cut short while tables were built",
			      share(t.unwound_pending));
		line += part;
	}
	if (t.unwound_raw) {
		std::snprintf(part, sizeof(part),
			      ", %.1f %% kept raw while tables were built and walked later (%" PRIu64 " of %" PRIu64
			      " still cut short)",
			      share(t.unwound_raw), raw.raw_cut, raw.raw_unwound);
		line += part;
	}
	if (t.unwound_fp_no_table) {
		std::snprintf(part, sizeof(part), ", %.1f %% by frame pointers through code without tables (JIT, no CFI)",
			      share(t.unwound_fp_no_table));
		line += part;
	}
	std::snprintf(part, sizeof(part), ", %.1f %% cut short otherwise", share(t.unwound_cut));
	line += part;
	std::snprintf(part, sizeof(part), " (%u table%s, %.1f MiB in the kernel", tables.ready,
		      tables.ready == 1 ? "" : "s", double(tables.rows) * sizeof(unwind_row) / (1 << 20));
	line += part;
	if (tables.from_cache) {
		std::snprintf(part, sizeof(part), ", %u from the cache", tables.from_cache);
		line += part;
	}
	line += ")";
	diagnostics::line(line);
	if (tables.no_room)
		diagnostics::say("%u unwind table%s (%" PRIu64 " rows) did not fit in the kernel: %s code was "
				"walked by frame pointers (raise --unwind-table-size, now %u)",
			tables.no_room, tables.no_room == 1 ? "" : "s", tables.no_room_rows,
			tables.no_room == 1 ? "its" : "their", tables.row_capacity);
}

// A run that collected nothing, or nothing but empty stacks, says why in one line: what it
// sampled was gone, used no CPU, ran elsewhere than -C, or had no stack of the kind -K or
// -U keeps. Samples taken and lost are report_losses' to tell.
void explain_empty(const Profile &profile, const RawProfile &raw, const Options &options, TargetWatch &targets)
{
	auto say = [](const std::string &line) { diagnostics::say("%s", line.c_str()); };
	const uint64_t total = profile.total();
	if (total) {
		bool kernel_frames = false, user_frames = false;
		for (const Sample &sample : profile.samples) {
			kernel_frames |= !sample.kernel.empty();
			user_frames |= !sample.user.empty();
		}
		const std::string none = total == 1 ? "the one sample has no" : "none of the " + std::to_string(total) + " samples has a";
		if (!options.user_stacks && !kernel_frames)
			say(none + " kernel stack: the code sampled "
			    "ran in user space (without -K the report shows its user stacks)");
		if (!options.kernel_stacks && !user_frames)
			say(none + " user stack: the code sampled "
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

