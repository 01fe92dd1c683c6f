// base/clock.h: the clocks a run reads: monotonic and real time, and the CPU time of this
// thread and of the whole process.
#pragma once

#include <cstdint>

namespace clocks {

int64_t monotonic_ns();   // CLOCK_MONOTONIC: intervals, deadlines, the kernel's sample times
int64_t realtime_ns();    // CLOCK_REALTIME: when a window started, for its report
int64_t thread_cpu_ns();  // CLOCK_THREAD_CPUTIME_ID: what this thread has run
int64_t process_cpu_ns(); // CLOCK_PROCESS_CPUTIME_ID: what the whole run has run

// The same in milliseconds, for what PROFILE_DEBUG and the benchmarks print.
double monotonic_ms();
double thread_cpu_ms();

} // namespace clocks
