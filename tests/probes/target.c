/*
 * A small ELF for tests/unit-probes: known function symbols (global,
 * weak, local) and USDT notes (target-sem.c: one with a semaphore). With an argument
 * it sleeps that many seconds so tests can resolve it through -p.
 */
#include <stdlib.h>
#include <sys/sdt.h>
#include <unistd.h>

int ubt_probe_beta(int x);	/* target-sem.c */

__attribute__((noinline)) int ubt_probe_alpha(int x)
{
	DTRACE_PROBE2(ubt_test, start, x, (long)x * 2);
	return x + 1;
}

__attribute__((noinline)) int ubt_probe_alpha2(int x)
{
	return x * 3;
}

__attribute__((noinline)) static int ubt_probe_local(int x)
{
	DTRACE_PROBE(ubt_test, done);
	return x ^ 5;
}

int main(int argc, char **argv)
{
	int v = ubt_probe_alpha(argc) + ubt_probe_alpha2(argc) +
		ubt_probe_beta(argc) + ubt_probe_local(argc);

	if (argc > 1)
		sleep(atoi(argv[1]));
	return v == 12345;
}
