/*
 * Iteration over an aggregation's per-thread tables (rt_htab_next_all,
 * RT_FN_HTAB_NEXT_ALL: for and len() in user-mode probes), with the runtime
 * (libubt-rt.so) loaded here with dlopen as in a target: the union of
 * every thread's keys, each once, with the calling thread's values (zero
 * where its own slot is absent, deleted or zeroed); ubt's zero(), delete()
 * and clear() seen; other threads inserting, deleting and reviving keys
 * while a thread iterates (no duplicates, no stranger keys, loops end);
 * corrupted headers and block counts read back safely.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memfd.h"
#include "tests/tap.h"

enum { NBLOCKS = 16, WRITERS = 4, RING = 256, UNIVERSE = 1024 };

static struct memfd m;
static int64_t tls;
static int (*ring_write)(const void *, uint32_t, uint32_t);
static void *(*htab_lookup)(struct rt_htab *, const void *);
static long (*htab_delete)(struct rt_htab *, const void *);
static uint64_t (*next_all)(struct rt_htab *, uint64_t, void *, void *);

/* values as avg's: { count, total } */
static const struct memfd_htab tab = {
	.off = 64, .nslots = 256, .key_size = 8, .val_size = 16,
};

/* This thread's block (taken with a first ring write) and table. */
static struct rt_htab *my_table(void)
{
	uintptr_t fs0;
	char *blk;
	uint64_t e = 0;

	ring_write(&e, sizeof(e), 1);
	__asm__("mov %%fs:0, %0" : "=r"(fs0));
	blk = *(char **)(fs0 + (uintptr_t)tls);
	return blk ? (struct rt_htab *)(blk + RT_BLK_MAP + tab.off) : NULL;
}

static void put(struct rt_htab *h, uint64_t key, uint64_t count)
{
	uint64_t *v = htab_lookup(h, &key);

	if (v) {
		v[0] += count;
		v[1] += key * count;
	}
}

struct walk {
	int n;			/* keys visited */
	int dup, stranger;	/* visited twice, outside the universe */
	int nonzero;		/* visits with a value other than zero */
	int wrong;		/* values that are not { count, key * count } */
	uint64_t count_sum;
	unsigned char seen[UNIVERSE];
};

/* One for loop over the table, from the calling thread. */
static void walk(struct rt_htab *h, struct walk *w)
{
	uint64_t from = 0, key, val[2];
	int guard = 0;

	memset(w, 0, sizeof(*w));
	while ((from = next_all(h, from, &key, val)) &&
	       guard++ < NBLOCKS * 256 + 1) {
		w->n++;
		if (key >= UNIVERSE) {
			w->stranger++;
			continue;
		}
		w->dup += w->seen[key]++ != 0;
		if (val[0] || val[1]) {
			w->nonzero++;
			w->count_sum += val[0];
			w->wrong += val[1] != key * val[0];
		}
	}
	if (guard > NBLOCKS * 256)
		w->n = -1;	/* never ended */
}

/* Writer t: its own keys 100 * (t + 1) + 0..9, and the shared keys 0..9. */
static void *fill_main(void *arg)
{
	uint64_t t = (uintptr_t)arg, i;
	struct rt_htab *h = my_table();

	if (!h)
		return (void *)1;
	for (i = 0; i < 10; i++) {
		put(h, 100 * (t + 1) + i, t + 1);
		put(h, i, t + 1);
	}
	return NULL;
}

