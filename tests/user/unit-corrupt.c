/*
 * ubt's reading of the shared memfd against a target that scribbles over
 * it (shim/user/memfd.c).  Threads fill a memfd through the runtime (loaded
 * here with dlopen, as in a target): events into their rings (some
 * dropped), keys into their tables and the shared table.  Then one field
 * ubt reads back is overwritten, before or after ubt first read it: the
 * control block's block counters; a thread block's id, counters, ring
 * head, ubt's ring tail, a ring record; a table slot's state; a shared
 * table's drop counter; with extreme values (9223372034707292160, 2^64-1,
 * a counter gone down...) and random ones.  Every number ubt reads back
 * afterwards must be no more than what was really counted, every event it
 * hands out one a thread really sent, in order, and the corruption said
 * once; a plausible change is taken; fields ubt keeps its own copy of
 * (its ring tail) change nothing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memfd.h"
#include "tests/tap.h"

enum {
	NB = 4,		/* blocks */
	NTH = 3,	/* threads that record: block NB-1 stays free */
	NEV = 10,	/* events per thread: 8 fit in the ring */
	FIT = 8,
	RING = 256,
	NKEYS = 10,
};

static long (*rt_init)(struct rt_ctl *);
static int (*ring_write)(const void *, uint32_t, uint32_t);
static void *(*htab_lookup)(struct rt_htab *, const void *);
static long (*shtab_update)(struct rt_shtab *, const void *, const void *);

static const struct memfd_htab tab = {
	.off = 64, .nslots = 16, .key_size = 8, .val_size = 8,
};
static const struct memfd_shtab stab = {
	.off = 0, .nslots = 16, .key_size = 8, .val_size = 8, .max_probe = 16,
};

static struct memfd m;
static const char *warning = "the process corrupted ubt's shared memory";

struct rec {
	uint64_t thread, seq, pad;
};

static char *blk(uint32_t i)
{
	return m.base + m.block_off + (uint64_t)i * m.block_size;
}

static void *thread_main(void *arg)
{
	uint64_t t = (uintptr_t)arg, k, one;
	char *b;

	for (uint64_t i = 0; i < NEV; i++) {
		struct rec e = { .thread = t, .seq = i };

		ring_write(&e, sizeof(e), 1);
	}
	/* this thread's block: the one whose tid is ours */
	for (b = NULL, k = 0; k < NB && !b; k++)
		if (*(uint32_t *)(blk(k) + RT_BLK_TID) == (uint32_t)gettid())
			b = blk(k);
	if (!b)
		return NULL;
	for (k = 0; k < NKEYS; k++) {
		uint64_t *v = htab_lookup(
			(struct rt_htab *)(b + RT_BLK_MAP + tab.off), &k);

		if (v)
			*v = k + 1;
	}
	one = t + 100;
	shtab_update((struct rt_shtab *)(m.base + RT_SHARED_OFF + stab.off),
		     &t, &one);
	return NULL;
}

/* A new memfd, the runtime pointed at it, NTH threads run. */
static int fill(void)
{
	struct memfd_layout l = {
		.map_size = 4096, .ring_size = RING, .nblocks = NB,
		.shared_size = rt_align8(memfd_shtab_bytes(16, 8, 8)),
	};
	pthread_t th[NTH];

	if (memfd_create_local(&m, &l) || memfd_htab_add(&m, &tab) ||
	    memfd_shtab_add(&m, &stab) || rt_init(m.ctl) != m.ctl->tls_offset)
		return -1;
	/* one at a time: thread t has block t */
	for (uintptr_t t = 0; t < NTH; t++) {
		pthread_create(&th[t], NULL, thread_main, (void *)t);
		pthread_join(th[t], NULL);
	}
	return 0;
}

/* What ubt read back, over a few rounds of reading everything. */
struct got {
	uint32_t used;
	uint64_t no_block, dropped, shadow_lost, shdropped;
	int events[NTH];	/* per thread, in order */
	uint64_t last[NTH];	/* the last seq of each */
	int bad_events;
	int keys, bad_keys, shkeys, bad_shkeys;
	uint32_t tids[NB];
};

static int on_event(uint32_t type, const void *data, uint32_t len, void *arg)
{
	struct got *g = arg;
	struct rec e;

	/* as shim/run/run.c: a record of another type is not an event */
	if (type != 1)
		return 0;
	memcpy(&e, data, len < sizeof(e) ? len : sizeof(e));
	/* a thread's events in the order it sent them, none twice (one
	 * whose type was overwritten is skipped) */
	if (len != sizeof(e) || e.thread >= NTH || e.seq >= FIT || e.pad ||
	    (g->events[e.thread] && e.seq <= g->last[e.thread]))
		g->bad_events++;
	else {
		g->events[e.thread]++;
		g->last[e.thread] = e.seq;
	}
	return 0;
}

