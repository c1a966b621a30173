/*
 * Maps of the combined run read from both domains: the kernel's BPF maps
 * and the per-thread blocks of the user-mode probes, merged like per-CPU
 * values (merge.h); clear()/zero()/delete() reaching both sides.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>
#include "ast.h"
#include "cg.h"
#include "child.h"
#include "exitwatch.h"
#include "format.h"
#include "guard.h"
#include "kernel.h"
#include "merge.h"
#include "native.h"
#include "output.h"
#include "probes.h"
#include "run.h"
#include "sema.h"
#include "user.h"
#include "util.h"
#include "run_int.h"

const struct native_map *run_native_map(const struct run *r, int map)
{
	const char *name = r->kobj->maps[map].bpf_name;

	for (int i = 0; i < r->nobj->nnative_maps; i++)
		if (!strcmp(r->nobj->native_maps[i].name, name))
			return &r->nobj->native_maps[i];
	return NULL;
}

/* One map's entries from both sides, merged like per-CPU values. */
struct run_entries {
	const struct cg_map *m;
	size_t ksz, vsz;
	unsigned char *keys, *vals;
	size_t n, cap;
	size_t *hash;		/* open addressing over entries + 1 */
	size_t nhash;
	/* `probe` in the key: a native program's id -> the kernel
	 * program's of the same name (run_probe_ids()), or NULL */
	int *probe_id;
	int nk, nn;
};

static uint64_t run_hash(const void *key, size_t n)
{
	const unsigned char *p = key;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static void run_entries_rehash(struct run_entries *e)
{
	free(e->hash);
	e->nhash = e->nhash ? 2 * e->nhash : 256;
	e->hash = xcalloc(e->nhash, sizeof(*e->hash));
	for (size_t i = 0; i < e->n; i++) {
		size_t h = run_hash(e->keys + i * e->ksz, e->ksz) &
			   (e->nhash - 1);

		while (e->hash[h])
			h = (h + 1) & (e->nhash - 1);
		e->hash[h] = i + 1;
	}
}

static bool run_has_probe(const struct type *t)
{
	if (t && t->kind == TY_TUPLE)
		for (int i = 0; i < t->nfields; i++)
			if (run_has_probe(t->fields[i].type))
				return true;
	return t && t->kind == TY_PROBE;
}

/*
 * A probe system-wide runs in both domains under one name: the kernel's
 * program before a process is taken, the native one after.  `probe` is
 * the id of the program that wrote it (cg.h TY_PROBE): by native id, the
 * id of the kernel program of the same name (-1: none), so that its
 * entries merge into the one key bpftrace prints.  NULL if no key holds
 * `probe`.
 */
static int *run_probe_ids(const struct run *r, const struct cg_map *m)
{
	int nk = r->kobj->nprogs, nn = r->nobj ? r->nobj->nprogs : 0;
	int *ids;

	if (!nn || !run_has_probe(m->key_type))
		return NULL;
	ids = xcalloc(nn, sizeof(*ids));
	for (int i = 0; i < nn; i++) {
		const char *name = r->nobj->progs[i].probe_name;

		ids[i] = -1;
		for (int j = 0; name && j < nk && ids[i] < 0; j++)
			if (r->kobj->progs[j].probe_name &&
			    !strcmp(r->kobj->progs[j].probe_name, name))
				ids[i] = j;
	}
	return ids;
}

/* The `probe` fields of key (of type t) as run_probe_ids() maps them. */
static void run_probe_key(const struct run_entries *e, const struct type *t,
			  unsigned char *key)
{
	uint64_t id;

	if (t->kind == TY_TUPLE) {
		for (int i = 0; i < t->nfields; i++)
			run_probe_key(e, t->fields[i].type,
				      key + t->fields[i].offset);
		return;
	}
	if (t->kind != TY_PROBE)
		return;
	memcpy(&id, key, sizeof(id));
	if (id >= (uint64_t)e->nk && id - e->nk < (uint64_t)e->nn &&
	    e->probe_id[id - e->nk] >= 0) {
		id = (uint64_t)e->probe_id[id - e->nk];
		memcpy(key, &id, sizeof(id));
	}
}

static int run_entries_add(const void *key, const void *value, void *ctx)
{
	struct run_entries *e = ctx;
	unsigned char *canon = NULL;
	size_t h;

	if (e->probe_id) {
		canon = xmalloc(e->ksz);
		memcpy(canon, key, e->ksz);
		run_probe_key(e, e->m->key_type, canon);
		key = canon;
	}

	if (2 * (e->n + 1) > e->nhash)
		run_entries_rehash(e);
	h = run_hash(key, e->ksz) & (e->nhash - 1);
	while (e->hash[h]) {
		size_t i = e->hash[h] - 1;

		if (!memcmp(e->keys + i * e->ksz, key, e->ksz)) {
			kernel_merge_value(e->m, e->vals + i * e->vsz, value);
			free(canon);
			return 0;
		}
		h = (h + 1) & (e->nhash - 1);
	}
	if (e->n == e->cap) {
		e->cap = e->cap ? 2 * e->cap : 64;
		e->keys = xrealloc(e->keys, e->cap * e->ksz);
		e->vals = xrealloc(e->vals, e->cap * e->vsz);
	}
	memcpy(e->keys + e->n * e->ksz, key, e->ksz);
	memset(e->vals + e->n * e->vsz, 0, e->vsz);
	memcpy(e->vals + e->n * e->vsz, value, e->m->value_size);
	e->hash[h] = ++e->n;
	free(canon);
	return 0;
}

static bool run_nonzero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return true;
	return false;
}

