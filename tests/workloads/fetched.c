/* fetched.c: burns CPU for DURATION seconds in functions only debug files name: a static
 * function of its own, a static one of libfetched.so, and libc's qsort (whose merge sort,
 * msort_with_tmp, is static in libc). Built stripped of every symbol with no
 * .gnu_debuglink; its debug files are served by the debuginfod server of
 * tests/test_debuginfod.cpp. */
#include "workload.h"

void fetched_lib_entry(void);

static volatile unsigned long sink;
static int numbers[2048];

__attribute__((noinline)) static void fetched_hot(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		sink += i;
}

static int compare(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

__attribute__((noinline)) static void fetched_sort(void)
{
	unsigned seed = 1;
	for (unsigned i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		seed = seed * 1103515245 + 12345;
		numbers[i] = (int)(seed >> 8);
	}
	qsort(numbers, sizeof(numbers) / sizeof(numbers[0]), sizeof(numbers[0]), compare);
}

int main(int argc, char **argv)
{
	double end = end_of_run(argc, argv);
	while (now() < end) {
		fetched_hot();
		fetched_lib_entry();
		fetched_sort();
	}
	return 0;
}
