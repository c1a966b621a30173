/*
 * The types pass: predicates on types, merging a type into a map's or
 * a variable's, resolving type names.
 */
#include <errno.h>
#include <string.h>

#include "compat.h"
#include "sema.h"
#include "sema_int.h"
#include "sema_type_int.h"
#include "util.h"

bool sema_t_is_int(const struct type *t)
{
	return t && (t->kind == TY_INT || t->kind == TY_BOOL ||
		     t->kind == TY_ENUM);
}

bool sema_t_is_cond(const struct type *t)
{
	return sema_t_is_int(t) || (t && t->kind == TY_POINTER);
}

bool sema_t_int_signed(const struct type *t)
{
	return t->kind == TY_INT ? t->is_signed : t->kind == TY_ENUM;
}

struct type *sema_t_int64_of(struct sema_ctx *x, bool is_signed)
{
	return type_int(x->a, 8, is_signed);
}

/*
 * A literal that is not negative. bpftrace 0.17 turns numeric positional
 * parameters into literals before type checking, so `arg0 == $1` with
 * $1 = 4 draws no sign warning: count them too.
 */
bool sema_t_is_nonneg_literal(struct sema_ctx *x, const struct ast_node *n)
{
	const char *s;
	int64_t v;

	if (n->kind == AST_POSITIONAL) {
		if (n->pos.num == -1)
			return true;
		s = sema_param(x, n->pos.num);
		return !s || (sema_is_number(s, &v) && v >= 0);
	}
	return n->kind == AST_INT && !n->num.is_negative &&
	       (int64_t)n->num.value >= 0;
}

/* Map values and keys store integers as 64 bits (0.17). */
struct type *sema_t_widen(struct sema_ctx *x, struct type *t)
{
	struct type *w;

	if (!t || t->kind != TY_INT || t->size == 8)
		return t;
	/* v0.26 (compat int-types): as small as what is stored */
	if (compat_has(COMPAT_INT_TYPES))
		return t;
	w = sema_t_int64_of(x, t->is_signed);
	/* a literal's stays one (compat int-types) */
	w->sign_flex = t->sign_flex;
	/* an enum's value stays one (compat enum-names) */
	w->enumvals = t->enumvals;
	w->nenumvals = t->nenumvals;
	return w;
}

/*
 * v0.26 (compat int-types): a literal's integer takes the sign of the
 * other, the larger size; it stays a literal's only if both are.
 */
static int merge_flex(struct sema_ctx *x, struct type **dst,
		      const struct type *src, bool *changed)
{
	struct type *d = *dst;
	size_t size = d->size > src->size ? d->size : src->size;
	bool sign = d->sign_flex ? src->is_signed : d->is_signed;
	bool flex = d->sign_flex && src->sign_flex;

	if (size == d->size && sign == d->is_signed && flex == d->sign_flex)
		return 0;
	*dst = type_int(x->a, size, sign);
	(*dst)->sign_flex = flex;
	(*dst)->enumvals = d->enumvals;
	(*dst)->nenumvals = d->nenumvals;
	*changed = true;
	return 0;
}

/*
 * v0.26 (compat int-types): a signed and an unsigned integer give the
 * signed one when it is the larger, else a signed integer twice the
 * larger size (int64 at most).
 */
static int merge_signs(struct sema_ctx *x, struct type **dst,
		       const struct type *src, bool *changed)
{
	struct type *d = *dst;
	const struct type *s = d->is_signed ? d : src, *u = d->is_signed ? src : d;
	size_t size = s->size > u->size ? s->size :
		      u->size * 2 > 8	? 8 :
					  u->size * 2;

	if (size == d->size && d->is_signed)
		return 0;
	*dst = type_int(x->a, size, true);
	(*dst)->enumvals = d->enumvals;
	(*dst)->nenumvals = d->nenumvals;
	*changed = true;
	return 0;
}

/*
 * Merge src into *dst for a storage location (variable, map value or
 * key) that already has type *dst: strings grow to the larger size,
 * integers to the larger width, tuples element by element. 0, or -1 when
 * the types do not fit (*dst unchanged). *changed is set when *dst grew.
 */
