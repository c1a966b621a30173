/*
 * ubt-many [THREADS [ROUNDS|wait]]: THREADS threads (default 1) each call
 * ubt_many_all() of libubt-many.so (500 functions; found through its
 * $ORIGIN rpath) ROUNDS times (default 2), checking every sum; exits 0.
 * With "wait", prints "ready" and the threads call it in a loop until
 * SIGUSR1 (or 60 s), and once more after it, then it prints "rounds N"
 * (all threads together):
 * a busy process for attaching to with -p.  With "churn", likewise, but
 * each round is a new thread that the worker starts and joins: threads
 * come and go while a tracer stops the process.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "target.h"

long ubt_many_all(long x);
long ubt_many_expect(long x);

static long rounds = 2;
static int forever, churn;
static volatile sig_atomic_t stop;
static long done, bad;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

static void *one_round(void *arg)
{
	long i = (long)arg;

	return (void *)(long)(ubt_many_all(i) != ubt_many_expect(i));
}

static void *worker(void *arg)
{
	long n = 0, wrong = 0;

	(void)arg;
	for (long i = 0; forever || i < rounds; i++, n++) {
		/*
		 * With "wait", a round begun after SIGUSR1 is the last: each
		 * thread calls the functions at least once after the signal,
		 * however late the scheduler runs it, so a tracer attached
		 * before the signal sees every thread.
		 */
		int last = forever && stop;
		pthread_t t;
		void *r;

		if (!churn) {
			wrong += ubt_many_all(i) != ubt_many_expect(i);
		} else if (!pthread_create(&t, NULL, one_round, (void *)i)) {
			pthread_join(t, &r);
			wrong += (long)r;
		}
		if (last)
			break;
	}
	pthread_mutex_lock(&lock);
	done += n;
	bad += wrong;
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	long nthreads = target_count(argc, argv, 1, 1);
	pthread_t th[64];

	if (nthreads < 1 || nthreads > 64)
		return 2;
	if (argc > 2 && (!strcmp(argv[2], "wait") ||
			 !strcmp(argv[2], "churn"))) {
		forever = 1;
		churn = !strcmp(argv[2], "churn");
		signal(SIGUSR1, on_usr1);
		alarm(60);
		signal(SIGALRM, on_usr1);
	} else {
		rounds = target_count(argc, argv, 2, 2);
	}
	for (long i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	if (forever) {
		printf("ready\n");
		fflush(stdout);
	}
	for (long i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	if (forever)
		printf("rounds %ld\n", done);
	return target_result("ubt-many", bad);
}
