/* split.c: burns CPU in two leaf functions with a known 3:1 split, for DURATION seconds. */
#include <stdlib.h>
#include <time.h>

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

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 5);
	while (now() < end) {
		split_hot_three();
		split_hot_one();
	}
	return 0;
}
