/*
 * The kernel side of the shim: libbpf load and attach, BEGIN/END through
 * BPF_PROG_TEST_RUN, interval/profile through perf events, the ring
 * buffer, map read-out with per-CPU values merged, and the run loop
 * (exit(), Ctrl-C, the -c child, the -p process).
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

/* A concrete attach target of one program. */
struct kernel_target {
	int prog;		/* cg_prog index */
	struct probes_match m;
};

struct kernel {
	const struct cg_object *obj;
	struct compile *c;
	struct arena arena;
	const struct kernel_opts *opts;
	struct out out;
	struct bpf_object *bo;
	struct bpf_program **progs;	/* by cg_prog index */
	bool *multi;		/* by cg_prog index: uprobe_multi links */
	int *map_fds;
	int globals_fd;
	int lost_fd;
	int full_fd;		/* cg_object.full_name, -1 if none */
	uint64_t lost;		/* losses reported so far */
	struct ring_buffer *rb;
	struct bpf_link **links;
	int nlinks, caplinks;
	int *pfds;		/* perf event fds */
	int npfds, cappfds;
	struct kernel_target *targets;
	int ntargets;
	struct fmt_string *fmts;	/* by event index */
	const struct type **ev_types;	/* by event: the arguments' type
					 * for output (kernel_display_type) */
	int ncpus;
	bool exiting;		/* exit() seen */
	bool in_end;		/* running END: events are printed again */
	kernel_source_fn source;	/* shim/run.c: maps of both sides */
	kernel_event_fn hook;	/* shim/run.c: records to merge, or NULL */
	void *hook_ctx;
	const struct cg_prog *dprogs;	/* for probe/func values, or NULL */
	int ndprogs;
	void *source_ctx;
	kernel_map_hook_fn map_hook;	/* shim/run.c: the user side too */
	void *map_hook_ctx;
	int err;
};

static int kernel_verbose;
static volatile sig_atomic_t kernel_sigint;

/*
 * A verifier log can be hundreds of thousands of lines: without -v keep
 * its head and its tail, where the verifier says why it gave up.
 */
#define KERNEL_LOG_HEAD 30
#define KERNEL_LOG_TAIL 60

static void kernel_print_log(const char *msg)
{
	const char *p = msg, *tail;
	int lines = 0, n;

	for (p = msg; (p = strchr(p, '\n')); p++)
		lines++;
	if (kernel_verbose || lines <= KERNEL_LOG_HEAD + KERNEL_LOG_TAIL) {
		fputs(msg, stderr);
		return;
	}
	for (p = msg, n = 0; n < KERNEL_LOG_HEAD; n++)
		p = strchr(p, '\n') + 1;
	fwrite(msg, 1, p - msg, stderr);
	fprintf(stderr, "... (%d lines, all of them with -v) ...\n",
		lines - KERNEL_LOG_HEAD - KERNEL_LOG_TAIL);
	for (tail = msg + strlen(msg), n = 0; tail > msg; tail--)
		if (tail[-1] == '\n' && ++n > KERNEL_LOG_TAIL)
			break;
	fputs(tail, stderr);
}

static int kernel_libbpf_print(enum libbpf_print_level level,
			       const char *fmt, va_list ap)
{
	char *msg = NULL;
	int n;

	if (level == LIBBPF_DEBUG && kernel_verbose < 2)
		return 0;
	if (level == LIBBPF_INFO && kernel_verbose < 1)
		return 0;
	n = vasprintf(&msg, fmt, ap);
	if (n < 0)
		return n;
	if (strstr(msg, "-- BEGIN PROG LOAD LOG --"))
		kernel_print_log(msg);
	else
		fputs(msg, stderr);
	free(msg);
	return n;
}

void kernel_set_verbose(int verbose)
{
	kernel_verbose = verbose;
	libbpf_set_print(kernel_libbpf_print);
}

/*
 * The first SIGINT/SIGTERM ends the run the ordinary way; a second one
 * (whatever ubt waits for meanwhile) ends ubt at once.
 */
static void kernel_on_signal(int sig)
{
	if (kernel_sigint) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	kernel_sigint = 1;
}

/* ---- values the BPF side writes as ids (cg.h) ---------------------- */

#define KERNEL_NAME_SIZE 256

static bool kernel_needs_display(const struct type *t)
{
	if (!t)
		return false;
	if (t->kind == TY_PROBE || t->kind == TY_USYM)
		return true;
	if (t->kind == TY_TUPLE)
		for (int i = 0; i < t->nfields; i++)
			if (kernel_needs_display(t->fields[i].type))
				return true;
	return false;
}

static size_t kernel_align(const struct type *t)
{
	size_t a = 1;

	switch (t->kind) {
	case TY_STRING:
	case TY_BUFFER:
		return 1;
	case TY_TUPLE:
		for (int i = 0; i < t->nfields; i++) {
			size_t f = kernel_align(t->fields[i].type);

			if (f > a)
				a = f;
		}
		return a;
	default:
		return t->size >= 8 ? 8 : (t->size ? t->size : 1);
	}
}

/* The type output is given: probe and usym values become strings. */
static const struct type *kernel_display_type(struct kernel *k,
					      const struct type *t)
{
	struct type *d;
	size_t off = 0, al;

	if (!kernel_needs_display(t))
		return t;
	if (t->kind != TY_TUPLE)
		return type_string(&k->arena, KERNEL_NAME_SIZE);
	d = arena_alloc(&k->arena, sizeof(*d));
	*d = *t;
	d->fields = arena_alloc(&k->arena, t->nfields * sizeof(*d->fields));
	for (int i = 0; i < t->nfields; i++) {
		const struct type *ft = kernel_display_type(k,
							    t->fields[i].type);

		d->fields[i] = t->fields[i];
		d->fields[i].type = (struct type *)ft;
		al = kernel_align(ft);
		off = (off + al - 1) / al * al;
		d->fields[i].offset = off;
		off += ft->size;
	}
	al = kernel_align(d);
	d->size = (off + al - 1) / al * al;
	return d;
}

/* usym(): address -> "symbol+offset" through /proc/PID/maps, else hex */
static const struct cg_prog *kernel_progs(const struct kernel *k)
{
	return k->dprogs ? k->dprogs : k->obj->progs;
}

static int kernel_nprogs(const struct kernel *k)
{
	return k->dprogs ? k->ndprogs : k->obj->nprogs;
}

