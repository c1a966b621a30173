/*
 * ubt-watch [MODE]: for watchpoints. Built without PIE, so that the
 * address of ubt_watch_global is the one `nm` prints.
 *
 *   (no MODE)  writes ubt_watch_global 3 times (values 11, 12, 13), then
 *              calls ubt_watch_inc(0, p) twice on one heap int: 4 writes
 *              to *p in all (2 per call).
 *   loop       prints "ready", then calls ubt_watch_inc(0, p) on one heap
 *              int every millisecond, for up to 30 s (for -p).
 *   many       calls ubt_watch_inc(0, p) once on each of 8 heap ints:
 *              more addresses than x86-64 has debug registers (4).
 *   wild       calls ubt_watch_step_0 .. ubt_watch_step_3(p) once each,
 *              each on its own heap int (1 write each).
 *
 * Exits 0, or 1 with "ubt-watch: wrong result" if a value came out wrong.
 */
#include <string.h>
#include <unistd.h>

#include "target.h"

/* in .data, away from the page's end: only the program writes it */
int ubt_watch_pad[64] = { 1 };
volatile int ubt_watch_global = 10;
int ubt_watch_pad2[64] = { 1 };

UBT_PROBE void ubt_watch_inc(long unused, int *p)
{
	UBT_FRAME();
	(*p)++;
	(*p)++;
}

#define STEP(n)							\
	UBT_PROBE void ubt_watch_step_##n(int *p)		\
	{							\
		UBT_FRAME();					\
		*p += n + 1;					\
	}
STEP(0)
STEP(1)
STEP(2)
STEP(3)

static int *watch_int(void)
{
	int *p = malloc(sizeof(*p));

	if (!p)
		exit(2);
	*p = 0;
	return p;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long bad = 0;

	if (!strcmp(mode, "loop")) {
		int *p = watch_int();

		printf("ready\n");
		fflush(stdout);
		for (int i = 0; i < 30000; i++) {
			ubt_watch_inc(0, p);
			usleep(1000);
		}
		bad = *p != 60000;
	} else if (!strcmp(mode, "many")) {
		for (int i = 0; i < 8; i++) {
			int *p = watch_int();

			ubt_watch_inc(0, p);
			bad |= *p != 2;
		}
	} else if (!strcmp(mode, "wild")) {
		int *p[4];

		for (int i = 0; i < 4; i++)
			p[i] = watch_int();
		ubt_watch_step_0(p[0]);
		ubt_watch_step_1(p[1]);
		ubt_watch_step_2(p[2]);
		ubt_watch_step_3(p[3]);
		for (int i = 0; i < 4; i++)
			bad |= *p[i] != i + 1;
	} else if (!*mode) {
		int *p = watch_int();

		for (int i = 0; i < 3; i++)
			ubt_watch_global++;
		ubt_watch_inc(0, p);
		ubt_watch_inc(0, p);
		bad = ubt_watch_global != 13 || *p != 4;
	} else {
		return 2;
	}
	return target_result("ubt-watch", bad);
}
