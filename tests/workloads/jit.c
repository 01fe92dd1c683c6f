/* jit.c: what a JIT compiler does, in miniature: copies a spin loop into an anonymous
 * executable page, names it in /tmp/perf-PID.map as node --perf-basic-prof would
 * ("START SIZE NAME", hex), and runs it for DURATION seconds. The map is left behind,
 * as JITs leave it: the caller removes it. x86-64 only. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workload.h"

/* push %rbp; mov %rsp,%rbp; 1: dec %rdi; jnz 1b; pop %rbp; ret -- a frame like compiled
 * code's, so frame-pointer unwinding goes on to main. */
static const unsigned char spin_loop[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xff, 0xcf, 0x75, 0xfb, 0x5d, 0xc3};

int main(int argc, char **argv)
{
#if defined(__x86_64__)
	double end = end_of_run(argc, argv);
	unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
	unsigned char *code = page + 0x40; /* not at the page start, as JIT code rarely is */
	memcpy(code, spin_loop, sizeof(spin_loop));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0)
		return 1;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	FILE *map = fopen(path, "w");
	if (!map)
		return 1;
	fprintf(map, "%lx %zx jit_spin_loop\n", (unsigned long)code, sizeof(spin_loop));
	fclose(map);
	void (*spin)(long) = (void (*)(long))code;
	while (now() < end)
		spin(1000000);
	return 0;
#else
	(void)argc;
	(void)argv;
	fprintf(stderr, "jit: x86-64 only\n");
	return 1;
#endif
}
