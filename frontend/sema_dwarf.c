/*
 * `args` in uprobes: the function's parameters from the binary's DWARF
 * debug info, as bpftrace reads them. The record's fields sit at the
 * offsets of the x86-64 argument registers in struct pt_regs (the uprobe
 * context), so that codegen reads args.name as it reads a tracepoint
 * field; a parameter narrower than 8 bytes is the low part of its
 * register (little endian). Integer, enum and pointer parameters in the
 * first six integer registers are supported; a parameter of another kind
 * (a struct passed by value, a floating-point value) and every parameter
 * after it are left out. Pointers to records point to the binary's
 * types (types_dwarf.c), so that args->p->field chains read them.
 *
 * Also the lookup of the C types a program names (casts, sizeof, the
 * records pointers lead to): in the DWARF of the files the probe's
 * uprobes trace and in the kernel's BTF (types_btf.c).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <string.h>

#include "probes.h"
#include "sema.h"
#include "sema_int.h"
#include "types_btf.h"
#include "types_dwarf.h"
#include "util.h"

/* offsetof(struct pt_regs, di/si/dx/cx/r8/r9) on x86-64 */
static const size_t arg_regs[] = { 112, 104, 96, 88, 72, 64 };

struct dw_find {
	const char *name;
	Dwarf_Die die;
	bool found;
};

static int find_func(Dwarf_Die *die, void *arg)
{
	struct dw_find *f = arg;
	const char *name = dwarf_diename(die);

	if (!name || strcmp(name, f->name) ||
	    dwarf_hasattr(die, DW_AT_declaration))
		return DWARF_CB_OK;
	f->die = *die;
	f->found = true;
	return DWARF_CB_ABORT;
}

/* The type of a parameter, or NULL when it is not in an integer register. */
static struct type *param_type(struct sema_ctx *x, Dwarf_Die *param)
{
	struct type *t = types_dwarf_type_of(x->a, param);

	if (!t)
		return NULL;
	switch (t->kind) {
	case TY_INT:
	case TY_POINTER:
		return t;
	default:
		return NULL;	/* records and arrays by value, void */
	}
}

static struct type *func_record(struct sema_ctx *x, Dwarf_Die *fn,
				const char *func)
{
	struct type *rec = type_new(x->a, TY_RECORD, 0);
	Dwarf_Die child;
	int n = 0;

	rec->name = arena_printf(x->a, "struct %s_args", func);
	rec->fields = arena_alloc(x->a, sizeof(*rec->fields) *
					      ARRAY_SIZE(arg_regs));
	if (dwarf_child(fn, &child) != 0)
		return rec;
	do {
		struct type *t;

		if (dwarf_tag(&child) != DW_TAG_formal_parameter)
			continue;
		if (n == (int)ARRAY_SIZE(arg_regs))
			break;
		t = param_type(x, &child);
		if (!t)
			break;	/* the registers of the rest are unknown */
		rec->fields[n].name = arena_strdup(x->a,
						   dwarf_diename(&child) ?: "");
		rec->fields[n].type = t;
		rec->fields[n].offset = arg_regs[n];
		n++;
	} while (dwarf_siblingof(&child, &child) == 0);
	rec->nfields = n;
	rec->size = 120;	/* up to orig_ax: the registers */
	return rec;
}

/* Look func up in path's DWARF: 0, -ENODATA (no debug info), -ENOENT. */
static int dwarf_func_args(struct sema_ctx *x, const char *path,
			   const char *func, struct type **out)
{
	struct dw_find f = { .name = func };
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	uint8_t ut;
	Dwarf *dw = types_dwarf_open(path);

	if (!dw)
		return -ENODATA;
	/* a skeleton unit's functions are in its split unit (.dwo) */
	while (!f.found &&
	       !dwarf_get_units(dw, cu, &cu, NULL, &ut, &cudie, &subdie))
		dwarf_getfuncs(ut == DW_UT_skeleton ? &subdie : &cudie,
			       find_func, &f, 0);
	if (!f.found)
		return -ENOENT;
	*out = func_record(x, &f.die, func);
	return 0;
}

int sema_uprobe_args(struct sema_ctx *x, struct ast_node *ap,
		     struct type **out)
{
	const char *target = ap->ap.target, *func = ap->ap.func;
	const char **paths;
	int n, err;

	if (!target || !func || ap->ap.need_expansion ||
	    strpbrk(func, "*?[")) {
		sema_error(x, &ap->loc,
			   "args can not be used with wildcard uprobes");
		return -EINVAL;
	}
	err = probes_resolve_target(x->a, target, x->c->pid, &paths, &n);
	if (err || n != 1) {
		sema_error(x, &ap->loc,
			   "uprobe target file '%s' does not exist or is not executable",
			   target);
		return -EINVAL;
	}
	err = dwarf_func_args(x, paths[0], func, out);
	if (err == -ENODATA) {
		sema_error(x, &ap->loc, "No debuginfo found for %s", paths[0]);
		return -EINVAL;
	}
	if (err) {
		sema_error(x, &ap->loc, "No debuginfo found for %s in %s",
			   func, paths[0]);
		return -EINVAL;
	}
	return 0;
}

