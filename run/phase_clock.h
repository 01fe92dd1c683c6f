// run/phase_clock.h: where a stretch of the run's time goes, wall clock and this thread's
// CPU, phase by phase, for PROFILE_DEBUG.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

class PhaseClock {
public:
	PhaseClock() { mark(""); }
	void mark(const char *name);
	// "read 8.8 ms (CPU 3.0), symbolize ..." : each phase since the mark before it.
	std::string summary() const;

private:
	struct Mark {
		const char *name;
		int64_t wall, cpu;
	};
	std::vector<Mark> marks_;
};