static int on_key(const void *key, const void *val, uint32_t block,
		  void *arg)
{
	struct got *g = arg;
	uint64_t k, v;

	memcpy(&k, key, 8);
	memcpy(&v, val, 8);
	if (k < NKEYS && v == k + 1 && block < NTH)
		g->keys++;
	else
		g->bad_keys++;
	return 0;
}

static int on_shkey(const void *key, const void *val, void *arg)
{
	struct got *g = arg;
	uint64_t k, v;

	memcpy(&k, key, 8);
	memcpy(&v, val, 8);
	if (k < NTH && v == k + 100)
		g->shkeys++;
	else
		g->bad_shkeys++;
	return 0;
}

static void read_all(struct got *g)
{
	for (int round = 0; round < 3; round++) {
		uint32_t n = memfd_nblocks_used(&m);

		g->used = n;
		for (uint32_t i = 0; i < n; i++) {
			memfd_ring_consume(&m, i, on_event, g);
			g->tids[i] = memfd_block_tid(&m, i);
		}
		g->no_block = memfd_no_block(&m);
		g->dropped = memfd_ring_dropped(&m);
		g->shadow_lost = memfd_shadow_lost(&m);
		g->shdropped = memfd_shtab_dropped(&m, &stab);
		g->keys = g->bad_keys = g->shkeys = g->bad_shkeys = 0;
		memfd_htab_foreach(&m, &tab, on_key, g);
		memfd_shtab_foreach(&m, &stab, on_shkey, g);
	}
}

/* stderr into a file while a case runs: the warnings counted */
static FILE *err_file;
static int err_saved = -1;

static void stderr_begin(void)
{
	fflush(stderr);
	err_file = tmpfile();
	err_saved = dup(2);
	if (!err_file || err_saved < 0 || dup2(fileno(err_file), 2) < 0) {
		printf("Bail out! cannot redirect stderr\n");
		exit(99);
	}
}

static int stderr_end(char *last, size_t len)
{
	char line[1024];
	int n = 0;

	fflush(stderr);
	dup2(err_saved, 2);
	close(err_saved);
	rewind(err_file);
	*last = 0;
	while (fgets(line, sizeof(line), err_file))
		if (strstr(line, warning)) {
			n++;
			line[strcspn(line, "\n")] = 0;
			snprintf(last, len, "%s", line);
		}
	fclose(err_file);
	return n;
}

/* The fields ubt reads back. */
enum field {
	F_NEXT_BLOCK, F_NO_BLOCK,	/* the control block */
	F_TID, F_SHADOW_LOST, F_HEAD, F_DROPPED,	/* block 1 */
	F_TAIL, F_TAIL_SEEN,	/* ubt's tail, the producer's copy */
	F_REC_LEN, F_REC_TYPE,	/* block 1's first unread record */
	F_SLOT,			/* block 1's table: a slot's state */
	F_SHSLOT, F_SHDROPPED,	/* the shared table */
	F_N
};
static const char *const field_name[F_N] = {
	"blocks handed out", "threads without a block", "a thread id",
	"return probes not wrapped", "ring head", "ring drops",
	"ubt's ring tail", "the producer's tail", "a record's length",
	"a record's type", "a table slot's state", "a shared slot's state",
	"a shared table's drops",
};

