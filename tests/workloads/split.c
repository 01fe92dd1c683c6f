/* split.c: burns CPU in two leaf functions with a known 3:1 split, for DURATION seconds. */
#include "workload.h"

#define UNIT 200000UL

static volatile unsigned long sink;

__attribute__((noinline)) void split_hot_three(void)
{
	for (unsigned long i = 0; i < 3 * UNIT; i++)
		sink += i;
}

__attribute__((noinline)) void split_hot_one(void)
{
	for (unsigned long i = 0; i < UNIT; i++)
		sink += i;
}

int main(int argc, char **argv)
{
	double end = end_of_run(argc, argv);
	while (now() < end) {
		split_hot_three();
		split_hot_one();
	}
	return 0;
}
