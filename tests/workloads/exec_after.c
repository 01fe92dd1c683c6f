/* exec_after.c: what exec_before becomes: burns CPU in after_exec_hot for DURATION seconds. */
#include "workload.h"

static volatile unsigned long sink;

__attribute__((noinline)) void after_exec_hot(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		sink ^= i;
}

int main(int argc, char **argv)
{
	double end = end_of_run(argc, argv);
	while (now() < end)
		after_exec_hot();
	return 0;
}
