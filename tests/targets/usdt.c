/*
 * ubt-usdt [N [wait]]: USDT probes through <sys/sdt.h>, N rounds
 * (default 3):
 *	ubt:tick(i, 2 * i)		for i in 1..N
 *	ubt:label("round-<i>")		for i in 1..N
 *	ubt:guarded(i)			only while a tracer has the semaphore set
 *	ubt:last			for i in 1..N, the last thing its
 *					function does: no room for a jump
 *	ubt:frame(i, 3 * i)		for i in 1..N, arguments in the stack
 *					frame (-8@-24(%rbp): built with -O0)
 *	ubt:redzone(i, 5 * i)		for i in 1..N, arguments below %rsp
 *					(-O0 without a frame pointer)
 * then once ubt_const:consts((unsigned char)200, (unsigned short)60000,
 * 4000000000u, (signed char)-5, (short)-300, -7), constants the notes give
 * as signed immediates ("1@$-56"),
 * then ubt_usdt_done(N) and exit 0. Each site is in a function of its own
 * (ubt_usdt_tick, ubt_usdt_label, ubt_usdt_guarded) that user mode can
 * patch. With "wait", first prints "ready" and waits (up to 30 s) for
 * SIGUSR1, for -p; after the rounds it waits (up to 10 s) for every
 * semaphore to be 0 again (the tracer detached) and says if one is not.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/sdt.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

/*
 * With semaphores every probe has one; a tracer increments a probe's
 * semaphore while attached. Only ubt:guarded tests its own.
 */
#define UBT_SEMAPHORE(name) \
	__extension__ unsigned short ubt_##name##_semaphore \
		__attribute__((unused, section(".probes")))
UBT_SEMAPHORE(tick);
UBT_SEMAPHORE(label);
UBT_SEMAPHORE(guarded);
UBT_SEMAPHORE(last);
UBT_SEMAPHORE(frame);
UBT_SEMAPHORE(redzone);
__extension__ unsigned short ubt_const_consts_semaphore
	__attribute__((unused, section(".probes")));

UBT_PROBE long ubt_usdt_done(long n)
{
	UBT_FRAME();
	return n;
}

volatile long ubt_usdt_sink;

UBT_PROBE void ubt_usdt_nothing(void)
{
	UBT_FRAME();
}

/*
 * Each site in a function of its own, followed by straight-line code
 * (the sink's updates): room for a jump after the site's nop, which no
 * branch targets, so that user mode can patch it. The call before tick
 * keeps its arguments in callee-saved registers.
 */
UBT_PROBE void ubt_usdt_tick(long i)
{
	long d = 2 * i;

	ubt_usdt_nothing();
	STAP_PROBE2(ubt, tick, i, d);
	ubt_usdt_sink += d;
	ubt_usdt_sink ^= i;
}

UBT_PROBE void ubt_usdt_label(const char *label)
{
	STAP_PROBE1(ubt, label, label);
	ubt_usdt_sink += label[0];
	ubt_usdt_sink ^= 1;
}

UBT_PROBE void ubt_usdt_guarded(long i)
{
	if (ubt_guarded_semaphore) {
		STAP_PROBE1(ubt, guarded, i);
		ubt_usdt_sink += i;
		ubt_usdt_sink ^= 2;
	}
}

/* Every semaphore back at 0 within 10 s (the tracer detached)? */
static int semaphores_restored(void)
{
	struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };

	for (int i = 0; i < 1000; i++) {
		if (!*(volatile unsigned short *)&ubt_last_semaphore &&
		    !*(volatile unsigned short *)&ubt_frame_semaphore &&
		    !*(volatile unsigned short *)&ubt_redzone_semaphore &&
		    !*(volatile unsigned short *)&ubt_tick_semaphore &&
		    !*(volatile unsigned short *)&ubt_label_semaphore &&
		    !*(volatile unsigned short *)&ubt_guarded_semaphore)
			return 1;
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "ubt-usdt: semaphores left at %u %u %u\n",
		ubt_tick_semaphore, ubt_label_semaphore,
		ubt_guarded_semaphore);
	return 0;
}

/* the site's nop, then only the epilogue: user mode leaves it to the kernel */
UBT_PROBE void ubt_usdt_last(void)
{
	UBT_FRAME();
	STAP_PROBE(ubt, last);
}

/* without optimisation, the arguments stay in memory */
__attribute__((noinline, noipa, optimize("O0"))) void
ubt_usdt_frame(long i)
{
	long a = i, b = 3 * i;

	STAP_PROBE2(ubt, frame, a, b);
	ubt_usdt_sink += a + b;
	ubt_usdt_sink ^= 3;
}

/* a leaf without a frame pointer: its locals in the red zone */
__attribute__((noinline, noipa, optimize("O0", "omit-frame-pointer"))) void
ubt_usdt_redzone(long i)
{
	long a = i, b = 5 * i;

	STAP_PROBE2(ubt, redzone, a, b);
	ubt_usdt_sink += a + b;
	ubt_usdt_sink ^= 5;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 3);
	bool wait = argc > 2 && !strcmp(argv[2], "wait");
	char label[32];

	if (argc > 2 && !wait)
		return 2;
	if (wait)
		target_wait_usr1();

	for (long i = 1; i <= n; i++) {
		snprintf(label, sizeof(label), "round-%ld", i);
		ubt_usdt_tick(i);
		ubt_usdt_label(label);
		ubt_usdt_guarded(i);
		ubt_usdt_last();
		ubt_usdt_frame(i);
		ubt_usdt_redzone(i);
	}
	STAP_PROBE6(ubt_const, consts, (unsigned char)200,
		    (unsigned short)60000, 4000000000u, (signed char)-5,
		    (short)-300, -7);
	if (ubt_usdt_done(n) != n)
		return target_result("ubt-usdt", 1);
	return wait && !semaphores_restored() ? 1 : 0;
}
