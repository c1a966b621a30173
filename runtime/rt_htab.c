/*
 * Keyed aggregations in user mode: one open-addressing table per thread
 * in the thread's block (struct rt_htab), and iteration over all
 * threads' tables merged, for map loops in probe code.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdint.h>

#include "rt_abi.h"
#include "rt_int.h"

/*
 * The slot holding key in h (state 1 used, 2 deleted, 3 zeroed), or the
 * first empty slot after it (*empty set), or NULL when the table is full.
 */
static inline __attribute__((always_inline)) uint64_t *
rt_htab_slot(struct rt_htab *h, const void *key, int *empty)
{
	uint64_t ss = rt_htab_slot_size(h);
	uint64_t mask = h->nslots - 1, i, n, hash;
	char *slots = (char *)(h + 1);

	*empty = 0;
	if (h->key_size == 8) {
		/* one integer (tid, a pointer): the common key, one word;
		 * rt_hash() of it */
		uint64_t k = *(const rt_u64u *)key;

		hash = (1469598103934665603ULL ^ k) * 1099511628211ULL;
		hash ^= hash >> 29;
		for (n = 0, i = hash & mask; n <= mask;
		     n++, i = (i + 1) & mask) {
			uint64_t *slot = (uint64_t *)(slots + i * ss);

			if (!slot[0]) {
				*empty = 1;
				return slot;
			}
			if (slot[1] == k)
				return slot;
		}
		return NULL;
	}
	hash = rt_hash(key, h->key_size);
	for (n = 0, i = hash & mask; n <= mask; n++, i = (i + 1) & mask) {
		uint64_t *slot = (uint64_t *)(slots + i * ss);

		if (!slot[0]) {
			*empty = 1;
			return slot;
		}
		if (rt_key_eq((const uint8_t *)(slot + 1), key, h->key_size))
			return slot;
	}
	return NULL;
}

/*
 * Find or insert key; the value's address, or NULL when the table is full:
 * no free slot, or max_keys keys taken (the map's limit).  Every NULL is
 * one drop, counted.
 */
RT_EXPORT void *rt_htab_lookup(struct rt_htab *h, const void *key)
{
	uint64_t ks = rt_align8(h->key_size), w;
	int empty;
	uint64_t *slot = rt_htab_slot(h, key, &empty);

	if (!slot || (empty && h->max_keys && h->used >= h->max_keys)) {
		h->dropped++;
		return NULL;
	}
	if (empty) {
		for (w = 0; w < h->key_size; w++)
			((uint8_t *)(slot + 1))[w] = ((const uint8_t *)key)[w];
		__atomic_store_n(&slot[0], 1, __ATOMIC_RELEASE);
		h->used++;
	} else if (slot[0] != 1) {
		/* deleted: back with a zero value */
		uint64_t *v = (uint64_t *)((char *)(slot + 1) + ks);

		for (w = 0; w < rt_align8(h->val_size) / 8; w++)
			v[w] = 0;
		__atomic_store_n(&slot[0], 1, __ATOMIC_RELEASE);
	}
	return (char *)(slot + 1) + ks;
}

RT_EXPORT void *rt_htab_find(struct rt_htab *h, const void *key)
{
	int empty;
	uint64_t *slot = rt_htab_slot(h, key, &empty);

	/* plain maps (@m[tid]): never zeroed by ubt (RT_HTAB_ZEROED) */
	if (!slot || empty || slot[0] != RT_HTAB_USED)
		return NULL;
	return (char *)(slot + 1) + rt_align8(h->key_size);
}

RT_EXPORT long rt_htab_delete(struct rt_htab *h, const void *key)
{
	int empty;
	uint64_t *slot = rt_htab_slot(h, key, &empty);

	if (!slot || empty || slot[0] == RT_HTAB_DELETED)
		return -2;	/* -ENOENT */
	/* the slot stays taken, so that the keys after it stay reachable */
	__atomic_store_n(&slot[0], 2, __ATOMIC_RELEASE);
	return 0;
}

/* ---- iteration over an aggregation's per-thread tables ------------- */

#define RT_HTAB_MAX_KV 65536	/* key and value sizes iteration accepts */

/*
 * The calling thread's table h: its block, its offset in the map area,
 * and a header that fits there; NULL when anything is off (a forked
 * child, a corrupted header).
 */
static char *rt_htab_own(const struct rt_htab *h, uint64_t *map_off)
{
	const struct rt_ctl *ctl = rt_ctl_p;
	char *blk = rt_self;
	uintptr_t lo, at = (uintptr_t)h;
	uint64_t off;

	if (!ctl || !blk || ctl->map_size > ctl->block_size ||
	    ctl->block_size - ctl->map_size < RT_BLK_MAP)
		return NULL;
	lo = (uintptr_t)blk + RT_BLK_MAP;
	if (at < lo || at - lo > ctl->map_size ||
	    ctl->map_size - (at - lo) < sizeof(*h))
		return NULL;
	off = at - lo;
	if (h->sz != sizeof(*h) || !h->nslots ||
	    (h->nslots & (h->nslots - 1)) || h->key_size > RT_HTAB_MAX_KV ||
	    h->val_size > RT_HTAB_MAX_KV ||
	    (ctl->map_size - off - sizeof(*h)) / rt_htab_slot_size(h) <
		    h->nslots)
		return NULL;
	*map_off = off;
	return blk;
}

