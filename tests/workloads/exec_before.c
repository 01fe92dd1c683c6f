/* exec_before.c: burns CPU in before_exec_hot for SECONDS, then execs AFTER (exec_after)
 * with DURATION in the same process. Built non-PIE, as exec_after is, so both programs'
 * code lies at the same addresses: only the time of a sample tells whose it is.
 * Usage: exec_before AFTER SECONDS DURATION */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "workload.h"

static volatile unsigned long sink;

__attribute__((noinline)) void before_exec_hot(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		sink += i;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: exec_before AFTER SECONDS DURATION\n");
		return 2;
	}
	double end = now() + atof(argv[2]);
	while (now() < end)
		before_exec_hot();
	execl(argv[1], argv[1], argv[3], (char *)NULL);
	perror("exec_before: exec");
	return 1;
}