/* Where field f lives, and its width in bytes. */
static char *field_at(enum field f, int *width)
{
	char *b = blk(1), *shslots = m.base + RT_SHARED_OFF + stab.off +
				      sizeof(struct rt_shtab);
	uint64_t tail = *(uint64_t *)(b + RT_BLK_RING_TAIL);

	*width = 8;
	switch (f) {
	case F_NEXT_BLOCK:
		return (char *)&m.ctl->next_block;
	case F_NO_BLOCK:
		return (char *)&m.ctl->no_block;
	case F_TID:
		*width = 4;
		return b + RT_BLK_TID;
	case F_SHADOW_LOST:
		return b + RT_BLK_SHADOW_LOST;
	case F_HEAD:
		return b + RT_BLK_RING_HEAD;
	case F_DROPPED:
		return b + RT_BLK_RING_DROPPED;
	case F_TAIL:
		return b + RT_BLK_RING_TAIL;
	case F_TAIL_SEEN:
		return b + RT_BLK_RING_TAIL_SEEN;
	case F_REC_LEN:
	case F_REC_TYPE:
		*width = 4;
		return b + RT_BLK_MAP + m.l.map_size + (tail & (RING - 1)) +
		       (f == F_REC_TYPE ? 4 : 0);
	case F_SLOT:
		/* a used one: the table has 10 of 16 */
		for (uint32_t s = 0; s < tab.nslots; s++) {
			char *slot = b + RT_BLK_MAP + tab.off +
				     sizeof(struct rt_htab) + s * 24;

			if (*(uint64_t *)slot == RT_HTAB_USED)
				return slot;
		}
		return NULL;
	case F_SHSLOT:
		*width = 4;
		for (uint32_t s = 0; s < stab.nslots; s++)
			if (*(uint32_t *)(shslots + s * 24) == RT_SHTAB_USED)
				return shslots + s * 24;
		return NULL;
	case F_SHDROPPED:
		return m.base + RT_SHARED_OFF + stab.off +
		       offsetof(struct rt_shtab, dropped);
	default:
		return NULL;
	}
}

/*
 * One case: fill, read first or not, write v into field f, read.  What
 * comes back must be at most the truth (and exactly it for what ubt had
 * read before); said: the warnings seen.  Returns 0 when it holds.
 */
static int one_case(enum field f, uint64_t v, bool read_first, int *said,
		    char *why, size_t len)
{
	struct got g0 = { 0 }, g = { 0 };
	char last[1024];
	int width, total = 0, bad = 0;
	char *at;

	if (fill()) {
		snprintf(why, len, "cannot fill the memfd");
		return -1;
	}
	stderr_begin();
	if (read_first)
		read_all(&g0);
	at = field_at(f, &width);
	if (width == 8)
		__atomic_store_n((uint64_t *)at, v, __ATOMIC_RELAXED);
	else
		__atomic_store_n((uint32_t *)at, (uint32_t)v,
				 __ATOMIC_RELAXED);
	memcpy(g.events, g0.events, sizeof(g.events));
	memcpy(g.last, g0.last, sizeof(g.last));
	read_all(&g);
	*said = stderr_end(last, sizeof(last));
	for (int t = 0; t < NTH; t++)
		total += g.events[t];
	/* what really was: 3 blocks, 8 events and 2 drops each, ... */
	if (g.used > NTH || g.no_block || g.dropped > NTH * (NEV - FIT) ||
	    g.shadow_lost || g.shdropped || g.bad_events || total > NTH * FIT ||
	    g.bad_keys || g.keys > NTH * NKEYS || g.bad_shkeys ||
	    g.shkeys > NTH)
		bad = 1;
	for (uint32_t i = 0; i < NB; i++)
		if (g.tids[i] > (4u << 20))
			bad = 1;
	/* what ubt had read before stays */
	if (read_first && (g.used != NTH || g.dropped != g0.dropped))
		bad = 1;
	snprintf(why, len,
		 "blocks %" PRIu32 ", no block %" PRIu64 ", drops %" PRIu64
		 ", shadow %" PRIu64 ", shared drops %" PRIu64
		 ", events %d (%d bad), keys %d (%d bad), shared keys %d "
		 "(%d bad); %d warnings%s%s",
		 g.used, g.no_block, g.dropped, g.shadow_lost, g.shdropped,
		 total, g.bad_events, g.keys, g.bad_keys, g.shkeys,
		 g.bad_shkeys, *said, *last ? ": " : "", last);
	memfd_release(&m);
	return bad || *said > 1 ? -1 : 0;
}

/* Values that can never be right for field f (in u64 terms). */
static void test_extremes(void)
{
	static const uint64_t vals[] = {
		9223372034707292160ull, UINT64_MAX, 1ull << 63,
		0x7fffffffffffffffull, 0x8000000000000001ull,
	};
	char why[2048];
	int said;

	for (int f = 0; f < F_N; f++) {
		bool harmless = f == F_TAIL || f == F_TAIL_SEEN;

		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
			for (int rf = 0; rf < 2; rf++) {
				uint64_t v = vals[i];
				int err;

				/* a u32 field: a value no runtime writes */
				if (f == F_TID || f == F_SHSLOT)
					v = (v >> 32) | 0x80000000u;
				if (f == F_REC_LEN || f == F_REC_TYPE)
					v = v >> 32;
				err = one_case(f, v, rf, &said, why,
					       sizeof(why));
				/*
				 * said once; not at all where ubt does not
				 * read the field; a record's type only
				 * matters (bad type: the event is refused)
				 * when the record is still unread
				 */
				if (harmless)
					err |= said != 0;
				else if (f == F_REC_TYPE || f == F_REC_LEN)
					err |= said > 1 || (!rf && said != 1 &&
							   f == F_REC_LEN);
				else
					err |= said != 1;
				ok(!err, "%s = %#" PRIx64 " (%s): %s",
				   field_name[f], v,
				   rf ? "after a first read" :
					"before any read",
				   why);
			}
	}
}

