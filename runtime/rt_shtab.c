/*
 * Ordinary maps in user mode: lock-free tables shared by all threads of
 * the target (struct rt_shtab), read, updated, deleted and iterated by
 * probe code through the helpers exported here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdint.h>

#include "rt_abi.h"
#include "rt_int.h"

/* ---- tables shared by all threads (struct rt_shtab) ------------------ */

#define RT_SPIN 1024		/* bounded waits: never block the target */
#define RT_ATTEMPTS 8		/* claims lost to other inserters */

/*
 * A sane header, the whole table inside the shared area, and not a forked
 * child (which shares the memfd with its parent).
 */
static int rt_shtab_ok(const struct rt_shtab *h)
{
	const struct rt_ctl *ctl = rt_ctl_p;
	uintptr_t lo, hi, at = (uintptr_t)h;

	/* a forked child must not write into its parent's maps */
	if (!ctl || !h->nslots ||
	    (h->nslots & (h->nslots - 1)) || !h->max_probe ||
	    h->max_probe > h->nslots || h->key_size > 4096 ||
	    h->val_size > 4096)
		return 0;
	lo = (uintptr_t)ctl + RT_SHARED_OFF;
	hi = lo + ctl->shared_size;
	return at >= lo && at < hi && hi - at >= sizeof(*h) &&
	       (hi - at - sizeof(*h)) / rt_shtab_slot_size(h) >= h->nslots;
}

/* A slot's state once it is not BUSY, or BUSY after RT_SPIN waits. */
static uint32_t rt_shtab_state(uint32_t *st)
{
	uint32_t s = RT_SHTAB_BUSY;
	int n;

	for (n = 0; n < RT_SPIN; n++) {
		s = __atomic_load_n(st, __ATOMIC_ACQUIRE);
		if (s != RT_SHTAB_BUSY)
			break;
		rt_pause();
	}
	return s;
}

static uint64_t *rt_shtab_at(struct rt_shtab *h, uint64_t i)
{
	return (uint64_t *)((char *)(h + 1) + i * rt_shtab_slot_size(h));
}

static uint64_t *rt_shtab_val(struct rt_shtab *h, uint64_t *slot)
{
	return (uint64_t *)((char *)(slot + 1) + rt_align8(h->key_size));
}

/*
 * Take a slot's value for writing: seq from even to odd.  0 when another
 * writer holds it (after waiting for it RT_SPIN times when wait is set).
 */
