/* ubt's side of the shared memfd: layout, and bounds-checked reading back. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memfd.h"
#include "util.h"
#include "memfd_int.h"

#define MEMFD_PAGE 4096ULL
/* The largest thread id the kernel hands out (PID_MAX_LIMIT). */
#define MEMFD_TID_MAX (4u << 20)

/*
 * Corruption found: say so, once per memfd, in one write (the target
 * shares the terminal: its own output must not land inside the line).
 */
void memfd_corrupt(const struct memfd *m, const char *fmt, ...)
{
	char what[256], pid[24] = "";
	va_list ap;

	if (m->seen->corrupted)
		return;
	m->seen->corrupted = true;
	if (m->pid)
		snprintf(pid, sizeof(pid), "pid %d: ", m->pid);
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	fprintf(stderr, "ubt: warning: %sthe process corrupted ubt's shared "
		"memory (%s); ubt ignores the corrupted data\n", pid, what);
}

bool memfd_corrupted(const struct memfd *m)
{
	return m->seen && m->seen->corrupted;
}

/*
 * Could writers threads have counted to v since the memfd was made?
 * Nothing in a probe takes less than a nanosecond.
 */
static bool memfd_count_ok(const struct memfd *m, uint64_t v,
			   uint64_t writers)
{
	uint64_t ns = mono_ns() - m->seen->t0 + 1;

	return v / (writers ? writers : 1) <= ns;
}

/*
 * Counter name (of where) read as v, last plausible value last: false,
 * and the warning, when v went down or grew too fast for writers threads.
 */
bool memfd_counter_ok(const struct memfd *m, const char *where,
		      const char *name, uint64_t v, uint64_t last,
		      uint64_t writers)
{
	if (v < last) {
		memfd_corrupt(m, "%s: the count of %s went down from %" PRIu64
			      " to %" PRIu64, where, name, last, v);
		return false;
	}
	if (!memfd_count_ok(m, v, writers)) {
		memfd_corrupt(m, "%s: %" PRIu64 " %s, more than one a "
			      "nanosecond since ubt attached", where, v, name);
		return false;
	}
	return true;
}

static uint64_t page_up(uint64_t n)
{
	return (n + MEMFD_PAGE - 1) & ~(MEMFD_PAGE - 1);
}

void memfd_layout_default(struct memfd_layout *l)
{
	*l = (struct memfd_layout){
		.map_size = 16384,
		.ring_size = 16384,
		.nblocks = 1024,	/* threads; pages are touched on use */
	};
}

static uint64_t tmpl_off(const struct memfd_layout *l)
{
	return RT_SHARED_OFF + page_up(l->shared_size);
}

static uint64_t block_size(const struct memfd_layout *l)
{
	return page_up(RT_BLK_MAP + l->map_size + l->ring_size);
}

static uint64_t block_off(const struct memfd_layout *l)
{
	return tmpl_off(l) + page_up(l->map_size);
}

uint64_t memfd_layout_size(const struct memfd_layout *l)
{
	return block_off(l) + block_size(l) * l->nblocks;
}

static int layout_valid(const struct memfd_layout *l)
{
	if (!l->nblocks || l->nblocks > (1u << 20) || l->map_size % 8 ||
	    l->map_size > (1ULL << 30) || l->ring_size < 64 ||
	    l->ring_size > (1ULL << 30) ||
	    (l->ring_size & (l->ring_size - 1)) || l->shared_size % 8 ||
	    l->shared_size > (1ULL << 30))
		return -EINVAL;
	return 0;
}

