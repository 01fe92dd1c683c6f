/* split.c DURATION [TRUTH_FILE]: burns CPU in two leaf functions for DURATION seconds, each
 * round giving split_hot_three three times the iterations of split_hot_one, in a slice of
 * random length (tens of microseconds): a loop of one fixed period could run in step with
 * the sampling clock, and a sampler ticking in step with it sees a skewed split.
 * Three times the iterations is not three times the CPU time on every CPU (issue 26: an AMD
 * EPYC gives split_hot_three far more than 3/4), so with TRUTH_FILE it measures what each
 * function took: the thread's CPU time (CLOCK_THREAD_CPUTIME_ID: time off the CPU is not in it, as
 * it is in no sample) around each call, one call being a whole slice so that the clock's
 * cost is a few hundredths of it, summed in nanoseconds into two running totals,
 * split_hot_three's then split_hot_one's, in TRUTH_FILE mapped shared. A test reads them at
 * any moment of the run; "ready" on stdout says the file is there. */
#include "workload.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

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

static uint64_t thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* TRUTH_FILE's two totals, mapped shared; NULL without it. */
static volatile uint64_t *spent_in(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, 2 * sizeof(uint64_t))) {
		perror(path);
		exit(1);
	}
	void *map = mmap(NULL, 2 * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror(path);
		exit(1);
	}
	close(fd);
	printf("ready\n");
	fflush(stdout);
	return map;
}

int main(int argc, char **argv)
{
	double end = end_of_run(argc, argv);
	volatile uint64_t *spent = argc > 2 ? spent_in(argv[2]) : NULL;
	unsigned long state = 0x9e3779b97f4a7c15UL ^ (unsigned long)(now() * 1e9);
	while (now() < end) {
		/* xorshift64: UNIT / 2 to 3 UNIT / 2 iterations. */
		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		slice = UNIT / 2 + state % UNIT;
		if (!spent) {
			split_hot_three();
			split_hot_one();
			continue;
		}
		uint64_t t0 = thread_ns();
		split_hot_three();
		uint64_t t1 = thread_ns();
		split_hot_one();
		uint64_t t2 = thread_ns();
		spent[0] += t1 - t0;
		spent[1] += t2 - t1;
	}
	return 0;
}
