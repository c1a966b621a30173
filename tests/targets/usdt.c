/*
 * ubt-usdt [N]: USDT probes through <sys/sdt.h>, N rounds (default 3):
 *	ubt:tick(i, 2 * i)		for i in 1..N
 *	ubt:label("round-<i>")		for i in 1..N
 *	ubt:guarded(i)			only while a tracer has the semaphore set
 * then ubt_usdt_done(N) and exit 0. Each site is in a function of its own
 * (ubt_usdt_tick, ubt_usdt_label, ubt_usdt_guarded) that user mode can
 * patch.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <sys/sdt.h>

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

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 3);
	char label[32];

	for (long i = 1; i <= n; i++) {
		snprintf(label, sizeof(label), "round-%ld", i);
		ubt_usdt_tick(i);
		ubt_usdt_label(label);
		ubt_usdt_guarded(i);
	}
	return target_result("ubt-usdt", ubt_usdt_done(n) != n);
}