void kernel_set_display_progs(struct kernel *k, const struct cg_prog *progs,
			      int n)
{
	k->dprogs = progs;
	k->ndprogs = n;
}

static void kernel_usym_name(struct kernel *k, uint64_t addr, uint32_t pid,
			     char *buf, size_t n)
{
	char path[64], line[512], file[PATH_MAX];
	unsigned long lo, hi, off;
	FILE *f;

	snprintf(buf, n, "0x%lx", (unsigned long)addr);
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		struct probes_sym *syms;
		const struct probes_sym *s;
		uint64_t vaddr;
		int ns;

		file[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &lo, &hi,
			   &off, file) < 3 ||
		    addr < lo || addr >= hi || file[0] != '/')
			continue;
		if (probes_elf_funcs(&k->arena, file, &syms, &ns))
			break;
		/* file offset -> symbol address via the symbols' offsets */
		for (int i = 0; i < ns; i++) {
			s = &syms[i];
			vaddr = addr - lo + off;
			if (vaddr >= s->offset &&
			    vaddr < s->offset + (s->size ? s->size : 1)) {
				if (vaddr == s->offset)
					snprintf(buf, n, "%s", s->name);
				else
					snprintf(buf, n, "%s+%lu", s->name,
						 (unsigned long)(vaddr -
								 s->offset));
				break;
			}
		}
		break;
	}
	fclose(f);
}

static void kernel_display_value(struct kernel *k, const struct type *t,
				 const void *src, const struct type *dt,
				 void *dst)
{
	if (t == dt) {
		memcpy(dst, src, t->size);
		return;
	}
	if (t->kind == TY_TUPLE) {
		for (int i = 0; i < t->nfields; i++)
			kernel_display_value(
				k, t->fields[i].type,
				(const char *)src + t->fields[i].offset,
				dt->fields[i].type,
				(char *)dst + dt->fields[i].offset);
		return;
	}
	memset(dst, 0, dt->size);
	if (t->kind == TY_PROBE) {
		uint64_t id;

		memcpy(&id, src, 8);
		if (id < (uint64_t)kernel_nprogs(k) &&
		    kernel_progs(k)[id].probe_name)
			snprintf(dst, dt->size, "%s",
				 kernel_progs(k)[id].probe_name);
		return;
	}
	if (t->kind == TY_USYM) {
		uint64_t addr;
		uint32_t w[2] = { 0, 0 };
		const struct cg_prog *p;

		memcpy(&addr, src, 8);
		if (t->size >= 16)
			memcpy(w, (const char *)src + 8, 8);
		p = w[1] && w[1] <= (uint32_t)kernel_nprogs(k) ?
			    &kernel_progs(k)[w[1] - 1] :
			    NULL;
		if (p && p->nmatches == 1 && p->matches[0].func &&
		    !p->matches[0].func_offset)
			snprintf(dst, dt->size, "%s", p->matches[0].func);
		else if (p && p->nmatches == 1 && p->matches[0].func)
			snprintf(dst, dt->size, "%s+%lu", p->matches[0].func,
				 (unsigned long)p->matches[0].func_offset);
		else
			kernel_usym_name(k, addr, w[0], dst, dt->size);
	}
}

/* Convert a value for output when needed; returns src or *tmp. */
static const void *kernel_display(struct kernel *k, const struct type *t,
				  const struct type *dt, const void *src,
				  void **tmp)
{
	if (t == dt)
		return src;
	*tmp = xcalloc(1, dt->size + 1);
	kernel_display_value(k, t, src, dt, *tmp);
	return *tmp;
}

/* ---- maps ---------------------------------------------------------- */

