/*
 * Maps of the kernel side: reading BPF maps with per-CPU values merged,
 * clear(), zero(), the printing of maps through output.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include "cg.h"
#include "child.h"
#include "compile.h"
#include "format.h"
#include "exitwatch.h"
#include "kernel.h"
#include "output.h"
#include "probes.h"
#include "sema.h"
#include "tracepoint.h"
#include "util.h"
#include "xmap.h"
#include "kernel_int.h"

/* ---- maps ---------------------------------------------------------- */

int kernel_map_fd(const struct kernel *k, int map)
{
	if (!k->map_fds || map < 0 || map >= k->obj->nmaps)
		return -1;
	return k->map_fds[map];
}

int kernel_own_map_fd(const struct kernel *k, const char *name)
{
	return k->bo ? bpf_object__find_map_fd_by_name(k->bo, name) : -1;
}

static enum type_kind kernel_agg_kind(const struct cg_map *m)
{
	return m->value_type ? m->value_type->kind : TY_INT;
}

/* Merge one CPU's value into acc (both of m->value_size bytes). */
static void kernel_merge(const struct cg_map *m, void *acc, const void *v,
			 bool first)
{
	const struct type *t = m->value_type;
	bool sgn = t && t->is_signed;
	uint64_t *a = acc;
	const uint64_t *b = v;

	if (first) {
		memcpy(acc, v, m->value_size);
		return;
	}
	switch (kernel_agg_kind(m)) {
	case TY_COUNT:
	case TY_SUM:
	case TY_HIST:
	case TY_LHIST:
		a[0] += b[0];
		break;
	case TY_AVG:
	case TY_STATS:
		a[0] += b[0];
		a[1] += b[1];
		break;
	case TY_TSERIES:
		tseries_cell_merge(t, acc, v);
		break;
	case TY_MIN:
	case TY_MAX: {
		bool take;

		if (!b[1])
			break;
		if (!a[1]) {
			a[0] = b[0];
			a[1] = 1;
			break;
		}
		if (kernel_agg_kind(m) == TY_MIN)
			take = sgn ? (int64_t)b[0] < (int64_t)a[0] :
				     b[0] < a[0];
		else
			take = sgn ? (int64_t)b[0] > (int64_t)a[0] :
				     b[0] > a[0];
		if (take)
			a[0] = b[0];
		break;
	}
	default:
		break;
	}
}

void kernel_merge_value(const struct cg_map *m, void *acc, const void *v)
{
	kernel_merge(m, acc, v, false);
}

void kernel_set_map_hook(struct kernel *k, kernel_map_hook_fn fn, void *ctx)
{
	k->map_hook = fn;
	k->map_hook_ctx = ctx;
}

void kernel_set_source(struct kernel *k, kernel_source_fn fn, void *ctx)
{
	k->source = fn;
	k->source_ctx = ctx;
}

void kernel_set_compile(struct kernel *k, struct compile *c)
{
	k->c = c;
}

int kernel_map_read(struct kernel *k, int map, kernel_entry_fn fn, void *ctx)
{
	if (k->source)
		return k->source(k->source_ctx, map, fn, ctx);
	return kernel_map_read_kernel(k, map, fn, ctx);
}

/*
 * A hash map read BPF_MAP_LOOKUP_BATCH by BPF_MAP_LOOKUP_BATCH (kernel
 * 5.6; two system calls per key otherwise, which costs --metrics' scrapes
 * of big maps most of their time): -EOPNOTSUPP when the map or the kernel
 * has no batches (nothing was read then).
 */
#define KERNEL_BATCH 1024

