/*
 * ubt-churn [N [PAR [FORKS]]]: starts N threads (default 3000), PAR at a time
 * (default 2), each started after one of the previous ones was joined.
 * Thread I calls ubt_churn_work(I, k, TID) for k in 0..2, TID its own
 * thread id (returns 3 * I + k),
 * then, when I is a multiple of 10, ubt_churn_quit(I), which ends the
 * thread with pthread_exit() from inside (it never returns).  At the end
 * main calls ubt_churn_done(N) and exits 0: 3 * N calls of
 * ubt_churn_work and N / 10 rounded up of ubt_churn_quit in all.  More
 * threads than a tracer has per-thread blocks come and go (user mode:
 * 1024 per attach), some leaving a call behind that never returned.
 * With FORKS, after the threads main forks FORKS children one after
 * another; child J calls ubt_churn_work(N + J, k, TID) for k in 0..2 and
 * exits (1 on a wrong result), main reaps it: 3 * (N + FORKS) calls of
 * ubt_churn_work in all, 3 * N of them in the first process.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target.h"

UBT_PROBE long ubt_churn_work(long id, long k, long tid)
{
	UBT_FRAME();
	return 3 * id + k + (tid & 0);
}

UBT_PROBE void ubt_churn_quit(long id)
{
	UBT_FRAME();
	pthread_exit((void *)(id & 0));
}

UBT_PROBE long ubt_churn_done(long n)
{
	UBT_FRAME();
	return n;
}

static void *worker(void *arg)
{
	long id = (long)arg, bad = 0, tid = gettid();

	for (long k = 0; k < 3; k++)
		bad |= ubt_churn_work(id, k, tid) != 3 * id + k;
	if (!bad && id % 10 == 0)
		ubt_churn_quit(id);
	return (void *)bad;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 3000);
	long par = target_count(argc, argv, 2, 2);
	long forks = target_count(argc, argv, 3, 0);
	pthread_t t[64];
	long bad = 0, started = 0, joined = 0;

	if (par < 1 || par > 64)
		return 2;
	while (joined < n) {
		void *r;

		while (started < n && started - joined < par) {
			if (pthread_create(&t[started % par], NULL, worker,
					   (void *)started))
				return 1;
			started++;
		}
		pthread_join(t[joined % par], &r);
		bad |= (long)r;
		joined++;
	}
	for (long j = 0; j < forks && !bad; j++) {
		pid_t c = fork();
		int st;

		if (c < 0)
			return 1;
		if (!c) {
			long tid = gettid();

			for (long k = 0; k < 3; k++)
				bad |= ubt_churn_work(n + j, k, tid) !=
				       3 * (n + j) + k;
			_exit(bad ? 1 : 0);
		}
		bad |= waitpid(c, &st, 0) != c || !WIFEXITED(st) ||
		       WEXITSTATUS(st);
	}
	bad |= ubt_churn_done(n) != n;
	return target_result("ubt-churn", bad);
}
