/*
 * The types pass for C data: fields of records (p->f, s.f, args->f),
 * array and pointer indexing (a[i], p[i]), sizeof and offsetof, and C
 * names used as values (enum constants and #defines of the script's C
 * definitions, enumerators of the probed binary's DWARF and the kernel's
 * BTF), with bpftrace 0.17's messages. Values sema computes (a constant,
 * a size, an offset) are kept in the node's iargs[0] for codegen.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cdefs.h"
#include "compat.h"
#include "sema.h"
#include "sema_int.h"
#include "sema_type_int.h"
#include "util.h"

static struct type_field *field_find(struct type *rec, const char *name)
{
	for (int i = 0; i < rec->nfields; i++)
		if (rec->fields[i].name && !strcmp(rec->fields[i].name, name))
			return &rec->fields[i];
	return NULL;
}

static const char *rec_name(const struct type *rec)
{
	return rec->name ? rec->name : rec->is_union ? "union" : "struct";
}

/*
 * A probe with several tracepoints: codegen reads args fields by name
 * from each attach point's record, so every one must have the field,
 * with the same type.
 */
static bool args_field_everywhere(struct sema_ctx *x, struct ast_node *n,
				  const struct type_field *f)
{
	for (struct ast_node *ap = x->probe->node->probe.aps; ap;
	     ap = ap->next) {
		struct type *rec = ap->sema->ap->args_type;
		struct type_field *g;

		if (!rec)
			continue;
		g = field_find(rec, n->field.field);
		if (!g) {
			sema_error(x, &n->loc,
				   "Struct/union of type '%s' does not contain a field named '%s'",
				   rec_name(rec), n->field.field);
			return false;
		}
		if (!type_equal(g->type, f->type)) {
			sema_error(x, &n->loc,
				   "Probe has attach points with mixed arguments: field '%s' is %s in %s and %s in %s",
				   n->field.field, sema_tstr(x, f->type),
				   x->probe->name, sema_tstr(x, g->type),
				   ap->sema->ap->name);
			return false;
		}
	}
	return true;
}

/*
 * A struct known only by its name (an incomplete record): its definition
 * where a type source has one (sema_lookup_type()).
 */
static struct type *record_complete(struct sema_ctx *x, struct type *rec,
				    bool user_first)
{
	struct type *t;

	if (!rec || rec->kind != TY_RECORD || rec->nfields || !rec->name)
		return rec;
	t = sema_lookup_type(x, rec->name, user_first);
	if (!t || t->kind != TY_RECORD || t == rec)
		return rec;
	return t;
}

/*
 * The operand's type with the record it leads to known: a pointer to a
 * type known by name (the script's C definitions, the program's DWARF,
 * kernel BTF) or to an incomplete record points to its definition.
 * codegen finds the fields through the operand's type: it is set there.
 * NULL after an error.
 */
static struct type *operand_resolve(struct sema_ctx *x, struct ast_node *n,
				    struct type *t)
{
	struct ast_node *e = n->field.expr;
	struct type *r;

	if (t->is_ctx)
		return t;
	if (t->kind == TY_POINTER && t->elem && t->elem->kind == TY_NAMED) {
		t = sema_t_resolve_named(x, t, &n->loc);
		if (!t)
			return NULL;
		e->type = t;
	}
	if (t->kind == TY_POINTER) {
		r = record_complete(x, t->elem,
				    sema_debuginfo_user_first(x, t));
		if (r != t->elem) {
			struct type *p = type_pointer(x->a, r);

			p->addrspace = t->addrspace;
			t = e->type = p;
		}
	} else if (t->kind == TY_RECORD) {
		t = e->type = record_complete(
			x, t, sema_debuginfo_user_first(x, NULL));
	}
	return t;
}

/* The record a field access reads from, or NULL after an error. */
static struct type *field_record(struct sema_ctx *x, struct ast_node *n,
				 struct type *t)
{
	bool arrow = n->field.arrow;

	if (t->kind == TY_POINTER && t->is_ctx && t->elem &&
	    t->elem->kind == TY_RECORD)
		return t->elem;	/* args.f and args->f alike */
	if (t->kind == TY_POINTER && arrow) {
		struct type *e = t->elem;

		if (e && e->kind == TY_NAMED) {
			sema_error(x, &n->loc, "Unknown struct/union: '%s'",
				   e->name);
			return NULL;
		}
		if (e && e->kind == TY_RECORD)
			return e;
		sema_error(x, &n->loc,
			   "Can not access field '%s' on expression of type '%s'",
			   n->field.field, sema_tstr(x, e));
		return NULL;
	}
	if (t->kind == TY_POINTER && t->elem &&
	    t->elem->kind == TY_RECORD) {
		/* `.` on a pointer dereferences it, as in bpftrace since
		 * v0.21 (its tools use it; 0.17 asked for '->') */
		n->field.arrow = true;
		return t->elem;
	}
	if (t->kind == TY_RECORD && arrow) {
		sema_error(x, &n->loc,
			   "Can not dereference struct/union of type '%s'. It is not a pointer.",
			   rec_name(t));
		return NULL;
	}
	if (t->kind == TY_RECORD)
		return t;
	sema_error(x, &n->loc,
		   "Can not access field '%s' on expression of type '%s'",
		   n->field.field, sema_tstr(x, t));
	return NULL;
}

