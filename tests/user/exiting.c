/*
 * exiting [PAR]: threads come and go, PAR at a time (default 8), until
 * stdin ends (tests/user/exiting.py).  Thread I calls exiting_work(I, k)
 * for k in 0..2 (returns 3 * I + k) and checks each result; one in four
 * then ends with pthread_exit() from inside exiting_quit(I).  At stdin's
 * end the threads are joined; main prints "exiting: N threads" and exits
 * 0, or 1 if any result was wrong.  A tracer that stops every thread (to
 * patch or restore code) nearly always finds some of them exiting.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "target.h"

static atomic_int stop;

UBT_PROBE long exiting_work(long id, long k)
{
	UBT_FRAME();
	return 3 * id + k;
}

UBT_PROBE void exiting_quit(long id)
{
	UBT_FRAME();
	pthread_exit((void *)(id & 0));
}

static void *worker(void *arg)
{
	long id = (long)arg, bad = 0;

	for (long k = 0; k < 3; k++)
		bad |= exiting_work(id, k) != 3 * id + k;
	if (!bad && id % 4 == 0)
		exiting_quit(id);
	return (void *)bad;
}

static void *reader(void *arg)
{
	char buf[64];

	(void)arg;
	while (read(0, buf, sizeof(buf)) > 0)
		;
	atomic_store(&stop, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	long par = target_count(argc, argv, 1, 8), bad = 0, n = 0;
	pthread_t t[64], rd;

	if (par < 1 || par > 64 || pthread_create(&rd, NULL, reader, NULL))
		return 2;
	while (!atomic_load(&stop)) {
		void *r;

		for (long i = 0; i < par; i++)
			if (pthread_create(&t[i], NULL, worker, (void *)n++))
				return 2;
		for (long i = 0; i < par; i++) {
			pthread_join(t[i], &r);
			bad |= (long)r;
		}
	}
	pthread_join(rd, NULL);
	printf("exiting: %ld threads\n", n);
	return target_result("exiting", bad);
}
