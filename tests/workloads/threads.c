/* threads.c: two threads, each in its own hot function; prints "TID_A TID_B" and runs
 * for DURATION seconds. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile int stop;
static pid_t tids[2];
static pthread_barrier_t started;

__attribute__((noinline)) void thread_a_spin(void)
{
	while (!stop)
		sink++;
}

__attribute__((noinline)) void thread_b_spin(void)
{
	while (!stop)
		sink--;
}

static void *run(void *arg)
{
	long which = (long)arg;
	tids[which] = gettid();
	pthread_barrier_wait(&started);
	if (which == 0)
		thread_a_spin();
	else
		thread_b_spin();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t threads[2];
	pthread_barrier_init(&started, NULL, 3);
	for (long i = 0; i < 2; i++)
		pthread_create(&threads[i], NULL, run, (void *)i);
	pthread_barrier_wait(&started);
	printf("%d %d\n", tids[0], tids[1]);
	fflush(stdout);
	sleep(argc > 1 ? atoi(argv[1]) : 5);
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
