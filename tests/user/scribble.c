/*
 * scribble N extreme|random [SEED]: a target that corrupts ubt's shared
 * memory while it is traced in user mode (tests/user/corrupt.sh).  Calls
 * scr_step(i) for i in 0..N/2-1, waits (up to 60 s) until ubt has read
 * everything its thread's ring holds, then writes garbage over what ubt reads
 * back from the memfd (found in /proc/self/maps as /memfd:ubt, the
 * read-write mapping at offset 0): the control block's block counters and,
 * in every thread block handed out, the thread id, the lost-return-probe
 * and ring-drop counters, the ring head (first) and ubt's ring tail;
 * "extreme" writes values such as 2^63 - 2^31 * 1.x, "random" writes
 * random values there and random bytes over each ring (SEED, default 1).
 * Then calls scr_step(i) for i in N/2..N-1 and exits 0.  It prints
 * "scribble: corrupted K blocks" on stderr, or "scribble: no memfd" when
 * it runs untraced (and leaves everything alone).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_abi.h"
#include "memfd-map.h"
#include "target.h"

UBT_PROBE long scr_step(long i)
{
	UBT_FRAME();
	return i + 1;
}

static uint64_t seed = 1;

/* xorshift64: the same garbage for the same seed */
static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static void put64(char *p, uint64_t v)
{
	__atomic_store_n((uint64_t *)p, v, __ATOMIC_RELAXED);
}

static int scribble(bool random)
{
	static const uint64_t extreme[] = {
		9223372034707292160ull, UINT64_MAX, 1ull << 63,
		0x7fffffffffffffffull, 0xdeadbeefdeadbeefull,
	};
	char *base = find_memfd();
	struct rt_ctl *ctl = (struct rt_ctl *)base;
	uint64_t n, k = 0;

	if (!base) {
		fprintf(stderr, "scribble: no memfd\n");
		return 0;
	}
	n = ctl->next_block < ctl->nblocks ? ctl->next_block : ctl->nblocks;
	/* block 0 is this thread's: until ubt has read its ring */
	for (int t = 0; n && t < 60000; t++) {
		char *b = base + ctl->block_off;

		if (__atomic_load_n((uint64_t *)(b + RT_BLK_RING_TAIL),
				    __ATOMIC_ACQUIRE) ==
		    __atomic_load_n((uint64_t *)(b + RT_BLK_RING_HEAD),
				    __ATOMIC_ACQUIRE))
			break;
		usleep(1000);
	}
	for (uint64_t i = 0; i < n; i++, k++) {
		char *b = base + ctl->block_off + i * ctl->block_size;
		uint64_t v[5];

		for (int j = 0; j < 5; j++)
			v[j] = random ? rnd() : extreme[(i + j) % 5];
		/* the head first: ubt must not read the records after it */
		put64(b + RT_BLK_RING_HEAD, v[0] | (random ? 0 : 1));
		put64(b + RT_BLK_RING_DROPPED, v[1]);
		put64(b + RT_BLK_SHADOW_LOST, v[2]);
		put64(b + RT_BLK_RING_TAIL, v[3]);
		__atomic_store_n((uint32_t *)(b + RT_BLK_TID),
				 (uint32_t)(v[4] | 0x80000000u),
				 __ATOMIC_RELAXED);
		if (random) {
			char *ring = b + RT_BLK_MAP + ctl->map_size;

			for (uint64_t o = 0; o < ctl->ring_size; o += 8)
				put64(ring + o, rnd());
		}
	}
	put64((char *)&ctl->no_block, random ? rnd() : extreme[1]);
	put64((char *)&ctl->next_block, random ? rnd() : extreme[0]);
	fprintf(stderr, "scribble: corrupted %" PRIu64 " blocks\n", k);
	return 0;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 1000);
	bool random = argc > 2 && !strcmp(argv[2], "random");
	long bad = 0;

	if (argc > 3)
		seed = strtoull(argv[3], NULL, 0) ?: 1;
	for (long i = 0; i < n / 2; i++)
		bad |= scr_step(i) != i + 1;
	scribble(random);
	for (long i = n / 2; i < n; i++)
		bad |= scr_step(i) != i + 1;
	return target_result("scribble", bad);
}
