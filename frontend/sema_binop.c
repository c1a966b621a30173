/*
 * The types pass, binary operators: which operand types an operator takes
 * and the type it gives (integers with bpftrace 0.17's promotions and
 * sign warnings, strings, tuples, buffers, pointers that count elements,
 * arrays that compare), and where bpftrace locates its messages.
 */
#include <errno.h>
#include <string.h>

#include "sema.h"
#include "compat.h"
#include "sema_int.h"
#include "sema_type_int.h"
#include "util.h"

static bool is_arith(enum ast_op op)
{
	return op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_DIV ||
	       op == OP_MOD;
}

static bool is_compare(enum ast_op op)
{
	return op == OP_EQ || op == OP_NE || op == OP_LT || op == OP_LE ||
	       op == OP_GT || op == OP_GE;
}

/*
 * bpftrace 0.17 locates operator messages at the operator: find it in
 * the source between the operands (a compound assignment's "+=" too).
 */
struct ast_loc sema_t_op_loc(struct sema_ctx *x, struct ast_node *n)
{
	static const char opchars[] = "+-*/%&|^<>=!";
	const char *src = x->c->source;
	struct ast_node *l = n->op.left, *r = n->op.right;
	struct ast_loc loc = n->loc;
	long a, b, i, j;

	if (!l || !r)
		return loc;
	a = sema_src_offset(x->c, l->loc.last_line, l->loc.last_column);
	b = sema_src_offset(x->c, r->loc.first_line, r->loc.first_column);
	if (a < 0 || b <= a || l->loc.last_line != r->loc.first_line)
		return loc;
	for (i = a; i < b && !strchr(opchars, src[i]); i++)
		;
	for (j = i; j < b && src[j] && strchr(opchars, src[j]); j++)
		;
	if (i >= b || j == i)
		return loc;
	loc.first_line = loc.last_line = l->loc.last_line;
	loc.first_column = l->loc.last_column + (int)(i - a);
	loc.last_column = loc.first_column + (int)(j - i);
	return loc;
}

/* str($N): a positional parameter's text, a literal to bpftrace */
static bool str_is_literal(const struct ast_node *n)
{
	return n->kind == AST_CALL && !strcmp(n->call.name, "str") &&
	       n->call.args && n->call.args->kind == AST_POSITIONAL;
}

static void sign_warnings(struct sema_ctx *x, struct ast_node *n,
			  struct type *lt, struct type *rt)
{
	struct ast_node *l = n->op.left, *r = n->op.right;
	bool ls = sema_t_int_signed(lt), rs = sema_t_int_signed(rt);
	enum ast_op op = n->op.op;
	struct ast_loc loc = sema_t_op_loc(x, n);

	/* a literal's integer (compat int-types) takes the other's sign */
	if (lt->sign_flex && !rt->sign_flex)
		ls = rs;
	else if (rt->sign_flex && !lt->sign_flex)
		rs = ls;

	/* compat sign-warnings: only / and % of two integer types that
	 * differ (size or sign, after a literal took the other's sign),
	 * one of them signed */
	if (compat_has(COMPAT_SIGN_WARNINGS)) {
		if ((op == OP_DIV || op == OP_MOD) && (ls || rs) &&
		    (ls != rs || lt->size != rt->size))
			sema_warning(x, &loc,
				     "signed operands for '%s' can lead to undefined behavior (cast to unsigned to silence warning)",
				     ast_op_str(op));
		return;
	}

	if (ls != rs && !(ls && sema_t_is_nonneg_literal(x, l)) &&
	    !(rs && sema_t_is_nonneg_literal(x, r))) {
		if (is_compare(op))
			sema_warning(x, &loc,
				     "comparison of integers of different signs: '%s' and '%s' can lead to undefined behavior",
				     sema_tstr(x, lt), sema_tstr(x, rt));
		else if (is_arith(op))
			sema_warning(x, &loc,
				     "arithmetic on integers of different signs: '%s' and '%s' can lead to undefined behavior",
				     sema_tstr(x, lt), sema_tstr(x, rt));
	}
	if ((op == OP_DIV || op == OP_MOD) &&
	    ((ls && !sema_t_is_nonneg_literal(x, l)) || (rs && !sema_t_is_nonneg_literal(x, r))))
		sema_warning(x, &loc,
			     "signed operands for '%s' can lead to undefined behavior (cast to unsigned to silence warning)",
			     ast_op_str(op));
}

