/*
 * ubt's side of the tables user-mode and kernel probes share (xmap.h,
 * codegen/cg_xmap.h), through ubt's own mapping of the BPF array.  The
 * layout is ubt's: the slot count and probe bound come from the object
 * ubt built, never from the table; a slot whose live word is neither 0
 * nor 1 was not written by the probe code and is skipped, and said so.
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

int xmap_foreach(int fd, const struct cg_map *m, kernel_entry_fn fn,
		 void *ctx, uint64_t *bad)
{
	const char *t = xmap_map(fd, m, PROT_READ);
	int err = 0;

	if (!t)
		return -errno;
	for (uint32_t i = 0; i < m->xmap_slots && !err; i++) {
		const uint64_t *s = (const uint64_t *)(t + CG_XMAP_HDR +
						       (uint64_t)i *
							       CG_XMAP_SLOT);
		uint64_t kw = __atomic_load_n(&s[0], __ATOMIC_ACQUIRE);
		uint64_t live = __atomic_load_n(&s[1], __ATOMIC_ACQUIRE);
		uint64_t v = __atomic_load_n(&s[2], __ATOMIC_RELAXED);
		uint64_t key = kw ^ CG_XMAP_KEY_FLIP;

		if (!kw || !live)
			continue;
		/* not the code's: a live word is 1, a keyless map's key 0 */
		if (live != 1 || (!m->key_type && key)) {
			if (bad)
				(*bad)++;
			continue;
		}
		err = fn(&key, &v, ctx);
	}
	munmap((void *)t, xmap_len(m));
	return err;
}

int xmap_clear(int fd, const struct cg_map *m, bool zero)
{
	char *t = xmap_map(fd, m, PROT_READ | PROT_WRITE);

	if (!t)
		return -errno;
	for (uint32_t i = 0; i < m->xmap_slots; i++) {
		uint64_t *s = (uint64_t *)(t + CG_XMAP_HDR +
					   (uint64_t)i * CG_XMAP_SLOT);

		uint64_t one = 1;

		if (!__atomic_load_n(&s[0], __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&s[1], __ATOMIC_ACQUIRE) != 1)
			continue;
		if (zero)
			__atomic_store_n(&s[2], 0, __ATOMIC_RELAXED);
		/* as delete(): live from 1 to 0, one key less */
		else if (__atomic_compare_exchange_n(&s[1], &one, 0, false,
						     __ATOMIC_SEQ_CST,
						     __ATOMIC_SEQ_CST))
			__atomic_fetch_sub((uint64_t *)(t + CG_XMAP_OFF_KEYS), 1,
					   __ATOMIC_SEQ_CST);
	}
	munmap(t, xmap_len(m));
	return 0;
}

uint64_t xmap_count(int fd, const struct cg_map *m, uint32_t off)
{
	const uint64_t *h;
	uint64_t n;

	if (off != CG_XMAP_OFF_DROPPED && off != CG_XMAP_OFF_COLLIDED)
		return UINT64_MAX;
	h = xmap_map(fd, m, PROT_READ);
	if (!h)
		return UINT64_MAX;
	n = __atomic_load_n(&h[off / 8], __ATOMIC_RELAXED);
	munmap((void *)h, xmap_len(m));
	return n;
}