/* Word w of a FIXED value of m: added to (by the probe) or stored? */
static bool run_additive(const struct cg_map *m, uint32_t w)
{
	switch (m->value_type ? m->value_type->kind : TY_INT) {
	case TY_COUNT:
	case TY_SUM:		/* word 1: the presence word, stored */
		return w == 0;
	case TY_AVG:
	case TY_STATS:
		return w < 2;
	default:		/* min/max: { value, set } */
		return false;
	}
}

struct run_block_read {
	struct run_entries *e;
	const struct native_map *nm;
	struct run_agg *a;
	uint32_t base;		/* the process's first merged block */
};

/* Block i's words of a FIXED/ARRAY value, less the baseline. */
static void run_unbase(const struct run_agg *a, const struct cg_map *m,
		       bool array, uint32_t block, uint64_t *v, uint32_t n)
{
	if (!a || block >= a->nblocks)
		return;
	for (uint32_t w = 0; w < n && w < a->nwords; w++)
		if (array || run_additive(m, w))
			v[w] -= a->base[(uint64_t)block * a->nwords + w];
}

static int run_block_fixed(const void *data, uint32_t block, void *arg)
{
	struct run_block_read *b = arg;
	const struct cg_map *m = b->e->m;
	uint64_t key[8] = { 0 }, v[64];
	bool sum = m->value_type && m->value_type->kind == TY_SUM;

	if (b->e->ksz > sizeof(key) || b->nm->bytes > sizeof(v) ||
	    m->value_size > b->nm->bytes || (sum && b->nm->bytes < 16))
		return -EINVAL;
	memcpy(v, data, b->nm->bytes);
	run_unbase(b->a, m, false, b->base + block, v, b->nm->bytes / 8);
	/* sum(0) leaves the value 0: its presence word says it ran */
	if (run_nonzero(v, m->value_size) || (sum && v[1]))
		run_entries_add(key, v, b->e);
	return 0;
}

static int run_block_array(const void *data, uint32_t block, void *arg)
{
	struct run_block_read *b = arg;
	const uint64_t *d = data;

	if (b->e->ksz != 8)
		return -EINVAL;
	block += b->base;
	for (uint64_t i = 0; i < b->nm->nslots; i++) {
		uint64_t v = d[i];

		if (b->a && block < b->a->nblocks && i < b->a->nwords)
			v -= b->a->base[(uint64_t)block * b->a->nwords + i];
		if (v)
			run_entries_add(&i, &v, b->e);
	}
	return 0;
}

static int run_block_htab(const void *key, const void *val, uint32_t block,
			  void *arg)
{
	(void)block;
	return run_entries_add(key, val, arg);
}

/* A process's hash table of a map (r->u's), into e. */
static int run_map_source_tab(struct run *r, const struct native_map *nm,
			      struct run_entries *e)
{
	struct memfd_htab t = { .off = nm->off, .nslots = nm->nslots,
				.key_size = nm->key_size,
				.val_size = nm->val_size };