/* Tuples whose elements compare pairwise: integers, strings, tuples. */
static bool tuples_comparable(const struct type *a, const struct type *b)
{
	if (a->nfields != b->nfields)
		return false;
	for (int i = 0; i < a->nfields; i++) {
		const struct type *x = a->fields[i].type, *y = b->fields[i].type;

		if (sema_t_is_int(x) && sema_t_is_int(y))
			continue;
		if (x->kind == TY_STRING && y->kind == TY_STRING)
			continue;
		if (x->kind == TY_TUPLE && y->kind == TY_TUPLE &&
		    tuples_comparable(x, y))
			continue;
		return false;
	}
	return true;
}

/*
 * Pointers, as bpftrace 0.17 has them: pointer + integer, integer +
 * pointer and pointer - integer count elements (codegen scales); two
 * pointers only compare, with a warning when their pointees differ.
 */
static struct type *binop_pointer(struct sema_ctx *x, struct ast_node *n,
				  struct type *lt, struct type *rt)
{
	enum ast_op op = n->op.op;
	bool lp = lt->kind == TY_POINTER;
	struct type *p = lp ? lt : rt, *o = lp ? rt : lt;

	if (o->kind == TY_POINTER && is_compare(op)) {
		if (x->final && !type_equal(lt->elem, rt->elem)) {
			struct ast_loc loc = ast_loc_span(&n->op.left->loc,
							  &n->op.right->loc);

			sema_warning(x, &loc,
				     "comparison of distinct pointer types ('%s, '%s')",
				     sema_tstr(x, lt->elem),
				     sema_tstr(x, rt->elem));
		}
		return sema_uint64(x);
	}
	if (sema_t_is_int(o)) {
		if (op == OP_ADD || (op == OP_SUB && lp)) {
			struct type *r = type_pointer(x->a, p->elem);

			r->addrspace = p->addrspace;
			r->is_local = p->is_local;
			return r;
		}
		if (is_compare(op))
			return sema_int64(x);
	}
	{
		struct ast_loc oloc = sema_t_op_loc(x, n);

		sema_error(x, &oloc,
			   "The %s operator can not be used on expressions of types %s, %s",
			   ast_op_str(op), sema_tstr(x, lt), sema_tstr(x, rt));
	}
	return NULL;
}

/*
 * Values of one builtin kind held as one integer (a uid, an address, a
 * time, a probe's index): == and != compare them as integers.
 */
static bool same_kind_scalar(const struct type *t)
{
	switch (t->kind) {
	case TY_USERNAME:
	case TY_KSYM:
	case TY_USYM:
	case TY_TIMESTAMP:
	case TY_PROBE:
	case TY_SYSCALL_NAME:
	case TY_SIGNAL_NAME:
	case TY_STRERROR:
		return t->size && t->size <= 8;
	default:
		return false;
	}
}

/* Arrays compare (== and !=) when they hold as many of the same integer. */
static struct type *binop_array(struct sema_ctx *x, struct ast_node *n,
				struct type *lt, struct type *rt)
{
	struct ast_loc oloc = sema_t_op_loc(x, n);
	enum ast_op op = n->op.op;

	if (op != OP_EQ && op != OP_NE) {
		sema_error(x, &oloc, "The %s operator cannot be used on arrays.",
			   ast_op_str(op));
		return NULL;
	}
	if (lt->nelems != rt->nelems) {
		sema_error(x, &oloc,
			   "Only arrays of same size support comparison operators.");
		return NULL;
	}
	if (!sema_t_is_int(lt->elem) || !type_equal(lt, rt)) {
		sema_error(x, &oloc,
			   "Only arrays of same sized integer support comparison operators.");
		return NULL;
	}
	return sema_uint64(x);
}

/*
 * A comparison's, a logical operator's or !'s type t: bool in the newest
 * bpftrace (compat.h), 0.17's integer otherwise.
 */
