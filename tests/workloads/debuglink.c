/* debuglink.c: burns CPU in debuglink_hot for DURATION seconds. Built stripped of every
 * symbol, its names kept in debuglink.debug beside it, named by .gnu_debuglink. */
#include "workload.h"

static volatile unsigned long sink;

__attribute__((noinline)) void debuglink_hot(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		sink += i;
}

int main(int argc, char **argv)
{
	double end = end_of_run(argc, argv);
	while (now() < end)
		debuglink_hot();
	return 0;
}
