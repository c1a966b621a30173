/*
 * The types pass: the type of every expression and map key, with
 * bpftrace 0.17's integer sizes, signedness and promotions.
 */
#include <errno.h>
#include <string.h>

#include "compat.h"
#include "sema.h"
#include "sema_int.h"
#include "sema_type_int.h"
#include "util.h"

static const char *key_str(struct sema_ctx *x, struct type *t)
{
	if (t->kind == TY_INT)
		return "unsigned int64";
	return sema_tstr(x, t);
}

/* A key's type in v0.26's words: int8, uint64, (int8,string[3]). */
static const char *key_str_v26(struct sema_ctx *x, struct type *t)
{
	const char *s = "(";

	if (t->kind == TY_INT)
		return arena_printf(x->a, "%sint%zu", t->is_signed ? "" : "u",
				    t->size * 8);
	if (t->kind != TY_TUPLE)
		return sema_tstr(x, t);
	for (int i = 0; i < t->nfields; i++)
		s = arena_printf(x->a, "%s%s%s", s, i ? "," : "",
				 key_str_v26(x, t->fields[i].type));
	return arena_printf(x->a, "%s)", s);
}

static const char *key_list(struct sema_ctx *x, int n, struct type *key)
{
	char *s = "";

	if (n == 1)
		return key_str(x, key);
	for (int i = 0; i < n; i++)
		s = arena_printf(x->a, "%s%s%s", s, i ? ", " : "",
				 key_str(x, key->fields[i].type));
	return s;
}

/* Type the keys of n and check them against the map's key. */
int sema_t_map_keys(struct sema_ctx *x, struct ast_node *n,
		    struct sema_map *m)
{
	struct type **el = NULL, *kt = NULL;
	int nk = ast_list_len(n->map.keys), i = 0, err = 0;
	bool changed = false;

	if (nk)
		el = arena_alloc(x->a, sizeof(*el) * nk);
	for (struct ast_node *k = n->map.keys; k; k = k->next, i++) {
		/* an aggregation's value is an integer key (v0.26) */
		struct type *t = sema_t_agg_value(x, k, sema_type_expr(x, k));

		if (!t) {
			err = -EINVAL;
			continue;
		}
		if (t->kind == TY_TUPLE && nk == 1 && t->nfields > 1 &&
		    !t->fields[0].name) {
			/* @m[$t] with a tuple: the keys are its elements,
			 * as @m[a, b] (bpftrace v0.25: keys are tuples) */
			struct type **fl = arena_alloc(x->a, sizeof(*fl) *
							       t->nfields);

			for (int j = 0; j < t->nfields; j++)
				fl[j] = sema_t_widen(x, t->fields[j].type);
			nk = t->nfields;
			kt = sema_tuple(x, fl, nk);
			continue;
		}
		if (t->kind == TY_TUPLE && nk > 1) {
			/* a tuple inside a multi-key: a part of the key */
			el[i] = t;
			continue;
		}
		if (t->kind == TY_TUPLE && !(t->nfields && t->fields[0].name)) {
			sema_error(x, &n->loc,
				   "tuple cannot be used as a map key. Try a multi-key associative array instead (eg `@map[$1, $2] = ...)`.");
			err = -EINVAL;
			continue;
		}
		if (t->kind == TY_POINTER && t->is_ctx) {
			sema_error(x, &k->loc,
				   "context cannot be used as a map key");
			err = -EINVAL;
			continue;
		}
		if (t->kind == TY_VOID || type_is_aggregation(t) ||
		    t->kind == TY_NONE) {
			sema_error(x, &k->loc, "%s cannot be used as a map key",
				   sema_tstr(x, t));
			err = -EINVAL;
			continue;
		}
		el[i] = sema_t_widen(x, t);
	}
	if (err)
		return err;
	if (kt)
		;	/* one tuple: its elements */
	else if (nk == 1)
		kt = el[0];
	else if (nk > 1)
		kt = sema_tuple(x, el, nk);

