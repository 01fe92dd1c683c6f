// run/phase_clock.cpp: the marks of a PhaseClock, and their summary line.
#include "run/phase_clock.h"

#include <cstdio>

#include "base/clock.h"

void PhaseClock::mark(const char *name)
{
	marks_.push_back({name, clocks::monotonic_ns(), clocks::thread_cpu_ns()});
}

std::string PhaseClock::summary() const
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