int sema_t_merge(struct sema_ctx *x, struct type **dst, struct type *src,
		 bool *changed)
{
	struct type *d = *dst;

	if (d->kind == TY_INT && src->kind == TY_INT &&
	    (d->sign_flex || src->sign_flex))
		return merge_flex(x, dst, src, changed);
	if (d->kind == TY_INT && src->kind == TY_INT &&
	    d->is_signed != src->is_signed && compat_has(COMPAT_INT_TYPES))
		return merge_signs(x, dst, src, changed);
	if (type_equal(d, src))
		return 0;
	if (sema_t_is_int(d) && sema_t_is_int(src) && d->kind == src->kind) {
		if (src->size > d->size) {
			*dst = type_int(x->a, src->size, d->is_signed);
			(*dst)->enumvals = d->enumvals;
			(*dst)->nenumvals = d->nenumvals;
			*changed = true;
		}
		return 0;
	}
	if (d->kind != src->kind)
		return -1;
	switch (d->kind) {
	case TY_INT:
		return 0;
	case TY_STRING:
		if (src->size > d->size) {
			*dst = type_string(x->a, src->size);
			*changed = true;
		}
		return 0;
	case TY_BUFFER:	/* buf()s of several lengths: the longest */
		if (src->size > d->size) {
			*dst = type_new(x->a, TY_BUFFER, src->size);
			(*dst)->addrspace = d->addrspace;
			*changed = true;
		}
		return 0;
	case TY_TUPLE: {
		struct type **el;
		bool grew = false;

		if (d->nfields != src->nfields)
			return -1;
		el = arena_alloc(x->a, sizeof(*el) * d->nfields);
		for (int i = 0; i < d->nfields; i++) {
			const struct type_field *sf = type_tuple_match(d, src,
								       i);

			if (!sf)
				return -1;
			el[i] = d->fields[i].type;
			if (el[i]->kind == TY_INT && sf->type->kind == TY_INT &&
			    el[i]->size == sf->type->size)
				continue;
			if (sema_t_merge(x, &el[i], sf->type, &grew))
				return -1;
		}
		if (grew) {
			*dst = sema_tuple(x, el, d->nfields);
			for (int i = 0; i < d->nfields; i++)	/* records */
				(*dst)->fields[i].name = d->fields[i].name;
			*changed = true;
		}
		return 0;
	}
	case TY_SUM:
	case TY_MIN:
	case TY_MAX:
	case TY_AVG:
	case TY_STATS:
	case TY_COUNT:
		return 0;
	default:
		return -1;
	}
}

/* Type mismatch wording for tuples, as bpftrace has it. */
void sema_t_mismatch(struct sema_ctx *x, const struct ast_loc *loc,
		     const char *what, const char *name, struct type *have,
		     struct type *got)
{
	if (have->kind == TY_TUPLE && got->kind == TY_TUPLE) {
		sema_error(x, loc, "Tuple type mismatch: %s != %s.",
			   sema_tstr(x, have), sema_tstr(x, got));
		return;
	}
	sema_error(x, loc,
		   "Type mismatch for %s: trying to assign value of type '%s' when %s already contains a value of type '%s'",
		   name, sema_tstr(x, got), what, sema_tstr(x, have));
}

/* Map values. */

enum sema_func sema_agg_of(const struct type *t)
{
	switch (t ? t->kind : TY_NONE) {
	case TY_COUNT:
		return FN_COUNT;
	case TY_SUM:
		return FN_SUM;
	case TY_AVG:
		return FN_AVG;
	case TY_MIN:
		return FN_MIN;
	case TY_MAX:
		return FN_MAX;
	case TY_STATS:
		return FN_STATS;
	case TY_HIST:
		return FN_HIST;
	case TY_LHIST:
		return FN_LHIST;
	case TY_TSERIES:
		return FN_TSERIES;
	default:
		return FN_NONE;
	}
}

