/*
 * ubt's side of the tables shared by all threads of the target (the
 * memfd's shared area, rt_abi.h struct rt_shtab): set up, read back with
 * bounds checks, cleared and zeroed as the runtime's writers expect.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "memfd.h"
#include "util.h"
#include "memfd_int.h"

uint64_t memfd_shtab_bytes(uint32_t nslots, uint32_t key_size,
			   uint32_t val_size)
{
	return sizeof(struct rt_shtab) +
	       (uint64_t)nslots *
		       (8 + rt_align8(key_size) + rt_align8(val_size));
}

static int shtab_valid(const struct memfd *m, const struct memfd_shtab *t)
{
	if (!t->nslots || (t->nslots & (t->nslots - 1)) || !t->key_size ||
	    t->key_size > 4096 || t->val_size > 4096 || t->off % 8 ||
	    !t->max_probe || t->max_probe > t->nslots)
		return -EINVAL;
	if (t->off > m->l.shared_size ||
	    memfd_shtab_bytes(t->nslots, t->key_size, t->val_size) >
		    m->l.shared_size - t->off)
		return -ERANGE;
	return 0;
}

static char *shtab_base(const struct memfd *m, const struct memfd_shtab *t)
{
	return m->base + RT_SHARED_OFF + t->off;
}

int memfd_shtab_add(struct memfd *m, const struct memfd_shtab *t)
{
	int err = shtab_valid(m, t);

	if (err)
		return err;
	/* the slots are zero: the memfd is new (pages touched on use) */
	*(struct rt_shtab *)shtab_base(m, t) = (struct rt_shtab){
		.sz = sizeof(struct rt_shtab),
		.nslots = t->nslots,
		.key_size = t->key_size,
		.val_size = t->val_size,
		.max_probe = t->max_probe,
		.max_keys = t->max_keys,
	};
	return 0;
}

/*
 * One consistent copy of a used slot's value (seq even and unchanged
 * around the copy); false when the slot is not used or writers kept
 * changing it.
 */
static bool shtab_copy(const struct memfd *m, const struct memfd_shtab *t,
		       uint32_t s, const char *slot, char *key, char *val)
{
	const uint32_t *st = (const uint32_t *)slot, *seq = st + 1;
	uint64_t koff = 8 + rt_align8(t->key_size);
	uint32_t ks = t->key_size, vs = t->val_size, state;

	for (int tries = 0; tries < 1000; tries++) {
		uint32_t s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE), s2;

		state = __atomic_load_n(st, __ATOMIC_ACQUIRE);
		if (state > RT_SHTAB_DEAD)
			memfd_corrupt(m, "the shared table at %" PRIu64
				      ": slot %" PRIu32 " in state %" PRIu32,
				      t->off, s, state);
		if (state != RT_SHTAB_USED)
			return false;
		if (s1 & 1)
			continue;
		memcpy(key, slot + 8, ks);
		memcpy(val, slot + koff, vs);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(seq, __ATOMIC_RELAXED);
		if (s1 == s2 && __atomic_load_n(st, __ATOMIC_ACQUIRE) ==
					RT_SHTAB_USED)
			return true;
	}
	return false;
}

int memfd_shtab_foreach(const struct memfd *m, const struct memfd_shtab *t,
			int (*cb)(const void *key, const void *val, void *arg),
			void *arg)
{
	uint64_t ss = 8 + rt_align8(t->key_size) + rt_align8(t->val_size);
	int err = shtab_valid(m, t);
	char key[4096], val[4096];
	const char *slots;

	if (err)
		return err;
	/* ubt's own sizes, never the header's: the target may write it */
	slots = shtab_base(m, t) + sizeof(struct rt_shtab);
	for (uint32_t s = 0; s < t->nslots; s++) {
		if (!shtab_copy(m, t, s, slots + (uint64_t)s * ss, key, val))
			continue;
		err = cb(key, val, arg);
		if (err)
			return err;
	}
	return 0;
}

/*
 * One of the table's drop counters (at off in struct rt_shtab, last
 * plausible value in *seen's field at fld): the target may write it.
 */