/*
 * Block b's copy of the table at map_off when its header is own's (an
 * initialised block: its size word set last, with release), else NULL.
 */
static struct rt_htab *rt_htab_other(const struct rt_htab *own,
				     uint64_t map_off, uint64_t b)
{
	const struct rt_ctl *ctl = rt_ctl_p;
	char *blk = rt_block_addr(ctl, b, 0);
	struct rt_htab *h;

	if (!blk || __atomic_load_n((uint32_t *)(blk + RT_BLK_SZ),
			    __ATOMIC_ACQUIRE) != RT_BLK_MAP)
		return NULL;
	h = (struct rt_htab *)(blk + RT_BLK_MAP + map_off);
	if (h->sz != own->sz || h->nslots != own->nslots ||
	    h->key_size != own->key_size || h->val_size != own->val_size)
		return NULL;
	return h;
}

/*
 * Does h (another thread's table, its header checked) hold key as used or
 * zeroed? Read only: states with acquire (the owner writes the key, then
 * the state with release; a key never changes once its slot is taken).
 */
static int rt_htab_has(const struct rt_htab *h, const void *key)
{
	uint64_t ss = rt_htab_slot_size(h), mask = h->nslots - 1, i, n;
	const char *slots = (const char *)(h + 1);

	i = rt_hash(key, h->key_size) & mask;
	for (n = 0; n < h->nslots; n++, i = (i + 1) & mask) {
		const uint64_t *slot = (const uint64_t *)(slots + i * ss);
		uint64_t st = __atomic_load_n(&slot[0], __ATOMIC_ACQUIRE);

		if (st == RT_HTAB_EMPTY)
			return 0;
		if (rt_key_eq((const uint8_t *)(slot + 1), key, h->key_size))
			return st == RT_HTAB_USED || st == RT_HTAB_ZEROED;
	}
	return 0;
}

/*
 * for and len() over an aggregation (RT_FN_HTAB_NEXT_ALL): the kernel
 * visits every key of a per-CPU map with the current CPU's value; here,
 * every key of the union of all threads' tables at h's offset (h is the
 * calling thread's), each once (a key also present in an earlier block is
 * left to that block), with the calling thread's value (zero where its
 * own slot is absent, deleted or zeroed).  Position: block * nslots +
 * slot; returns the next one + 1 after copying key and value, 0 at the
 * end.  Other threads' tables are only read; a key another thread inserts
 * or ubt deletes while a loop runs may or may not be seen (one deleted
 * from an earlier block after the loop passed it may be seen again in a
 * later one), and each position is visited once, so a loop ends after
 * blocks * nslots entries at most.
 */
RT_EXPORT uint64_t rt_htab_next_all(struct rt_htab *h, uint64_t from,
				    void *key, void *val)
{
	const struct rt_ctl *ctl = rt_ctl_p;
	uint64_t map_off, nb, b, i, ss, ks, nv, w;

	if (!rt_htab_own(h, &map_off))
		return 0;
	nb = __atomic_load_n(&ctl->next_block, __ATOMIC_ACQUIRE);
	if (nb > ctl->nblocks)
		nb = ctl->nblocks;
	if (ctl->block_off > ctl->total_size)
		return 0;
	if (nb > (ctl->total_size - ctl->block_off) / ctl->block_size)
		nb = (ctl->total_size - ctl->block_off) / ctl->block_size;
	ss = rt_htab_slot_size(h);
	ks = rt_align8(h->key_size);
	nv = rt_align8(h->val_size) / 8;
	for (b = from / h->nslots, i = from % h->nslots; b < nb; b++, i = 0) {
		struct rt_htab *o = rt_htab_other(h, map_off, b);
		const char *slots;

		/* a thread that never added a key: nothing to scan */
		if (!o || !__atomic_load_n(&o->used, __ATOMIC_RELAXED))
			continue;
		slots = (const char *)(o + 1);
		for (; i < h->nslots; i++) {
			const uint64_t *slot =
				(const uint64_t *)(slots + i * ss);
			uint64_t st = __atomic_load_n(&slot[0],
						      __ATOMIC_ACQUIRE), e;
			const uint64_t *mine;
			int empty;

			if (st != RT_HTAB_USED && st != RT_HTAB_ZEROED)
				continue;
			for (w = 0; w < ks / 8; w++)
				((rt_u64u *)key)[w] = slot[1 + w];
			for (e = 0; e < b; e++) {
				struct rt_htab *p = rt_htab_other(h, map_off,
								  e);

				if (p && rt_htab_has(p, key))
					break;
			}
			if (e < b)
				continue;
			/* this thread's value: it is the only writer */
			mine = rt_htab_slot(h, key, &empty);
			if (!mine || empty || mine[0] != RT_HTAB_USED)
				mine = NULL;
			else
				mine += 1 + ks / 8;
			for (w = 0; w < nv; w++)
				((rt_u64u *)val)[w] = mine ? mine[w] : 0;
			return b * h->nslots + i + 1;
		}
	}
	return 0;
}

