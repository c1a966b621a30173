/* The USDT probe with a semaphore, and a weak function, for target.c. */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

unsigned short ubt_test_sem_semaphore __attribute__((unused))
__attribute__((section(".probes")));

int ubt_probe_beta(int x);

__attribute__((noinline, weak)) int ubt_probe_beta(int x)
{
	if (ubt_test_sem_semaphore)
		DTRACE_PROBE1(ubt_test, sem, x);
	return x - 1;
}