static uint64_t shtab_counter(const struct memfd *m,
			      const struct memfd_shtab *t, size_t off,
			      size_t fld, const char *what)
{
	struct memfd_seen *s = m->seen;
	struct memfd_table_seen *ts = NULL;
	uint64_t v, *last;
	char where[48];

	if (shtab_valid(m, t))
		return 0;
	for (size_t i = 0; i < s->ntabs && !ts; i++)
		if (s->tabs[i].off == t->off)
			ts = &s->tabs[i];
	if (!ts) {
		s->tabs = xrealloc(s->tabs, (s->ntabs + 1) * sizeof(*s->tabs));
		ts = &s->tabs[s->ntabs++];
		*ts = (struct memfd_table_seen){ .off = t->off };
	}
	last = (uint64_t *)((char *)ts + fld);
	v = memfd_load64(shtab_base(m, t) + off);
	snprintf(where, sizeof(where), "the shared table at %" PRIu64, t->off);
	/* every thread with a block may drop */
	if (memfd_counter_ok(m, where, what, v, *last, memfd_nblocks_used(m)))
		*last = v;
	return *last;
}

uint64_t memfd_shtab_dropped(const struct memfd *m,
			     const struct memfd_shtab *t)
{
	return shtab_counter(m, t, offsetof(struct rt_shtab, dropped),
			     offsetof(struct memfd_table_seen, dropped),
			     "updates dropped");
}

uint64_t memfd_shtab_lockdrop(const struct memfd *m,
			      const struct memfd_shtab *t)
{
	return shtab_counter(m, t, offsetof(struct rt_shtab, lockdrop),
			     offsetof(struct memfd_table_seen, lockdrop),
			     "inserts dropped at the lock");
}

int memfd_shtab_clear(struct memfd *m, const struct memfd_shtab *t)
{
	uint64_t ss = 8 + rt_align8(t->key_size) + rt_align8(t->val_size);
	int err = shtab_valid(m, t);
	uint64_t *keys;
	char *slots;

	if (err)
		return err;
	keys = (uint64_t *)(shtab_base(m, t) +
			    offsetof(struct rt_shtab, keys));
	slots = shtab_base(m, t) + sizeof(struct rt_shtab);
	for (uint32_t s = 0; s < t->nslots; s++) {
		uint32_t *st = (uint32_t *)(slots + (uint64_t)s * ss);
		uint32_t want = RT_SHTAB_USED;

		/* a key less for the table's limit (rt_abi.h) */
		if (__atomic_compare_exchange_n(st, &want, RT_SHTAB_DEAD, 0,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			__atomic_fetch_sub(keys, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

int memfd_shtab_zero(struct memfd *m, const struct memfd_shtab *t)
{
	uint64_t ss = 8 + rt_align8(t->key_size) + rt_align8(t->val_size);
	uint64_t koff = 8 + rt_align8(t->key_size);
	int err = shtab_valid(m, t);
	char *slots;

	if (err)
		return err;
	slots = shtab_base(m, t) + sizeof(struct rt_shtab);
	for (uint32_t i = 0; i < t->nslots; i++) {
		char *slot = slots + (uint64_t)i * ss;
		uint32_t *seq = (uint32_t *)slot + 1;

		if (__atomic_load_n((uint32_t *)slot, __ATOMIC_ACQUIRE) !=
		    RT_SHTAB_USED)
			continue;
		/* a writer of the runtime's kind: seq odd around the copy */
		for (int tries = 0; tries < 1000; tries++) {
			uint32_t s = __atomic_load_n(seq, __ATOMIC_RELAXED);

			if ((s & 1) ||
			    !__atomic_compare_exchange_n(seq, &s, s + 1, 0,
							 __ATOMIC_ACQUIRE,
							 __ATOMIC_RELAXED))
				continue;
			__atomic_thread_fence(__ATOMIC_RELEASE);
			for (uint64_t w = 0; w < rt_align8(t->val_size); w += 8)
				__atomic_store_n((uint64_t *)(slot + koff + w),
						 0, __ATOMIC_RELAXED);
			__atomic_store_n(seq, s + 2, __ATOMIC_RELEASE);
			break;
		}
	}
	return 0;
}
