/* offcpu.c DURATION TRUTH_FILE: threads that wait in known functions for DURATION seconds,
 * built without frame pointers (as Debian builds its packages): one sleeps 3 ms in
 * sleep_three_ms and 1 ms in sleep_one_ms, in turn; one blocks in read_pipe on a pipe that
 * another fills every 2 ms; one blocks in wait_mutex on a mutex that another holds 2 ms of
 * every 3. Each call measures its own time off the CPU: its CLOCK_MONOTONIC time less its
 * CLOCK_THREAD_CPUTIME_ID time. TRUTH_FILE, mapped shared, holds the four running totals
 * in nanoseconds, in that order; "ready" on stdout says it is there. */
#include "workload.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

enum { SLEEP_THREE, SLEEP_ONE, READ_PIPE, WAIT_MUTEX, MEASURED };

static volatile uint64_t *off_cpu;
static volatile unsigned long sink;
static double end;
static int pipe_fds[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

/* Runs call, adding its time off the CPU to off_cpu[which]. */
#define MEASURE(which, call)                                                                  \
	do {                                                                                  \
		uint64_t wall = clock_ns(CLOCK_MONOTONIC), cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID); \
		call;                                                                         \
		cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;                                \
		wall = clock_ns(CLOCK_MONOTONIC) - wall;                                      \
		__atomic_fetch_add(&off_cpu[which], wall > cpu ? wall - cpu : 0, __ATOMIC_RELAXED); \
	} while (0)

/* sink++ after each call: no tail call, so each function stays on the stack. */
__attribute__((noinline)) void sleep_three_ms(void)
{
	sleep_us(3000);
	sink++;
}

__attribute__((noinline)) void sleep_one_ms(void)
{
	sleep_us(1000);
	sink++;
}

__attribute__((noinline)) void read_pipe(void)
{
	char byte;
	if (read(pipe_fds[0], &byte, 1) != 1)
		sink++;
	sink++;
}

__attribute__((noinline)) void wait_mutex(void)
{
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
	sink++;
}

__attribute__((noinline)) void write_pipe(void)
{
	sleep_us(2000);
	if (write(pipe_fds[1], "x", 1) != 1)
		sink++;
	sink++;
}

__attribute__((noinline)) void hold_mutex(void)
{
	pthread_mutex_lock(&lock);
	sleep_us(2000);
	pthread_mutex_unlock(&lock);
	sleep_us(1000);
	sink++;
}

static void *sleeper(void *arg)
{
	(void)arg;
	while (now() < end) {
		MEASURE(SLEEP_THREE, sleep_three_ms());
		MEASURE(SLEEP_ONE, sleep_one_ms());
	}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	while (now() < end)
		MEASURE(READ_PIPE, read_pipe());
	return NULL;
}

static void *writer(void *arg)
{
	(void)arg;
	while (now() < end)
		write_pipe();
	close(pipe_fds[1]); /* the reader's last read ends */
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	while (now() < end) {
		MEASURE(WAIT_MUTEX, wait_mutex());
		sleep_us(500); /* the holder's free millisecond is not spun through */
	}
	return NULL;
}

static void *holder(void *arg)
{
	(void)arg;
	while (now() < end)
		hold_mutex();
	return NULL;
}

int main(int argc, char **argv)
{
	end = end_of_run(argc, argv);
	int fd = argc > 2 ? open(argv[2], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
	if (fd < 0 || ftruncate(fd, MEASURED * sizeof(uint64_t)) || pipe(pipe_fds)) {
		perror(argc > 2 ? argv[2] : "offcpu DURATION TRUTH_FILE");
		return 1;
	}
	off_cpu = mmap(NULL, MEASURED * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (off_cpu == MAP_FAILED) {
		perror(argv[2]);
		return 1;
	}
	close(fd);
	void *(*threads[])(void *) = {sleeper, reader, writer, waiter, holder};
	pthread_t ids[5];
	for (int i = 0; i < 5; i++)
		pthread_create(&ids[i], NULL, threads[i], NULL);
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < 5; i++)
		pthread_join(ids[i], NULL);
	return 0;
}