/* A counter gone down: corruption, the last value kept. */
static void test_down(void)
{
	static const enum field fs[] = { F_NEXT_BLOCK, F_DROPPED };
	char why[2048];
	int said;

	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++) {
		int err = one_case(fs[i], 1, true, &said, why, sizeof(why));

		ok(!err && said == 1, "%s gone down to 1: %s",
		   field_name[fs[i]], why);
	}
}

/* A plausible change is taken, without a warning. */
static void test_plausible(void)
{
	struct got g0 = { 0 }, g = { 0 };
	char last[1024];
	int said;

	if (fill())
		return;
	stderr_begin();
	read_all(&g0);
	*(uint64_t *)(blk(1) + RT_BLK_RING_DROPPED) += 3;
	*(uint64_t *)(blk(1) + RT_BLK_SHADOW_LOST) += 2;
	read_all(&g);
	said = stderr_end(last, sizeof(last));
	ok(!said && g.dropped == g0.dropped + 3 && g.shadow_lost == 2 &&
		   !memfd_corrupted(&m),
	   "counters that grew a little are taken: drops %" PRIu64
	   " (was %" PRIu64 "), shadow %" PRIu64 ", %d warnings",
	   g.dropped, g0.dropped, g.shadow_lost, said);
	ok(g0.dropped == NTH * (NEV - FIT) && g0.used == NTH &&
		   g0.events[0] == FIT && g0.events[2] == FIT &&
		   g0.keys == NTH * NKEYS && g0.shkeys == NTH,
	   "untouched, everything reads back exactly");
	memfd_release(&m);
}

/* ubt's own tail: the one in the memfd changes nothing. */
static void test_own_tail(void)
{
	struct got g = { 0 };
	char last[1024];
	int said, total = 0;

	if (fill())
		return;
	stderr_begin();
	*(uint64_t *)(blk(0) + RT_BLK_RING_TAIL) = 9223372034707292160ull;
	*(uint64_t *)(blk(1) + RT_BLK_RING_TAIL) = 5 * 32;
	*(uint64_t *)(blk(2) + RT_BLK_RING_TAIL) = 0;
	read_all(&g);
	said = stderr_end(last, sizeof(last));
	for (int t = 0; t < NTH; t++)
		total += g.events[t];
	ok(!said && total == NTH * FIT && !g.bad_events,
	   "ring tails written by the target: every event once, in order "
	   "(%d, %d bad), %d warnings", total, g.bad_events, said);
	memfd_release(&m);
}

/* Random values and random fields, both orders: the bounds hold. */
static void test_random(void)
{
	uint64_t seed = 0x5eed;
	char why[2048];
	int fails = 0, warned = 0, said, runs = 300;

	for (int i = 0; i < runs; i++) {
		enum field f;
		uint64_t v;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		f = (enum field)(seed % F_N);
		v = seed * 0x9e3779b97f4a7c15ull;
		if (one_case(f, v, (seed >> 8) & 1, &said, why,
			     sizeof(why))) {
			if (!fails++)
				diag("%s = %#" PRIx64 ": %s", field_name[f],
				     v, why);
		}
		warned += said;
	}
	ok(!fails, "%d random corruptions: numbers within bounds, at most "
	   "one warning each (%d failed, %d warnings)", runs, fails, warned);
}

int main(void)
{
	void *h = tap_runtime();

	if (!h)
		return 99;
	rt_init = (long (*)(struct rt_ctl *))dlsym(h, "rt_init");
	ring_write = (int (*)(const void *, uint32_t, uint32_t))dlsym(
		h, "rt_ring_write");
	htab_lookup = (void *(*)(struct rt_htab *, const void *))dlsym(
		h, "rt_htab_lookup");
	shtab_update = (long (*)(struct rt_shtab *, const void *,
				 const void *))dlsym(h, "rt_shtab_update");
	if (!rt_init || !ring_write || !htab_lookup || !shtab_update) {
		printf("Bail out! runtime symbols missing\n");
		return 99;
	}
	test_plausible();
	test_own_tail();
	test_extremes();
	test_down();
	test_random();
	return tap_done();
}