int memfd_map(struct memfd *m, int fd, const struct memfd_layout *l)
{
	int err = layout_valid(l);
	void *p;

	if (err)
		return err;
	memset(m, 0, sizeof(*m));
	m->seen = calloc(1, sizeof(*m->seen) +
				    l->nblocks * sizeof(m->seen->b[0]));
	if (!m->seen)
		return -ENOMEM;
	m->seen->t0 = mono_ns();
	m->fd = fd;
	m->l = *l;
	m->size = memfd_layout_size(l);
	m->block_off = block_off(l);
	m->block_size = block_size(l);
	m->tmpl_off = tmpl_off(l);
	p = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		free(m->seen);
		m->seen = NULL;
		return err;
	}
	m->base = p;
	m->ctl = p;
	*m->ctl = (struct rt_ctl){
		.sz = sizeof(struct rt_ctl),
		.version = RT_ABI_VERSION,
		.total_size = m->size,
		.block_off = m->block_off,
		.block_size = m->block_size,
		.map_size = l->map_size,
		.ring_size = l->ring_size,
		.nblocks = l->nblocks,
		.tracer_pid = (uint32_t)getpid(),
		.tmpl_off = m->tmpl_off,
		.shared_size = l->shared_size,
	};
	return 0;
}

/* the first chunk's blocks; more chunks as RT_CHUNKS allows */
#define MEMFD_CHUNK_MIN 64u

uint32_t memfd_chunk_blocks(const struct memfd *m)
{
	uint32_t per = MEMFD_CHUNK_MIN;

	while ((m->l.nblocks + (uint64_t)per - 1) / per > RT_CHUNKS)
		per <<= 1;
	return per < m->l.nblocks ? per : 0;
}

uint64_t memfd_target_size(const struct memfd *m)
{
	uint32_t per = memfd_chunk_blocks(m);

	return per ? m->block_off + (uint64_t)per * m->block_size : m->size;
}

int memfd_create_local(struct memfd *m, const struct memfd_layout *l)
{
	int fd = memfd_create("ubt", MFD_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)memfd_layout_size(l)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	err = memfd_map(m, fd, l);
	if (err)
		close(fd);
	return err;
}

void memfd_release(struct memfd *m)
{
	if (m->base)
		munmap(m->base, m->size);
	if (m->fd >= 0)
		close(m->fd);
	if (m->seen)
		free(m->seen->tabs);
	free(m->seen);
	m->seen = NULL;
	m->base = NULL;
	m->ctl = NULL;
	m->fd = -1;
}

uint64_t memfd_code_off(unsigned int i)
{
	return RT_CODE_OFF + (uint64_t)i * RT_CODE_SLICE;
}

void *memfd_code(struct memfd *m, unsigned int i)
{
	if (i >= RT_CODE_SLICES || !m->base)
		return NULL;
	return m->base + memfd_code_off(i);
}

/* ctl->next_block and ctl->no_block, checked (or their last values). */
static void memfd_ctl_counters(const struct memfd *m)
{
	struct memfd_seen *s = m->seen;
	uint64_t nb, no;

	if (s->ctl_bad)
		return;
	/* no_block first: it is counted after next_block */
	no = memfd_load64(&m->ctl->no_block);
	nb = memfd_load64(&m->ctl->next_block);
	if (!memfd_counter_ok(m, "the control block", "blocks handed out",
			      nb, s->next_block, 1) ||
	    !memfd_counter_ok(m, "the control block",
			      "threads without a block", no, s->no_block,
			      1)) {
		s->ctl_bad = true;
		return;
	}
	s->next_block = nb;
	s->no_block = no;
}

uint32_t memfd_nblocks_used(const struct memfd *m)
{
	uint64_t n;

	memfd_ctl_counters(m);
	n = m->seen->next_block;
	return n < m->l.nblocks ? (uint32_t)n : m->l.nblocks;
}

uint64_t memfd_no_block(const struct memfd *m)
{
	memfd_ctl_counters(m);
	return m->seen->no_block;
}

uint64_t memfd_blocks_reused(const struct memfd *m)
{
	uint64_t v = memfd_load64(&m->ctl->blocks_reused);

	/* for -v only: an implausible count is left out */
	return memfd_count_ok(m, v, 1) ? v : 0;
}

uint64_t memfd_notsc_threads(const struct memfd *m)
{
	uint64_t v = memfd_load64(&m->ctl->notsc_threads);

	/* for -v only: an implausible count is left out */
	return memfd_count_ok(m, v, 1) ? v : 0;
}

