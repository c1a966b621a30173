/*
 * ubt-usdt [N]: USDT probes through <sys/sdt.h>, N rounds (default 3):
 *	ubt:tick(i, 2 * i)		for i in 1..N
 *	ubt:label("round-<i>")		for i in 1..N
 *	ubt:guarded(i)			only while a tracer has the semaphore set
 * then once ubt_const:consts((unsigned char)200, (unsigned short)60000,
 * 4000000000u, (signed char)-5, (short)-300, -7), constants the notes give
 * as signed immediates ("1@$-56"),
 * then ubt_usdt_done(N) and exit 0.
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
__extension__ unsigned short ubt_const_consts_semaphore
	__attribute__((unused, section(".probes")));

UBT_PROBE long ubt_usdt_done(long n)
{
	UBT_FRAME();
	return n;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 3);
	char label[32];

	for (long i = 1; i <= n; i++) {
		snprintf(label, sizeof(label), "round-%ld", i);
		STAP_PROBE2(ubt, tick, i, 2 * i);
		STAP_PROBE1(ubt, label, label);
		if (ubt_guarded_semaphore)
			STAP_PROBE1(ubt, guarded, i);
	}
	STAP_PROBE6(ubt_const, consts, (unsigned char)200,
		    (unsigned short)60000, 4000000000u, (signed char)-5,
		    (short)-300, -7);
	return target_result("ubt-usdt", ubt_usdt_done(n) != n);
}
