/* workload.h: what the workloads share: the clock they run by and the length of a run.
 * Helpers only: each workload keeps its own hot functions and the loop in main that calls
 * them, since the tests look for those names, and for the lines of main that call them. */
#pragma once
#include <stdlib.h>
#include <time.h>

/* CLOCK_MONOTONIC, in seconds. */
static inline double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* When a run of DURATION seconds (argv[1]; 5 without it) that starts now ends. */
static inline double end_of_run(int argc, char **argv)
{
	return now() + (argc > 1 ? atof(argv[1]) : 5);
}
