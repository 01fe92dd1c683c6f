/* split.c: burns CPU in two leaf functions with a known 3:1 split, for DURATION seconds.
 * Each round gives split_hot_three three times the iterations of split_hot_one, in a slice
 * of random length (tens of microseconds): a loop of one fixed period could run in step
 * with the sampling clock, and a sampler ticking in step with it sees a skewed split. */
#include "workload.h"

#define UNIT 20000UL

static volatile unsigned long sink;
/* This round's iterations of split_hot_one; split_hot_three does three times as many. */
static unsigned long slice;

__attribute__((noinline)) void split_hot_three(void)
{
	for (unsigned long i = 0; i < 3 * slice; i++)
		sink += i;
}

__attribute__((noinline)) void split_hot_one(void)
{
	for (unsigned long i = 0; i < slice; i++)
		sink += i;
}

int main(int argc, char **argv)
{
	double end = end_of_run(argc, argv);
	unsigned long state = 0x9e3779b97f4a7c15UL ^ (unsigned long)(now() * 1e9);
	while (now() < end) {
		/* xorshift64: UNIT / 2 to 3 UNIT / 2 iterations. */
		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		slice = UNIT / 2 + state % UNIT;
		split_hot_three();
		split_hot_one();
	}
	return 0;
}
