// base/clock.cpp: the clocks a run reads, through clock_gettime.
#include "base/clock.h"

#include <time.h>

namespace clocks {

namespace {

int64_t read_ns(clockid_t clock)
{
	timespec ts;
	clock_gettime(clock, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

} // namespace

int64_t monotonic_ns()
{
	return read_ns(CLOCK_MONOTONIC);
}

int64_t realtime_ns()
{
	return read_ns(CLOCK_REALTIME);
}

int64_t thread_cpu_ns()
{
	return read_ns(CLOCK_THREAD_CPUTIME_ID);
}

int64_t process_cpu_ns()
{
	return read_ns(CLOCK_PROCESS_CPUTIME_ID);
}

double monotonic_ms()
{
	return double(monotonic_ns()) / 1e6;
}

double thread_cpu_ms()
{
	return double(thread_cpu_ns()) / 1e6;
}

} // namespace clocks
