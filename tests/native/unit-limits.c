/*
 * Map key limits in user mode (issue 10 part 4): the runtime's tables
 * (libubt-rt.so loaded here with dlopen, as in a target) take at most
 * max_keys keys, keep updating the keys they hold, and count every
 * refused insert once; a shared table's deleted keys make room again
 * (a per-thread table's stay taken); ubt sums the per-thread counts and
 * does not believe one larger than its thread could have tried; the
 * code generator sizes the tables from the map's limit.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <linux/bpf.h>

#include "irb.h"
#include "irb_native.h"
#include "memfd.h"
#include "native.h"
#include "tests/tap.h"

static struct memfd m;
static void *(*htab_lookup)(struct rt_htab *, const void *);
static long (*shtab_update)(struct rt_shtab *, const void *, const void *);
static void *(*shtab_read)(struct rt_shtab *, const void *, void *);
static long (*shtab_delete)(struct rt_shtab *, const void *);

static struct rt_htab *block_htab(uint32_t i, const struct memfd_htab *t)
{
	return (struct rt_htab *)(m.base + m.block_off + i * m.block_size +
				  RT_BLK_MAP + t->off);
}

/* Blocks 0..n-1 handed out, each starting from the template. */
static void take_blocks(uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		memcpy(m.base + m.block_off + i * m.block_size + RT_BLK_MAP,
		       m.base + m.tmpl_off, m.ctl->tmpl_len);
	m.ctl->next_block = n;
}

/* Insert keys from..to-1 into h: how many were taken. */
static int insert(struct rt_htab *h, uint64_t from, uint64_t to)
{
	int n = 0;

	for (uint64_t k = from; k < to; k++) {
		uint64_t *v = htab_lookup(h, &k);

		if (v) {
			(*v)++;
			n++;
		}
	}
	return n;
}

static void test_htab(void)
{
	const struct memfd_htab lim = { .off = 0, .nslots = 16,
					.key_size = 8, .val_size = 8,
					.max_keys = 5 };
	const struct memfd_htab old = { .off = 1024, .nslots = 8,
					.key_size = 8, .val_size = 8 };
	struct rt_htab *h0, *h1, *o0;
	uint32_t bad = 9;
	uint64_t k = 2, *v;

	ok(!memfd_htab_add(&m, &lim) && !memfd_htab_add(&m, &old),
	   "tables with and without a key limit in the template");
	take_blocks(2);
	h0 = block_htab(0, &lim);
	h1 = block_htab(1, &lim);
	o0 = block_htab(0, &old);
	ok(h0->max_keys == 5 && h0->nslots == 16, "the header has the limit");
	ok(insert(h0, 0, 10) == 5 && h0->used == 5 && h0->dropped == 5,
	   "10 keys into a table of 16 slots held to 5: 5 taken, 5 dropped");
	v = htab_lookup(h0, &k);
	ok(v && *v == 1 && h0->dropped == 5,
	   "a key it holds is still found, at the limit, and no drop");
	ok(insert(h0, 10, 13) == 0 && h0->dropped == 8,
	   "each refused insert counted once");
	ok(insert(h1, 100, 103) == 3 && h1->dropped == 0,
	   "another thread's table has its own keys");
	ok(insert(o0, 0, 10) == 8 && o0->dropped == 2,
	   "without a limit: as many keys as slots");

	ok(memfd_htab_dropped(&m, &lim, 1000, &bad) == 8 && bad == 0,
	   "ubt sums the threads' drops");
	h1->dropped = 1001;
	ok(memfd_htab_dropped(&m, &lim, 1000, &bad) == 8 && bad == 1,
	   "a count above what a thread could try is left out and said");
	h1->dropped = UINT64_MAX;
	h0->dropped = 2;
	ok(memfd_htab_dropped(&m, &lim, UINT64_MAX, &bad) == 2 && bad == 1,
	   "a sum that would overflow is not believed either");
	m.ctl->next_block = 1000000;
	h1->dropped = 1;
	ok(memfd_htab_dropped(&m, &lim, 10, &bad) == 3 && bad == 0,
	   "the block count is ubt's own bound, not the target's");
	ok(memfd_htab_dropped(&m, &(struct memfd_htab){ .off = 4,
				.nslots = 16, .key_size = 8, .val_size = 8 },
			      10, &bad) == 0,
	   "a misplaced table reads as no drops");
	m.ctl->next_block = 2;
}

