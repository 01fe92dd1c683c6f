/* syscalls.c: spends most of its time in the kernel, reading /dev/zero, for DURATION seconds. */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buffer[1 << 20];

__attribute__((noinline)) void read_zeros(int fd)
{
	if (read(fd, buffer, sizeof(buffer)) < 0)
		exit(1);
}

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 5);
	int fd = open("/dev/zero", O_RDONLY);
	if (fd < 0)
		return 1;
	while (time(NULL) < end)
		read_zeros(fd);
	return 0;
}
