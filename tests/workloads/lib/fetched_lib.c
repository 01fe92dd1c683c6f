/* lib/fetched_lib.c: libfetched.so, which tests/workloads/fetched.c calls: its hot function
 * is static, so only its debug file names it. */
static volatile unsigned long sink;

__attribute__((noinline)) static void fetched_lib_hot(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		sink += i;
}

void fetched_lib_entry(void)
{
	fetched_lib_hot();
}