static int kernel_map_read_batch(struct kernel *k, const struct cg_map *m,
				 int fd, kernel_entry_fn fn, void *ctx)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	size_t vsz = (m->value_size + 7) & ~(size_t)7;
	int ncpu = m->percpu ? k->ncpus : 1;
	/* the kernel packs values at value_size bytes, per-CPU ones at
	 * 8-byte multiples per CPU */
	size_t stride = m->percpu ? vsz * ncpu : m->value_size;
	size_t tok = m->key_size > 8 ? m->key_size : 8;
	__u32 cap = KERNEL_BATCH, n;
	unsigned char *keys, *vals, *acc, *in, *out;
	bool first = true, more = true;
	int err = 0;

	keys = xcalloc(cap, m->key_size);
	vals = xcalloc(cap, stride);
	acc = xcalloc(1, vsz);
	in = xcalloc(1, tok);
	out = xcalloc(1, tok);
	while (more && !err) {
		n = cap;
		if (bpf_map_lookup_batch(fd, first ? NULL : in, out, keys, vals,
					 &n, &opts)) {
			if (errno == ENOSPC && n == 0 && cap < (1u << 20)) {
				/* a bucket holds more than the batch */
				cap *= 4;
				keys = xrealloc(keys, (size_t)cap * m->key_size);
				vals = xrealloc(vals, (size_t)cap * stride);
				continue;
			}
			if (errno != ENOENT) {
				err = first ? -EOPNOTSUPP : -errno;
				break;
			}
			more = false;	/* the last batch */
		}
		first = false;
		for (__u32 i = 0; i < n && !err; i++) {
			for (int c = 0; c < ncpu; c++)
				kernel_merge(m, acc,
					     vals + (size_t)i * stride + c * vsz,
					     c == 0);
			err = fn(keys + (size_t)i * m->key_size, acc, ctx);
		}
		memcpy(in, out, tok);
	}
	free(keys);
	free(vals);
	free(acc);
	free(in);
	free(out);
	return err;
}

int kernel_map_read_kernel(struct kernel *k, int map, kernel_entry_fn fn,
			   void *ctx)
{
	const struct cg_map *m = &k->obj->maps[map];
	int fd = kernel_map_fd(k, map);
	size_t vsz = (m->value_size + 7) & ~(size_t)7;
	int ncpu = m->percpu ? k->ncpus : 1;
	unsigned char *key = NULL, *next, *vals, *acc;
	int err = 0;

	if (fd < 0)
		return -EBADF;
	if (m->xmap) {	/* a table user-mode probes share (xmap.h) */
		uint64_t bad = 0;

		err = xmap_foreach(fd, m, fn, ctx, &bad);
		if (bad)
			fprintf(stderr, "WARNING: ignoring %llu slots of %s "
				"that the target's probe code cannot have "
				"written\n", (unsigned long long)bad, m->name);
		return err;
	}
	/* a batch of keys per system call where the kernel has it */
	err = kernel_map_read_batch(k, m, fd, fn, ctx);
	if (err != -EOPNOTSUPP)
		return err;
	err = 0;
	next = xcalloc(1, m->key_size);
	vals = xcalloc(ncpu, vsz);
	acc = xcalloc(1, vsz);
	while (!bpf_map_get_next_key(fd, key, next)) {
		if (!key)
			key = xcalloc(1, m->key_size);
		memcpy(key, next, m->key_size);
		if (bpf_map_lookup_elem(fd, key, vals))
			continue;	/* deleted meanwhile */
		for (int i = 0; i < ncpu; i++)
			kernel_merge(m, acc, vals + i * vsz, i == 0);
		err = fn(key, acc, ctx);
		if (err)
			break;
	}
	free(key);
	free(next);
	free(vals);
	free(acc);
	return err;
}

int kernel_map_clear(struct kernel *k, int map)
{
	const struct cg_map *m = &k->obj->maps[map];
	int fd = kernel_map_fd(k, map);
	unsigned char *key;

	if (fd < 0)
		return -EBADF;
	if (m->xmap)
		return xmap_clear(fd, m, false);
	key = xcalloc(1, m->key_size);
	while (!bpf_map_get_next_key(fd, NULL, key))
		if (bpf_map_delete_elem(fd, key))
			break;
	free(key);
	return 0;
}

void kernel_map_clear_both(struct kernel *k, int map, const void *own)
{
	kernel_map_clear(k, map);
	if (k->map_hook)
		k->map_hook(k->map_hook_ctx, CG_EV_CLEAR, map, own);
}

void kernel_clear_all_maps(struct kernel *k)
{
	for (int i = 0; i < k->obj->nmaps; i++)
		kernel_map_clear_both(k, i, NULL);
}