int sema_t_map_set_value(struct sema_ctx *x, struct sema_map *m,
			 struct type *t, const struct ast_loc *loc,
			 const struct ast_loc *rloc)
{
	bool changed = false;

	if (!t)
		return -EINVAL;
	if (t->kind == TY_VOID || t->kind == TY_NONE) {
		sema_error(x, loc, "Invalid expression for assignment: %s",
			   sema_tstr(x, t));
		return -EINVAL;
	}
	if (t->kind == TY_POINTER && t->is_ctx) {
		sema_error(x, loc, "context cannot be assigned to a map");
		return -EINVAL;
	}
	t = sema_t_widen(x, t);
	if (!m->value) {
		m->value = t;
		m->agg = sema_agg_of(t);
		x->changed++;
		return 0;
	}
	if (m->value->kind == TY_LHIST && t->kind == TY_LHIST &&
	    !type_equal(m->value, t)) {
		sema_error(x, rloc,
			   "Different lhist bounds in a single map unsupported");
		return -EINVAL;
	}
	if (m->value->kind == TY_TSERIES && t->kind == TY_TSERIES &&
	    !type_equal(m->value, t)) {
		sema_error(x, rloc,
			   "Different tseries bounds in a single map unsupported");
		return -EINVAL;
	}
	if (m->value->kind == TY_HIST && t->kind == TY_HIST &&
	    !type_equal(m->value, t)) {
		sema_error(x, rloc,
			   "Different bits in a single hist unsupported");
		return -EINVAL;
	}
	if (sema_t_merge(x, &m->value, t, &changed)) {
		sema_t_mismatch(x, loc, "map", m->name, m->value, t);
		return -EINVAL;
	}
	if (changed)
		x->changed++;
	return 0;
}

/* bpftrace 0.17 shows every integer key as unsigned int64. */
/*
 * bpftrace 0.17 locates a variable's type mismatch at the '=' (or the
 * whole "op=") of the assignment, which the parser recorded.
 */
struct ast_loc sema_t_assign_op_loc(const struct ast_node *n)
{
	return n->assign.op_loc.first_line ? n->assign.op_loc : n->loc;
}

/*
 * `args` of a uprobe as a value (v0.26): a record of the parameters, in C
 * layout (the context's record has them at their registers' offsets);
 * codegen copies each field (cg_args_value()).
 */
struct type *sema_t_args_value(struct sema_ctx *x, struct ast_node *n,
			       struct type *t)
{
	const struct type *src;
	struct type *rec;
	size_t off = 0, align = 1;

	if (!t || n->kind != AST_BUILTIN || !n->sema ||
	    n->sema->builtin != BI_ARGS || t->kind != TY_POINTER ||
	    !t->is_ctx || !t->elem || t->elem->kind != TY_RECORD ||
	    !x->probe || x->probe->provider != PROV_UPROBE)
		return t;
	src = t->elem;
	rec = type_new(x->a, TY_RECORD, 0);
	rec->name = src->name;
	rec->nfields = src->nfields;
	rec->fields = arena_alloc(x->a, sizeof(*rec->fields) *
					(src->nfields ? src->nfields : 1));
	for (int i = 0; i < src->nfields; i++) {
		struct type_field *f = &rec->fields[i];
		size_t a = sema_type_align(src->fields[i].type);

		*f = src->fields[i];
		if (f->bitfield_bits || !f->type || !f->type->size)
			return t;
		off = (off + a - 1) / a * a;
		f->offset = off;
		off += f->type->size;
		if (a > align)
			align = a;
	}
	rec->size = (off + align - 1) / align * align;
	n->type = rec;
	return rec;
}

struct type *sema_t_agg_value(struct sema_ctx *x, struct ast_node *n,
			      struct type *t)
{
	t = sema_t_args_value(x, n, t);
	if (!t || n->kind != AST_MAP)
		return t;
	switch (t->kind) {
	case TY_COUNT:
		n->type = sema_uint64(x);
		return n->type;
	case TY_SUM:
	case TY_MIN:
	case TY_MAX:
	case TY_AVG:
		n->type = sema_t_int64_of(x, t->is_signed);
		return n->type;
	default:
		return t;
	}
}

int sema_t_var_set(struct sema_ctx *x, struct ast_node *var, struct type *t,
		   const struct ast_loc *loc)
{
	struct sema_var *v = var->sema->var;
	bool changed = false;

	if (!t)
		return -EINVAL;
	if (t->kind == TY_VOID || t->kind == TY_NONE) {
		sema_error(x, loc, "Invalid expression for assignment: %s",
			   sema_tstr(x, t));
		return -EINVAL;
	}
	if (type_is_aggregation(t)) {
		sema_error(x, loc,
			   "Invalid expression for assignment: %s (aggregations can only be assigned to maps)",
			   sema_tstr(x, t));
		return -EINVAL;
	}
	if (!v->type) {
		v->type = t;
		x->changed++;
	} else if (v->declared) {
		/* a declared type stays: integers convert, the rest fit */
		if (!(sema_t_is_int(v->type) && sema_t_is_int(t)) &&
		    !(v->type->kind == TY_STRING && t->kind == TY_STRING &&
		      t->size <= v->type->size) &&
		    !type_equal(v->type, t)) {
			sema_t_mismatch(x, loc, "variable", v->name, v->type, t);
			return -EINVAL;
		}
	} else if (sema_t_merge(x, &v->type, t, &changed)) {
		sema_t_mismatch(x, loc, "variable", v->name, v->type, t);
		return -EINVAL;
	}
	if (changed)
		x->changed++;
	var->type = v->type;
	return 0;
}