int kernel_map_fd(const struct kernel *k, int map)
{
	if (!k->map_fds || map < 0 || map >= k->obj->nmaps)
		return -1;
	return k->map_fds[map];
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
	key = xcalloc(1, m->key_size);
	while (!bpf_map_get_next_key(fd, NULL, key))
		if (bpf_map_delete_elem(fd, key))
			break;
	free(key);
	return 0;
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
	size_t nb;		/* buckets (hist/lhist) */
	unsigned char **keys;
	unsigned char **vals;
	size_t n, cap;
};

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
	if (m->bucketed) {
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
			kernel_display(k, m->key_type, kt, kc->keys[j], &tmp);
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

static int kernel_print_map(struct kernel *k, int i, uint64_t top,
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

static int kernel_print_all_maps(struct kernel *k)
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
		err = out_print_maps_at_exit(&k->out, pm, n);
	for (int i = 0; i < n; i++) {
		free((void *)om[i].entries);
		kernel_collect_free(&kc[i]);
	}
	free(kc);
	free(om);
	free(pm);
	return err;
}

/* ---- events -------------------------------------------------------- */

/* system(): run cmd with sh and copy its output; cat(): copy a file. */
static void kernel_copy_output(struct kernel *k, const char *what,
			       bool is_cmd)
{
	char buf[4096];
	size_t n;
	FILE *f;

	fflush(k->out.f);
	f = is_cmd ? popen(what, "r") : fopen(what, "r");
	if (!f) {
		fprintf(stderr, "ubt: cannot %s %s: %s\n",
			is_cmd ? "run" : "read", what, strerror(errno));
		return;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, k->out.f);
	if (is_cmd)
		pclose(f);
	else
		fclose(f);
}

static int kernel_event(void *ctx, void *data, size_t size)
{
	struct kernel *k = ctx;
	const struct cg_object *obj = k->obj;
	struct cg_event_hdr h;
	const struct cg_event *e;
	const char *args = (const char *)data + sizeof(h);
	size_t asize = size - sizeof(h);

	if (size < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	if (h.id >= (uint64_t)obj->nevents)
		return 0;
	if (k->exiting && !k->in_end)
		return 0;
	e = &obj->events[h.id];
	switch (e->kind) {
	case CG_EV_PRINTF: {
		const struct type *dt = k->ev_types[h.id];
		void *tmp = NULL;

		if (!e->args_type || asize < e->args_type->size)
			break;
		args = kernel_display(k, e->args_type, dt, args, &tmp);
		out_printf(&k->out, &k->fmts[h.id], dt, args,
			   dt == e->args_type ? asize : dt->size);
		free(tmp);
		break;
	}
	case CG_EV_SYSTEM:
	case CG_EV_CAT: {
		const struct type *dt = k->ev_types[h.id];
		void *tmp = NULL;
		char *text;

		if (!e->args_type || asize < e->args_type->size)
			break;
		args = kernel_display(k, e->args_type, dt, args, &tmp);
		text = out_format(&k->fmts[h.id], dt, args,
				  dt == e->args_type ? asize : dt->size);
		free(tmp);
		if (text)
			kernel_copy_output(k, text, e->kind == CG_EV_SYSTEM);
		free(text);
		break;
	}
	case CG_EV_TIME:
		out_time(&k->out, e->fmt ? e->fmt : "%H:%M:%S\n", NULL);
		break;
	case CG_EV_EXIT:
		k->exiting = true;
		break;
	case CG_EV_PRINT:
		kernel_print_map(k, e->map, e->top, e->div);
		break;
	case CG_EV_PRINT_VALUE: {
		const struct type *dt = k->ev_types[h.id];
		void *tmp = NULL;

		if (asize < e->args[0].type->size)
			break;
		args = kernel_display(k, e->args[0].type, dt, args, &tmp);
		out_print_value(&k->out, dt, args);
		free(tmp);
		break;
	}
	case CG_EV_CLEAR:
		kernel_map_clear(k, e->map);
		if (k->map_hook)
			k->map_hook(k->map_hook_ctx, e->kind, e->map, NULL);
		break;
	case CG_EV_ZERO:
		kernel_map_zero(k, e->map);
		if (k->map_hook)
			k->map_hook(k->map_hook_ctx, e->kind, e->map, NULL);
		break;
	case CG_EV_DELETE:
		/* from a user-mode probe: the kernel's copy of the key (a
		 * kernel probe deleted it itself, and may have added it
		 * again since) */
		if (e->map < 0 || e->map >= obj->nmaps ||
		    asize < obj->maps[e->map].key_size)
			break;
		if (e->native && kernel_map_fd(k, e->map) >= 0)
			bpf_map_delete_elem(kernel_map_fd(k, e->map), args);
		if (k->map_hook)
			k->map_hook(k->map_hook_ctx, e->kind, e->map, args);
		break;
	}
	fflush(k->out.f);
	return 0;
}

int kernel_handle_event(struct kernel *k, const void *data, size_t size)
{
	return kernel_event(k, (void *)data, size);
}

/* A record of the ring buffer: printed, or handed to the hook. */
static int kernel_rb_event(void *ctx, void *data, size_t size)
{
	struct kernel *k = ctx;

	if (k->hook)
		return k->hook(k->hook_ctx, data, size);
	return kernel_event(k, data, size);
}

void kernel_set_event_hook(struct kernel *k, kernel_event_fn fn, void *ctx)
{
	k->hook = fn;
	k->hook_ctx = ctx;
}

int kernel_print_maps(struct kernel *k)
{
	return kernel_print_all_maps(k);
}

/* "Lost N events" when the ring was full since the last check. */
static void kernel_check_lost(struct kernel *k)
{
	uint64_t *v, sum = 0;
	uint32_t zero = 0;

	if (k->lost_fd < 0)
		return;
	v = xcalloc(k->ncpus, 8);
	if (!bpf_map_lookup_elem(k->lost_fd, &zero, v)) {
		for (int i = 0; i < k->ncpus; i++)
			sum += v[i];
		if (sum > k->lost) {
			out_lost_events(&k->out, sum - k->lost);
			k->lost = sum;
		}
	}
	free(v);
}

uint64_t kernel_map_full(struct kernel *k, int map)
{
	uint32_t key = map;
	uint64_t *v, sum = 0;

	if (k->full_fd < 0 || map < 0 || map >= k->obj->nmaps)
		return 0;
	v = xcalloc(k->ncpus, 8);
	if (!bpf_map_lookup_elem(k->full_fd, &key, v))
		for (int i = 0; i < k->ncpus; i++)
			sum += v[i];
	free(v);
	return sum;
}

/* "Map full" at exit, for each map that refused updates. */
static void kernel_map_full_warnings(struct kernel *k)
{
	for (int i = 0; i < k->obj->nmaps; i++) {
		uint64_t n = kernel_map_full(k, i);

		if (n)
			out_map_full(stderr, k->obj->maps[i].name,
				     k->obj->maps[i].max_entries, n);
	}
}

/* Take every record waiting in the ring, then report losses. */
static void kernel_consume(struct kernel *k)
{
	ring_buffer__consume(k->rb);
	kernel_check_lost(k);
}

int kernel_poll(struct kernel *k, int timeout_ms)
{
	int n = ring_buffer__poll(k->rb, timeout_ms);

	kernel_check_lost(k);
	return n == -EINTR ? 0 : n;
}

int kernel_drain(struct kernel *k)
{
	int n = ring_buffer__consume(k->rb);

	kernel_check_lost(k);
	return n;
}

bool kernel_exiting(const struct kernel *k)
{
	return k->exiting;
}

/*
 * Uprobe programs are attached with one uprobe_multi link per binary
 * (kernel >= 6.6; libbpf 1.1 has no API for it, so without it they fall
 * back to one perf event per uprobe): the kernel registers and
 * unregisters all of a link's uprobes with one RCU wait instead of one
 * per uprobe (~0.1-0.2 s each on this kernel).
 */
#define KERNEL_BPF_LINK_CREATE 28
#define KERNEL_BPF_TRACE_UPROBE_MULTI 48
#define KERNEL_BPF_F_UPROBE_MULTI_RETURN 1

/* Can this kernel load a uprobe_multi program? Asked once. */
static bool kernel_has_uprobe_multi(void)
{
	static int has = -1;
	const struct bpf_insn insns[] = {
		{ .code = 0xb7, .dst_reg = 0 },	/* r0 = 0 */
		{ .code = 0x95 },		/* exit */
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po,
		    .expected_attach_type = KERNEL_BPF_TRACE_UPROBE_MULTI);
	int fd;

	if (has >= 0)
		return has;
	fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns,
			   ARRAY_SIZE(insns), &po);
	has = fd >= 0;
	if (fd >= 0)
		close(fd);
	return has;
}

static bool kernel_use_multi(const struct cg_prog *p)
{
	return (p->provider == PROV_UPROBE || p->provider == PROV_URETPROBE ||
		p->provider == PROV_USDT) &&
	       p->nmatches >= 1 && kernel_has_uprobe_multi();
}

/* ---- load ---------------------------------------------------------- */

static int kernel_open(struct kernel *k)
{
	const struct cg_object *obj = k->obj;
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "ubt");
	int err;

	k->bo = bpf_object__open_mem(obj->image, obj->image_size, &oo);
	if (!k->bo) {
		err = -errno;
		fprintf(stderr, "ubt: cannot open the BPF object: %s\n",
			strerror(-err));
		return err;
	}
	k->progs = xcalloc(obj->nprogs + 1, sizeof(*k->progs));
	k->multi = xcalloc(obj->nprogs + 1, sizeof(*k->multi));
	for (int i = 0; i < obj->nprogs; i++) {
		k->progs[i] = bpf_object__find_program_by_name(
			k->bo, obj->progs[i].name);
		if (!k->progs[i])
			BUG("program %s missing from the object",
			    obj->progs[i].name);
		/* BEGIN/END run through BPF_PROG_TEST_RUN: raw tracepoint
		 * programs; nothing to auto-attach */
		bpf_program__set_autoattach(k->progs[i], false);
		k->multi[i] = kernel_use_multi(&obj->progs[i]);
		if (k->multi[i])
			bpf_program__set_expected_attach_type(
				k->progs[i], KERNEL_BPF_TRACE_UPROBE_MULTI);
	}
	return 0;
}

