/*
 * parked: threads inside a wrapped call across a detach
 * (tests/user/mem-sessions.py).  Prints "ready" and waits for a line on
 * stdin; then starts two threads, each calling parked_wait(I) (I = 1, 2),
 * which blocks reading a pipe and returns 2 * I; at the next line main
 * writes two bytes to the pipe, joins the threads, prints "thread I
 * returned R" for each, then "joined", waits until stdin ends, prints
 * "done 0" and exits 0 (1 on a wrong result).
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "target.h"

static int fds[2];

UBT_PROBE long parked_wait(long v)
{
	char c;

	UBT_FRAME();
	if (read(fds[0], &c, 1) != 1)
		return -1;
	return 2 * v;
}

static void *run(void *arg)
{
	long v = (long)arg, r = parked_wait(v);

	printf("thread %ld returned %ld\n", v, r);
	fflush(stdout);
	return (void *)(r == 2 * v ? 0L : 1L);
}

int main(void)
{
	pthread_t t[2];
	void *res;
	int bad = 0;

	if (pipe(fds))
		return 1;
	printf("ready\n");
	fflush(stdout);
	if (getchar() == EOF)
		return 1;
	for (long i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, run, (void *)(i + 1)))
			return 1;
	if (getchar() == EOF || write(fds[1], "xx", 2) != 2)
		return 1;
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], &res);
		bad |= res != NULL;
	}
	printf("joined\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	printf("done %d\n", bad);
	return bad;
}
