/* stacks.c: one of 200 distinct stacks, picked by INDEX: a hot leaf (INDEX % 4) under
 * INDEX / 4 % 50 + 1 levels of recursion. Busy BUSY_PERMILLE of every 10 ms (default all
 * of it), for DURATION seconds. The benchmark runs many copies, each its own stack. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Four leaves with different code, so the symbolizer names four functions. */
__attribute__((noinline)) void stacks_leaf_a(long until)
{
	while (now_ns() < until)
		for (int i = 0; i < 1000; i++)
			sink += i;
}

__attribute__((noinline)) void stacks_leaf_b(long until)
{
	while (now_ns() < until)
		for (int i = 0; i < 1000; i++)
			sink ^= i;
}

__attribute__((noinline)) void stacks_leaf_c(long until)
{
	while (now_ns() < until)
		for (int i = 0; i < 1000; i++)
			sink -= i;
}

__attribute__((noinline)) void stacks_leaf_d(long until)
{
	while (now_ns() < until)
		for (int i = 0; i < 1000; i++)
			sink |= i;
}

static void (*const leaves[])(long) = {stacks_leaf_a, stacks_leaf_b, stacks_leaf_c, stacks_leaf_d};

__attribute__((noinline)) void stacks_descend(int depth, void (*leaf)(long), long until)
{
	if (depth == 0)
		leaf(until);
	else
		stacks_descend(depth - 1, leaf, until);
	/* Keeps the call out of tail position: each level stays a real frame. */
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int index = argc > 1 ? atoi(argv[1]) : 0;
	long end = now_ns() + (long)((argc > 2 ? atof(argv[2]) : 5) * 1e9);
	long busy_ns = (argc > 3 ? atol(argv[3]) : 1000) * 10000L;
	const long period_ns = 10000000L;
	void (*leaf)(long) = leaves[index % 4];
	int depth = index / 4 % 50 + 1;

	if (busy_ns > period_ns)
		busy_ns = period_ns;
	while (now_ns() < end) {
		stacks_descend(depth, leaf, now_ns() + busy_ns);
		if (busy_ns < period_ns) {
			struct timespec idle = {0, period_ns - busy_ns};
			nanosleep(&idle, NULL);
		}
	}
	return 0;
}
