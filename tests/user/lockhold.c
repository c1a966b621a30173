/*
 * lockhold N: a target whose insert lock of a map is held by "another
 * thread" that never runs while its probes insert (tests/user/lock-wait.sh).
 * It finds ubt's memfd (the read-write mapping at offset 0 in
 * /proc/self/maps), takes the insert lock of the first shared table (at
 * offset 0 of the shared area, struct rt_shtab) as a preempted thread of
 * its own would hold it, calls lh_add(i) for i in 0..N-1, gives the lock
 * back as the runtime's unlock does (a new generation), calls lh_add(i)
 * for i in N..2N-1 and exits 0.  It prints "lockhold: held" on stderr, or
 * "lockhold: no table" when untraced or the table is not there (and
 * leaves everything alone).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_abi.h"
#include "memfd-map.h"
#include "target.h"

UBT_PROBE long lh_add(long i)
{
	UBT_FRAME();
	return i + 1;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 3), i;
	char *base = find_memfd();
	struct rt_shtab *h;
	uint32_t w;

	h = base ? (struct rt_shtab *)(base + RT_SHARED_OFF) : NULL;
	if (!h || h->sz != sizeof(*h) || h->key_size != 8 ||
	    h->val_size != 8) {
		fprintf(stderr, "lockhold: no table\n");
		h = NULL;
	}
	if (h) {
		w = __atomic_load_n(&h->lock, __ATOMIC_ACQUIRE);
		__atomic_store_n(&h->lock, w | 1, __ATOMIC_RELEASE);
		fprintf(stderr, "lockhold: held\n");
	}
	for (i = 0; i < n; i++)
		lh_add(i);
	if (h)
		__atomic_store_n(&h->lock, (w & ~0xffu) + 0x100,
				 __ATOMIC_RELEASE);
	for (; i < 2 * n; i++)
		lh_add(i);
	return 0;
}