/* The concrete targets of every program, from cg_build()'s expansion. */
static void kernel_targets(struct kernel *k)
{
	const struct cg_object *obj = k->obj;
	int n = 0;

	for (int i = 0; i < obj->nprogs; i++)
		n += obj->progs[i].nmatches;
	k->targets = xcalloc(n + 1, sizeof(*k->targets));
	for (int i = 0; i < obj->nprogs; i++)
		for (int j = 0; j < obj->progs[i].nmatches; j++) {
			k->targets[k->ntargets].prog = i;
			k->targets[k->ntargets].m = obj->progs[i].matches[j];
			k->ntargets++;
		}
}

int kernel_load(const struct cg_object *obj, const struct kernel_opts *o,
		struct kernel **out)
{
	struct kernel *k = xcalloc(1, sizeof(*k));
	int err;

	k->obj = obj;
	k->opts = o;
	arena_init(&k->arena);
	out_init(&k->out, o && o->out ? o->out : stdout,
		 o && o->json ? OUT_JSON : OUT_TEXT);
	k->globals_fd = -1;
	k->lost_fd = -1;
	k->full_fd = -1;
	k->ncpus = libbpf_num_possible_cpus();
	if (k->ncpus <= 0)
		k->ncpus = 1;
	if (!kernel_verbose)
		kernel_set_verbose(o ? o->verbose : 0);
	err = kernel_open(k);
	if (err)
		goto fail;
	err = bpf_object__load(k->bo);
	if (err) {
		fprintf(stderr, "ubt: the kernel rejected the BPF program: %s\n",
			strerror(-err));
		goto fail;
	}
	k->map_fds = xcalloc(obj->nmaps + 1, sizeof(int));
	for (int i = 0; i < obj->nmaps; i++)
		k->map_fds[i] = bpf_object__find_map_fd_by_name(
			k->bo, obj->maps[i].bpf_name);
	if (obj->globals_name)
		k->globals_fd = bpf_object__find_map_fd_by_name(
			k->bo, obj->globals_name);
	if (obj->lost_name)
		k->lost_fd = bpf_object__find_map_fd_by_name(k->bo,
							     obj->lost_name);
	if (obj->full_name)
		k->full_fd = bpf_object__find_map_fd_by_name(k->bo,
							     obj->full_name);
	k->rb = ring_buffer__new(
		bpf_object__find_map_fd_by_name(k->bo, obj->ringbuf_name),
		kernel_rb_event, k, NULL);
	if (!k->rb) {
		err = -errno;
		fprintf(stderr, "ubt: cannot set up the ring buffer: %s\n",
			strerror(-err));
		goto fail;
	}
	kernel_targets(k);
	k->ev_types = arena_alloc(&k->arena,
				  (obj->nevents + 1) * sizeof(*k->ev_types));
	for (int i = 0; i < obj->nevents; i++) {
		const struct cg_event *e = &obj->events[i];

		if ((e->kind == CG_EV_PRINTF || e->kind == CG_EV_SYSTEM ||
		     e->kind == CG_EV_CAT) && e->args_type)
			k->ev_types[i] = kernel_display_type(k, e->args_type);
		else if (e->kind == CG_EV_PRINT_VALUE && e->nargs)
			k->ev_types[i] = kernel_display_type(k,
							     e->args[0].type);
	}
	k->fmts = arena_alloc(&k->arena,
			      (obj->nevents + 1) * sizeof(*k->fmts));
	for (int i = 0; i < obj->nevents; i++)
		if ((obj->events[i].kind == CG_EV_PRINTF ||
		     obj->events[i].kind == CG_EV_SYSTEM ||
		     obj->events[i].kind == CG_EV_CAT) && obj->events[i].fmt)
			fmt_parse(&k->arena, obj->events[i].fmt,
				  strlen(obj->events[i].fmt), &k->fmts[i]);
	*out = k;
	return 0;
fail:
	kernel_free(k);
	return err;
}

/* Write the globals map: start time and -c child pid. */
int kernel_set_globals(struct kernel *k, uint64_t cpid)
{
	uint64_t v[3];
	uint32_t zero = 0;

	if (k->globals_fd < 0)
		return 0;
	v[0] = mono_ns();
	v[1] = cpid;
	v[2] = 0;	/* exit() not called yet */
	return bpf_map_update_elem(k->globals_fd, &zero, v, BPF_ANY) ? -errno :
								       0;
}

/* Set the exit flag of the globals map: the probes do nothing more. */
void kernel_stop_probes(struct kernel *k)
{
	uint64_t v[3];
	uint32_t zero = 0;

	if (k->globals_fd < 0 ||
	    bpf_map_lookup_elem(k->globals_fd, &zero, v))
		return;
	v[2] = 1;
	bpf_map_update_elem(k->globals_fd, &zero, v, BPF_ANY);
}

/* ---- attach -------------------------------------------------------- */