	if (!m->key_set) {
		m->key_set = true;
		m->nkeys = nk;
		m->key = kt;
		x->changed++;
		return 0;
	}
	if (m->nkeys != nk ||
	    (nk && (m->key->kind != kt->kind ||
		    sema_t_merge(x, &m->key, kt, &changed)))) {
		if (compat_has(COMPAT_INT_TYPES) && nk && m->nkeys)
			sema_error(x, x->use_loc ? x->use_loc : &n->loc,
				   "Argument mismatch for %s: trying to access with arguments: '%s' when map expects arguments: '%s'",
				   m->name, key_str_v26(x, kt),
				   key_str_v26(x, m->key));
		else
			sema_error(x, x->use_loc ? x->use_loc : &n->loc,
				   "Argument mismatch for %s: trying to access with arguments: [%s] when map expects arguments: [%s]",
				   m->name, nk ? key_list(x, nk, kt) : "",
				   m->nkeys ? key_list(x, m->nkeys, m->key) : "");
		return -EINVAL;
	}
	if (changed)
		x->changed++;
	return 0;
}

/* A map read as a value: @m or @m[k]. */
struct type *sema_t_type_map(struct sema_ctx *x, struct ast_node *n)
{
	struct sema_map *m = sema_map_of(n);

	BUG_ON(!m);
	if (sema_t_map_keys(x, n, m))
		return NULL;
	if (!m->value) {
		sema_error(x, x->use_loc ? x->use_loc : &n->loc,
			   "Undefined map: %s", m->name);
		return NULL;
	}
	return m->value;
}

/* Variables. */


/* Integer literals are int64, even above INT64_MAX (bpftrace 0.17); in
 * the newest mode (compat int-literals) one past INT64_MAX is a uint64,
 * as is ~N of a literal (type_unop), and (compat int-types) the others
 * take the smallest signed type that holds them (v0.26). */
static struct type *type_int_lit(struct sema_ctx *x, struct ast_node *n)
{
	int64_t v = (int64_t)n->num.value;
	struct type *t;

	if (compat_has(COMPAT_INT_LITERALS) && !n->num.is_negative &&
	    n->num.value > INT64_MAX)
		return sema_uint64(x);
	if (!compat_has(COMPAT_INT_TYPES) ||
	    (!n->num.is_negative && n->num.value > INT64_MAX))
		return sema_int64(x);
	t = type_int(x->a, v >= INT8_MIN && v <= INT8_MAX ? 1 :
			   v >= INT16_MIN && v <= INT16_MAX ? 2 :
			   v >= INT32_MIN && v <= INT32_MAX ? 4 : 8, true);
	t->sign_flex = !n->num.is_negative;
	return t;
}

/* $N is a number (0 when not given); str($N) takes it as text. */
static struct type *type_positional(struct sema_ctx *x, struct ast_node *n)
{
	const char *s;

	if (n->pos.num == -1)
		return sema_int64(x);
	s = sema_param(x, n->pos.num);
	if (!s || sema_is_number(s, NULL))
		return sema_int64(x);
	if (compat_has(COMPAT_INT_LITERALS) && sema_is_uint64(s))
		return sema_uint64(x);
	sema_error(x, &n->loc,
		   "$%d used numerically but given \"%s\". Try using str($%d).",
		   n->pos.num, s, n->pos.num);
	return NULL;
}

/* An operand: an aggregation map's read is its integer (v0.26). */
static struct type *sema_agg_operand(struct sema_ctx *x, struct ast_node *n)
{
	return sema_t_agg_value(x, n, sema_type_expr(x, n));
}

static struct type *type_binop(struct sema_ctx *x, struct ast_node *n)
{
	struct type *lt = sema_agg_operand(x, n->op.left);
	struct type *rt = sema_agg_operand(x, n->op.right);

	if (!lt && !rt)
		return NULL;
	if (!lt || !rt) {
		/*
		 * One side not known yet (a map assigned later, maybe by this
		 * very statement: @m = @m + 1): guess from the other side
		 * so that the types can settle, as bpftrace does. The final
		 * walk reports what stays unknown.
		 */
		struct type *k = lt ? lt : rt;

		if (x->final || !sema_t_is_int(k) || n->op.op == OP_LAND ||
		    n->op.op == OP_LOR)
			return NULL;
		return sema_t_int64_of(x, sema_t_int_signed(k));
	}
	return sema_t_bool_of(x, n->op.op,
			      sema_t_binop_types(x, n, lt, rt));
}

