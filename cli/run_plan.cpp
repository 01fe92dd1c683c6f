// cli/run_plan.cpp: the command line checked against this machine, as the run's plan.
#include "cli/run_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "base/clock.h"
#include "base/fd.h"
#include "cli/otel_env.h"
#include "report/output_file.h"
#include "report/window.h"
#include "sampler/kernel_checks.h"
#include "sampler/map_memory.h"
#include "sampler/targets.h"
#include "proc/cgroup.h"

namespace {

std::string host_name()
{
	char name[256] = "";
	if (gethostname(name, sizeof(name) - 1) != 0)
		return "localhost";
	return name;
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

// What the pusher is told of the run: the command line's, its target settled and its auth
// file read, once, before anything loads. Ok, or what is wrong.
Status plan_push(const Options &options, RunPlan &plan)
{
	PushConfig config;
	config.url = options.push_url;
	config.format = options.push_format;
	config.app = options.app;
	config.host = plan.host;
	config.queue_windows = options.push_queue;
	config.queue_bytes = options.push_queue_bytes;
	config.ca_file = options.push_ca;
	config.cert_file = options.push_cert;
	config.key_file = options.push_key;
	config.frequency = plan.sampler.frequency;
	config.period_ns = plan.sampler.frequency ? 0 : plan.sampler.period;
	config.off_cpu = options.off_cpu;
	config.wait_said_s = std::clamp(2.0 * double(options.interval_s), 2.0, 10.0);
	if (Status target = resolve_push_target(config); !target.ok())
		return target;
	if (Status files = load_push_files(config, options.push_auth_file); !files.ok())
		return files;
	if (!config.headers.empty() && config.url.starts_with("http://"))
		plan.notes.push_back("--push-auth-file: its credentials go to " + url_for_humans(config.url) +
				     " unencrypted: an https:// URL keeps them from the network");
	if (url_for_humans(config.url) != config.url && config.url.find('@') != std::string::npos)
		plan.notes.push_back("--push: the URL's password is on the command line, which every user of "
				     "this machine can read (ps, /proc/PID/cmdline): put it in --push-auth-file");
	// The auth file's headers after --push-header's, and OTLP's variables' after both.
	config.headers.insert(config.headers.begin(), options.push_headers.begin(), options.push_headers.end());
	if (config.format == PushFormat::Otlp)
		add_otel_headers(config.headers, options.otel_headers);
	plan.push_report.off_cpu_type = off_cpu_sample_type(config.format);
	plan.push_report.service_name = options.report.service_name.empty() ? config.app : options.report.service_name;
	plan.push_report.resource_attributes = options.report.resource_attributes;
	plan.push = std::move(config);
	return {};
}

} // namespace

Result<RunPlan> check_against_machine(const Options &options)
{
	RunPlan plan;
	plan.sampler = options;
	SamplerConfig &sampler = plan.sampler;
	plan.host = host_name();
	if (Status pids = resolve_pids(sampler.pids, plan.notes); !pids.ok())
		return Error(pids.error());
	for (uint32_t tid : options.tids)
		if (access(("/proc/" + std::to_string(tid)).c_str(), F_OK) != 0)
			return Error("no thread with TID " + std::to_string(tid));
	// The rate this machine can take, lowered with a note rather than refused or obeyed: a
	// rate the kernel would refuse, or one whose samples the CPUs could not carry.
	const RateLimits limits = read_rate_limits();
	sampler.budget_percent = budget_percent(limits);
	if (!options.off_cpu) {
		RateDecision decided = limit_rate(plan.rate(), limits);
		SampleRate rate = decided.rate;
		if (!decided.note.empty())
			plan.notes.push_back(decided.note);
		// A high rate starts no higher than the timer's own interrupts leave room for; the
		// programs' time is added as it is measured (Sampler::fit_rate).
		if (rate.per_second() > kRateMeasuredAbove) {
			const std::optional<double> measured = measure_interrupt_cost(options.cpu >= 0 ? options.cpu : 0);
			sampler.interrupt_cost_ns = measured.value_or(kAssumedInterruptCostNs);
			if (!measured)
				plan.notes.push_back("cannot measure what a timer interrupt costs here (no real-time priority "
						     "or no perf event): assuming " +
						     std::to_string(int(kAssumedInterruptCostNs / 1000)) + " µs");
			if (auto fit = fit_to_cost(rate, sampler.interrupt_cost_ns, sampler.budget_percent)) {
				rate = fit->rate;
				plan.notes.push_back(fit->note);
			}
		}
		sampler.frequency = rate.frequency;
		sampler.period = rate.period;
	}
	if (Status cgroups = resolve_cgroups(sampler.cgroups); !cgroups.ok())
		return Error(cgroups.error());
	if (options.off_cpu)
		if (Status support = off_cpu_support(); !support.ok())
			return Error(support.error());
	if (options.cpu >= 0) {
		std::vector<int> online = online_cpus();
		if (std::find(online.begin(), online.end(), options.cpu) == online.end())
			return Error("CPU " + std::to_string(options.cpu) +
				     " is not online (see /sys/devices/system/cpu/online)");
	}
	// With --interval, -o's strftime fields name each window's file: checked as now's.
	if (!options.output_path.empty())
		if (Status output = check_output_file(options.interval_s ? expand_time_fields(options.output_path,
											    clocks::realtime_ns())
								 : options.output_path);
		    !output.ok())
			return Error(output.error());
	if (!options.push_url.empty())
		if (Status push = plan_push(options, plan); !push.ok())
			return Error(push.error());
	// The maps' sizes, decided once: judged here for their memory, made so by the sampler.
	// A size that takes gigabytes of kernel memory costs seconds to create and free, and one
	// beyond what the machine has fails, or reclaims its page cache first.
	// OTLP names each sample's thread (thread.id): its counts are kept apart by thread.
	sampler.key_threads = options.format == ReportFormat::Otlp || (plan.push && plan.push->format == PushFormat::Otlp);
	plan.maps = plan_maps(sampler);
	MapMemoryVerdict map_cost = judge_map_memory(plan.maps.sizes, available_memory());
	if (!map_cost.status.ok())
		return Error(map_cost.status.error());
	if (!map_cost.warning.empty())
		plan.notes.push_back(map_cost.warning);
	plan.header.command = options.command_line;
	plan.header.host = plan.host;
	plan.header.kernel_stacks = options.kernel_stacks;
	plan.header.user_stacks = options.user_stacks;
	plan.header.off_cpu = options.off_cpu;
	plan.header_line = header_line(options, sampler);
	return plan;
}