static void kernel_add_link(struct kernel *k, struct bpf_link *l)
{
	if (k->nlinks == k->caplinks) {
		k->caplinks = k->caplinks ? 2 * k->caplinks : 16;
		k->links = xrealloc(k->links, k->caplinks * sizeof(*k->links));
	}
	k->links[k->nlinks++] = l;
}

static void kernel_add_pfd(struct kernel *k, int fd)
{
	if (k->npfds == k->cappfds) {
		k->cappfds = k->cappfds ? 2 * k->cappfds : 16;
		k->pfds = xrealloc(k->pfds, k->cappfds * sizeof(*k->pfds));
	}
	k->pfds[k->npfds++] = fd;
}

/* prog attached to perf event fd: the link owns fd, else ubt closes it */
static struct bpf_link *kernel_attach_pfd(struct kernel *k,
					  struct bpf_program *prog, int fd)
{
	struct bpf_link *l;

	kernel_add_pfd(k, fd);
	l = bpf_program__attach_perf_event(prog, fd);
	if (l)
		k->npfds--;	/* the link closes it */
	return l;
}

/*
 * Destroying a uprobe link waits for an RCU grace period (~0.1-0.2 s on
 * this kernel): destroy many links from several threads so that the
 * waits overlap.
 */
#define KERNEL_DETACH_THREADS 32

struct kernel_detach_job {
	struct bpf_link **links;
	int n, step;
};

static void *kernel_detach_thread(void *arg)
{
	struct kernel_detach_job *j = arg;

	for (int i = 0; i < j->n; i += j->step)
		bpf_link__destroy(j->links[i]);
	return NULL;
}

static void kernel_destroy_links(struct bpf_link **links, int n, int threads)
{
	struct kernel_detach_job jobs[KERNEL_DETACH_THREADS];
	pthread_t tids[KERNEL_DETACH_THREADS];
	bool started[KERNEL_DETACH_THREADS] = { false };
	int nt = n < threads ? n : threads;

	if (n <= 2 || threads <= 1) {
		for (int i = 0; i < n; i++)
			bpf_link__destroy(links[i]);
		return;
	}
	for (int t = 0; t < nt; t++) {
		jobs[t] = (struct kernel_detach_job){
			.links = links + t, .n = n - t, .step = nt,
		};
		started[t] = !pthread_create(&tids[t], NULL,
					     kernel_detach_thread, &jobs[t]);
		if (!started[t])
			kernel_detach_thread(&jobs[t]);
	}
	for (int t = 0; t < nt; t++)
		if (started[t])
			pthread_join(tids[t], NULL);
}

static void kernel_detach_threads(struct kernel *k, int threads)
{
	kernel_destroy_links(k->links, k->nlinks, threads);
	k->nlinks = 0;
	for (int i = 0; i < k->npfds; i++)
		close(k->pfds[i]);
	k->npfds = 0;
}

static void kernel_detach(struct kernel *k)
{
	kernel_detach_threads(k, KERNEL_DETACH_THREADS);
}

/*
 * Detaching N tracepoints takes N RCU waits, serialised in the kernel
 * (~35 ms each here: 12 s for syscalls:sys_enter_*). With many probes,
 * once the output is complete and the probes are stopped, a child
 * process that holds no output detaches them while ubt exits.
 */
#define KERNEL_DETACH_CHILD_MIN 8	/* links (each owns its perf fd) */

static void kernel_detach_fast(struct kernel *k)
{
	int gone[2];
	pid_t pid;

	if (k->nlinks + k->npfds < KERNEL_DETACH_CHILD_MIN ||
	    pipe2(gone, O_CLOEXEC)) {
		kernel_detach(k);
		return;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		char c;

		setsid();
		/* the output must see EOF when ubt exits */
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (k->out.f && fileno(k->out.f) > 2)
			close(fileno(k->out.f));
		close(gone[1]);
		/* wait for ubt to exit: then these are the last references
		 * and the detaching happens here, not in ubt's exit */
		while (read(gone[0], &c, 1) < 0 && errno == EINTR)
			;
		/*
		 * One link at a time: a tracepoint or perf uprobe detach
		 * holds the kernel's event_mutex across an RCU wait, and
		 * with many threads queued on it every other tracer's
		 * attach or detach waits behind all of them (seconds with
		 * 361 tracepoints: a corpus case on the same machine timed
		 * out in perf_event_open()).  Nobody waits for this one.
		 */
		kernel_detach_threads(k, 1);
		_exit(0);
	}
	close(gone[0]);
	if (pid < 0) {
		close(gone[1]);
		kernel_detach(k);
		return;
	}
	/*
	 * Keep everything open until exit, when only references are
	 * dropped (gone[1] closing tells the child to start).
	 */
	for (int i = 0; i < k->nlinks; i++)
		bpf_link__disconnect(k->links[i]);
	for (int i = 0; i < k->nlinks; i++)
		bpf_link__destroy(k->links[i]);
	k->nlinks = 0;
	k->npfds = 0;
}