/* v0.26: what ++/-- stores, int64 for a signed t or --, else uint64. */
static struct type *incdec_type(struct sema_ctx *x, struct ast_node *n,
				const struct type *t)
{
	bool dec = n->op.op == OP_PRE_DEC || n->op.op == OP_POST_DEC;

	return sema_t_int64_of(x, t->is_signed || dec);
}

/* ++ and -- on a map or a variable. */
static struct type *type_incdec(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *e = n->op.left;
	const char *ops = (n->op.op == OP_PRE_INC || n->op.op == OP_POST_INC) ?
				  "++" : "--";
	struct type *t;

	if (e->kind == AST_MAP) {
		struct sema_map *m = sema_map_of(e);

		if (sema_t_map_keys(x, e, m))
			return NULL;
		if (!m->value) {
			m->value = sema_int64(x);
			x->changed++;
		}
		/* v0.26 (compat int-types): the value takes in ++'s
		 * uint64, or int64 (signed, or --) */
		if (compat_has(COMPAT_INT_TYPES) && m->value->kind == TY_INT) {
			bool grew = false;

			sema_t_merge(x, &m->value, incdec_type(x, n, m->value),
				     &grew);
			if (grew)
				x->changed++;
		}
		t = m->value;
		e->type = t;
	} else if (e->kind == AST_VAR) {
		t = sema_type_expr(x, e);
		if (!t)
			return NULL;
		/* v0.26 (compat int-types): the variable takes in ++'s
		 * uint64, or int64 (signed, or --), as $x = $x + 1 */
		if (compat_has(COMPAT_INT_TYPES) && t->kind == TY_INT &&
		    !e->sema->var->declared) {
			if (sema_t_var_set(x, e, incdec_type(x, n, t), &n->loc))
				return NULL;
			t = e->type;
		}
	} else {
		sema_error(x, &n->loc,
			   "The %s operator must be applied to a map or variable",
			   ops);
		return NULL;
	}
	if (!sema_t_is_int(t) && t->kind != TY_POINTER) {
		sema_error(x, &n->loc,
			   "The %s operator can not be used on expressions of type '%s'",
			   ops, sema_tstr(x, t));
		return NULL;
	}
	return t;
}

static struct type *type_unop(struct sema_ctx *x, struct ast_node *n)
{
	enum ast_op op = n->op.op;
	struct type *t;

	if (op == OP_PRE_INC || op == OP_PRE_DEC || op == OP_POST_INC ||
	    op == OP_POST_DEC)
		return type_incdec(x, n);
	t = sema_type_expr(x, n->op.left);
	if (!t)
		return NULL;
	switch (op) {
	case OP_BNOT:
		if (compat_has(COMPAT_INT_LITERALS) &&
		    n->op.left->kind == AST_INT && !n->op.left->num.is_negative)
			return sema_uint64(x);
		/* fall through */
	case OP_NEG:
	case OP_POS:
		if (sema_t_is_int(t))
			return t->kind == TY_INT ? t : sema_int64(x);
		break;
	case OP_LNOT:
		if (sema_t_is_cond(t))
			return sema_t_bool_of(x, OP_LNOT, sema_uint64(x));
		break;
	case OP_DEREF:
		if (t->kind == TY_POINTER && t->elem &&
		    t->elem->kind == TY_NAMED) {
			/* a type known by name: the script's C definitions,
			 * the program's DWARF, kernel BTF */
			t = sema_t_resolve_named(x, t, &n->loc);
			if (!t)
				return NULL;
			n->op.left->type = t;
		}
		if (t->kind == TY_POINTER) {
			struct type *e = t->elem;

			if (!e || e->kind == TY_VOID || e->kind == TY_NAMED) {
				sema_error(x, &n->loc,
					   "Can not dereference type '%s'",
					   sema_tstr(x, t));
				return NULL;
			}
			return e;
		}
		/* an integer is an address: bpftrace 0.17 reads a value of
		 * the integer's own type there */
		if (t->kind == TY_INT)
			return type_int(x->a, t->size, t->is_signed);
		break;
	case OP_ADDR:
		return sema_t_addr_of(x, n, t);
	default:
		BUG("bad unary operator %d", op);
	}
	sema_error(x, &n->loc,
		   "The %s operator can not be used on expressions of type '%s'",
		   ast_op_str(op), sema_tstr(x, t));
	return NULL;
}

