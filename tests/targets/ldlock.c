/*
 * ubt-ldlock: a target one of whose threads can sit inside a
 * dl_iterate_phdr() callback, holding the dynamic loader's lock, while a
 * tracer attaches (tests/user/ldlock.py).  Commands on stdin, one a line:
 *
 *	N		calls ldlock_fn(i) for i in 0..N-1, checks every
 *			result, prints "done N"
 *	hold [MS]	a second thread enters dl_iterate_phdr() and stays in
 *			its callback (the loader's lock held) until "free", or
 *			MS milliseconds at most; prints "held" once it is
 *			there
 *	free		that thread leaves the callback; prints "freed"
 *	dlopen PATH	a new thread calls dlopen(PATH, RTLD_NOW) and
 *			dlclose() (a lock left held by any thread stops it):
 *			prints "dlopen ok" or "dlopen failed"
 *	EOF		prints "exit S" and exits S: 0, or 1 if a result was
 *			ever wrong or a dlopen failed (then _dl_fini runs)
 *
 *	ldlock_fn(x)	returns 3 * x + 1
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <time.h>

#include "target.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int state;	/* 0 idle, 1 asked to hold, 2 holding, 3 asked to free */
static long hold_ms;	/* 0: until asked */

UBT_PROBE long ldlock_fn(long x)
{
	UBT_FRAME();
	return 3 * x + 1;
}

static long (*volatile f_fn)(long) = ldlock_fn;

static int in_callback(struct dl_phdr_info *info, size_t size, void *data)
{
	struct timespec end;

	(void)info;
	(void)size;
	(void)data;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += hold_ms / 1000 + (end.tv_nsec + hold_ms % 1000 * 1000000) /
					     1000000000;
	end.tv_nsec = (end.tv_nsec + hold_ms % 1000 * 1000000) % 1000000000;
	pthread_mutex_lock(&mu);
	state = 2;
	pthread_cond_broadcast(&cv);
	while (state != 3) {
		if (!hold_ms)
			pthread_cond_wait(&cv, &mu);
		else if (pthread_cond_timedwait(&cv, &mu, &end))
			break;
	}
	state = 0;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return 1;	/* stop after the first object */
}

static void *holder(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (state != 1)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
		dl_iterate_phdr(in_callback, NULL);
	}
	return NULL;
}

static void *opener(void *path)
{
	void *h = dlopen(path, RTLD_NOW);

	if (h)
		dlclose(h);
	return h;
}

static void wait_state(int want)
{
	pthread_mutex_lock(&mu);
	while (state != want)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void set_state(int s)
{
	pthread_mutex_lock(&mu);
	state = s;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

int main(void)
{
	char line[4200];
	pthread_t t;
	int bad = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pthread_create(&t, NULL, holder, NULL))
		return 3;
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "hold", 4)) {
			hold_ms = atol(line + 4);
			set_state(1);
			wait_state(2);
			printf("held\n");
		} else if (!strcmp(line, "free")) {
			set_state(3);
			wait_state(0);
			printf("freed\n");
		} else if (!strncmp(line, "dlopen ", 7)) {
			void *h = NULL;
			pthread_t o;

			if (pthread_create(&o, NULL, opener, line + 7) ||
			    pthread_join(o, &h) || !h)
				bad = 1;
			printf("dlopen %s\n", h ? "ok" : "failed");
		} else {
			long n = target_count(2, (char *[]){ "", line }, 1, 0);

			for (long i = 0; i < n; i++)
				bad |= f_fn(i) != 3 * i + 1;
			printf("done %ld\n", n);
		}
	}
	printf("exit %d\n", bad);
	return bad;
}