int kernel_map_zero(struct kernel *k, int map)
{
	const struct cg_map *m = &k->obj->maps[map];
	int fd = kernel_map_fd(k, map);
	size_t vsz = (m->value_size + 7) & ~(size_t)7;
	int ncpu = m->percpu ? k->ncpus : 1;
	unsigned char *key = NULL, *next, *zero;

	if (fd < 0)
		return -EBADF;
	if (m->xmap)
		return xmap_clear(fd, m, true);
	next = xcalloc(1, m->key_size);
	zero = xcalloc(ncpu, vsz);
	while (!bpf_map_get_next_key(fd, key, next)) {
		if (!key)
			key = xcalloc(1, m->key_size);
		memcpy(key, next, m->key_size);
		bpf_map_update_elem(fd, key, zero, BPF_EXIST);
	}
	free(key);
	free(next);
	free(zero);
	return 0;
}

/* Collecting a map into output's representation. */
struct kernel_collect {
	const struct cg_map *m;
	size_t ukey;		/* user key bytes (0 keyless) */
	size_t vsz;		/* bytes of an output value */
	size_t nb;		/* buckets (hist/lhist/tseries) */
	unsigned char **keys;
	unsigned char **vals;
	size_t n, cap;
};

/* A tseries() bucket's merged cell into its key's struct out_tseries[]
 * (output.h). */
static int kernel_collect_tseries(struct kernel_collect *kc, const void *key,
				  uint64_t bucket, const void *value)
{
	struct out_tseries *o;
	size_t i;

	for (i = 0; i < kc->n; i++)
		if (!kc->ukey || !memcmp(kc->keys[i], key, kc->ukey))
			break;
	if (i == kc->n) {
		if (kc->n == kc->cap) {
			kc->cap = kc->cap ? 2 * kc->cap : 64;
			kc->keys = xrealloc(kc->keys,
					    kc->cap * sizeof(*kc->keys));
			kc->vals = xrealloc(kc->vals,
					    kc->cap * sizeof(*kc->vals));
		}
		kc->keys[i] = xcalloc(1, kc->ukey ? kc->ukey : 1);
		memcpy(kc->keys[i], key, kc->ukey);
		kc->vals[i] = xcalloc(1, kc->vsz);
		kc->n++;
	}
	o = (struct out_tseries *)kc->vals[i] + bucket;
	if (o->set)
		tseries_cell_merge(kc->m->value_type, &o->cell, value);
	else
		memcpy(&o->cell, value, sizeof(o->cell));
	o->set = 1;
	return 0;
}

static int kernel_collect_fn(const void *key, const void *value, void *ctx)
{
	struct kernel_collect *kc = ctx;
	const struct cg_map *m = kc->m;
	size_t i = kc->n;

	if (m->bucketed) {
		uint64_t bucket;

		memcpy(&bucket, (const char *)key + m->key_size - 8, 8);
		if (bucket >= kc->nb)
			return 0;
		if (kernel_agg_kind(m) == TY_TSERIES)
			return kernel_collect_tseries(kc, key, bucket, value);
		for (i = 0; i < kc->n; i++)
			if (!kc->ukey || !memcmp(kc->keys[i], key, kc->ukey))
				break;
		if (i == kc->n) {
			if (kc->n == kc->cap)
				goto grow;
			goto add;
		}
		((uint64_t *)kc->vals[i])[bucket] += *(const uint64_t *)value;
		return 0;
	}
	if (kc->n == kc->cap)
		goto grow;
	goto add;
grow:
	kc->cap = kc->cap ? 2 * kc->cap : 64;
	kc->keys = xrealloc(kc->keys, kc->cap * sizeof(*kc->keys));
	kc->vals = xrealloc(kc->vals, kc->cap * sizeof(*kc->vals));
add:
	kc->keys[i] = xcalloc(1, kc->ukey ? kc->ukey : 1);
	memcpy(kc->keys[i], key, kc->ukey);
	kc->vals[i] = xcalloc(1, kc->vsz);
	if (m->bucketed) {
		uint64_t bucket;

		memcpy(&bucket, (const char *)key + m->key_size - 8, 8);
		((uint64_t *)kc->vals[i])[bucket] = *(const uint64_t *)value;
	} else {
		memcpy(kc->vals[i], value,
		       kc->vsz < m->value_size ? kc->vsz : m->value_size);
	}
	kc->n++;
	return 0;
}