static int kernel_perf_open(int cpu, uint32_t type, uint64_t config,
			    uint64_t period)
{
	struct perf_event_attr a = {
		.type = type,
		.size = sizeof(a),
		.config = config,
		.sample_period = period,
	};

	return syscall(__NR_perf_event_open, &a, -1, cpu, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

/* software:EVENT:COUNT and hardware:EVENT:COUNT, bpftrace's names and
 * default counts. */
static const struct kernel_perf_event {
	const char *name, *alias;
	uint32_t type;
	uint64_t config, count;
} kernel_perf_events[] = {
	{ "alignment-faults", NULL, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_ALIGNMENT_FAULTS, 1 },
	{ "bpf-output", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT, 1 },
	{ "context-switches", "cs", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CONTEXT_SWITCHES, 1000 },
	{ "cpu-clock", "cpu", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
	  1000000 },
	{ "cpu-migrations", NULL, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CPU_MIGRATIONS, 1 },
	{ "dummy", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 1 },
	{ "emulation-faults", NULL, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_EMULATION_FAULTS, 1 },
	{ "major-faults", NULL, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1 },
	{ "minor-faults", NULL, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS_MIN, 100 },
	{ "page-faults", "faults", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS, 100 },
	{ "task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK,
	  1000000 },
	{ "backend-stalls", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_BACKEND, 1000000 },
	{ "branch-instructions", "branches", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 100000 },
	{ "branch-misses", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_MISSES, 100000 },
	{ "bus-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES,
	  100000 },
	{ "cache-misses", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CACHE_MISSES, 1000000 },
	{ "cache-references", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CACHE_REFERENCES, 1000000 },
	{ "cpu-cycles", "cycles", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CPU_CYCLES, 1000000 },
	{ "frontend-stalls", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, 1000000 },
	{ "instructions", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_INSTRUCTIONS, 1000000 },
	{ "ref-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES,
	  1000000 },
};

static const struct kernel_perf_event *kernel_perf_event(const char *name,
							 uint32_t type)
{
	for (size_t i = 0; i < ARRAY_SIZE(kernel_perf_events); i++) {
		const struct kernel_perf_event *e = &kernel_perf_events[i];

		if (e->type == type &&
		    (!strcmp(e->name, name) ||
		     (e->alias && !strcmp(e->alias, name))))
			return e;
	}
	return NULL;
}

/* Period in ns of interval:UNIT:N / profile:UNIT:N (a bare count is in
 * ns), 0 when invalid. */
static uint64_t kernel_period(const struct ast_attach_point *ap)
{
	const char *u = ap->unit ? ap->unit : "hz";
	uint64_t n = ap->freq;

	if (!n)
		return 0;
	if (!strcmp(u, "s"))
		return n * 1000000000ull;
	if (!strcmp(u, "ms"))
		return n * 1000000ull;
	if (!strcmp(u, "us"))
		return n * 1000ull;
	if (!strcmp(u, "ns"))
		return n;
	if (!strcmp(u, "hz"))
		return 1000000000ull / n;
	return 0;
}

static int kernel_attach_one(struct kernel *k, struct kernel_target *t)
{
	const struct cg_prog *p = &k->obj->progs[t->prog];
	struct bpf_program *prog = k->progs[t->prog];
	struct probes_match *m = &t->m;
	struct bpf_link *l = NULL;
	int err;

	switch (p->provider) {
	case PROV_BEGIN:
	case PROV_END:
		return 0;
	case PROV_UPROBE:
	case PROV_URETPROBE:
		l = bpf_program__attach_uprobe(
			prog, p->provider == PROV_URETPROBE,
			m->pid > 0 ? m->pid : -1, m->target, m->offset);
		break;
	case PROV_USDT: {
		LIBBPF_OPTS(bpf_uprobe_opts, uo,
			    .ref_ctr_offset = m->semaphore_offset);

		l = bpf_program__attach_uprobe_opts(prog,
						    m->pid > 0 ? m->pid : -1,
						    m->target, m->offset, &uo);
		break;
	}
	case PROV_TRACEPOINT: {
		/* through tracefs as tp_tracefs() finds (and mounts) it */
		const char *root = tp_tracefs();
		struct perf_event_attr a = {
			.type = PERF_TYPE_TRACEPOINT,
			.size = sizeof(a),
			.sample_period = 1,
			.wakeup_events = 1,
		};
		char path[PATH_MAX];
		unsigned long long id;
		FILE *f;
		int fd;

		snprintf(path, sizeof(path), "%s/events/%s/%s/id",
			 root ? root : "/sys/kernel/tracing", m->target,
			 m->func);
		f = fopen(path, "r");
		if (!f || fscanf(f, "%llu", &id) != 1) {
			err = f ? -EINVAL : -errno;
			if (f)
				fclose(f);
			fprintf(stderr, "ubt: cannot attach %s: %s: %s\n",
				m->name, path, strerror(-err));
			return err;
		}
		fclose(f);
		a.config = id;
		fd = syscall(__NR_perf_event_open, &a, -1, 0, -1,
			     PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			fprintf(stderr, "ubt: cannot attach %s: "
				"perf_event_open: %s\n", m->name,
				strerror(-err));
			return err;
		}
		l = kernel_attach_pfd(k, prog, fd);
		break;
	}
	case PROV_INTERVAL:
	case PROV_PROFILE:
	case PROV_SOFTWARE:
	case PROV_HARDWARE: {
		uint32_t type = PERF_TYPE_SOFTWARE;
		uint64_t config = PERF_COUNT_SW_CPU_CLOCK, period;
		int ncpu = p->provider == PROV_INTERVAL ? 1 : k->ncpus;

		if (p->provider == PROV_SOFTWARE ||
		    p->provider == PROV_HARDWARE) {
			const struct kernel_perf_event *pe;

			type = p->provider == PROV_SOFTWARE ?
				       PERF_TYPE_SOFTWARE :
				       PERF_TYPE_HARDWARE;
			pe = kernel_perf_event(p->ap->ap.target ?
						       p->ap->ap.target : "",
					       type);
			if (!pe) {
				fprintf(stderr, "ubt: cannot attach %s: "
					"unknown event %s\n", m->name,
					p->ap->ap.target);
				return -EINVAL;
			}
			config = pe->config;
			period = p->ap->ap.freq ? p->ap->ap.freq : pe->count;
		} else {
			period = kernel_period(&p->ap->ap);
		}
		if (!period) {
			fprintf(stderr, "ubt: invalid period for %s\n",
				m->name);
			return -EINVAL;
		}
		for (int cpu = 0; cpu < ncpu; cpu++) {
			int fd = kernel_perf_open(cpu, type, config, period);

			if (fd < 0) {
				if (errno == ENODEV && ncpu > 1)
					continue;	/* offline CPU */
				err = -errno;
				fprintf(stderr, "ubt: cannot attach %s: "
					"perf_event_open: %s\n", m->name,
					strerror(-err));
				return err;
			}
			l = kernel_attach_pfd(k, prog, fd);
			if (!l)
				break;
			if (cpu + 1 < ncpu) {
				kernel_add_link(k, l);
				l = NULL;
			}
		}
		break;
	}
	default:
		fprintf(stderr, "ubt: cannot attach %s: not supported\n",
			m->name);
		return -ENOTSUP;
	}
	if (!l) {
		err = -errno;
		fprintf(stderr, "ubt: cannot attach %s: %s\n", m->name,
			strerror(-err));
		return err;
	}
	kernel_add_link(k, l);
	return 0;
}

/* The link_create part of union bpf_attr, as kernels >= 6.6 lay it out. */
struct kernel_uprobe_multi_attr {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t pad;
};

static int kernel_attach_multi(struct kernel *k, int prog)
{
	const struct cg_prog *p = &k->obj->progs[prog];
	int n = p->nmatches, err = 0;
	uint64_t *offs = xcalloc(n, sizeof(*offs));
	uint64_t *refs = xcalloc(n, sizeof(*refs));
	bool *done = xcalloc(n, sizeof(*done));

	/* one link per (binary, pid) */
	for (int i = 0; i < n && !err; i++) {
		const struct probes_match *m = &p->matches[i];
		struct kernel_uprobe_multi_attr a = { 0 };
		int cnt = 0, fd;

		if (done[i])
			continue;
		for (int j = i; j < n; j++) {
			const struct probes_match *o = &p->matches[j];

			if (done[j] || strcmp(o->target, m->target) ||
			    o->pid != m->pid)
				continue;
			done[j] = true;
			offs[cnt] = o->offset;
			refs[cnt] = o->semaphore_offset;
			cnt++;
		}
		a.prog_fd = bpf_program__fd(k->progs[prog]);
		a.attach_type = KERNEL_BPF_TRACE_UPROBE_MULTI;
		a.path = (uintptr_t)m->target;
		a.offsets = (uintptr_t)offs;
		a.ref_ctr_offsets = (uintptr_t)refs;
		a.cnt = cnt;
		a.multi_flags = p->provider == PROV_URETPROBE ?
					KERNEL_BPF_F_UPROBE_MULTI_RETURN :
					0;
		a.pid = m->pid > 0 ? m->pid : 0;
		fd = syscall(__NR_bpf, KERNEL_BPF_LINK_CREATE, &a, sizeof(a));
		if (fd < 0) {
			err = -errno;
			fprintf(stderr, "ubt: cannot attach %s: %s\n", m->name,
				strerror(-err));
			break;
		}
		kernel_add_pfd(k, fd);
	}
	free(offs);
	free(refs);
	free(done);
	return err;
}

int kernel_attach(struct kernel *k, int *nprobes)
{
	for (int i = 0; i < k->obj->nprogs; i++) {
		int err;

		if (!k->multi[i])
			continue;
		err = kernel_attach_multi(k, i);
		if (err) {
			kernel_detach(k);
			return err;
		}
	}
	for (int i = 0; i < k->ntargets; i++) {
		int err;

		if (k->multi[k->targets[i].prog])
			continue;
		err = kernel_attach_one(k, &k->targets[i]);

		if (err) {
			kernel_detach(k);
			return err;
		}
	}
	if (nprobes)
		*nprobes = k->ntargets;
	return 0;
}

static int kernel_run_kind(struct kernel *k, int provider)
{
	for (int i = 0; i < k->obj->nprogs; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, ro);
		int err;

		if (k->obj->progs[i].provider != provider)
			continue;
		err = bpf_prog_test_run_opts(bpf_program__fd(k->progs[i]),
					     &ro);
		if (err) {
			err = -errno;
			fprintf(stderr, "ubt: cannot run %s: %s\n",
				provider == PROV_BEGIN ? "BEGIN" : "END",
				strerror(-err));
			return err;
		}
	}
	return 0;
}

int kernel_run_begin(struct kernel *k)
{
	return kernel_run_kind(k, PROV_BEGIN);
}

int kernel_run_end(struct kernel *k)
{
	/* END prints, also after exit() */
	k->in_end = true;
	return kernel_run_kind(k, PROV_END);
}

void kernel_free(struct kernel *k)
{
	if (!k)
		return;
	kernel_detach(k);
	ring_buffer__free(k->rb);
	bpf_object__close(k->bo);
	free(k->links);
	free(k->pfds);
	free(k->progs);
	free(k->multi);
	free(k->map_fds);
	free(k->targets);
	arena_release(&k->arena);
	free(k);
}

/* ---- -c CMD -------------------------------------------------------- */

struct kernel_child {
	pid_t pid;
	int go;			/* write end: the child execs when closed */
	int pidfd;
	bool exited;		/* reaped, with its wait status: */
	int status;		/* -1 if not known */
};

/* Can argv0 be executed (as execvp() would find it)? */
static bool kernel_can_exec(const char *argv0)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(argv0, '/'))
		return !access(argv0, X_OK);
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n,
			 n ? path : ".", argv0);
		if (!access(buf, X_OK))
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

