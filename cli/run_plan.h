// cli/run_plan.h: the command line checked against this machine: what the run does here
// (the processes and cgroups it samples, resolved; its maps; where it pushes), and what
// stderr says first. Options stay as parsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/options.h"
#include "push/push.h"
#include "sampler/sampler.h"

struct RunPlan {
	MapPlan maps;                      // the maps' sizes, decided once
	std::vector<uint32_t> pids;        // -p, each a process (a thread id made its process)
	std::vector<std::string> cgroups;  // --cgroup, each the real path of a cgroup v2 directory
	std::optional<PushConfig> push;    // --push: its target settled, its auth file read
	ReportOptions push_report;         // --push: how its windows are rendered, as its server names things
	std::string host;                  // this machine's name, for reports and pushes
	SampleRate rate;                   // -f or -c, lowered to what the kernel takes (sampler/rate.h)
	uint32_t budget_percent = 25;      // of each CPU, the kernel side's at most
	double interrupt_cost_ns = 0;      // a sample's interrupt, before its program: 0 at low rates
	std::vector<std::string> notes;    // for stderr before the run, without "profile: "

	// What the sampler is told: the command line's, with -p and --cgroup as resolved here.
	SamplerConfig sampler(const Options &options) const;
};

// Values the parser cannot judge alone: they depend on this machine. The plan, or what is
// wrong (one line for stderr, exit status 2).
Result<RunPlan> check_against_machine(const Options &options);
