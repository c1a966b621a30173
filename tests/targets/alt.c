/*
 * ubt-alt [N [THREADS]]: a probed call and a system call, alternating, for
 * the merged output of user-mode and kernel probes.  THREADS threads
 * (default 1, at most 4) take turns, round by round, N rounds each
 * (default 20); thread t (0-based) in round i (1-based) does
 *
 *	ubt_alt(t, i)				returns 100 * t + i
 *	write(/dev/null, buf, 100 * t + i % 100)	sys_enter_write's count
 *
 * and then hands the turn to the next thread (a mutex and a condition
 * variable: futex calls, no write).  So the global order is fixed: thread
 * 0 round 1, thread 1 round 1, ..., thread 0 round 2, ...  Each call ends
 * before its write begins, and each write before the next thread's call.
 * Exits 0.
 */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "target.h"

#define ALT_MAX_THREADS 4

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long turn;		/* (i - 1) * nthreads + t */
static long nthreads, rounds, bad;
static int devnull;

UBT_PROBE long ubt_alt(long t, long i)
{
	UBT_FRAME();
	return 100 * t + i;
}

static void *alt_thread(void *arg)
{
	long t = (long)arg;
	static char buf[512];

	for (long i = 1; i <= rounds; i++) {
		pthread_mutex_lock(&lock);
		while (turn != (i - 1) * nthreads + t)
			pthread_cond_wait(&cond, &lock);
		pthread_mutex_unlock(&lock);
		if (ubt_alt(t, i) != 100 * t + i)
			__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
		if (write(devnull, buf, 100 * t + i % 100) !=
		    100 * t + i % 100)
			__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&lock);
		turn++;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[ALT_MAX_THREADS];

	rounds = target_count(argc, argv, 1, 20);
	nthreads = target_count(argc, argv, 2, 1);
	if (nthreads < 1 || nthreads > ALT_MAX_THREADS)
		return 2;
	devnull = open("/dev/null", O_WRONLY);
	if (devnull < 0)
		return 1;
	if (nthreads == 1) {
		alt_thread(NULL);
	} else {
		for (long t = 0; t < nthreads; t++)
			if (pthread_create(&th[t], NULL, alt_thread,
					   (void *)t))
				return 1;
		for (long t = 0; t < nthreads; t++)
			pthread_join(th[t], NULL);
	}
	return target_result("ubt-alt", bad);
}