/* The files the uprobes of the probe being typed trace. */
static int probe_binaries(struct sema_ctx *x, const char ***paths)
{
	const char **all = NULL;
	int n = 0;

	if (!x->probe)
		return 0;
	for (struct ast_node *ap = x->probe->node->probe.aps; ap;
	     ap = ap->next) {
		const char **p;
		int np;

		if (!ap->sema || !ap->sema->ap ||
		    (ap->sema->ap->provider != PROV_UPROBE &&
		     ap->sema->ap->provider != PROV_URETPROBE) ||
		    !ap->ap.target ||
		    probes_resolve_target(x->a, ap->ap.target, x->c->pid, &p,
					  &np) ||
		    np <= 0)
			continue;
		{
			const char **grown = arena_alloc(
				x->a, (n + np) * sizeof(*grown));

			if (n)
				memcpy(grown, all, n * sizeof(*all));
			all = grown;
		}
		memcpy(all + n, p, np * sizeof(*p));
		n += np;
	}
	*paths = all;
	return n;
}

static struct type *from_dwarf(struct sema_ctx *x, const char *name)
{
	const char **paths;
	int n = probe_binaries(x, &paths);

	for (int i = 0; i < n; i++) {
		struct type *t = types_dwarf_lookup(x->a, paths[i], name);

		if (t)
			return t;
	}
	return NULL;
}

/*
 * What a lookup found, kept for the pass: the types pass walks the
 * program several times, and a kernel struct such as task_struct (the
 * records it holds by value included) is large.
 */
struct sema_typememo {
	struct sema_typememo *next;
	const char *name;
	bool user_first;
	const struct sema_probe *probe;	/* its binaries' DWARF */
	struct type *type;		/* NULL: not found */
};

struct type *sema_debuginfo_type(struct sema_ctx *x, const char *name,
				 bool user_first)
{
	struct sema_typememo *m;
	struct type *t = NULL;

	for (m = x->typememo; m; m = m->next)
		if (m->user_first == user_first && m->probe == x->probe &&
		    !strcmp(m->name, name))
			return m->type;
	if (user_first)
		t = from_dwarf(x, name);
	if (!t)
		t = types_btf_lookup(x->a, name);
	if (!t && !user_first)
		t = from_dwarf(x, name);
	m = arena_alloc(x->a, sizeof(*m));
	*m = (struct sema_typememo){
		.next = x->typememo,
		.name = arena_strdup(x->a, name),
		.user_first = user_first,
		.probe = x->probe,
		.type = t,
	};
	x->typememo = m;
	return t;
}

bool sema_debuginfo_user_first(struct sema_ctx *x, const struct type *ptr)
{
	if (ptr && ptr->addrspace == AS_USER)
		return true;
	if (ptr && ptr->addrspace == AS_KERNEL)
		return false;
	return x->probe && (x->probe->provider == PROV_UPROBE ||
			    x->probe->provider == PROV_URETPROBE);
}

/* An enumerator looked up, kept for the pass as the types are: every
 * walk of the types pass asks again. */
struct sema_enummemo {
	struct sema_enummemo *next;
	const char *name;
	const struct sema_probe *probe;	/* its binaries' DWARF */
	int err;
	int64_t value;
	struct type *type;	/* a kernel enumerator's: its enum's
				 * enumerators (compat enum-names) */
};

static int enum_lookup(struct sema_ctx *x, const char *name, int64_t *value,
		       struct type **type)
{
	const char **paths;
	int n = 0;

	if (sema_debuginfo_user_first(x, NULL))
		n = probe_binaries(x, &paths);
	for (int i = 0; i < n; i++)
		if (!types_dwarf_enum_value(paths[i], name, value))
			return 0;
	return types_btf_enum_lookup(x->a, name, value, type);
}

int sema_debuginfo_enum(struct sema_ctx *x, const char *name,
			int64_t *value)
{
	struct sema_enummemo *m;

	for (m = x->enummemo; m; m = m->next)
		if (m->probe == x->probe && !strcmp(m->name, name)) {
			*value = m->value;
			return m->err;
		}
	m = arena_alloc(x->a, sizeof(*m));
	*m = (struct sema_enummemo){
		.next = x->enummemo,
		.name = arena_strdup(x->a, name),
		.probe = x->probe,
	};
	m->err = enum_lookup(x, name, &m->value, &m->type);
	x->enummemo = m;
	*value = m->value;
	return m->err;
}

struct type *sema_debuginfo_enum_type(struct sema_ctx *x, const char *name)
{
	int64_t v;

	if (sema_debuginfo_enum(x, name, &v))
		return NULL;
	for (struct sema_enummemo *m = x->enummemo; m; m = m->next)
		if (m->probe == x->probe && !strcmp(m->name, name))
			return m->type;
	return NULL;
}