static void test_static(void)
{
	pthread_t th[WRITERS];
	struct rt_htab *h;
	struct walk w;
	long bad = 0;
	uint64_t k, i;

	/* before any thread takes a block: blocks start from the template */
	ok(!memfd_htab_add(&m, &tab), "a keyed table in the block template");
	h = my_table();
	ok(h != NULL, "the iterating thread has a block");
	if (!h)
		return;
	walk(h, &w);
	ok(w.n == 0, "no keys anywhere: nothing visited");
	for (i = 0; i < WRITERS; i++)
		pthread_create(&th[i], NULL, fill_main, (void *)(uintptr_t)i);
	for (i = 0; i < WRITERS; i++) {
		void *r;

		pthread_join(th[i], &r);
		bad += r != NULL;
	}
	ok(!bad, "%d writers filled their tables", WRITERS);
	walk(h, &w);
	ok(w.n == 10 * WRITERS + 10 && !w.dup && !w.stranger,
	   "union of %d tables: %d keys, each once (%d duplicates)", WRITERS,
	   w.n, w.dup);
	ok(w.nonzero == 0, "the caller's values: zero where it has no key");
	for (k = 0; k < 5; k++)
		put(h, k, 7);
	put(h, 900, 2);
	walk(h, &w);
	ok(w.n == 10 * WRITERS + 11 && w.nonzero == 6 && !w.wrong &&
		   w.count_sum == 5 * 7 + 2,
	   "the caller's own values, its own key too (%d keys, %d values)",
	   w.n, w.nonzero);
	ok(!memfd_htab_zero(&m, &tab), "ubt zeroes every table");
	walk(h, &w);
	ok(w.n == 10 * WRITERS + 11 && w.nonzero == 0 && !w.dup,
	   "zeroed: every key kept, each once, with a zero value");
	put(h, 3, 1);
	walk(h, &w);
	ok(w.n == 10 * WRITERS + 11 && w.nonzero == 1 && w.count_sum == 1,
	   "a zeroed key the caller revives has its new value");
	k = 0;
	ok(!memfd_htab_delete(&m, &tab, &k), "ubt deletes key 0 everywhere");
	k = 900;
	ok(!htab_delete(h, &k), "the caller deletes its own key 900");
	k = 101;
	ok(htab_delete(h, &k) == -2,
	   "the caller cannot delete another thread's key 101");
	walk(h, &w);
	ok(w.n == 10 * WRITERS + 9 && !w.seen[0] && !w.seen[900] &&
		   w.seen[101] && w.seen[3],
	   "deleted keys are gone, the others stay (%d keys)", w.n);
	ok(!memfd_htab_clear(&m, &tab), "ubt clears every table");
	walk(h, &w);
	ok(w.n == 0, "cleared: nothing visited");
}

static int stop, started;

/* Writers again, keys in and out while another thread iterates. */
static void *churn_main(void *arg)
{
	uint64_t t = (uintptr_t)arg, i, r;
	struct rt_htab *h = my_table();

	if (!h)
		return (void *)1;
	__atomic_fetch_add(&started, 1, __ATOMIC_RELEASE);
	for (r = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); r++) {
		i = r % 40;
		put(h, 100 * (t + 1) + i, 1);
		put(h, i, 1);
		if (r % 3 == 0) {
			uint64_t k = 100 * (t + 1) + (r * 7) % 40;

			htab_delete(h, &k);
		}
	}
	return (void *)(uintptr_t)(r + 2);
}

static void test_concurrent(void)
{
	pthread_t th[WRITERS];
	struct rt_htab *h = my_table();
	struct walk w;
	int loops = 0, dup = 0, stranger = 0, endless = 0, wrong = 0, i;
	uint64_t rounds = 0, most = 0;

	for (i = 0; i < WRITERS; i++)
		pthread_create(&th[i], NULL, churn_main,
			       (void *)(uintptr_t)i);
	while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < WRITERS)
		sched_yield();
	for (loops = 0; loops < 5000; loops++) {
		walk(h, &w);
		dup += w.dup;
		stranger += w.stranger;
		endless += w.n < 0;
		wrong += w.wrong;
		if (loops % 500 == 250) {
			memfd_htab_zero(&m, &tab);
			memfd_htab_clear(&m, &tab);
		}
		if (!(loops % 16))
			put(h, loops % 40, 1);
		if (w.n > (int)most)
			most = w.n;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < WRITERS; i++) {
		void *r;

		pthread_join(th[i], &r);
		rounds += (uintptr_t)r > 1 ? (uintptr_t)r - 2 : 0;
	}
	ok(rounds > 0 && most > 40, "%d writers made %llu updates meanwhile, "
	   "a loop saw up to %llu keys", WRITERS,
	   (unsigned long long)rounds, (unsigned long long)most);
	ok(!stranger && !endless && !wrong,
	   "%d loops while %d threads insert and delete: whole keys, the "
	   "caller's values, every loop ends", loops, WRITERS);
	ok(!dup, "no key visited twice in a loop (%d; keys of several "
	   "blocks are never deleted here)", dup);
	walk(h, &w);
	ok(w.n > 0 && w.n <= 40 + 40 * WRITERS && !w.dup,
	   "afterwards: %d keys, each once", w.n);
}