static void kernel_collect_free(struct kernel_collect *kc)
{
	for (size_t i = 0; i < kc->n; i++) {
		free(kc->keys[i]);
		free(kc->vals[i]);
	}
	free(kc->keys);
	free(kc->vals);
}

/* Read map i into om (entries malloc'ed; free with kernel_out_map_free). */
static int kernel_out_map(struct kernel *k, int i, struct out_map *om,
			  struct kernel_collect *kc)
{
	const struct cg_map *m = &k->obj->maps[i];
	struct sema_map *sm = k->c->sema->maps[i];
	const struct type *kt, *vt;
	struct out_entry *e;
	int err;

	memset(kc, 0, sizeof(*kc));
	kc->m = m;
	kc->ukey = m->key_type ? m->key_type->size : 0;
	if (kernel_agg_kind(m) == TY_TSERIES) {
		kc->nb = (size_t)m->value_type->ts_num;
		kc->vsz = kc->nb * sizeof(struct out_tseries);
	} else if (m->bucketed) {
		kc->nb = out_nbuckets(m->value_type);
		kc->vsz = kc->nb * 8;
	} else {
		kc->vsz = m->value_size;
	}
	err = kernel_map_read(k, i, kernel_collect_fn, kc);
	kt = m->key_type ? kernel_display_type(k, m->key_type) : NULL;
	vt = m->bucketed ? m->value_type :
			   kernel_display_type(k, m->value_type);
	for (size_t j = 0; j < kc->n; j++) {
		void *tmp = NULL;

		if (kt && kt != m->key_type) {
			k->display_key = true;
			kernel_display(k, m->key_type, kt, kc->keys[j], &tmp);
			k->display_key = false;
			free(kc->keys[j]);
			kc->keys[j] = tmp;
			tmp = NULL;
		}
		if (vt != m->value_type) {
			kernel_display(k, m->value_type, vt, kc->vals[j],
				       &tmp);
			free(kc->vals[j]);
			kc->vals[j] = tmp;
		}
	}
	e = xcalloc(kc->n + 1, sizeof(*e));
	for (size_t j = 0; j < kc->n; j++) {
		e[j].key = kc->ukey ? kc->keys[j] : NULL;
		e[j].value = kc->vals[j];
	}
	*om = (struct out_map){
		.name = m->name,
		.key_type = kt,
		.nkeys = sm->nkeys,
		.value_type = vt,
		.entries = e,
		.nentries = kc->n,
	};
	return err;
}

int kernel_print_map(struct kernel *k, int i, uint64_t top,
			    uint64_t div)
{
	struct kernel_collect kc;
	struct out_map om;
	int err = kernel_out_map(k, i, &om, &kc);

	if (!err)
		err = out_print_map(&k->out, &om, top, div);
	free((void *)om.entries);
	kernel_collect_free(&kc);
	return err;
}

int kernel_print_all_maps(struct kernel *k, bool at_exit)
{
	int n = k->obj->nmaps;
	struct kernel_collect *kc = xcalloc(n + 1, sizeof(*kc));
	struct out_map *om = xcalloc(n + 1, sizeof(*om));
	const struct out_map **pm = xcalloc(n + 1, sizeof(*pm));
	int err = 0;

	for (int i = 0; i < n && !err; i++) {
		err = kernel_out_map(k, i, &om[i], &kc[i]);
		pm[i] = &om[i];
	}
	if (!err)
		err = at_exit ? out_print_maps_at_exit(&k->out, pm, n) :
				out_print_maps(&k->out, pm, n);
	for (int i = 0; i < n; i++) {
		free((void *)om[i].entries);
		kernel_collect_free(&kc[i]);
	}
	free(kc);
	free(om);
	free(pm);
	return err;
}

int kernel_for_each_map(struct kernel *k, kernel_out_map_fn fn, void *ctx)
{
	int err = 0;

	for (int i = 0; i < k->obj->nmaps && !err; i++) {
		struct kernel_collect kc;
		struct out_map om;

		err = kernel_out_map(k, i, &om, &kc);
		if (!err)
			err = fn(ctx, i, &om, &k->out);
		free((void *)om.entries);
		kernel_collect_free(&kc);
	}
	return err;
}
