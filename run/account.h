// run/account.h: what a run tells on stderr about what it sampled: the samples lost
// and why, how user stacks were walked, and why a report came out empty.
#pragma once

#include "cli/options.h"
#include "report/model.h"
#include "sampler/sampler.h"
#include "sampler/targets.h"
#include "unwind/unwinder.h"

// The account doc/cli.md promises: the last stderr line when anything was lost. `raw` holds the
// account of the whole run (every batch's, added up).
// budget_percent: the share of each CPU the kernel side may take, for samples lost over it.
void report_losses(const RawProfile &raw, const Options &options, uint32_t budget_percent);

// How user stacks were walked, when tables were used: one stderr line.
void report_unwinding(const RawProfile &raw, const Unwinder::Stats &tables);

// A run that collected nothing, or nothing but empty stacks, says why in one line.
void explain_empty(const Profile &profile, const RawProfile &raw, const Options &options, TargetWatch &targets);
