/* lib/plugin.c: the library tests/workloads/dlopen.c loads at run time, with one hot function. */
static volatile unsigned long sink;

__attribute__((noinline)) void plugin_hot(unsigned long rounds)
{
	for (unsigned long i = 0; i < rounds; i++)
		sink += i;
}