static char *block(const struct memfd *m, uint32_t i)
{
	if (i >= m->l.nblocks)
		return NULL;
	return m->base + m->block_off + (uint64_t)i * m->block_size;
}

uint32_t memfd_block_tid(const struct memfd *m, uint32_t i)
{
	char *b = block(m, i);
	uint32_t tid;

	if (!b)
		return 0;
	tid = __atomic_load_n((uint32_t *)(b + RT_BLK_TID), __ATOMIC_RELAXED);
	if (tid > MEMFD_TID_MAX) {
		memfd_corrupt(m, "thread block %" PRIu32 ": thread id %" PRIu32,
			      i, tid);
		return 0;
	}
	return tid;
}

int memfd_map_read(const struct memfd *m, uint32_t i, uint64_t off,
		   void *out, uint64_t len)
{
	char *b = block(m, i);

	if (!b || off > m->l.map_size || len > m->l.map_size - off)
		return -ERANGE;
	memcpy(out, b + RT_BLK_MAP + off, len);
	return 0;
}

int memfd_sum_u64(const struct memfd *m, uint64_t off, uint64_t *out)
{
	uint32_t n = memfd_nblocks_used(m), i;
	uint64_t sum = 0;

	if (off % 8 || off > m->l.map_size || m->l.map_size - off < 8)
		return -ERANGE;
	for (i = 0; i < n; i++)
		sum += memfd_load64(block(m, i) + RT_BLK_MAP + off);
	*out = sum;
	return 0;
}

uint64_t memfd_htab_bytes(uint32_t nslots, uint32_t key_size,
			  uint32_t val_size)
{
	return sizeof(struct rt_htab) +
	       (uint64_t)nslots *
		       (8 + rt_align8(key_size) + rt_align8(val_size));
}

static int htab_valid(const struct memfd *m, const struct memfd_htab *t)
{
	if (!t->nslots || (t->nslots & (t->nslots - 1)) || !t->key_size ||
	    t->key_size > 4096 || t->val_size > 4096 || t->off % 8)
		return -EINVAL;
	if (t->off > m->l.map_size ||
	    memfd_htab_bytes(t->nslots, t->key_size, t->val_size) >
		    m->l.map_size - t->off)
		return -ERANGE;
	return 0;
}

int memfd_htab_add(struct memfd *m, const struct memfd_htab *t)
{
	int err = htab_valid(m, t);
	uint64_t end = t->off + sizeof(struct rt_htab);

	if (err)
		return err;
	*(struct rt_htab *)(m->base + m->tmpl_off + t->off) = (struct rt_htab){
		.sz = sizeof(struct rt_htab),
		.nslots = t->nslots,
		.key_size = t->key_size,
		.val_size = t->val_size,
		.max_keys = t->max_keys,
	};
	/* tables are placed while the target is stopped */
	if (m->ctl->tmpl_len < end)
		m->ctl->tmpl_len = end;
	return 0;
}

int memfd_htab_foreach(const struct memfd *m, const struct memfd_htab *t,
		       int (*cb)(const void *key, const void *val,
				 uint32_t block, void *arg),
		       void *arg)
{
	uint64_t ss = 8 + rt_align8(t->key_size) + rt_align8(t->val_size);
	uint32_t n = memfd_nblocks_used(m), i, s;
	int err = htab_valid(m, t);
	char key[4096], val[4096];

	if (err)
		return err;
	for (i = 0; i < n; i++) {
		char *slots = block(m, i) + RT_BLK_MAP + t->off +
			      sizeof(struct rt_htab);

		for (s = 0; s < t->nslots; s++) {
			char *slot = slots + (uint64_t)s * ss;

			uint64_t st = memfd_load64(slot);

			if (st > RT_HTAB_ZEROED) {
				memfd_corrupt(m, "thread block %" PRIu32
					      ": the table at %" PRIu64
					      ", slot %" PRIu32 " in state %"
					      PRIu64, i, t->off, s, st);
				continue;
			}
			if (st != RT_HTAB_USED && st != RT_HTAB_ZEROED)
				continue;
			/* copy first: the target may be writing */
			memcpy(key, slot + 8, t->key_size);
			if (st == RT_HTAB_ZEROED)
				memset(val, 0, t->val_size);
			else
				memcpy(val, slot + 8 + rt_align8(t->key_size),
				       t->val_size);
			err = cb(key, val, i, arg);
			if (err)
				return err;
		}
	}
	return 0;
}