static struct type *type_ternary(struct sema_ctx *x, struct ast_node *n)
{
	struct type *c = sema_type_expr(x, n->ternary.cond);
	/* a ?: b: then is cond's node */
	struct type *a = n->ternary.then == n->ternary.cond ? c :
			 sema_type_expr(x, n->ternary.then);
	struct type *b = sema_type_expr(x, n->ternary.else_);
	struct type *r;
	bool changed = false;

	if (!c || !a || !b)
		return NULL;
	if (!sema_t_is_cond(c)) {
		sema_error(x, &n->loc, "Invalid condition in ternary: %s",
			   type_class(c));
		return NULL;
	}
	if (a->kind == TY_BOOL && b->kind == TY_BOOL)
		return a;	/* c ? true : false is a bool (v0.26) */
	if (sema_t_is_int(a) && sema_t_is_int(b))
		return sema_t_int64_of(x, sema_t_int_signed(a) && sema_t_int_signed(b));
	r = a;
	if (strcmp(type_class(a), type_class(b)) ||
	    sema_t_merge(x, &r, b, &changed)) {
		sema_error(x, &n->loc,
			   "Ternary operator must return the same type: have '%s' and '%s'",
			   a->kind == TY_VOID ? "none" : type_class(a),
			   b->kind == TY_VOID ? "none" : type_class(b));
		return NULL;
	}
	/* cond ? printf(...) : exit(): void, a statement (codegen runs
	 * one side) */
	return r;
}

static struct type *type_tuple(struct sema_ctx *x, struct ast_node *n)
{
	int len = ast_list_len(n->tuple.elems);
	struct type **el = arena_alloc(x->a, sizeof(*el) * (len ? len : 1));
	int i = 0, err = 0;

	for (struct ast_node *e = n->tuple.elems; e; e = e->next, i++) {
		/* an aggregation's value is an integer element (v0.26) */
		el[i] = sema_t_agg_value(x, e, sema_type_expr(x, e));
		if (!el[i]) {
			err = -EINVAL;
			continue;
		}
		if (el[i]->kind == TY_VOID || type_is_aggregation(el[i])) {
			sema_error(x, &e->loc, "Invalid tuple element: %s",
				   sema_tstr(x, el[i]));
			err = -EINVAL;
		}
	}
	if (err)
		return NULL;
	return sema_tuple(x, el, i);
}

/*
 * (name=value, ...): a tuple whose fields have names (bpftrace v0.25's
 * records); r.name becomes r's tuple index (type_field).
 */
static struct type *type_record(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t = type_tuple(x, n), *r;
	int i = 0;

	if (!t)
		return NULL;
	r = arena_alloc(x->a, sizeof(*r));
	*r = *t;
	r->fields = arena_alloc(x->a, t->nfields * sizeof(*r->fields));
	for (struct ast_node *e = n->tuple.elems; e; e = e->next, i++) {
		r->fields[i] = t->fields[i];
		r->fields[i].name = e->rfield.name;
		for (int j = 0; j < i; j++)
			if (!strcmp(r->fields[j].name, e->rfield.name)) {
				sema_error(x, &e->loc,
					   "Duplicate field name: %s",
					   e->rfield.name);
				return NULL;
			}
	}
	return r;
}

static struct type *type_tuple_index(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t = sema_type_expr(x, n->tindex.expr);
	int i = n->tindex.index;

	if (!t)
		return NULL;
	if (t->kind != TY_TUPLE) {
		sema_error(x, &n->loc,
			   "Can not access index %d on expression of type '%s'",
			   i, sema_tstr(x, t));
		return NULL;
	}
	if (i < 0 || i >= t->nfields) {
		sema_error(x, &n->loc,
			   "Invalid tuple index: %d. Found %d elements in tuple.",
			   i, t->nfields);
		return NULL;
	}
	return t->fields[i].type;
}

