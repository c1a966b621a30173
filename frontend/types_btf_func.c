/*
 * Kernel functions and raw tracepoints from BTF (types_btf.h): their
 * arguments as the u64 context of fentry/fexit and raw tracepoint
 * programs lays them out, and the list of them, from vmlinux's BTF and
 * each loaded module's (/sys/kernel/btf/MODULE, split on vmlinux's).
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "arena.h"
#include "types.h"
#include "types_btf.h"
#include "util.h"

#define BTF_SYSFS "/sys/kernel/btf"
#define BTF_RAWTP_PREFIX "btf_trace_"

/* The modules' BTF, each loaded once and kept. */
struct btf_mod {
	char *name;
	struct btf *btf;
};
static struct btf_mod *btf_mods;
static int btf_nmods = -1;

static int btf_mod_cmp(const void *x, const void *y)
{
	return strcmp(((const struct btf_mod *)x)->name,
		      ((const struct btf_mod *)y)->name);
}

static void btf_load_mods(void)
{
	struct btf *vm = types_btf_vmlinux();
	struct dirent *e;
	DIR *d;
	int cap = 0;

	if (btf_nmods >= 0)
		return;
	btf_nmods = 0;
	d = vm ? opendir(BTF_SYSFS) : NULL;
	while (d && (e = readdir(d))) {
		struct btf *b;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "vmlinux"))
			continue;
		b = btf__load_module_btf(e->d_name, vm);
		if (libbpf_get_error(b))
			continue;
		if (btf_nmods == cap) {
			cap = cap ? 2 * cap : 64;
			btf_mods = xrealloc(btf_mods, cap * sizeof(*btf_mods));
		}
		btf_mods[btf_nmods].name = xstrdup(e->d_name);
		btf_mods[btf_nmods++].btf = b;
	}
	if (d)
		closedir(d);
	if (btf_nmods > 1)
		qsort(btf_mods, btf_nmods, sizeof(*btf_mods), btf_mod_cmp);
}

static struct btf *btf_mod(const char *name)
{
	btf_load_mods();
	for (int i = 0; i < btf_nmods; i++)
		if (!strcmp(btf_mods[i].name, name))
			return btf_mods[i].btf;
	return NULL;
}

/*
 * The FUNCs and TYPEDEFs of one BTF sorted by name (then id), built at
 * the first look-up: btf__find_by_name_kind() walks every type, and -lv
 * 'kfunc:*' asks it for each of ~60000 functions.
 */
struct btf_index {
	const struct btf *btf;
	uint32_t *ids;
	uint32_t n;
};
static struct btf_index *btf_idx;
static int btf_nidx, btf_capidx;

static const struct btf *btf_sort_btf;

static int btf_id_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	const struct btf_type *ta = btf__type_by_id(btf_sort_btf, a);
	const struct btf_type *tb = btf__type_by_id(btf_sort_btf, b);
	int c = strcmp(btf__name_by_offset(btf_sort_btf, ta->name_off),
		       btf__name_by_offset(btf_sort_btf, tb->name_off));

	if (c)
		return c;
	if (btf_kind(ta) != btf_kind(tb))
		return btf_kind(ta) < btf_kind(tb) ? -1 : 1;
	return a < b ? -1 : a > b;
}

static const struct btf_index *btf_index(const struct btf *btf)
{
	struct btf_index *x;
	uint32_t end = btf__type_cnt(btf);
	/* a module's BTF numbers its own types after vmlinux's */
	uint32_t start = btf__base_btf(btf) ?
				 btf__type_cnt(btf__base_btf(btf)) : 1;

	for (int i = 0; i < btf_nidx; i++)
		if (btf_idx[i].btf == btf)
			return &btf_idx[i];
	if (btf_nidx == btf_capidx) {
		btf_capidx = btf_capidx ? 2 * btf_capidx : 16;
		btf_idx = xrealloc(btf_idx, btf_capidx * sizeof(*btf_idx));
	}
	x = &btf_idx[btf_nidx++];
	x->btf = btf;
	x->n = 0;
	x->ids = xcalloc(end > start ? end - start : 1, sizeof(*x->ids));
	for (uint32_t id = start; id < end; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);

		if (t && t->name_off &&
		    (btf_kind(t) == BTF_KIND_FUNC ||
		     btf_kind(t) == BTF_KIND_TYPEDEF))
			x->ids[x->n++] = id;
	}
	btf_sort_btf = btf;
	qsort(x->ids, x->n, sizeof(*x->ids), btf_id_cmp);
	return x;
}

