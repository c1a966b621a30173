/*
 * ubt-loop N [USEC]: calls ubt_step(i) for i in 0..N-1 (returns i * i),
 * sleeping USEC microseconds after each call (default 0), then ubt_done(N)
 * once, and exits 0. Used for hist/lhist/stats distributions and, with a
 * delay, to keep a process alive for a known time (interval probes).
 */
#include <unistd.h>

#include "target.h"

UBT_PROBE long ubt_step(long i)
{
	UBT_FRAME();
	return i * i;
}

UBT_PROBE long ubt_done(long n)
{
	UBT_FRAME();
	return n;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 100);
	long usec = target_count(argc, argv, 2, 0);
	int bad = 0;

	for (long i = 0; i < n; i++) {
		bad |= ubt_step(i) != i * i;
		if (usec)
			usleep(usec);
	}
	bad |= ubt_done(n) != n;
	return target_result("ubt-loop", bad);
}
