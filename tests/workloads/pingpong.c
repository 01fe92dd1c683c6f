/* pingpong.c DURATION: two pairs of threads that pass a byte to and fro through pipes as fast
 * as they can for DURATION seconds, as `perf bench sched pipe` does: each pass is a context
 * switch, hundreds of thousands a second on each CPU. The storm --off-cpu's budget is
 * tested in; threads rather than processes, so that nothing is left when it is killed. */
#include "workload.h"

#include <pthread.h>
#include <unistd.h>

static double end;

struct pair {
	int there[2], back[2];
};

static void *echo(void *arg)
{
	struct pair *p = arg;
	char c;

	while (read(p->there[0], &c, 1) == 1 && write(p->back[1], &c, 1) == 1)
		;
	return NULL;
}

static void *serve(void *arg)
{
	struct pair *p = arg;
	char c = 0;

	while (now() < end)
		for (int i = 0; i < 1000; i++)
			if (write(p->there[1], &c, 1) != 1 || read(p->back[0], &c, 1) != 1)
				return NULL;
	close(p->there[1]);
	return NULL;
}

int main(int argc, char **argv)
{
	struct pair pairs[2];
	pthread_t threads[4];

	end = end_of_run(argc, argv);
	for (int i = 0; i < 2; i++) {
		if (pipe(pairs[i].there) || pipe(pairs[i].back))
			return 1;
		pthread_create(&threads[2 * i], NULL, echo, &pairs[i]);
		pthread_create(&threads[2 * i + 1], NULL, serve, &pairs[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
