/*
 * `args` in uprobes: the function's parameters from the binary's DWARF
 * debug info, as bpftrace reads them. The record's fields sit at the
 * offsets of the x86-64 argument registers in struct pt_regs (the uprobe
 * context), so that codegen reads args.name as it reads a tracepoint
 * field; a parameter narrower than 8 bytes is the low part of its
 * register (little endian). Integer, enum and pointer parameters in the
 * first six integer registers are supported; a parameter of another kind
 * (a struct passed by value, a floating-point value) and every parameter
 * after it are left out.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "probes.h"
#include "sema.h"
#include "sema_int.h"
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

static bool die_type(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute attr;

	if (!dwarf_attr_integrate(die, DW_AT_type, &attr) ||
	    !dwarf_formref_die(&attr, out))
		return false;
	return dwarf_peel_type(out, out) == 0;
}

static struct type *base_type(struct sema_ctx *x, Dwarf_Die *t)
{
	Dwarf_Attribute attr;
	Dwarf_Word enc = 0;
	int size = dwarf_bytesize(t);

	if (size != 1 && size != 2 && size != 4 && size != 8)
		return NULL;
	if (dwarf_attr(t, DW_AT_encoding, &attr))
		dwarf_formudata(&attr, &enc);
	switch (enc) {
	case DW_ATE_signed:
	case DW_ATE_signed_char:
		return type_int(x->a, size, true);
	case DW_ATE_unsigned:
	case DW_ATE_unsigned_char:
	case DW_ATE_boolean:
		return type_int(x->a, size, false);
	default:
		return NULL;	/* floating point and the rest */
	}
}

/* The type of something a pointer points to. */
static struct type *pointee(struct sema_ctx *x, Dwarf_Die *ptr)
{
	Dwarf_Die t;
	struct type *e;
	const char *name;

	if (!die_type(ptr, &t))
		return type_new(x->a, TY_VOID, 0);
	switch (dwarf_tag(&t)) {
	case DW_TAG_base_type:
		e = base_type(x, &t);
		return e ? e : type_new(x->a, TY_VOID, 0);
	case DW_TAG_pointer_type:
		e = type_pointer(x->a, pointee(x, &t));
		e->addrspace = AS_USER;
		return e;
	case DW_TAG_enumeration_type:
		return type_int(x->a, dwarf_bytesize(&t) > 0 ?
					      (size_t)dwarf_bytesize(&t) : 4,
				false);
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
		name = dwarf_diename(&t);
		e = type_new(x->a, TY_NAMED, 0);
		e->name = arena_printf(x->a, "%s %s",
				       dwarf_tag(&t) == DW_TAG_structure_type ?
					       "struct" : "union",
				       name ? name : "(anonymous)");
		return e;
	default:
		return type_new(x->a, TY_VOID, 0);
	}
}

/* The type of a parameter, or NULL when it is not in an integer register. */
static struct type *param_type(struct sema_ctx *x, Dwarf_Die *param)
{
	Dwarf_Die t;
	struct type *p;
	int size;

	if (!die_type(param, &t))
		return NULL;
	switch (dwarf_tag(&t)) {
	case DW_TAG_base_type:
		return base_type(x, &t);
	case DW_TAG_pointer_type:
		p = type_pointer(x->a, pointee(x, &t));
		p->addrspace = AS_USER;
		return p;
	case DW_TAG_enumeration_type:
		size = dwarf_bytesize(&t);
		if (size != 1 && size != 2 && size != 4 && size != 8)
			return NULL;
		return type_int(x->a, size, false);
	default:
		return NULL;
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
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf *dw;
	int fd, err = -ENOENT;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return -ENODATA;
	}
	while (!f.found &&
	       dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu))
			dwarf_getfuncs(&cu, find_func, &f, 0);
		off = next;
	}
	if (f.found) {
		*out = func_record(x, &f.die, func);
		err = 0;
	}
	dwarf_end(dw);
	close(fd);
	return err;
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