uint64_t memfd_htab_dropped(const struct memfd *m, const struct memfd_htab *t,
			    uint64_t bound, uint32_t *implausible)
{
	uint32_t n = memfd_nblocks_used(m), i;
	uint64_t sum = 0, v;

	*implausible = 0;
	if (htab_valid(m, t))
		return 0;
	for (i = 0; i < n; i++) {
		v = memfd_load64(block(m, i) + RT_BLK_MAP + t->off +
			   offsetof(struct rt_htab, dropped));
		if (v > bound || sum + v < sum)
			(*implausible)++;
		else
			sum += v;
	}
	return sum;
}

int memfd_map_zero_block(struct memfd *m, uint32_t i, uint64_t off,
			 uint64_t len)
{
	if (off % 8 || len % 8 || off > m->l.map_size ||
	    len > m->l.map_size - off || i >= memfd_nblocks_used(m))
		return -ERANGE;
	for (uint64_t w = 0; w < len; w += 8)
		__atomic_store_n((uint64_t *)(block(m, i) + RT_BLK_MAP +
					      off + w),
				 0, __ATOMIC_RELAXED);
	return 0;
}

int memfd_map_zero(struct memfd *m, uint64_t off, uint64_t len)
{
	uint32_t n = memfd_nblocks_used(m);
	int err = 0;

	for (uint32_t i = 0; !err && i < n; i++)
		err = memfd_map_zero_block(m, i, off, len);
	if (!n && (off % 8 || len % 8 || off > m->l.map_size ||
		   len > m->l.map_size - off))
		err = -ERANGE;
	return err;
}

/* Every slot of t in every block: state from -> to, by compare-and-swap. */
static int htab_move(struct memfd *m, const struct memfd_htab *t,
		     const void *key, uint64_t from, uint64_t to)
{
	uint64_t ss = 8 + rt_align8(t->key_size) + rt_align8(t->val_size);
	uint32_t n = memfd_nblocks_used(m), i, s;
	int err = htab_valid(m, t);

	if (err)
		return err;
	for (i = 0; i < n; i++) {
		char *slots = block(m, i) + RT_BLK_MAP + t->off +
			      sizeof(struct rt_htab);

		if (t->skip && i == t->skip - 1)
			continue;
		for (s = 0; s < t->nslots; s++) {
			char *slot = slots + (uint64_t)s * ss;
			uint64_t want = from;

			if (key && memcmp(slot + 8, key, t->key_size))
				continue;
			__atomic_compare_exchange_n((uint64_t *)slot, &want,
						    to, 0, __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED);
		}
	}
	return 0;
}

int memfd_htab_clear(struct memfd *m, const struct memfd_htab *t)
{
	/* deleted: the owner revives the slot with a zero value */
	return htab_move(m, t, NULL, RT_HTAB_USED, RT_HTAB_DELETED) ?:
	       htab_move(m, t, NULL, RT_HTAB_ZEROED, RT_HTAB_DELETED);
}

int memfd_htab_zero(struct memfd *m, const struct memfd_htab *t)
{
	/* the value is left alone: the owner may be adding to it */
	return htab_move(m, t, NULL, RT_HTAB_USED, RT_HTAB_ZEROED);
}

int memfd_htab_delete(struct memfd *m, const struct memfd_htab *t,
		      const void *key)
{
	return htab_move(m, t, key, RT_HTAB_USED, RT_HTAB_DELETED) ?:
	       htab_move(m, t, key, RT_HTAB_ZEROED, RT_HTAB_DELETED);
}

