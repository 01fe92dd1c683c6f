/* nofp.c: built -O2 -fomit-frame-pointer, as Debian builds its packages: sorts and searches
 * names with glibc's qsort and bsearch, whose comparators call strcmp, for DURATION
 * seconds. A frame-pointer walk loses every caller here; an unwind-table walk must not. */
#include <search.h>
#include <stdio.h>
#include <string.h>

#include "workload.h"

#define NAMES 512

static char names[NAMES][24];
static const char *order[NAMES];
static volatile unsigned long sink;

__attribute__((noinline)) int compare_names(const void *a, const void *b)
{
	int order = strcmp(*(const char *const *)a, *(const char *const *)b);
	sink++; /* not a tail call: compare_names stays on the stack under strcmp */
	return order;
}

__attribute__((noinline)) void sort_names(void)
{
	/* Reversed each time, so that qsort's merge sort has work to do. */
	for (int i = 0; i < NAMES; i++)
		order[i] = names[NAMES - 1 - i];
	qsort(order, NAMES, sizeof(order[0]), compare_names);
	sink++; /* not a tail call */
}

/* <stdlib.h> inlines bsearch at -O2: the comparator's caller is find_names itself. */
__attribute__((noinline)) void find_names(void)
{
	for (int i = 0; i < NAMES; i += 3) {
		const char *key = names[i];
		sink += bsearch(&key, order, NAMES, sizeof(order[0]), compare_names) != NULL;
	}
}

/* A few frames of the program's own between main and the work, none with a frame pointer. */
__attribute__((noinline)) void nested(int depth)
{
	if (depth == 0) {
		sort_names();
		find_names();
		return;
	}
	nested(depth - 1);
	sink++; /* not a tail call */
}

int main(int argc, char **argv)
{
	double end = end_of_run(argc, argv);
	for (int i = 0; i < NAMES; i++)
		/* A shared prefix: strcmp has bytes to compare. */
		snprintf(names[i], sizeof(names[i]), "name-of-the-entry-%05d", i * 7919 % 100000);
	qsort(names, NAMES, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
	while (now() < end)
		nested(4);
	return 0;
}