/* bpftrace locates errors about a cast's type at "(type)", without the
 * operand. */
static struct ast_loc cast_type_loc(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *e = n->cast.expr;
	struct ast_loc loc = n->loc;
	long a = sema_src_offset(x->c, n->loc.first_line, n->loc.first_column);
	long b = sema_src_offset(x->c, e->loc.first_line, e->loc.first_column);
	long i;

	if (a < 0 || b <= a || n->loc.first_line != e->loc.first_line)
		return loc;
	for (i = b - 1; i > a && x->c->source[i] != ')'; i--)
		;
	if (i <= a)
		return loc;
	loc.last_line = loc.first_line;
	loc.last_column = loc.first_column + (int)(i - a) + 1;
	return loc;
}

/*
 * An array field read through a pointer (p->arr, p->s.arr, p->a[1].arr):
 * it has an address, in that pointer's address space (*as).
 */
static bool cast_array_space(const struct ast_node *e, int *as)
{
	while (e->kind == AST_FIELD || e->kind == AST_INDEX) {
		const struct ast_node *in = e->kind == AST_FIELD ?
						    e->field.expr :
						    e->index.expr;

		if (in->type && in->type->kind == TY_POINTER) {
			*as = in->type->addrspace;
			return e->kind == AST_FIELD;
		}
		if (in->kind == AST_UNOP && in->op.op == OP_DEREF &&
		    in->op.left->type &&
		    in->op.left->type->kind == TY_POINTER) {
			/* p->f as (*p).f */
			*as = in->op.left->type->addrspace;
			return true;
		}
		e = in;
	}
	return false;
}

static struct type *type_cast(struct sema_ctx *x, struct ast_node *n)
{
	int as = AS_NONE;

	struct type *t = sema_type_expr(x, n->cast.expr);
	struct ast_loc tloc = cast_type_loc(x, n);
	/* (typeof(e))expr: e's type, e not evaluated */
	struct type *to = n->cast.to_typeof ?
				  sema_type_expr(x, n->cast.to_typeof) :
				  sema_t_resolve_named(x, n->cast.to, &tloc);

	if (!t || !to)
		return NULL;
	{
		struct type *r;

		if (sema_t_array_cast(x, n, t, to, &r))
			return r;
	}
	/* v0.26: (int)@count, (bool)@sum: the aggregation's value */
	if (to->kind == TY_INT || to->kind == TY_BOOL)
		t = sema_t_agg_value(x, n->cast.expr, t);
	if (to->kind == TY_INT || to->kind == TY_BOOL) {
		if (sema_t_is_int(t) || t->kind == TY_POINTER)
			return to;
		sema_error(x, &n->loc, "Casts are not supported for type: \"%s\"",
			   sema_tstr(x, t));
		return NULL;
	}
	if (to->kind == TY_POINTER) {
		if (t->kind == TY_POINTER && t->is_ctx && to->elem &&
		    (to->elem->kind == TY_RECORD ||
		     to->elem->kind == TY_NAMED) &&
		    n->cast.expr->kind == AST_BUILTIN) {
			/* (struct x *)ctx: its fields read from the
			 * context itself (bpftrace's ctx access) */
			struct type *p = sema_t_resolve_named(x, to, &tloc);

			if (p && p->elem && p->elem->kind == TY_RECORD)
				return p;
			if (p)
				sema_error(x, &n->loc,
					   "Unknown struct/union: '%s'",
					   p->elem ? p->elem->name : "?");
			return NULL;
		}
		if (t->kind == TY_POINTER && t->is_ctx) {
			sema_error(x, &n->loc,
				   "Integer pointer casts are not supported for type: ctx");
			return NULL;
		}
		if (sema_t_is_int(t) || t->kind == TY_POINTER) {
			if (to->elem && to->elem->kind == TY_NAMED) {
				sema_error(x, &n->loc,
					   "Unknown struct/union: '%s'",
					   to->elem->name);
				return NULL;
			}
			if (to->addrspace == AS_NONE &&
			    (t->addrspace != AS_NONE || t->is_local)) {
				struct type *p = type_pointer(x->a, to->elem);

				p->addrspace = t->addrspace;
				p->is_local = t->kind == TY_POINTER &&
					      t->is_local;
				return p;
			}
			return to;
		}
		if (t->kind == TY_ARRAY && cast_array_space(n->cast.expr,
							    &as)) {
			/* an array in traced memory decays to a pointer to
			 * its first element, as in C (bpftrace 0.17 too) */
			struct type *p = type_pointer(x->a, to->elem);

			p->addrspace = to->addrspace != AS_NONE ?
					       to->addrspace : as;
			return p;
		}
		sema_error(x, &n->loc, "Casts are not supported for type: \"%s\"",
			   sema_tstr(x, t));
		return NULL;
	}
	if (to->kind == TY_RECORD)
		sema_error(x, &n->loc, "Cannot cast to struct type \"%s\"",
			   sema_tstr(x, to));
	else
		sema_error(x, &n->loc, "Cannot cast to \"%s\"",
			   sema_tstr(x, to));
	return NULL;
}