struct type *sema_t_field(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t = sema_type_expr(x, n->field.expr);
	struct type *rec;
	struct type_field *f;

	if (!t)
		return NULL;
	if (t->kind == TY_TUPLE && t->nfields && t->fields[0].name &&
	    !n->field.arrow) {
		/* a record's field (v0.25): its tuple index from now on */
		struct ast_node *e = n->field.expr;

		for (int i = 0; i < t->nfields; i++) {
			if (!t->fields[i].name ||
			    strcmp(t->fields[i].name, n->field.field))
				continue;
			n->kind = AST_TUPLE_INDEX;
			n->tindex.expr = e;
			n->tindex.index = i;
			return t->fields[i].type;
		}
		sema_error(x, &n->loc,
			   "Record does not contain a field named '%s'",
			   n->field.field);
		return NULL;
	}
	t = operand_resolve(x, n, t);
	if (!t)
		return NULL;
	rec = field_record(x, n, t);
	if (!rec)
		return NULL;
	if (!strncmp(n->field.field, "common_", 7) && t->is_ctx) {
		sema_error(x, &n->loc,
			   "BPF does not support accessing common tracepoint fields");
		return NULL;
	}
	f = field_find(rec, n->field.field);
	if (!f) {
		sema_error(x, &n->loc,
			   "Struct/union of type '%s' does not contain a field named '%s'",
			   rec_name(rec), n->field.field);
		return NULL;
	}
	if (t->is_ctx && !args_field_everywhere(x, n, f))
		return NULL;
	if (f->type->kind == TY_NAMED && f->type->size) {
		/* debug info's floating point, 128-bit integers */
		sema_error(x, &n->loc, "Field '%s' of type '%s' is not supported",
			   n->field.field, f->type->name);
		return NULL;
	}
	return f->type;
}

/* A tuple's index: a literal, or arithmetic on literals (v0.26 folds
 * them: $t[1 + 1]). */
static bool index_const(struct sema_ctx *x, const struct ast_node *n,
			int64_t *v, int depth)
{
	int64_t a, b;

	if (n->kind != AST_BINOP)
		return sema_int_literal(x, n, v);
	if (depth > 16 || !index_const(x, n->op.left, &a, depth + 1) ||
	    !index_const(x, n->op.right, &b, depth + 1))
		return false;
	switch (n->op.op) {
	case OP_ADD:
		*v = (int64_t)((uint64_t)a + (uint64_t)b);
		return true;
	case OP_SUB:
		*v = (int64_t)((uint64_t)a - (uint64_t)b);
		return true;
	case OP_MUL:
		*v = (int64_t)((uint64_t)a * (uint64_t)b);
		return true;
	case OP_DIV:
	case OP_MOD:
		if (!b || (a == INT64_MIN && b == -1))
			return false;
		*v = n->op.op == OP_DIV ? a / b : a % b;
		return true;
	default:
		return false;
	}
}