/* btf__find_by_name_kind() for FUNC and TYPEDEF, through the index:
 * the first id of that name and kind, or -ENOENT */
static int32_t btf_find_name(const struct btf *btf, const char *name,
			     int kind)
{
	const struct btf_index *x = btf_index(btf);
	uint32_t lo = 0, hi = x->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct btf_type *t = btf__type_by_id(btf, x->ids[mid]);
		int c = strcmp(btf__name_by_offset(btf, t->name_off), name);

		if (!c)
			c = btf_kind(t) < kind ? -1 : btf_kind(t) > kind;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < x->n) {
		const struct btf_type *t = btf__type_by_id(btf, x->ids[lo]);

		if ((int)btf_kind(t) == kind &&
		    !strcmp(btf__name_by_offset(btf, t->name_off), name))
			return x->ids[lo];
	}
	return -ENOENT;
}

/* The FUNC_PROTO of name in btf: a FUNC's, or btf_trace_NAME's. */
static const struct btf_type *btf_proto(const struct btf *btf,
					const char *name, bool rawtp)
{
	const struct btf_type *t;
	int32_t id;

	if (rawtp) {
		char tn[256];

		snprintf(tn, sizeof(tn), BTF_RAWTP_PREFIX "%s", name);
		id = btf_find_name(btf, tn, BTF_KIND_TYPEDEF);
		if (id <= 0)
			return NULL;
		t = btf__type_by_id(btf, id);		/* typedef */
		t = t ? btf__type_by_id(btf, t->type) : NULL;	/* ptr */
		if (!t || !btf_is_ptr(t))
			return NULL;
		t = btf__type_by_id(btf, t->type);
	} else {
		id = btf_find_name(btf, name, BTF_KIND_FUNC);
		if (id <= 0)
			return NULL;
		t = btf__type_by_id(btf, id);
		t = t ? btf__type_by_id(btf, t->type) : NULL;
	}
	return t && btf_is_func_proto(t) ? t : NULL;
}

/* How many u64 slots a value of BTF type id takes (>= 1). */
static size_t btf_slots(const struct btf *btf, uint32_t id)
{
	int64_t sz = btf__resolve_size(btf, id);

	return sz > 8 ? (size_t)(sz + 7) / 8 : 1;
}

/*
 * A raw tracepoint's typedef names no parameters: their names from the
 * function with the same parameters, __probestub_NAME (6.5 and later,
 * one per event) or __bpf_trace_NAME (one per event class), when there
 * is one of as many parameters.
 */
static const struct btf_param *btf_rawtp_names(const struct btf *btf,
					       const char *name, int n)
{
	static const char *const pre[] = { "__probestub_", "__bpf_trace_" };

	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++) {
		const struct btf_type *t;
		char fn[256];
		int32_t id;

		snprintf(fn, sizeof(fn), "%s%s", pre[i], name);
		id = btf_find_name(btf, fn, BTF_KIND_FUNC);
		t = id > 0 ? btf__type_by_id(btf, id) : NULL;
		t = t ? btf__type_by_id(btf, t->type) : NULL;
		if (t && btf_is_func_proto(t) && btf_vlen(t) == n)
			return btf_params(t);
	}
	return NULL;
}

static struct type *btf_args_record(struct arena *a, const struct btf *btf,
				    const struct btf_type *proto,
				    const char *name, bool rawtp)
{
	const struct btf_param *p = btf_params(proto);
	const struct btf_param *names = rawtp ?
		btf_rawtp_names(btf, name, btf_vlen(proto)) : p;
	int n = btf_vlen(proto), first = rawtp ? 1 : 0;
	struct type *rec = type_new(a, TY_RECORD, 0);
	size_t slot = 0;

	rec->name = arena_printf(a, "struct %s_%s_args",
				 rawtp ? "rawtracepoint" : "kfunc", name);
	rec->fields = arena_alloc(a, (n + 1) * sizeof(*rec->fields));
	for (int i = first; i < n; i++) {
		struct type_field *f;
		struct type *t;

		/* a variadic function's last "parameter" is type 0 */
		if (!p[i].type)
			break;
		t = types_btf_type(a, btf, p[i].type);
		if (t) {
			f = &rec->fields[rec->nfields++];
			f->name = names ? btf__name_by_offset(
						  btf, names[i].name_off) :
					  NULL;
			if (!f->name || !*f->name)
				f->name = arena_printf(a, "arg%d", i - first);
			else
				f->name = arena_strdup(a, f->name);
			f->type = t;
			f->offset = 8 * slot;
		}
		slot += btf_slots(btf, p[i].type);
	}
	if (!rawtp && proto->type) {
		struct type *t = types_btf_type(a, btf, proto->type);

		if (t && t->kind != TY_VOID) {
			struct type_field *f = &rec->fields[rec->nfields++];

			f->name = "$retval";
			f->type = t;
			f->offset = 8 * slot;
		}
	}
	rec->size = 8 * (slot + 1);
	return rec;
}