	if (nm->kind == NATIVE_MAP_HTAB)
		/* and the threads' own entries in their slots */
		return memfd_htab_foreach(user_memfd(r->u), &t,
					  run_block_htab, e) ?:
		       run_slot_read(r, nm, run_entries_add, e);
	if (nm->kind == NATIVE_MAP_SHARED)
		return memfd_shtab_foreach(user_memfd(r->u),
					   &run_shtab_of(nm), run_entries_add,
					   e);
	return 0;
}

/* kernel_map_read() through the run: the kernel's values and the user's. */
int run_map_source(void *ctx, int map, kernel_entry_fn fn, void *fctx)
{
	struct run *r = ctx;
	const struct cg_map *m = &r->kobj->maps[map];
	const struct native_map *nm = r->nfleet ? run_native_map(r, map) :
						  NULL;
	struct run_entries e = { .m = m, .ksz = m->key_size,
				 .vsz = rt_align8(m->value_size) };
	struct run_block_read b = { .e = &e, .nm = nm,
				    .a = r->agg ? &r->agg[map] : NULL };
	struct run_user_cursor keep = run_user_keep(r);
	uint64_t zero[64] = { 0 };
	int err;

	e.probe_id = run_probe_ids(r, m);
	e.nk = r->kobj->nprogs;
	e.nn = r->nobj ? r->nobj->nprogs : 0;
	run_entries_rehash(&e);
	err = kernel_map_read_kernel(r->k, map, run_entries_add, &e);
	if (!err && nm && nm->kind == NATIVE_MAP_FIXED) {
		run_for_each_user(r, i) {
			b.base = r->ubase;
			err = err ?: user_read_maps(r->u, nm->off, nm->bytes,
						    run_block_fixed, &b);
		}
		/* zero() kept the key: present with a zero value */
		if (!err && b.a && b.a->zeroed &&
		    m->value_size <= sizeof(zero))
			run_entries_add(zero, zero, &e);
	} else if (!err && nm && nm->kind == NATIVE_MAP_ARRAY) {
		run_for_each_user(r, i) {
			b.base = r->ubase;
			err = err ?: user_read_maps(r->u, nm->off, nm->bytes,
						    run_block_array, &b);
		}
		for (uint64_t i = 0; !err && b.a && b.a->present &&
				     i < nm->nslots;
		     i++)
			if (b.a->present[i])
				run_entries_add(&i, zero, &e);
	} else if (!err && nm) {
		run_for_each_user(r, i)
			err = err ?: run_map_source_tab(r, nm, &e);
	}
	run_user_back(r, keep);
	for (size_t i = 0; !err && i < e.n; i++)
		err = fn(e.keys + i * e.ksz, e.vals + i * e.vsz, fctx);
	free(e.keys);
	free(e.vals);
	free(e.probe_id);
	free(e.hash);
	return err;
}

/*
 * A keyless aggregation's clear() or zero() on the user side: the
 * baselines of additive words move to the current values (run_agg),
 * min/max values and sum's presence word are stored over (a racing
 * update may survive). zero() keeps what was present. own: the values
 * of the thread whose clear() or zero() this is, at the call (the
 * event's block, r->ev_block), or NULL: that thread's baselines move to
 * them, not to what it counted since.
 */