static void test_untrusted(void)
{
	struct rt_htab *h = my_table(), *o;
	struct walk w, before;
	uint64_t nb = m.ctl->next_block, key = 1, val[2];
	uint32_t ns, i;

	/* key 500 + i in block i */
	memfd_htab_clear(&m, &tab);
	for (i = 0; i < NBLOCKS && i < nb; i++) {
		o = (struct rt_htab *)(m.base + m.block_off +
				       i * m.block_size + RT_BLK_MAP +
				       tab.off);
		put(o, 500 + i, 1);
	}
	walk(h, &before);
	ok(before.n == (int)nb && before.nonzero == 1,
	   "one key in each of %d blocks: %d keys, one of them the "
	   "caller's", (int)nb, before.n);
	/* another thread's header changed: its block is skipped */
	o = (struct rt_htab *)(m.base + m.block_off + 2 * m.block_size +
			       RT_BLK_MAP + tab.off);
	ns = o->nslots;
	o->nslots = 1u << 30;
	walk(h, &w);
	ok(w.n == before.n - 1 && !w.seen[502],
	   "a block with a corrupted header is skipped (%d of %d keys)", w.n,
	   before.n);
	o->nslots = ns;
	m.ctl->next_block = 1ull << 40;
	walk(h, &w);
	ok(w.n == before.n, "a huge block count is clamped");
	m.ctl->next_block = nb;
	ns = h->nslots;
	h->nslots = 1u << 20;
	ok(!next_all(h, 0, &key, val), "own header too big for the map "
					"area: nothing visited");
	h->nslots = 6;
	ok(!next_all(h, 0, &key, val), "own header not a power of two: "
					"nothing visited");
	h->nslots = ns;
	ok(!next_all((struct rt_htab *)(m.base + m.block_off + RT_BLK_MAP +
					m.l.map_size - 8),
		     0, &key, val) &&
		   !next_all((struct rt_htab *)val, 0, &key, val),
	   "a table outside the caller's map area: nothing visited");
	ok(!next_all(h, (uint64_t)NBLOCKS * tab.nslots, &key, val) &&
		   !next_all(h, UINT64_MAX, &key, val),
	   "a position past the last block: the end");
}

int main(void)
{
	struct memfd_layout l = {
		.map_size = 16384, .ring_size = RING, .nblocks = NBLOCKS,
	};
	long (*rt_init)(struct rt_ctl *);
	void *h;

	h = tap_runtime();
	if (!h)
		return 99;
	rt_init = (long (*)(struct rt_ctl *))dlsym(h, "rt_init");
	ring_write = (int (*)(const void *, uint32_t, uint32_t))dlsym(
		h, "rt_ring_write");
	htab_lookup = (void *(*)(struct rt_htab *, const void *))dlsym(
		h, "rt_htab_lookup");
	htab_delete = (long (*)(struct rt_htab *, const void *))dlsym(
		h, "rt_htab_delete");
	ok(rt_init && ring_write && htab_lookup && htab_delete,
	   "runtime exports");
	ok(!memfd_create_local(&m, &l), "memfd with %d blocks", NBLOCKS);
	if (tap_nfail)
		return 1;
	tls = rt_init(m.ctl);
	next_all = (uint64_t (*)(struct rt_htab *, uint64_t, void *,
				 void *))(uintptr_t)
			   m.ctl->fn[RT_FN_HTAB_NEXT_ALL];
	ok(tls < 0 && next_all &&
		   (void *)(uintptr_t)m.ctl->fn[RT_FN_HTAB_NEXT_ALL] ==
			   dlsym(h, "rt_htab_next_all"),
	   "rt_init publishes rt_htab_next_all");
	if (tap_nfail)
		return 1;
	test_static();
	test_concurrent();
	test_untrusted();
	memfd_release(&m);
	return tap_done();
}
