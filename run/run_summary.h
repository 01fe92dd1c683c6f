// run/run_summary.h: what stderr says of the run at its end.
#pragma once

#include <cstddef>

#include "cli/options.h"
#include "run/phase_clock.h"
#include "cli/run_plan.h"
#include "run/session.h"
#include "run/window_cutter.h"
#include "push/push.h"

// What stderr says of the run once its report is out: pushes, windows, where the time
// went (PROFILE_DEBUG), why nothing was sampled, and last, what was lost.
class RunSummary {
public:
	RunSummary(const Options &options, const RunPlan &plan) : options_(options), plan_(plan) {}

	// Phases from the start to the first sample.
	PhaseClock &startup() { return startup_; }
	// Phases after sampling: the first starts at this call.
	void sampling_ended() { after_ = PhaseClock(); }
	void phase(const char *name) { after_.mark(name); }
	// The last window before it is named: its size, for PROFILE_DEBUG.
	void last_window(const WindowCutter &windows);

	// How user stacks were walked, before the report.
	void unwinding(const Session &session, const WindowCutter &windows);
	// Everything else, after the report (and the pusher's last deliveries).
	void print(Session &session, const WindowCutter &windows, const Pusher *pusher);

private:
	const Options &options_;
	const RunPlan &plan_;
	PhaseClock startup_, after_;
	size_t entries_ = 0, stacks_ = 0, objects_ = 0;
};
