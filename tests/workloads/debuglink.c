/* debuglink.c: burns CPU in debuglink_hot for DURATION seconds. Built stripped of every
 * symbol, its names kept in debuglink.debug beside it, named by .gnu_debuglink. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void debuglink_hot(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		sink += i;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 5);
	while (now() < end)
		debuglink_hot();
	return 0;
}
