/*
 * Casts between integers and integer arrays (v0.26): (int8[8])x and
 * (uint8[])x take an integer's bytes (little-endian: the low ones
 * first), (int8[])"str" a string's with its NUL, (uint32)arr an array's
 * four bytes as one integer.  An array of [] gets its length from the
 * source's size.  Codegen: cg_expr.c (AST_CAST).
 */
#include "sema.h"
#include "sema_int.h"
#include "sema_type_int.h"

static bool int_array(const struct type *t)
{
	return t && t->kind == TY_ARRAY && t->elem &&
	       (t->elem->kind == TY_INT || t->elem->kind == TY_BOOL) &&
	       t->elem->size;
}

static struct type *cast_error(struct sema_ctx *x, struct ast_node *n,
			       struct type *t, struct type *to)
{
	sema_error(x, &n->loc, "Cannot cast from \"%s\" to \"%s\"",
		   sema_tstr(x, t), sema_tstr(x, to));
	return NULL;
}

/* true when n is such a cast (its type or NULL in *res, errors given) */
bool sema_t_array_cast(struct sema_ctx *x, struct ast_node *n,
		       struct type *t, struct type *to, struct type **res)
{
	size_t esz;
	struct type *a;

	*res = NULL;
	if (to->kind == TY_BOOL && t->kind == TY_STRING) {
		/* (bool)"str": its first byte is not NUL (v0.26) */
		*res = to;
		return true;
	}
	if (to->kind == TY_INT && t->kind == TY_ARRAY) {
		if (!int_array(t) || t->size != to->size)
			return cast_error(x, n, t, to), true;
		*res = to;
		return true;
	}
	if (!int_array(to))
		return false;
	if (!sema_t_is_int(t) && t->kind != TY_STRING)
		return cast_error(x, n, t, to), true;
	esz = to->elem->size;
	if (!to->nelems && t->size % esz) {
		sema_error(x, &n->loc,
			   "Cannot determine array size: the element size is incompatible with the cast integer size");
		return true;
	}
	a = type_new(x->a, TY_ARRAY, to->nelems ? to->size : t->size);
	a->nelems = to->nelems ? to->nelems : t->size / esz;
	a->elem = to->elem;
	if (esz == 1 && to->elem->kind == TY_INT) {
		/* bytes that print as numbers, not as a char[] string
		 * (shim/output: out_is_char_array()) */
		a->elem = type_int(x->a, 1, to->elem->is_signed);
		a->elem->name = to->elem->is_signed ? "int8" : "uint8";
	}
	/* an integer fills an array of its size, or of fewer bytes (its
	 * low ones; a literal is int64 here, smaller in v0.26); a string
	 * one of its size */
	if (a->size != t->size &&
	    (t->kind == TY_STRING || a->size > 8 ||
	     (a->size > t->size && n->cast.expr->kind != AST_INT) ||
	     (a->size < t->size && n->cast.expr->kind != AST_INT)))
		return cast_error(x, n, t, a), true;
	*res = a;
	return true;
}
