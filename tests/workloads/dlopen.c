/* dlopen.c: waits DELAY seconds, then loads LIBRARY with dlopen and burns CPU in its
 * plugin_hot until DURATION seconds have passed since start: code the process did not map
 * when sampling began. Usage: dlopen LIBRARY DURATION [DELAY] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "workload.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: dlopen LIBRARY DURATION [DELAY]\n");
		return 2;
	}
	double start = now(), end = start + atof(argv[2]), delay = argc > 3 ? atof(argv[3]) : 0.5;
	usleep((useconds_t)(delay * 1e6));
	void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!library) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	void (*hot)(unsigned long) = (void (*)(unsigned long))dlsym(library, "plugin_hot");
	if (!hot)
		return 1;
	while (now() < end)
		hot(200000);
	return 0;
}