/*
 * str($N + k), str(k + $N) with a parameter that is not a number: the
 * parameter's text from byte k (k at most its length), a string; the
 * binop's sema iargs[0] is k. false when n is not of this form.
 */
static bool str_param_plus(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *p = n->op.left, *k = n->op.right;
	const char *s;
	struct ast_loc loc;
	int64_t v;
	size_t len;

	if (n->op.op != OP_ADD)
		return false;
	if (p->kind != AST_POSITIONAL) {
		p = n->op.right;
		k = n->op.left;
	}
	if (p->kind != AST_POSITIONAL || p->pos.num < 1)
		return false;
	s = sema_param(x, p->pos.num);
	if (s && sema_is_number(s, &v))
		return false;	/* an integer: str() of an address */
	len = s ? strlen(s) : 0;
	if (!sema_int_literal(x, k, &v) || v < 0 || (uint64_t)v > len) {
		loc = sema_t_op_loc(x, n);
		loc.last_line = n->loc.last_line;
		loc.last_column = n->loc.last_column;
		sema_error(x, &loc,
			   "only addition of a single constant less or equal to the length of $%d (which is %zu) is allowed inside str()",
			   p->pos.num, len);
		n->type = NULL;
		return true;
	}
	p->type = type_string(x->a, len + 1);
	k->type = sema_int64(x);
	sema_node(x, n)->iargs[0] = v;
	n->type = type_string(x->a, len - (size_t)v + 1);
	return true;
}

/* Is n a call of an aggregation (count(), hist(), ...)? */
bool sema_t_is_agg_call(const struct ast_node *n)
{
	const struct sema_func_ops *f;

	if (n->kind != AST_CALL || !n->sema)
		return false;
	f = sema_func_ops(n->sema->func);
	return f && (f->flags & FN_F_AGG);
}

static struct type *type_call(struct sema_ctx *x, struct ast_node *n)
{
	const struct sema_func_ops *f = sema_func_ops(n->sema->func);
	struct sema_map *agg_map = NULL;
	int err = 0;

	BUG_ON(!f);
	if (f->flags & FN_F_AGG) {
		if (x->agg_call != n) {
			sema_error(x, &n->loc,
				   "%s() should be directly assigned to a map",
				   f->name);
			err = -EINVAL;
		}
		agg_map = x->agg_map;
		n->sema->map = agg_map;
	}
	x->agg_call = NULL;
	/* arguments that name a whole map are typed by the function */
	for (struct ast_node *a = n->call.args; a; a = a->next) {
		if (a->kind == AST_MAP && (f->flags & FN_F_MAP_ARG) &&
		    a == n->call.args)
			continue;
		if (a->kind == AST_IDENT && (f->flags & FN_F_IDENT_ARGS))
			continue;
		if (a->kind == AST_BINOP && f->id == FN_STR &&
		    a == n->call.args && str_param_plus(x, a)) {
			if (!a->type)
				err = -EINVAL;
			continue;
		}
		if (a->kind == AST_POSITIONAL && f->id == FN_STR &&
		    a == n->call.args && a->pos.num >= 1) {
			const char *p = sema_param(x, a->pos.num);

			a->type = type_string(x->a, (p ? strlen(p) : 0) + 1);
			continue;
		}
		if (a->kind == AST_STRING && (f->flags & FN_F_FMT) &&
		    a == n->call.args) {
			/* formats are not values: no max_strlen limit */
			a->type = type_string(x->a, a->str.len + 1);
			continue;
		}
		if (!sema_type_expr(x, a))
			err = -EINVAL;
	}
	if (err)
		return NULL;
	if (sema_check_nargs(x, n, f->min_args, f->max_args))
		return NULL;
	return f->type(x, n, agg_map);
}