/* name's FUNC_PROTO and the BTF it is in; 0, -ENODATA or -ENOENT */
static int btf_find(const char *module, const char *name, bool rawtp,
		    const struct btf **btf_out,
		    const struct btf_type **proto_out, const char **found_out)
{
	struct btf *vm = types_btf_vmlinux();
	const struct btf_type *proto = NULL;
	const struct btf *btf = NULL;
	const char *found = NULL;

	if (!vm)
		return -ENODATA;
	if (module && *module && strcmp(module, "vmlinux")) {
		btf = btf_mod(module);
		proto = btf ? btf_proto(btf, name, rawtp) : NULL;
		found = module;
	} else {
		btf = vm;
		proto = btf_proto(vm, name, rawtp);
		if (!proto && !module) {
			btf_load_mods();
			for (int i = 0; !proto && i < btf_nmods; i++) {
				btf = btf_mods[i].btf;
				proto = btf_proto(btf, name, rawtp);
				found = btf_mods[i].name;
			}
		}
	}
	if (!proto)
		return -ENOENT;
	*btf_out = btf;
	*proto_out = proto;
	*found_out = found;
	return 0;
}

int types_btf_func_args(struct arena *a, const char *module, const char *name,
			bool rawtp, struct type **out, const char **module_out)
{
	const struct btf_type *proto;
	const struct btf *btf;
	const char *found;
	int err = btf_find(module, name, rawtp, &btf, &proto, &found);

	*out = NULL;
	if (err)
		return err;
	*out = btf_args_record(a, btf, proto, name, rawtp);
	if (module_out)
		*module_out = found ? arena_strdup(a, found) : NULL;
	return 0;
}

/* where the kept btf_dump writes: the line being built */
static FILE *btf_decl_out;

static void btf_decl_print(void *ctx, const char *fmt, va_list args)
{
	(void)ctx;
	vfprintf(btf_decl_out, fmt, args);
}

/* "    TYPE NAME\n": TYPE as C declares it (btf_dump), as bpftrace
 * prints a kfunc's arguments; one btf_dump per BTF, kept (a new one
 * costs a walk of every type) */
static void btf_decl_line(FILE *f, const struct btf *btf, uint32_t id,
			  const char *name)
{
	LIBBPF_OPTS(btf_dump_emit_type_decl_opts, o, .field_name = "");
	static const struct btf *dump_btf;
	static struct btf_dump *d;

	if (dump_btf != btf) {
		btf_dump__free(d);
		d = btf_dump__new(btf, btf_decl_print, NULL, NULL);
		if (libbpf_get_error(d))
			d = NULL;
		dump_btf = btf;
	}
	btf_decl_out = f;
	fputs("    ", f);
	if (d)
		btf_dump__emit_type_decl(d, id, &o);
	fprintf(f, " %s\n", name);
}

const char *types_btf_func_decls(struct arena *a, const char *module,
				 const char *name, bool rawtp, bool ret)
{
	const struct btf_type *proto;
	const struct btf_param *p, *names;
	const struct btf *btf;
	const char *found, *r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int n;

	if (btf_find(module, name, rawtp, &btf, &proto, &found))
		return NULL;
	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	p = btf_params(proto);
	n = btf_vlen(proto);
	names = rawtp ? btf_rawtp_names(btf, name, n) : p;
	for (int i = rawtp ? 1 : 0; i < n && p[i].type; i++) {
		const char *nm = names ? btf__name_by_offset(
						 btf, names[i].name_off) :
					 NULL;
		char dflt[32];

		if (!nm || !*nm) {
			snprintf(dflt, sizeof(dflt), "arg%d",
				 i - (rawtp ? 1 : 0));
			nm = dflt;
		}
		btf_decl_line(f, btf, p[i].type, nm);
	}
	if (ret && proto->type)
		btf_decl_line(f, btf, proto->type, "retval");
	fclose(f);
	r = arena_strdup(a, buf ? buf : "");
	free(buf);
	return r;
}