static void run_agg_reset(struct run *r, int map, const struct native_map *nm,
			  bool zero, const uint64_t *own)
{
	struct memfd *mf = user_memfd(r->u);
	const struct cg_map *m = &r->kobj->maps[map];
	struct run_agg *a = &r->agg[map];
	bool array = nm->kind == NATIVE_MAP_ARRAY;
	uint32_t n = memfd_nblocks_used(mf), nw = nm->bytes / 8;
	uint32_t b0 = r->ubase;
	uint64_t v[64];

	if (array ? nw != nm->nslots : nw > 64)
		return;
	if (array && !a->present)
		a->present = xcalloc(nm->nslots, sizeof(bool));
	n += b0;	/* merged numbering: this process's blocks at b0 */
	if (n > a->nblocks) {
		a->base = xrealloc(a->base, (uint64_t)n * nw * 8);
		memset(a->base + (uint64_t)a->nblocks * nw, 0,
		       (uint64_t)(n - a->nblocks) * nw * 8);
		a->nblocks = n;
		a->nwords = nw;
	}
	for (uint32_t i = b0; i < n; i++) {
		uint64_t *base = a->base + (uint64_t)i * nw;

		for (uint32_t w = 0; w < nw; w++) {
			uint64_t cur, d;

			if (memfd_map_read(mf, i - b0, nm->off + 8 * w, &cur,
					   8))
				return;
			/* as cg_agg_own_size(): the value, sum's presence */
			if (own && (int64_t)i == r->ev_block && !array &&
			    w < (m->value_size + 7) / 8 +
					(m->value_type &&
					 m->value_type->kind == TY_SUM))
				cur = own[w];
			d = cur - base[w];
			if (!array)
				v[w] = d;
			else if (zero && d)
				a->present[w] = true;
			if (array || run_additive(m, w))
				base[w] = cur;
		}
		if (!array && zero &&
		    (run_nonzero(v, m->value_size) ||
		     (m->value_type && m->value_type->kind == TY_SUM && v[1])))
			a->zeroed = true;
	}
	if (!zero && !b0) {
		a->zeroed = false;
		if (array)
			memset(a->present, 0, nm->nslots * sizeof(bool));
	}
	/* the words that are stored, not added to; the calling thread
	 * reset its own (cg_map_event()) and may have stored since */
	for (uint32_t w = 0; !array && w < nw; w++)
		for (uint32_t i = b0; !run_additive(m, w) && i < n; i++)
			if (!own || (int64_t)i != r->ev_block)
				memfd_map_zero_block(mf, i - b0,
						     nm->off + 8 * w, 8);
}

/*
 * clear(), zero() and a user-mode probe's delete() of a map user-mode
 * probes write, from events of either side (kernel_set_map_hook(); the
 * kernel's map was done by then): ubt empties or zeroes the map's shared
 * table, or every thread's values, itself, in the order of the events
 * of the probe's side, as bpftrace does it asynchronously. A delete()
 * already removed the key from its own thread's table (which the thread
 * may have filled again since): the others only, asynchronously.
 */
static void run_map_hook_one(struct run *r, int kind, int map,
			     const void *key)
{
	struct memfd *m = user_memfd(r->u);
	const struct native_map *nm = run_native_map(r, map);
	struct memfd_htab t;

	t = (struct memfd_htab){ .off = nm->off, .nslots = nm->nslots,
				 .key_size = nm->key_size,
				 .val_size = nm->val_size };
	switch (nm->kind) {
	case NATIVE_MAP_SHARED:
		if (kind == CG_EV_CLEAR)
			memfd_shtab_clear(m, &run_shtab_of(nm));
		else if (kind == CG_EV_ZERO)
			memfd_shtab_zero(m, &run_shtab_of(nm));
		break;
	case NATIVE_MAP_FIXED:
	case NATIVE_MAP_ARRAY:
		if (kind == CG_EV_CLEAR || kind == CG_EV_ZERO)
			run_agg_reset(r, map, nm, kind == CG_EV_ZERO, key);
		break;
	case NATIVE_MAP_HTAB:
		if (kind == CG_EV_CLEAR)
			memfd_htab_clear(m, &t);
		else if (kind == CG_EV_ZERO)
			memfd_htab_zero(m, &t);
		else if (kind == CG_EV_DELETE && key) {
			/* the event's own process and block */
			if (r->ev_block >= r->ubase &&
			    r->ev_block - r->ubase < run_fleet_stride(r))
				t.skip = (uint32_t)(r->ev_block - r->ubase) + 1;
			memfd_htab_delete(m, &t, key);
		}
		break;
	case NATIVE_MAP_XMAP:	/* never cleared, zeroed (place_xmap.c) */
		break;
	}
}

void run_map_hook(void *ctx, int kind, int map, const void *key)
{
	struct run *r = ctx;

	struct run_user_cursor keep = run_user_keep(r);

	if (map < 0 || map >= r->kobj->nmaps || !run_native_map(r, map))
		return;
	run_for_each_user(r, i)
		run_map_hook_one(r, kind, map, key);
	run_user_back(r, keep);
}