struct type *sema_type_expr(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t = NULL;

	switch (n->kind) {
	case AST_INT:
		t = type_int_lit(x, n);
		break;
	case AST_BOOL:
		t = type_new(x->a, TY_BOOL, 1);
		break;
	case AST_STRING: {
		/* bpftrace 0.17 limits literals to 64 bytes with the NUL,
		 * whatever max_strlen is; a larger max_strlen raises it */
		int limit = x->c->max_strlen > 64 ? x->c->max_strlen : 64;

		if (n->str.len + 1 > (size_t)limit) {
			sema_error(x, &n->loc,
				   "String is too long (over %d bytes): %s",
				   limit, n->str.value);
			break;
		}
		t = type_string(x->a, n->str.len + 1);
		break;
	}
	case AST_POSITIONAL:
		t = type_positional(x, n);
		break;
	case AST_BUILTIN: {
		const struct sema_builtin_ops *b;

		b = sema_builtin_ops(n->sema->builtin);
		BUG_ON(!b);
		t = b->type(x, n);
		break;
	}
	case AST_IDENT:
		t = sema_t_ident(x, n);
		if (!t)
			sema_error(x, &n->loc, "Unknown identifier: '%s'",
				   n->ident.name);
		break;
	case AST_VAR:
		t = n->sema->var->type;
		if (!t && x->final)
			/* let $x; and no value assigned anywhere */
			sema_error(x, &n->loc,
				   "Variable used before it was assigned: %s",
				   n->ident.name);
		break;
	case AST_MAP:
		t = sema_t_type_map(x, n);
		break;
	case AST_CALL:
		t = type_call(x, n);
		break;
	case AST_SIZEOF:
		t = sema_t_sizeof(x, n);
		break;
	case AST_BINOP:
		t = type_binop(x, n);
		break;
	case AST_UNOP:
		t = type_unop(x, n);
		break;
	case AST_TERNARY:
		t = type_ternary(x, n);
		break;
	case AST_FIELD:
		t = sema_t_field(x, n);
		break;
	case AST_INDEX:
		t = sema_t_index(x, n);
		break;
	case AST_TUPLE:
		t = type_tuple(x, n);
		break;
	case AST_TUPLE_INDEX:
		t = type_tuple_index(x, n);
		break;
	case AST_CAST:
		t = type_cast(x, n);
		break;
	case AST_OFFSETOF:
		t = sema_t_offsetof(x, n);
		break;
	case AST_BLOCK_EXPR: {
		/* { stmts; value } (macro expansions): the value's type,
		 * void without one; an inlined fn: its return type */
		struct type *outer = x->fn_ret;
		int loops = x->loop_depth, bad;

		if (n->block.fn_ret) {
			x->fn_ret = n->block.fn_ret;
			x->loop_depth = 0;
		}
		bad = sema_t_stmts(x, n->block.stmts);
		x->fn_ret = outer;
		x->loop_depth = loops;
		if (bad)
			break;
		if (n->block.fn_ret)
			t = n->block.fn_ret;
		else
			t = n->block.expr ? sema_type_expr(x, n->block.expr) :
					    type_new(x->a, TY_VOID, 0);
		break;
	}
	case AST_RECORD:
		t = type_record(x, n);
		break;
	case AST_RECORD_FIELD:
		/* an aggregation's or args' value, as a tuple element */
		t = sema_t_agg_value(x, n->rfield.value,
				     sema_type_expr(x, n->rfield.value));
		break;
	default:
		BUG("%s is not an expression", ast_kind_name(n->kind));
	}
	n->type = t;
	if (!t)
		x->unresolved++;
	return t;
}