uint64_t types_btf_func_order(const char *module, const char *name,
			      bool rawtp)
{
	const struct btf_type *proto;
	const struct btf *btf;
	const char *found;
	char tn[256];
	uint64_t place = 0;
	int32_t id;

	if (btf_find(module, name, rawtp, &btf, &proto, &found))
		return 0;
	if (rawtp)
		snprintf(tn, sizeof(tn), BTF_RAWTP_PREFIX "%s", name);
	id = btf_find_name(btf, rawtp ? tn : name,
			   rawtp ? BTF_KIND_TYPEDEF : BTF_KIND_FUNC);
	for (int i = 0; found && i < btf_nmods; i++)
		if (btf_mods[i].btf == btf)
			place = i + 1;
	return place << 32 | (uint32_t)(id > 0 ? id : 0);
}

struct btf_func_vec {
	struct types_btf_func *v;
	int n, cap;
};

static void btf_collect(struct arena *a, const struct btf *btf,
			const char *module, bool rawtp,
			struct btf_func_vec *v)
{
	/* a module's BTF numbers its own types after vmlinux's */
	uint32_t start = module ? btf__type_cnt(btf__base_btf(btf)) : 1;
	uint32_t end = btf__type_cnt(btf);
	size_t plen = strlen(BTF_RAWTP_PREFIX);

	for (uint32_t id = start; id < end; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const char *nm;

		if (!t || btf_kind(t) != (rawtp ? BTF_KIND_TYPEDEF :
						   BTF_KIND_FUNC))
			continue;
		nm = btf__name_by_offset(btf, t->name_off);
		if (!nm || !*nm)
			continue;
		if (rawtp) {
			if (strncmp(nm, BTF_RAWTP_PREFIX, plen))
				continue;
			nm += plen;
		}
		if (v->n == v->cap) {
			v->cap = v->cap ? 2 * v->cap : 4096;
			v->v = xrealloc(v->v, v->cap * sizeof(*v->v));
		}
		t = btf__type_by_id(btf, t->type);
		if (rawtp && t && btf_is_ptr(t))
			t = btf__type_by_id(btf, t->type);
		v->v[v->n].nparams = t && btf_is_func_proto(t) ?
					     btf_vlen(t) - (rawtp ? 1 : 0) : 0;
		v->v[v->n].name = arena_strdup(a, nm);
		v->v[v->n++].module = module;
	}
}

static int btf_func_cmp(const void *x, const void *y)
{
	const struct types_btf_func *a = x, *b = y;
	int c;

	if (!a->module != !b->module)
		return a->module ? 1 : -1;
	if (a->module && (c = strcmp(a->module, b->module)))
		return c;
	return strcmp(a->name, b->name);
}

int types_btf_funcs(struct arena *a, bool rawtp, struct types_btf_func **out,
		    int *n)
{
	struct btf *vm = types_btf_vmlinux();
	struct btf_func_vec v = { 0 };
	int k = 0;

	*out = NULL;
	*n = 0;
	if (!vm)
		return -ENODATA;
	btf_collect(a, vm, NULL, rawtp, &v);
	btf_load_mods();
	for (int i = 0; i < btf_nmods; i++)
		btf_collect(a, btf_mods[i].btf,
			    arena_strdup(a, btf_mods[i].name), rawtp, &v);
	if (v.n > 1)
		qsort(v.v, v.n, sizeof(*v.v), btf_func_cmp);
	for (int i = 0; i < v.n; i++)
		if (!k || btf_func_cmp(&v.v[k - 1], &v.v[i]))
			v.v[k++] = v.v[i];
	*out = arena_alloc(a, (k ? k : 1) * sizeof(**out));
	if (k)
		memcpy(*out, v.v, k * sizeof(**out));
	*n = k;
	free(v.v);
	return 0;
}
