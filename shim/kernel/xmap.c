/*
 * ubt's side of the tables user-mode and kernel probes share (xmap.h,
 * codegen/cg_xmap.h), through ubt's own mapping of the BPF array.  The
 * layout is ubt's: the slot count and probe bound come from the object
 * ubt built, never from the table; a slot whose state word the probe code
 * cannot have written is skipped, and said so.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cg_xmap.h"
#include "util.h"
#include "xmap.h"

static uint64_t xmap_len(const struct cg_map *m)
{
	return (cg_xmap_bytes(m->xmap_slots) + 4095) & ~4095ull;
}

static void *xmap_map(int fd, const struct cg_map *m, int prot)
{
	void *p;

	if (fd < 0 || !m->xmap || !m->xmap_slots ||
	    (m->xmap_slots & (m->xmap_slots - 1)) ||
	    m->xmap_slots > CG_XMAP_MAX_SLOTS) {
		errno = EINVAL;
		return NULL;
	}
	p = mmap(NULL, xmap_len(m), prot, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

int xmap_init(int fd, const struct cg_map *m)
{
	uint32_t *h = xmap_map(fd, m, PROT_READ | PROT_WRITE);

	if (!h)
		return -errno;
	h[0] = CG_XMAP_HDR;
	h[1] = CG_XMAP_VERSION;
	h[2] = m->xmap_slots;
	h[3] = cg_xmap_max_probe(m->xmap_slots);
	munmap(h, xmap_len(m));
	return 0;
}

static uint64_t *xmap_slot(char *t, uint32_t i)
{
	return (uint64_t *)(t + CG_XMAP_HDR + (uint64_t)i * CG_XMAP_SLOT);
}

struct xmap_ent {
	uint64_t key, val;
	uint32_t at;		/* the order read */
};

static int xmap_ent_cmp(const void *a, const void *b)
{
	const struct xmap_ent *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

int xmap_foreach(int fd, const struct cg_map *m, kernel_entry_fn fn,
		 void *ctx, uint64_t *bad)
{
	char *t = xmap_map(fd, m, PROT_READ);
	struct xmap_ent *e;
	uint32_t n = 0;
	int err = 0;

	if (!t)
		return -errno;
	e = xcalloc(m->xmap_slots, sizeof(*e));
	for (uint32_t i = 0; i < m->xmap_slots; i++) {
		const uint64_t *s = xmap_slot(t, i);
		/* as probe code reads it (cg_xmap.h): state, key, value,
		 * state again, unchanged */
		uint64_t st = __atomic_load_n(&s[CG_XMAP_SLOT_STATE / 8],
					      __ATOMIC_ACQUIRE);
		uint64_t kw = __atomic_load_n(&s[CG_XMAP_SLOT_KEY / 8],
					      __ATOMIC_ACQUIRE);
		uint64_t v = __atomic_load_n(&s[CG_XMAP_SLOT_VALUE / 8],
					     __ATOMIC_ACQUIRE);
		uint64_t key = kw ^ CG_XMAP_KEY_FLIP;

		/* not the code's: a state past DEAD, a keyless map's key
		 * not 0 */
		if ((st & CG_XMAP_STATE_MASK) > CG_XMAP_DEAD ||
		    (st && !(st >> CG_XMAP_GEN_SHIFT)) ||
		    ((st & CG_XMAP_STATE_MASK) == CG_XMAP_LIVE &&
		     !m->key_type && key)) {
			if (bad)
				(*bad)++;
			continue;
		}
		if ((st & CG_XMAP_STATE_MASK) != CG_XMAP_LIVE ||
		    __atomic_load_n(&s[CG_XMAP_SLOT_STATE / 8],
				    __ATOMIC_ACQUIRE) != st)
			continue;	/* deleted meanwhile */
		e[n++] = (struct xmap_ent){ .key = key, .val = v, .at = i };
	}
	munmap(t, xmap_len(m));
	/*
	 * A key deleted and inserted again into a later slot while this
	 * read went on was read twice: its later read is the newer
	 */
	qsort(e, n, sizeof(*e), xmap_ent_cmp);
	for (uint32_t i = 0; i < n && !err; i++)
		if (i + 1 == n || e[i + 1].key != e[i].key)
			err = fn(&e[i].key, &e[i].val, ctx);
	free(e);
	return err;
}

int xmap_clear(int fd, const struct cg_map *m, bool zero)
{
	char *t = xmap_map(fd, m, PROT_READ | PROT_WRITE);

	if (!t)
		return -errno;
	for (uint32_t i = 0; i < m->xmap_slots; i++) {
		uint64_t *s = xmap_slot(t, i);
		uint64_t *pins = &s[CG_XMAP_SLOT_PINS / 8];
		uint64_t st = __atomic_load_n(&s[CG_XMAP_SLOT_STATE / 8],
					      __ATOMIC_ACQUIRE);

		/* (generation 0: not the code's, xmap_foreach()) */
		if ((st & CG_XMAP_STATE_MASK) != CG_XMAP_LIVE ||
		    !(st >> CG_XMAP_GEN_SHIFT))
			continue;
		if (zero) {
			/* as a writer: pinned, still that generation */
			__atomic_fetch_add(pins, 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&s[CG_XMAP_SLOT_STATE / 8],
					    __ATOMIC_SEQ_CST) == st)
				__atomic_store_n(&s[CG_XMAP_SLOT_VALUE / 8], 0,
						 __ATOMIC_RELAXED);
			__atomic_fetch_sub(pins, 1, __ATOMIC_SEQ_CST);
		} else if (__atomic_compare_exchange_n(
				   &s[CG_XMAP_SLOT_STATE / 8], &st,
				   (st & ~CG_XMAP_STATE_MASK) | CG_XMAP_DEAD,
				   false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			/* as delete(): live to dead, one key less */
			__atomic_fetch_sub((uint64_t *)(t + CG_XMAP_OFF_KEYS), 1,
					   __ATOMIC_SEQ_CST);
		}
	}
	munmap(t, xmap_len(m));
	return 0;
}

uint64_t xmap_count(int fd, const struct cg_map *m, uint32_t off)
{
	const uint64_t *h;
	uint64_t n;

	if (off != CG_XMAP_OFF_DROPPED && off != CG_XMAP_OFF_COLLIDED &&
	    off != CG_XMAP_OFF_RACED)
		return UINT64_MAX;
	h = xmap_map(fd, m, PROT_READ);
	if (!h)
		return UINT64_MAX;
	n = __atomic_load_n(&h[off / 8], __ATOMIC_RELAXED);
	munmap((void *)h, xmap_len(m));
	return n;
}
