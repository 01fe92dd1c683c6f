// run/run.h: a planned run, from loading the sampler to the last line on stderr.
#pragma once

#include "cli/options.h"
#include "cli/run_plan.h"

// The exit status of a run that sampled and reported but whose --push windows were not all
// delivered.
constexpr int kExitWindowsDropped = 3;

// Runs what the plan says: samples until the duration, a stop signal, the targets' exit or
// stdout's reader going away; writes or pushes the reports. Its exit status: 0, that of a
// report that could not be written, or kExitWindowsDropped. Throws RunError for what ends
// the run before its report (the sampler cannot load, the kernel cannot do what is asked).
int run(const Options &options, const RunPlan &plan);
