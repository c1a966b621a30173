/*
 * ubt-threads [MSEC]: starts threads 1 and 2, sleeps MSEC milliseconds
 * (default 100), starts threads 3 and 4, joins them all, calls
 * ubt_joined(4) and exits 0. Thread ID is named "ubt-w<ID>" and calls
 * ubt_work(ID, k) for k in 0..4 (returns 10 * ID + k): 20 calls in all,
 * 5 per thread name. Threads started after the delay exercise probes in
 * threads that did not exist at attach time.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "target.h"

UBT_PROBE long ubt_work(long id, long k)
{
	UBT_FRAME();
	return 10 * id + k;
}

UBT_PROBE long ubt_joined(long n)
{
	UBT_FRAME();
	return n;
}

static void *worker(void *arg)
{
	long id = (long)arg, bad = 0;
	char name[16];

	snprintf(name, sizeof(name), "ubt-w%ld", id);
	pthread_setname_np(pthread_self(), name);
	for (long k = 0; k < 5; k++)
		bad |= ubt_work(id, k) != 10 * id + k;
	return (void *)bad;
}

int main(int argc, char **argv)
{
	long ms = target_count(argc, argv, 1, 100);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	pthread_t t[4];
	long bad = 0;

	for (long i = 0; i < 4; i++) {
		if (i == 2)
			nanosleep(&ts, NULL);
		if (pthread_create(&t[i], NULL, worker, (void *)(i + 1)))
			return 1;
	}
	for (int i = 0; i < 4; i++) {
		void *r;

		pthread_join(t[i], &r);
		bad |= (long)r;
	}
	bad |= ubt_joined(4) != 4;
	return target_result("ubt-threads", bad);
}