struct type *sema_t_index(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t = sema_type_expr(x, n->index.expr);
	struct type *it = sema_type_expr(x, n->index.index);
	int64_t v;

	if (!t || !it)
		return NULL;
	if (!sema_t_is_int(it)) {
		sema_error(x, &n->index.index->loc,
			   "The array index operator [] only accepts integer indices, found %s",
			   sema_tstr(x, it));
		return NULL;
	}
	if (t->kind == TY_ARRAY) {
		/* flex-array: a[i] on a[0] (a flexible member) reads past */
		bool flex = !t->nelems && compat_has(COMPAT_FLEX_ARRAY);

		if (!flex && sema_int_literal(x, n->index.index, &v) &&
		    (v < 0 || (uint64_t)v >= t->nelems)) {
			sema_error(x, &n->loc,
				   "the index %lld is out of bounds for array of size %zu",
				   (long long)v, t->nelems);
			return NULL;
		}
		return t->elem;
	}
	if (t->kind == TY_STRING) {
		/* a character (bpftrace v0.21 on: $path[0] != "/"[0]) */
		if (sema_int_literal(x, n->index.index, &v) &&
		    (v < 0 || (uint64_t)v >= t->size)) {
			sema_error(x, &n->loc,
				   "the index %lld is out of bounds for array of size %zu",
				   (long long)v, t->size);
			return NULL;
		}
		return type_int(x->a, 1, true);
	}
	if (t->kind == TY_TUPLE && index_const(x, n->index.index, &v, 0) &&
	    v >= 0 && v <= INT32_MAX) {
		/* $t[0] (v0.26): the tuple's element, as $t.0 */
		struct ast_node *e = n->index.expr;

		n->kind = AST_TUPLE_INDEX;
		n->tindex.expr = e;
		n->tindex.index = (int)v;
		return sema_type_expr(x, n);
	}
	if (t->kind == TY_POINTER) {
		if (!t->elem || t->elem->kind == TY_VOID || !t->elem->size) {
			sema_error(x, &n->loc,
				   "The array index operator [] cannot be used on a pointer to an unsized type (void *).");
			return NULL;
		}
		return t->elem;
	}
	sema_error(x, &n->loc,
		   "The array index operator [] can only be used on arrays and pointers, found %s.",
		   sema_tstr(x, t));
	return NULL;
}

/*
 * The value of a C name: an enum constant or #define of the script's C
 * definitions first, then an enumerator of the probed binary's DWARF (in
 * a uprobe) or of the kernel's BTF. 0, or -ENOENT.
 */
static int constant_value(struct sema_ctx *x, const char *name, int64_t *v)
{
	if (cdefs_const(x->c, name, v))
		return 0;
	return sema_debuginfo_enum(x, name, v);
}

/* sizeof(NAME) where NAME is a constant, not a type. */
static bool is_constant(struct sema_ctx *x, const struct type *t)
{
	int64_t v;

	return t && t->kind == TY_NAMED && !strchr(t->name, ' ') &&
	       !constant_value(x, t->name, &v);
}

/* An identifier that names a constant: uint64, as bpftrace 0.17 types
 * enumerators; the value in iargs[0]. NULL when it names none. */
struct type *sema_t_ident(struct sema_ctx *x, struct ast_node *n)
{
	int64_t v;

	struct type *et;

	if (constant_value(x, n->ident.name, &v))
		return NULL;
	sema_node(x, n)->iargs[0] = v;
	/* the newest bpftrace prints an enumerator by name */
	if (!compat_has(COMPAT_ENUM_NAMES))
		return sema_uint64(x);
	/* the script's own enums, else the kernel's */
	if (cdefs_const(x->c, n->ident.name, &v))
		et = cdefs_const_type(x->c, n->ident.name);
	else
		et = sema_debuginfo_enum_type(x, n->ident.name);
	return et ? et : sema_uint64(x);
}

/* sizeof(type) and sizeof(expr): the size in iargs[0]. */
struct type *sema_t_sizeof(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t;

	if (n->size.expr) {
		t = sema_type_expr(x, n->size.expr);
	} else if (is_constant(x, n->size.of_type)) {
		/* sizeof(NAME) of an enumerator: NAME is an expression */
		sema_node(x, n)->iargs[0] = 8;
		return sema_uint64(x);
	} else {
		t = sema_t_resolve_named(x, n->size.of_type, &n->loc);
	}
	if (!t)
		return NULL;
	sema_node(x, n)->iargs[0] = (int64_t)t->size;
	return sema_uint64(x);
}

/* offsetof(type, a.b.c) and offsetof(expr, a.b.c): in iargs[0]. */
struct type *sema_t_offsetof(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t;
	const char *path = n->size.field, *dot;
	size_t off = 0;

	if (n->size.expr)
		t = sema_type_expr(x, n->size.expr);
	else
		t = sema_t_resolve_named(x, n->size.of_type, &n->loc);
	if (!t)
		return NULL;
	for (;;) {
		struct type_field *f;
		const char *name;

		if (t->kind != TY_RECORD) {
			sema_error(x, &n->loc,
				   "offsetof() can not be used on type '%s'",
				   sema_tstr(x, t));
			return NULL;
		}
		dot = strchr(path, '.');
		name = dot ? arena_strndup(x->a, path, dot - path) : path;
		f = field_find(t, name);
		if (!f) {
			sema_error(x, &n->loc,
				   "Struct/union of type '%s' does not contain a field named '%s'",
				   rec_name(t), name);
			return NULL;
		}
		off += f->offset;
		t = f->type;
		if (!dot)
			break;
		path = dot + 1;
	}
	sema_node(x, n)->iargs[0] = (int64_t)off;
	return sema_uint64(x);
}