static int kernel_child_start(const char *cmd, struct kernel_child *ch)
{
	wordexp_t we;
	int p[2], err;
	pid_t pid;

	memset(ch, 0, sizeof(*ch));
	ch->go = ch->pidfd = -1;
	err = wordexp(cmd, &we, WRDE_NOCMD);
	if (err || !we.we_wordc) {
		if (!err)
			wordfree(&we);
		fprintf(stderr, "ubt: cannot parse the command: %s\n", cmd);
		return -EINVAL;
	}
	if (!kernel_can_exec(we.we_wordv[0])) {
		err = -errno;
		fprintf(stderr, "ubt: cannot run %s: %s\n", we.we_wordv[0],
			strerror(errno ? errno : ENOENT));
		wordfree(&we);
		return err ? err : -ENOENT;
	}
	if (pipe2(p, O_CLOEXEC)) {
		wordfree(&we);
		return -errno;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(p[0]);
		close(p[1]);
		wordfree(&we);
		return err;
	}
	if (!pid) {
		char c;

		/* ubt's handlers are not the command's (exec resets them,
		 * but it may never come to that) */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		close(p[1]);
		/* wait until the probes are attached; EOF without the
		 * byte: ubt gave up, do not run the command */
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		execvp(we.we_wordv[0], we.we_wordv);
		fprintf(stderr, "ubt: cannot run %s: %s\n", we.we_wordv[0],
			strerror(errno));
		_exit(127);
	}
	close(p[0]);
	wordfree(&we);
	ch->pid = pid;
	ch->go = p[1];
	ch->pidfd = syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

static void kernel_child_go(struct kernel_child *ch)
{
	sigset_t pipe, old;

	if (ch->go < 0)
		return;
	/*
	 * Killed while it waited, the command has closed its end: EPIPE,
	 * and a SIGPIPE that must not kill ubt (the loop sees the exit).
	 */
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, &old);
	if (write(ch->go, "g", 1) != 1) {
		if (errno == EPIPE)
			sigtimedwait(&pipe, NULL, &(struct timespec){ 0 });
		else
			fprintf(stderr, "ubt: cannot start the command: %s\n",
				strerror(errno));
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(ch->go);
	ch->go = -1;
}

static void kernel_child_kill(struct kernel_child *ch)
{
	if (ch->go >= 0) {
		/* never started: it exits on EOF */
		close(ch->go);
		ch->go = -1;
	}
	if (ch->pid > 0 && !ch->exited) {
		/* SIGTERM, then SIGKILL: a command that ignores SIGTERM
		 * cannot keep ubt waiting */
		child_stop(ch->pid, ch->pidfd);
	}
	ch->pid = 0;
	if (ch->pidfd >= 0)
		close(ch->pidfd);
	ch->pidfd = -1;
}

/* ---- run ----------------------------------------------------------- */

static int kernel_loop(struct kernel *k, struct kernel_child *ch,
		       int pidfd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	int rbfd = ring_buffer__epoll_fd(k->rb);

	if (ep < 0)
		return -errno;
	if (ch && ch->pidfd >= 0) {
		ev.data.fd = ch->pidfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, ch->pidfd, &ev);
	}
	if (pidfd >= 0) {
		ev.data.fd = pidfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, pidfd, &ev);
	}
	ev.data.fd = rbfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, rbfd, &ev);
	while (!kernel_sigint && !k->exiting) {
		struct epoll_event evs[4];
		int n = epoll_wait(ep, evs, 4, 1000);
		bool done = false;

		if (n < 0 && errno != EINTR) {
			close(ep);
			return -errno;
		}
		kernel_consume(k);
		for (int i = 0; i < n; i++)
			if (evs[i].data.fd == pidfd && pidfd >= 0)
				done = true;
		/* the pidfd woke us, or (without one) each second */
		if (ch && ch->pid > 0 &&
		    child_gone(ch->pid, ch->pidfd, &ch->status)) {
			ch->exited = true;
			done = true;
		}
		if (done) {
			kernel_consume(k);
			break;
		}
	}
	close(ep);
	return 0;
}