static void test_shtab(void)
{
	const struct memfd_shtab lim = { .off = 0, .nslots = 16,
					 .key_size = 8, .val_size = 8,
					 .max_probe = 16, .max_keys = 4 };
	struct rt_shtab *h = (struct rt_shtab *)(m.base + RT_SHARED_OFF);
	uint64_t k, v, out = 0;
	int taken = 0, full = 0;

	ok(!memfd_shtab_add(&m, &lim) && h->max_keys == 4 && !h->keys,
	   "a shared table held to 4 keys");
	for (k = 0; k < 10; k++) {
		long r = shtab_update(h, &k, &k);

		taken += r == 0;
		full += r == -ENOMEM;
	}
	ok(taken == 4 && full == 6 && h->used == 4 && h->keys == 4 &&
		   memfd_shtab_dropped(&m, &lim) == 6,
	   "10 keys: 4 taken, 6 refused and counted");
	k = 3;
	v = 42;
	ok(!shtab_update(h, &k, &v) && shtab_read(h, &k, &out) &&
		   out == 42 && memfd_shtab_dropped(&m, &lim) == 6,
	   "a key it holds is updated at the limit");
	k = 0;
	ok(!shtab_delete(h, &k) && h->keys == 3, "a delete gives a key back");
	k = 100;
	ok(!shtab_update(h, &k, &k) && h->keys == 4,
	   "so a new key is taken");
	k = 101;
	ok(shtab_update(h, &k, &k) == -ENOMEM && h->keys == 4,
	   "and the next one refused");
	k = 0;
	ok(shtab_update(h, &k, &k) == -ENOMEM &&
		   memfd_shtab_dropped(&m, &lim) == 8,
	   "a deleted key coming back is a key more: refused too");
	ok(!memfd_shtab_clear(&m, &lim) && h->keys == 0,
	   "ubt's clear() gives every key back");
	taken = full = 0;
	for (k = 200; k < 206; k++) {
		long r = shtab_update(h, &k, &k);

		taken += r == 0;
		full += r == -ENOMEM;
	}
	ok(taken == 4 && full == 2, "after clear(): 4 new keys, 2 refused");
	ok(!memfd_shtab_clear(&m, &lim), "clear again");
	/* the latency idiom: each key added, then deleted */
	full = 0;
	for (k = 1000; k < 3000; k++) {
		full += shtab_update(h, &k, &k) != 0;
		full += shtab_delete(h, &k) != 0;
	}
	ok(!full && h->keys == 0,
	   "2000 keys added and deleted one by one: none refused (%d)",
	   full);
}

/* The code generator's tables for a map's limit (codegen/native.h). */
static void test_sizes(void)
{
	static const struct {
		uint32_t max_entries, slots, keys;
	} want[] = {
		{ 1, 16, 1 },
		{ 10, 32, 10 },
		{ 4096, 8192, 4096 },
		{ 5000, 16384, 5000 },
		{ 4000000, NATIVE_HTAB_MAX_SLOTS, NATIVE_HTAB_MAX_SLOTS / 2 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct irb ir;
		const struct native_map *nm;
		uint64_t area;
		int n;

		irb_native_init(&ir, "t");
		irb_native_map_define(&ir, "AT_k", BPF_MAP_TYPE_PERCPU_HASH, 8,
				      8, want[i].max_entries);
		nm = irb_native_maps(&ir, &n, &area);
		ok(n == 1 && nm[0].kind == NATIVE_MAP_HTAB &&
			   nm[0].nslots == want[i].slots &&
			   nm[0].max_keys == want[i].keys,
		   "a map of %u keys: %u slots, %u keys (got %u, %u)",
		   want[i].max_entries, want[i].slots, want[i].keys,
		   n == 1 ? nm[0].nslots : 0, n == 1 ? nm[0].max_keys : 0);
		irb_release(&ir);
	}
}

int main(void)
{
	struct memfd_layout l = {
		.map_size = 4096, .ring_size = 256, .nblocks = 4,
		.shared_size = 4096,
	};
	long (*rt_init)(struct rt_ctl *);
	void *h = tap_runtime();

	if (!h)
		return 99;
	rt_init = (long (*)(struct rt_ctl *))dlsym(h, "rt_init");
	htab_lookup = (void *(*)(struct rt_htab *, const void *))dlsym(
		h, "rt_htab_lookup");
	ok(rt_init && htab_lookup && !memfd_create_local(&m, &l),
	   "runtime loaded, memfd created");
	if (tap_nfail)
		return 1;
	rt_init(m.ctl);
	shtab_update = (void *)(uintptr_t)m.ctl->fn[RT_FN_SHTAB_UPDATE];
	shtab_read = (void *)(uintptr_t)m.ctl->fn[RT_FN_SHTAB_READ];
	shtab_delete = (void *)(uintptr_t)m.ctl->fn[RT_FN_SHTAB_DELETE];
	test_htab();
	test_shtab();
	test_sizes();
	memfd_release(&m);
	return tap_done();
}