static uint32_t rt_shtab_seq_take(uint32_t *seq, int wait, uint32_t *was)
{
	int n;

	for (n = 0; n < RT_SPIN; n++) {
		uint32_t s = __atomic_load_n(seq, __ATOMIC_RELAXED);

		if (!(s & 1) &&
		    __atomic_compare_exchange_n(seq, &s, s + 1, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			*was = s;
			__atomic_thread_fence(__ATOMIC_RELEASE);
			return 1;
		}
		if (!wait)
			break;
		rt_pause();
	}
	return 0;
}

static void rt_shtab_put(struct rt_shtab *h, uint64_t *slot, const void *val)
{
	uint64_t *v = rt_shtab_val(h, slot), w, n = rt_align8(h->val_size) / 8;

	for (w = 0; w < n; w++)
		__atomic_store_n(&v[w], ((const uint64_t *)val)[w],
				 __ATOMIC_RELAXED);
}

/* Fill a slot this thread claimed (BUSY): key (if any), then the value. */
static void rt_shtab_fill(struct rt_shtab *h, uint64_t *slot,
			  const void *key, const void *val)
{
	uint32_t *seq = (uint32_t *)slot + 1, s;
	uint64_t w;

	if (key)
		for (w = 0; w < h->key_size; w++)
			((uint8_t *)(slot + 1))[w] = ((const uint8_t *)key)[w];
	/* a writer of the slot's previous key may still be finishing */
	if (!rt_shtab_seq_take(seq, 1, &s)) {
		s = __atomic_load_n(seq, __ATOMIC_RELAXED) | 1;
		__atomic_store_n(seq, s, __ATOMIC_RELAXED);
		s--;
	}
	rt_shtab_put(h, slot, val);
	__atomic_store_n(seq, s + 2, __ATOMIC_RELEASE);
}

/* The USED or DEAD slot holding key, or NULL. */
static uint64_t *rt_shtab_find(struct rt_shtab *h, const void *key)
{
	uint64_t mask = h->nslots - 1, i = rt_hash(key, h->key_size) & mask;
	uint32_t n, st;

	for (n = 0; n < h->max_probe; n++, i = (i + 1) & mask) {
		uint64_t *slot = rt_shtab_at(h, i);

		st = rt_shtab_state((uint32_t *)slot);
		if (st == RT_SHTAB_EMPTY)
			return NULL;
		if (st != RT_SHTAB_BUSY &&
		    rt_key_eq((const uint8_t *)(slot + 1), key, h->key_size))
			return slot;
	}
	return NULL;
}

RT_EXPORT void *rt_shtab_read(struct rt_shtab *h, const void *key, void *dst)
{
	uint64_t *slot, *v, w, n;
	uint32_t *seq, s1, s2;
	int tries;

	if (!rt_shtab_ok(h))
		return NULL;
	slot = rt_shtab_find(h, key);
	if (!slot)
		return NULL;
	seq = (uint32_t *)slot + 1;
	v = rt_shtab_val(h, slot);
	n = rt_align8(h->val_size) / 8;
	for (tries = 0; tries < RT_SPIN; tries++) {
		s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			rt_pause();
			continue;
		}
		if (__atomic_load_n((uint32_t *)slot, __ATOMIC_ACQUIRE) !=
		    RT_SHTAB_USED)
			return NULL;
		for (w = 0; w < n; w++)
			((uint64_t *)dst)[w] =
				__atomic_load_n(&v[w], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			return dst;
	}
	return NULL;	/* writers kept it busy: as if not there yet */
}

/*
 * The insert lock (struct rt_shtab lock): a slot is claimed for an absent
 * key only under it, after a scan made under it, so that two threads
 * inserting one key cannot both find it absent and claim two slots (a
 * delete between their scans can show them different tombstones).
 * Updates of present keys, revivals of a key's own tombstone and deletes
 * take no lock.
 *
 * The word: RT_LOCK_HELD, waiters that gave up on the holder (RT_LOCK_STALE
 * each), a generation (RT_LOCK_GEN, moved on by every unlock).  Waits are
 * bounded but outlast a preempted holder: spins, a few sched_yield(), then
 * naps of RT_LOCK_NAP_NS (at least RT_LOCK_NAPS of them, so at least
 * 20 ms of the waiter's own time: a stopped or starved waiter does not
 * count down), then the insert is dropped and counted in lockdrop, apart
 * from a full table's drops.  A holder that RT_LOCK_STALE_MAX waiters gave
 * up on is gone (a longjmp out of a signal handler): the next waiter takes
 * the lock over with a new generation, and the old holder's unlock finds
 * it changed.  Returns what to unlock with, 0 when the lock could not be
 * had.
 */
#define RT_LOCK_HELD 1u
#define RT_LOCK_STALE 2u
#define RT_LOCK_STALE_MASK 0xfeu
#define RT_LOCK_STALE_MAX 32u
#define RT_LOCK_GEN 0x100u
#define RT_YIELDS 64
#define RT_LOCK_NAPS 200
#define RT_LOCK_NAP_NS 100000

static int rt_shtab_trylock(struct rt_shtab *h, uint32_t *held)
{
	uint32_t w = __atomic_load_n(&h->lock, __ATOMIC_RELAXED);

	if (w & RT_LOCK_HELD ||
	    !__atomic_compare_exchange_n(&h->lock, &w, w | RT_LOCK_HELD, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	*held = w | RT_LOCK_HELD;
	return 1;
}

static uint32_t rt_shtab_lock(struct rt_shtab *h)
{
	struct { long sec, nsec; } nap = { 0, RT_LOCK_NAP_NS };
	uint32_t w, nw;
	int n;

	for (n = 0; n < RT_SPIN * 8 + RT_YIELDS + RT_LOCK_NAPS; n++) {
		if (rt_shtab_trylock(h, &w))
			return w;
		if (n < RT_SPIN * 8)
			rt_pause();
		else if (n < RT_SPIN * 8 + RT_YIELDS)
			rt_syscall0(24 /* sched_yield */);
		else
			rt_syscall4(35 /* nanosleep */, (long)&nap, 0, 0, 0);
	}
	for (n = 0; n < RT_SPIN; n++) {
		w = __atomic_load_n(&h->lock, __ATOMIC_RELAXED);
		if (!(w & RT_LOCK_HELD))
			nw = w | RT_LOCK_HELD;
		else if ((w & RT_LOCK_STALE_MASK) / RT_LOCK_STALE + 1 >=
			 RT_LOCK_STALE_MAX)
			nw = ((w & ~0xffu) + RT_LOCK_GEN) | RT_LOCK_HELD;
		else
			nw = w + RT_LOCK_STALE;
		if (__atomic_compare_exchange_n(&h->lock, &w, nw, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return nw & RT_LOCK_STALE_MASK ? 0 : nw;
	}
	return 0;
}

static void rt_shtab_unlock(struct rt_shtab *h, uint32_t held)
{
	uint32_t w;
	int n;

	for (n = 0; held && n < RT_SPIN; n++) {
		w = __atomic_load_n(&h->lock, __ATOMIC_RELAXED);
		if ((w & ~RT_LOCK_STALE_MASK) != held)
			return;	/* taken over */
		if (__atomic_compare_exchange_n(&h->lock, &w,
						(w & ~0xffu) + RT_LOCK_GEN, 0,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	}
}

/*
 * One key more in h: 1, or 0 when max_keys are present (a key too many).
 * rt_shtab_unreserve() gives it back when the slot could not be taken.
 */
static int rt_shtab_reserve(struct rt_shtab *h)
{
	uint64_t n = __atomic_fetch_add(&h->keys, 1, __ATOMIC_RELAXED);

	if (!h->max_keys || n < h->max_keys)
		return 1;
	__atomic_fetch_sub(&h->keys, 1, __ATOMIC_RELAXED);
	return 0;
}

static void rt_shtab_unreserve(struct rt_shtab *h)
{
	__atomic_fetch_sub(&h->keys, 1, __ATOMIC_RELAXED);
}

RT_EXPORT long rt_shtab_update(struct rt_shtab *h, const void *key,
			       const void *val)
{
	uint64_t mask, i0;
	uint32_t held = 0;
	int attempt;
	long ret = -12;	/* -ENOMEM */

	if (!rt_shtab_ok(h))
		return -22;	/* -EINVAL */
	mask = h->nslots - 1;
	i0 = rt_hash(key, h->key_size) & mask;
	for (attempt = 0; attempt < RT_ATTEMPTS; attempt++) {
		uint64_t *tomb = NULL, *empty = NULL, *slot, i = i0;
		uint32_t n, st, s;

		for (n = 0; n < h->max_probe; n++, i = (i + 1) & mask) {
			slot = rt_shtab_at(h, i);
			st = rt_shtab_state((uint32_t *)slot);
			if (st == RT_SHTAB_EMPTY) {
				empty = slot;
				break;
			}
			/* under the lock, a slot still busy is a key being
			 * revived: its key does not change */
			if (st == RT_SHTAB_BUSY && !held)
				continue;
			if (rt_key_eq((const uint8_t *)(slot + 1), key,
				      h->key_size))
				break;
			if (st == RT_SHTAB_DEAD && !tomb)
				tomb = slot;
		}
		if (n < h->max_probe && !empty) {
			/* the key's own slot */
			uint32_t *seq = (uint32_t *)slot + 1;

			if (st == RT_SHTAB_DEAD) {
				uint32_t want = RT_SHTAB_DEAD;

				/* a deleted key back: a key more */
				if (!rt_shtab_reserve(h))
					break;
				if (!__atomic_compare_exchange_n(
					    (uint32_t *)slot, &want,
					    RT_SHTAB_BUSY, 0,
					    __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED)) {
					rt_shtab_unreserve(h);
					continue;
				}
				rt_shtab_fill(h, slot, NULL, val);
				__atomic_store_n((uint32_t *)slot,
						 RT_SHTAB_USED,
						 __ATOMIC_RELEASE);
				ret = 0;
				goto out;
			}
			if (!rt_shtab_seq_take(seq, 0, &s)) {
				/* another writer is in: ours came first */
				__atomic_fetch_add(&h->raced, 1,
						   __ATOMIC_RELAXED);
				ret = 0;
				goto out;
			}
			/* deleted and taken over by another key meanwhile? */
			if (__atomic_load_n((uint32_t *)slot,
					    __ATOMIC_ACQUIRE) !=
				    RT_SHTAB_USED ||
			    !rt_key_eq((const uint8_t *)(slot + 1), key,
				       h->key_size)) {
				__atomic_store_n(seq, s + 2, __ATOMIC_RELEASE);
				continue;
			}
			rt_shtab_put(h, slot, val);
			__atomic_store_n(seq, s + 2, __ATOMIC_RELEASE);
			ret = 0;
			goto out;
		}
		/* absent: look again under the insert lock first */
		if (!held) {
			held = rt_shtab_lock(h);
			if (!held) {
				__atomic_fetch_add(&h->lockdrop, 1,
						   __ATOMIC_RELAXED);
				return ret;
			}
			continue;
		}
		/* take over a tombstone, else the free slot: a key more,
		 * refused at the map's limit */
		slot = tomb ? tomb : empty;
		if (!slot || !rt_shtab_reserve(h))
			break;
		st = tomb ? RT_SHTAB_DEAD : RT_SHTAB_EMPTY;
		if (!__atomic_compare_exchange_n((uint32_t *)slot, &st,
						 RT_SHTAB_BUSY, 0,
						 __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED)) {
			rt_shtab_unreserve(h);
			continue;	/* revived meanwhile: look again */
		}
		rt_shtab_fill(h, slot, key, val);
		if (!tomb)
			__atomic_fetch_add(&h->used, 1, __ATOMIC_RELAXED);
		__atomic_store_n((uint32_t *)slot, RT_SHTAB_USED,
				 __ATOMIC_RELEASE);
		ret = 0;
		goto out;
	}
	__atomic_fetch_add(&h->dropped, 1, __ATOMIC_RELAXED);
out:
	rt_shtab_unlock(h, held);
	return ret;
}

RT_EXPORT long rt_shtab_delete(struct rt_shtab *h, const void *key)
{
	uint32_t want = RT_SHTAB_USED;
	uint64_t *slot;

	if (!rt_shtab_ok(h))
		return -2;	/* -ENOENT */
	slot = rt_shtab_find(h, key);
	/* the key stays, so that the keys after it stay reachable */
	if (!slot || !__atomic_compare_exchange_n((uint32_t *)slot, &want,
						  RT_SHTAB_DEAD, 0,
						  __ATOMIC_RELEASE,
						  __ATOMIC_RELAXED))
		return -2;
	rt_shtab_unreserve(h);	/* a key less */
	return 0;
}

/*
 * Iteration (for, len()): the first USED slot at index from or after,
 * copied whole into key and val, its index + 1 returned; 0 at the end.
 * A copy counts when the slot was USED with an even seq before it and is
 * still USED with the same seq after it: a value being written, a key
 * being deleted or its slot taken over by another key (which always moves
 * seq) makes it retry.  A slot that stays busy for RT_SPIN tries is
 * skipped, as rt_shtab_read() reports it absent.  Entries inserted or
 * deleted while a loop runs may or may not be seen; each slot is visited
 * at most once, so a loop ends after nslots entries at most.
 */
static int rt_shtab_copy(struct rt_shtab *h, uint64_t *slot, void *key,
			 void *val)
{
	uint32_t *st = (uint32_t *)slot, *seq = st + 1, s1, s2;
	uint64_t *k = slot + 1, *v = rt_shtab_val(h, slot), w;
	uint64_t nk = rt_align8(h->key_size) / 8;
	uint64_t nv = rt_align8(h->val_size) / 8;
	int tries;

	for (tries = 0; tries < RT_SPIN; tries++) {
		s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(st, __ATOMIC_ACQUIRE) != RT_SHTAB_USED)
			return 0;
		if (s1 & 1) {
			rt_pause();
			continue;
		}
		for (w = 0; w < nk; w++)
			((rt_u64u *)key)[w] =
				__atomic_load_n(&k[w], __ATOMIC_RELAXED);
		for (w = 0; w < nv; w++)
			((rt_u64u *)val)[w] =
				__atomic_load_n(&v[w], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(seq, __ATOMIC_RELAXED);
		if (s1 == s2 && __atomic_load_n(st, __ATOMIC_RELAXED) ==
					RT_SHTAB_USED)
			return 1;
	}
	return 0;
}

RT_EXPORT uint64_t rt_shtab_next(struct rt_shtab *h, uint64_t from,
				 void *key, void *val)
{
	uint64_t i;

	if (!rt_shtab_ok(h))
		return 0;
	for (i = from; i < h->nslots; i++) {
		uint64_t *slot = rt_shtab_at(h, i);

		/* an insert in progress: wait a little, as lookups do */
		if (rt_shtab_state((uint32_t *)slot) == RT_SHTAB_USED &&
		    rt_shtab_copy(h, slot, key, val))
			return i + 1;
	}
	return 0;
}