/* Count the attach points: "Attaching N probes..." */
static int kernel_count_probes(const struct cg_object *obj)
{
	int n = 0;

	for (int i = 0; i < obj->nprogs; i++)
		n += obj->progs[i].nmatches;
	return n;
}

/* Print the diagnostics added since `from` (the driver printed those
 * before). */
static void kernel_print_new_diags(struct compile *c, struct diag *from)
{
	struct diag_list d = c->diag;

	d.head = from ? from->next : c->diag.head;
	diag_print(&d, stderr);
}

static struct diag *kernel_last_diag(struct compile *c)
{
	struct diag *g = c->diag.head;

	while (g && g->next)
		g = g->next;
	return g;
}

int kernel_run(struct compile *c, const struct kernel_opts *o)
{
	struct cg_opts co = { .sz = sizeof(co) };
	struct cg_object *obj = NULL;
	struct kernel *k = NULL;
	struct kernel_child ch = { .pid = 0, .go = -1, .pidfd = -1 };
	struct sigaction sa = { .sa_handler = kernel_on_signal };
	struct diag *last = kernel_last_diag(c);
	int nprobes = 0, pidfd = -1, err, rc = 1, st;
	struct exitwatch *xw = NULL;

	kernel_set_verbose(o->verbose);
	if (o->dump_ir)
		co.dump_ir = stdout;
	err = cg_build(c, CG_TARGET_BPF, &co, &obj);
	kernel_print_new_diags(c, last);
	if (err)
		return 1;
	if (o->dump_bpf)
		cg_dump_bpf(obj, stdout);
	nprobes = kernel_count_probes(obj);
	if (o->dry_run) {
		rc = 0;
		goto out;
	}
	/*
	 * From here on Ctrl-C (or SIGTERM) ends the run the ordinary way,
	 * once the probes are attached: END, the maps, nothing left
	 * attached, the command ended.  SA_RESTART: the waits before the
	 * loop resume; epoll_wait() returns at once all the same.
	 */
	kernel_sigint = 0;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (o->cmd) {
		/* started now (waiting to exec) so that cpid is known */
		err = kernel_child_start(o->cmd, &ch);
		if (err)
			goto out;
	}
	err = kernel_load(obj, o, &k);
	if (err)
		goto out;
	k->c = c;
	if (o->pid > 0) {
		pidfd = syscall(SYS_pidfd_open, o->pid, 0);
		if (pidfd < 0) {
			fprintf(stderr, "ubt: cannot trace pid %d: %s\n",
				o->pid, strerror(errno));
			goto out;
		}
		xw = exitwatch_start(o->pid);
	}
	kernel_set_globals(k, ch.pid);
	if (!o->quiet)
		out_attached(&k->out, nprobes);
	fflush(k->out.f);
	err = kernel_attach(k, &nprobes);
	if (err)
		goto out;
	/* test harnesses wait for this line, as for bpftrace */
	if (getenv("__BPFTRACE_NOTIFY_PROBES_ATTACHED")) {
		printf("__BPFTRACE_NOTIFY_PROBES_ATTACHED\n");
		fflush(stdout);
	}
	err = kernel_run_begin(k);
	if (err)
		goto out;
	kernel_consume(k);
	/* as bpftrace: after an exit() in BEGIN the command never runs */
	if (o->cmd && !k->exiting && !kernel_sigint)
		kernel_child_go(&ch);
	if (!k->exiting && !kernel_sigint)
		err = kernel_loop(k, o->cmd ? &ch : NULL, pidfd);
	if (err)
		goto out;
	/*
	 * Stop the probes (the exit flag every program checks first), take
	 * what they sent until then (dropped after an exit(), as bpftrace
	 * does), run END and print the maps; detach only then, as that can
	 * take a while (an RCU wait per tracepoint).
	 */
	kernel_stop_probes(k);
	kernel_consume(k);
	k->in_end = true;
	err = kernel_run_end(k);
	kernel_consume(k);
	if (!err)
		err = kernel_print_all_maps(k);
	fflush(k->out.f);
	kernel_map_full_warnings(k);
	if (ch.exited)
		child_report(stderr, ch.pid, ch.status, o->verbose);
	if (exitwatch_status(xw, &st))
		child_report_pid(stderr, o->pid, st, o->verbose);
	kernel_detach_fast(k);
	rc = err ? 1 : 0;
out:
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	kernel_child_kill(&ch);
	if (pidfd >= 0)
		close(pidfd);
	exitwatch_free(xw);
	kernel_free(k);
	cg_object_free(obj);
	return rc;
}