/* Block i is corrupted: said, and its ring and counters ignored. */
static void memfd_block_bad(const struct memfd *m, uint32_t i)
{
	m->seen->b[i].bad = true;
}

int memfd_ring_consume(const struct memfd *m, uint32_t i,
		       int (*cb)(uint32_t type, const void *data,
				 uint32_t len, void *arg),
		       void *arg)
{
	char *b = block(m, i), *ring;
	uint64_t size = m->l.ring_size, head, tail;
	struct memfd_block_seen *bs;
	char rec[65536];
	int n = 0, err = 0;

	if (!b)
		return -ERANGE;
	bs = &m->seen->b[i];
	if (bs->bad)
		return 0;
	ring = b + RT_BLK_MAP + m->l.map_size;
	/* ubt's own tail: the one in the memfd is the producer's copy */
	tail = bs->tail;
	head = memfd_load64(b + RT_BLK_RING_HEAD);
	if (head % 8 || head < tail || head - tail > size) {
		memfd_corrupt(m, "thread block %" PRIu32 ": ring head %" PRIu64
			      " with ubt's tail at %" PRIu64 " in a ring of %"
			      PRIu64 " bytes", i, head, tail, size);
		memfd_block_bad(m, i);
		return -EBADMSG;
	}
	while (tail != head) {
		uint64_t off = tail & (size - 1);
		uint32_t len, type;

		len = __atomic_load_n((uint32_t *)(ring + off),
				      __ATOMIC_RELAXED);
		type = __atomic_load_n((uint32_t *)(ring + off + 4),
				       __ATOMIC_RELAXED);
		if (len % 8 || len > head - tail || len > size - off ||
		    (type != RT_REC_PAD && len < RT_REC_HDR) || !len ||
		    len - RT_REC_HDR > sizeof(rec)) {
			memfd_corrupt(m, "thread block %" PRIu32 ": a ring "
				      "record of %" PRIu32 " bytes, type %"
				      PRIu32 ", at %" PRIu64, i, len, type,
				      tail);
			memfd_block_bad(m, i);
			err = -EBADMSG;
			break;
		}
		if (type == RT_REC_PAD) {
			tail += len;
			continue;
		}
		memcpy(rec, ring + off + RT_REC_HDR, len - RT_REC_HDR);
		tail += len;
		n++;
		err = cb(type, rec, len - RT_REC_HDR, arg);
		if (err)
			break;
	}
	bs->tail = tail;
	__atomic_store_n((uint64_t *)(b + RT_BLK_RING_TAIL), tail,
			 __ATOMIC_RELEASE);
	return err ? err : n;
}

/*
 * The sum over the blocks in use of a counter in their headers: the ring's
 * drops (drops) or the return probes not wrapped.
 */
static uint64_t sum_counter(const struct memfd *m, bool drops)
{
	uint64_t hoff = drops ? RT_BLK_RING_DROPPED : RT_BLK_SHADOW_LOST;
	uint32_t n = memfd_nblocks_used(m), i;
	uint64_t sum = 0;

	for (i = 0; i < n; i++) {
		struct memfd_block_seen *bs = &m->seen->b[i];
		uint64_t *keep = drops ? &bs->dropped : &bs->shadow_lost;
		uint64_t v;

		if (!bs->bad) {
			char where[32];

			snprintf(where, sizeof(where),
				 "thread block %" PRIu32, i);
			v = memfd_load64(block(m, i) + hoff);
			if (memfd_counter_ok(m, where,
					     drops ? "events dropped" :
						     "return probes not "
						     "wrapped",
					     v, *keep, 1))
				*keep = v;
			else
				memfd_block_bad(m, i);
		}
		sum += *keep;
	}
	return sum;
}

uint64_t memfd_ring_dropped(const struct memfd *m)
{
	return sum_counter(m, true);
}

uint64_t memfd_shadow_lost(const struct memfd *m)
{
	return sum_counter(m, false);
}