struct type *sema_t_bool_of(struct sema_ctx *x, enum ast_op op,
			    struct type *t)
{
	if (!t || !compat_has(COMPAT_BOOL) ||
	    !(is_compare(op) || op == OP_LAND || op == OP_LOR ||
	      op == OP_LNOT) || !sema_t_is_int(t))
		return t;
	return type_new(x->a, TY_BOOL, 1);
}

struct type *sema_t_binop_types(struct sema_ctx *x, struct ast_node *n,
				struct type *lt, struct type *rt)
{
	enum ast_op op = n->op.op;
	const char *ops = ast_op_str(op);
	struct ast_loc oloc = sema_t_op_loc(x, n);

	if (op == OP_LAND || op == OP_LOR) {
		if (!sema_t_is_cond(lt) || !sema_t_is_cond(rt)) {
			sema_error(x, &oloc,
				   "The %s operator can not be used on expressions of types %s, %s",
				   ops, sema_tstr(x, lt), sema_tstr(x, rt));
			return NULL;
		}
		return sema_int64(x);
	}
	if (sema_t_is_int(lt) && sema_t_is_int(rt)) {
		sign_warnings(x, n, lt, rt);
		return sema_t_int64_of(x, sema_t_int_signed(lt) && sema_t_int_signed(rt));
	}
	if (lt->kind == TY_STRING && rt->kind == TY_STRING) {
		struct ast_node *l = n->op.left, *r = n->op.right;

		if (op != OP_EQ && op != OP_NE) {
			sema_error(x, &oloc,
				   "The %s operator can not be used on expressions of types %s, %s",
				   ops, sema_tstr(x, lt), sema_tstr(x, rt));
			return NULL;
		}
		/* bpftrace 0.17 warns for == only, str($N) a literal
		 * too (its value known before the run) */
		if (op != OP_EQ || str_is_literal(l) || str_is_literal(r))
			;
		else if (l->kind == AST_STRING && r->kind != AST_STRING &&
		    lt->size > rt->size)
			sema_warning(x, &n->loc,
				     "The literal is longer than the variable string (size=%zu), condition will always be false",
				     rt->size);
		else if (r->kind == AST_STRING && l->kind != AST_STRING &&
			 rt->size > lt->size)
			sema_warning(x, &n->loc,
				     "The literal is longer than the variable string (size=%zu), condition will always be false",
				     lt->size);
		sema_node(x, n)->is_string_op = true;
		return sema_uint64(x);
	}
	if (lt->kind == TY_TUPLE && rt->kind == TY_TUPLE &&
	    (op == OP_EQ || op == OP_NE) && tuples_comparable(lt, rt)) {
		/* (a, b) == (c, d): element by element (v0.25) */
		sema_node(x, n)->is_string_op = true;
		return sema_uint64(x);
	}
	if (lt->kind == TY_BUFFER && rt->kind == TY_BUFFER) {
		if (op != OP_EQ && op != OP_NE) {
			sema_error(x, &oloc,
				   "The %s operator can not be used on expressions of types %s, %s",
				   ops, sema_tstr(x, lt), sema_tstr(x, rt));
			return NULL;
		}
		sema_node(x, n)->is_string_op = true;
		return sema_uint64(x);
	}
	if (lt->kind == TY_POINTER || rt->kind == TY_POINTER)
		return binop_pointer(x, n, lt, rt);
	if (lt->kind == TY_ARRAY && rt->kind == TY_ARRAY)
		return binop_array(x, n, lt, rt);
	if (lt->kind == rt->kind && (op == OP_EQ || op == OP_NE) &&
	    same_kind_scalar(lt)) {
		/* username == username(), ksym == ksym: their values
		 * compare as integers (bpftrace 0.17 and v0.26 alike) */
		return sema_uint64(x);
	}
	if (lt->kind == rt->kind || (sema_t_is_int(lt) && sema_t_is_int(rt))) {
		sema_error(x, &oloc,
			   "The %s operator can not be used on expressions of types %s, %s",
			   ops, sema_tstr(x, lt), sema_tstr(x, rt));
		return NULL;
	}
	sema_error(x, &n->loc,
		   "Type mismatch for '%s': comparing '%s' with '%s'",
		   ops, sema_tstr(x, lt), sema_tstr(x, rt));
	return NULL;
}