/*
 * Named types written in casts: the integer names bpftrace knows, then
 * sema_lookup_type(): the script's C definitions, the probed binary's
 * DWARF and the kernel's BTF (DWARF first when user).
 */
static struct type *resolve_named(struct sema_ctx *x, struct type *t,
				  const struct ast_loc *loc, bool user)
{
	struct type *r;

	static const struct {
		const char *name;
		size_t size;
		bool is_signed;
	} ints[] = {
		{ "int8", 1, true }, { "int16", 2, true },
		{ "int32", 4, true }, { "int64", 8, true },
		{ "uint8", 1, false }, { "uint16", 2, false },
		{ "uint32", 4, false }, { "uint64", 8, false },
		{ "char", 1, true }, { "signed char", 1, true },
		{ "unsigned char", 1, false }, { "short", 2, true },
		{ "unsigned short", 2, false }, { "int", 4, true },
		{ "signed", 4, true }, { "unsigned", 4, false },
		{ "unsigned int", 4, false }, { "long", 8, true },
		{ "unsigned long", 8, false }, { "long long", 8, true },
		{ "unsigned long long", 8, false }, { "u8", 1, false },
		{ "u16", 2, false }, { "u32", 4, false },
		{ "u64", 8, false }, { "s8", 1, true }, { "s16", 2, true },
		{ "s32", 4, true }, { "s64", 8, true },
		{ "size_t", 8, false }, { "ssize_t", 8, true },
		{ "pid_t", 4, true }, { "uid_t", 4, false },
		{ "gid_t", 4, false }, { "bool", 1, false },
		{ "_Bool", 1, false },
	};

	if (!t)
		return NULL;
	if (t->kind == TY_POINTER || t->kind == TY_ARRAY) {
		struct type *e = t->elem;

		if (!e || e->kind == TY_VOID)
			return t;
		if (t->kind == TY_POINTER)
			user = sema_debuginfo_user_first(x, t);
		e = resolve_named(x, e, loc, user);
		if (!e)
			return NULL;
		if (e == t->elem)
			return t;
		r = type_new(x->a, t->kind, 0);
		*r = *t;
		r->elem = e;
		if (t->kind == TY_ARRAY)
			r->size = e->size * t->nelems;
		return r;
	}
	if (t->kind != TY_NAMED)
		return t;
	if (!strcmp(t->name, "void"))	/* (void *)x (v0.26) */
		return type_new(x->a, TY_VOID, 0);
	for (size_t i = 0; i < ARRAY_SIZE(ints); i++)
		if (!strcmp(ints[i].name, t->name))
			return type_int(x->a, ints[i].size, ints[i].is_signed);
	r = sema_lookup_type(x, t->name, user);
	if (r)
		return r;
	/* a bare name of a struct or union (v0.26: offsetof(qspinlock, f)) */
	if (!strchr(t->name, ' ') &&
	    ((r = sema_lookup_type(x, arena_printf(x->a, "struct %s", t->name),
				   user)) ||
	     (r = sema_lookup_type(x, arena_printf(x->a, "union %s", t->name),
				   user))))
		return r;
	if (!strncmp(t->name, "struct ", 7) || !strncmp(t->name, "union ", 6))
		sema_error(x, loc, "Unknown struct/union: '%s'", t->name);
	else
		sema_error(x, loc, "Unknown type: '%s'", t->name);
	return NULL;
}

struct type *sema_t_resolve_named(struct sema_ctx *x, struct type *t,
				  const struct ast_loc *loc)
{
	return resolve_named(x, t, loc, sema_debuginfo_user_first(x, NULL));
}

/* Expressions. */
