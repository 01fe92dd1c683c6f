// cli/run_plan.h: the command line checked against this machine: what the run does here,
// built once (what the sampler is told, its maps, where it pushes, what every report says of
// the run), and what stderr says first. Options stay as parsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/options.h"
#include "push/push.h"
#include "report/model.h"
#include "sampler/sampler.h"

struct RunPlan {
	// What the sampler is told: the command line's, with -p (each a process: a thread id
	// made its process) and --cgroup (each the real path of a cgroup v2 directory) resolved,
	// -f or -c lowered to what this machine takes (sampler/rate.h), the kernel side's share
	// of each CPU, and what a sample's interrupt costs here (0 at low rates).
	SamplerConfig sampler;
	MapPlan maps;                      // the maps' sizes, decided once
	std::optional<PushConfig> push;    // --push: its target settled, its auth file read
	ReportOptions push_report;         // --push: how its windows are rendered, as its server names things
	std::string host;                  // this machine's name, for reports and pushes
	// What every window's profile says of how the run was made (its command line, host,
	// stacks, kind); the rate, the window's times and its process are each window's own.
	Profile header;
	std::string header_line;           // BCC's "Sampling at 49 Hertz of ..." of what runs
	std::vector<std::string> notes;    // for stderr before the run, without "profile: "

	SampleRate rate() const { return {sampler.frequency, sampler.period}; }
};

// Values the parser cannot judge alone: they depend on this machine. The plan, or what is
// wrong (one line for stderr, exit status 2).
Result<RunPlan> check_against_machine(const Options &options);
