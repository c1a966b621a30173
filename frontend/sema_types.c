/*
 * Type inference: every expression, scratch variable, map key and map
 * value, with bpftrace 0.17's integer sizes, signedness and promotions.
 *
 * Map and variable types flow between probes (a map read in one probe
 * may be assigned in a later one), so the program is walked until the
 * types stop changing, without reporting anything, and then once more
 * with errors reported (x->final).
 */
#include <errno.h>
#include <string.h>

#include "sema.h"
#include "sema_int.h"
#include "util.h"

#define MAX_WALKS 10

static bool is_int(const struct type *t)
{
	return t && (t->kind == TY_INT || t->kind == TY_BOOL ||
		     t->kind == TY_ENUM);
}

static bool is_cond(const struct type *t)
{
	return is_int(t) || (t && t->kind == TY_POINTER);
}

static bool int_signed(const struct type *t)
{
	return t->kind == TY_INT ? t->is_signed : t->kind == TY_ENUM;
}

static struct type *int64_of(struct sema_ctx *x, bool is_signed)
{
	return type_int(x->a, 8, is_signed);
}

/*
 * A literal that is not negative. bpftrace 0.17 turns numeric positional
 * parameters into literals before type checking, so `arg0 == $1` with
 * $1 = 4 draws no sign warning: count them too.
 */
static bool is_nonneg_literal(struct sema_ctx *x, const struct ast_node *n)
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

/* Map values and keys store integers as 64 bits. */
static struct type *widen(struct sema_ctx *x, struct type *t)
{
	if (t && t->kind == TY_INT && t->size != 8)
		return int64_of(x, t->is_signed);
	return t;
}

/*
 * Merge src into *dst for a storage location (variable, map value or
 * key) that already has type *dst: strings grow to the larger size,
 * integers to the larger width, tuples element by element. 0, or -1 when
 * the types do not fit (*dst unchanged). *changed is set when *dst grew.
 */
static int merge(struct sema_ctx *x, struct type **dst, struct type *src,
		 bool *changed)
{
	struct type *d = *dst;

	if (type_equal(d, src))
		return 0;
	if (is_int(d) && is_int(src) && d->kind == src->kind) {
		if (src->size > d->size) {
			*dst = type_int(x->a, src->size, d->is_signed);
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
	case TY_TUPLE: {
		struct type **el;
		bool grew = false;

		if (d->nfields != src->nfields)
			return -1;
		el = arena_alloc(x->a, sizeof(*el) * d->nfields);
		for (int i = 0; i < d->nfields; i++) {
			el[i] = d->fields[i].type;
			if (el[i]->kind == TY_INT &&
			    src->fields[i].type->kind == TY_INT &&
			    el[i]->size == src->fields[i].type->size)
				continue;
			if (merge(x, &el[i], src->fields[i].type, &grew))
				return -1;
		}
		if (grew) {
			*dst = sema_tuple(x, el, d->nfields);
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
static void mismatch(struct sema_ctx *x, const struct ast_loc *loc,
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
	default:
		return FN_NONE;
	}
}

static int map_set_value(struct sema_ctx *x, struct sema_map *m,
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
	t = widen(x, t);
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
	if (m->value->kind == TY_HIST && t->kind == TY_HIST &&
	    !type_equal(m->value, t)) {
		sema_error(x, rloc,
			   "Different bits in a single hist unsupported");
		return -EINVAL;
	}
	if (merge(x, &m->value, t, &changed)) {
		mismatch(x, loc, "map", m->name, m->value, t);
		return -EINVAL;
	}
	if (changed)
		x->changed++;
	return 0;
}

/* bpftrace 0.17 shows every integer key as unsigned int64. */
static const char *key_str(struct sema_ctx *x, struct type *t)
{
	if (t->kind == TY_INT)
		return "unsigned int64";
	return sema_tstr(x, t);
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
static int map_keys(struct sema_ctx *x, struct ast_node *n,
		    struct sema_map *m)
{
	struct type **el = NULL, *kt = NULL;
	int nk = ast_list_len(n->map.keys), i = 0, err = 0;
	bool changed = false;

	if (nk)
		el = arena_alloc(x->a, sizeof(*el) * nk);
	for (struct ast_node *k = n->map.keys; k; k = k->next, i++) {
		struct type *t = sema_type_expr(x, k);

		if (!t) {
			err = -EINVAL;
			continue;
		}
		if (t->kind == TY_TUPLE) {
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
		    t->kind == TY_RECORD || t->kind == TY_NONE) {
			sema_error(x, &k->loc, "%s cannot be used as a map key",
				   sema_tstr(x, t));
			err = -EINVAL;
			continue;
		}
		el[i] = widen(x, t);
	}
	if (err)
		return err;
	if (nk == 1)
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
		    merge(x, &m->key, kt, &changed)))) {
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
static struct type *type_map(struct sema_ctx *x, struct ast_node *n)
{
	struct sema_map *m = sema_map_of(n);

	BUG_ON(!m);
	if (map_keys(x, n, m))
		return NULL;
	if (!m->value) {
		sema_error(x, x->use_loc ? x->use_loc : &n->loc,
			   "Undefined map: %s", m->name);
		return NULL;
	}
	return m->value;
}

/* Variables. */

/*
 * bpftrace 0.17 locates a variable's type mismatch at the '=' (or the
 * whole "op=") of the assignment, which the parser recorded.
 */
static struct ast_loc assign_op_loc(const struct ast_node *n)
{
	return n->assign.op_loc.first_line ? n->assign.op_loc : n->loc;
}

static int var_set(struct sema_ctx *x, struct ast_node *var, struct type *t,
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
		if (!(is_int(v->type) && is_int(t)) &&
		    !(v->type->kind == TY_STRING && t->kind == TY_STRING &&
		      t->size <= v->type->size) &&
		    !type_equal(v->type, t)) {
			mismatch(x, loc, "variable", v->name, v->type, t);
			return -EINVAL;
		}
	} else if (merge(x, &v->type, t, &changed)) {
		mismatch(x, loc, "variable", v->name, v->type, t);
		return -EINVAL;
	}
	if (changed)
		x->changed++;
	var->type = v->type;
	return 0;
}

/* Named types written in casts: the integer names bpftrace knows. */
static struct type *resolve_named(struct sema_ctx *x, struct type *t,
				  const struct ast_loc *loc)
{
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
		struct type *e = t->elem, *r;

		if (!e || e->kind == TY_VOID)
			return t;
		e = resolve_named(x, e, loc);
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
	for (size_t i = 0; i < ARRAY_SIZE(ints); i++)
		if (!strcmp(ints[i].name, t->name))
			return type_int(x->a, ints[i].size, ints[i].is_signed);
	if (!strncmp(t->name, "struct ", 7) || !strncmp(t->name, "union ", 6))
		sema_error(x, loc, "Unknown struct/union: '%s'", t->name);
	else
		sema_error(x, loc, "Unknown type: '%s'", t->name);
	return NULL;
}

/* Expressions. */

/* Integer literals are int64, even above INT64_MAX (bpftrace 0.17). */
static struct type *type_int_lit(struct sema_ctx *x, struct ast_node *n)
{
	(void)n;
	return sema_int64(x);
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
	sema_error(x, &n->loc,
		   "$%d used numerically but given \"%s\". Try using str($%d).",
		   n->pos.num, s, n->pos.num);
	return NULL;
}

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
static struct ast_loc op_loc(struct sema_ctx *x, struct ast_node *n)
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

static void sign_warnings(struct sema_ctx *x, struct ast_node *n,
			  struct type *lt, struct type *rt)
{
	struct ast_node *l = n->op.left, *r = n->op.right;
	bool ls = int_signed(lt), rs = int_signed(rt);
	enum ast_op op = n->op.op;
	struct ast_loc loc = op_loc(x, n);

	if (ls != rs && !(ls && is_nonneg_literal(x, l)) &&
	    !(rs && is_nonneg_literal(x, r))) {
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
	    ((ls && !is_nonneg_literal(x, l)) || (rs && !is_nonneg_literal(x, r))))
		sema_warning(x, &loc,
			     "signed operands for '%s' can lead to undefined behavior (cast to unsigned to silence warning)",
			     ast_op_str(op));
}

static struct type *type_binop_types(struct sema_ctx *x, struct ast_node *n,
				     struct type *lt, struct type *rt)
{
	enum ast_op op = n->op.op;
	const char *ops = ast_op_str(op);
	struct ast_loc oloc = op_loc(x, n);

	if (op == OP_LAND || op == OP_LOR) {
		if (!is_cond(lt) || !is_cond(rt)) {
			sema_error(x, &oloc,
				   "The %s operator can not be used on expressions of types %s, %s",
				   ops, sema_tstr(x, lt), sema_tstr(x, rt));
			return NULL;
		}
		return sema_int64(x);
	}
	if (is_int(lt) && is_int(rt)) {
		sign_warnings(x, n, lt, rt);
		return int64_of(x, int_signed(lt) && int_signed(rt));
	}
	if (lt->kind == TY_STRING && rt->kind == TY_STRING) {
		struct ast_node *l = n->op.left, *r = n->op.right;

		if (op != OP_EQ && op != OP_NE) {
			sema_error(x, &oloc,
				   "The %s operator can not be used on expressions of types %s, %s",
				   ops, sema_tstr(x, lt), sema_tstr(x, rt));
			return NULL;
		}
		if (l->kind == AST_STRING && r->kind != AST_STRING &&
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
	if (lt->kind == TY_POINTER && is_int(rt) &&
	    (op == OP_ADD || op == OP_SUB))
		return lt;
	if (is_int(lt) && rt->kind == TY_POINTER && op == OP_ADD)
		return rt;
	if ((lt->kind == TY_POINTER || is_int(lt)) &&
	    (rt->kind == TY_POINTER || is_int(rt)) && is_compare(op))
		return sema_uint64(x);
	if (lt->kind == TY_POINTER && rt->kind == TY_POINTER &&
	    op == OP_SUB)
		return sema_int64(x);
	if (lt->kind == rt->kind || (is_int(lt) && is_int(rt))) {
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

static struct type *type_binop(struct sema_ctx *x, struct ast_node *n)
{
	struct type *lt = sema_type_expr(x, n->op.left);
	struct type *rt = sema_type_expr(x, n->op.right);

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

		if (x->final || !is_int(k) || n->op.op == OP_LAND ||
		    n->op.op == OP_LOR)
			return NULL;
		return int64_of(x, int_signed(k));
	}
	return type_binop_types(x, n, lt, rt);
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

		if (map_keys(x, e, m))
			return NULL;
		if (!m->value) {
			m->value = sema_int64(x);
			x->changed++;
		}
		t = m->value;
		e->type = t;
	} else if (e->kind == AST_VAR) {
		t = sema_type_expr(x, e);
		if (!t)
			return NULL;
	} else {
		sema_error(x, &n->loc,
			   "The %s operator must be applied to a map or variable",
			   ops);
		return NULL;
	}
	if (!is_int(t) && t->kind != TY_POINTER) {
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
	case OP_NEG:
	case OP_POS:
	case OP_BNOT:
		if (is_int(t))
			return t->kind == TY_INT ? t : sema_int64(x);
		break;
	case OP_LNOT:
		if (is_cond(t))
			return sema_uint64(x);
		break;
	case OP_DEREF:
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
		sema_error(x, &n->loc,
			   "The & operator is not supported yet");
		return NULL;
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
	struct type *a = sema_type_expr(x, n->ternary.then);
	struct type *b = sema_type_expr(x, n->ternary.else_);
	struct type *r;
	bool changed = false;

	if (!c || !a || !b)
		return NULL;
	if (!is_cond(c)) {
		sema_error(x, &n->loc, "Invalid condition in ternary: %s",
			   type_class(c));
		return NULL;
	}
	if (is_int(a) && is_int(b))
		return int64_of(x, int_signed(a) && int_signed(b));
	r = a;
	if (strcmp(type_class(a), type_class(b)) ||
	    merge(x, &r, b, &changed)) {
		sema_error(x, &n->loc,
			   "Ternary operator must return the same type: have '%s' and '%s'",
			   type_class(a), type_class(b));
		return NULL;
	}
	if (a->kind == TY_VOID) {
		sema_error(x, &n->loc, "Ternary return type unsupported void");
		return NULL;
	}
	return r;
}

static struct type_field *field_find(struct type *rec, const char *name,
				     int *idx)
{
	for (int i = 0; i < rec->nfields; i++)
		if (rec->fields[i].name && !strcmp(rec->fields[i].name, name)) {
			*idx = i;
			return &rec->fields[i];
		}
	return NULL;
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
		int idx;

		if (!rec)
			continue;
		g = field_find(rec, n->field.field, &idx);
		if (!g) {
			sema_error(x, &n->loc,
				   "Struct/union of type '%s' does not contain a field named '%s'",
				   rec->name ? rec->name : "struct",
				   n->field.field);
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

static struct type *type_field(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t = sema_type_expr(x, n->field.expr);
	struct type *rec = NULL;
	struct type_field *f;
	int idx;

	if (!t)
		return NULL;
	if (t->kind == TY_POINTER && t->elem && t->elem->kind == TY_RECORD)
		rec = t->elem;	/* args.f and args->f alike */
	else if (t->kind == TY_RECORD && !n->field.arrow)
		rec = t;
	if (!rec) {
		if (t->kind == TY_POINTER && t->elem &&
		    t->elem->kind == TY_NAMED)
			sema_error(x, &n->loc, "Unknown struct/union: '%s'",
				   t->elem->name);
		else
			sema_error(x, &n->loc,
				   "Can not access field '%s' on expression of type '%s'",
				   n->field.field, sema_tstr(x, t));
		return NULL;
	}
	if (!strncmp(n->field.field, "common_", 7) && t->is_ctx) {
		sema_error(x, &n->loc,
			   "BPF does not support accessing common tracepoint fields");
		return NULL;
	}
	f = field_find(rec, n->field.field, &idx);
	if (!f) {
		sema_error(x, &n->loc,
			   "Struct/union of type '%s' does not contain a field named '%s'",
			   rec->name ? rec->name : "struct", n->field.field);
		return NULL;
	}
	if (t->is_ctx && !args_field_everywhere(x, n, f))
		return NULL;
	return f->type;
}

static struct type *type_index(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t = sema_type_expr(x, n->index.expr);
	struct type *it = sema_type_expr(x, n->index.index);
	int64_t v;

	if (!t || !it)
		return NULL;
	if (!is_int(it)) {
		sema_error(x, &n->index.index->loc,
			   "The array index operator [] only accepts integer indices, found %s",
			   sema_tstr(x, it));
		return NULL;
	}
	if (t->kind == TY_ARRAY) {
		if (sema_int_literal(x, n->index.index, &v) &&
		    (v < 0 || (uint64_t)v >= t->nelems)) {
			sema_error(x, &n->loc,
				   "the index %lld is out of bounds for array of size %zu",
				   (long long)v, t->nelems);
			return NULL;
		}
		return t->elem;
	}
	if (t->kind == TY_POINTER) {
		if (!t->elem || t->elem->kind == TY_VOID) {
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

static struct type *type_tuple(struct sema_ctx *x, struct ast_node *n)
{
	int len = ast_list_len(n->tuple.elems);
	struct type **el = arena_alloc(x->a, sizeof(*el) * (len ? len : 1));
	int i = 0, err = 0;

	for (struct ast_node *e = n->tuple.elems; e; e = e->next, i++) {
		el[i] = sema_type_expr(x, e);
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

static struct type *type_cast(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t = sema_type_expr(x, n->cast.expr);
	struct type *to = resolve_named(x, n->cast.to, &n->loc);

	if (!t || !to)
		return NULL;
	if (to->kind == TY_INT || to->kind == TY_BOOL) {
		if (is_int(t) || t->kind == TY_POINTER)
			return to;
		sema_error(x, &n->loc, "Casts are not supported for type: \"%s\"",
			   sema_tstr(x, t));
		return NULL;
	}
	if (to->kind == TY_POINTER) {
		if (t->kind == TY_POINTER && t->is_ctx) {
			sema_error(x, &n->loc,
				   "Integer pointer casts are not supported for type: ctx");
			return NULL;
		}
		if (is_int(t) || t->kind == TY_POINTER) {
			if (to->elem && to->elem->kind == TY_NAMED) {
				sema_error(x, &n->loc,
					   "Unknown struct/union: '%s'",
					   to->elem->name);
				return NULL;
			}
			if (to->addrspace == AS_NONE &&
			    t->addrspace != AS_NONE) {
				struct type *p = type_pointer(x->a, to->elem);

				p->addrspace = t->addrspace;
				return p;
			}
			return to;
		}
		sema_error(x, &n->loc, "Casts are not supported for type: \"%s\"",
			   sema_tstr(x, t));
		return NULL;
	}
	sema_error(x, &n->loc, "Cannot cast to \"%s\"", sema_tstr(x, to));
	return NULL;
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

static struct type *type_sizeof(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t;

	if (n->size.expr)
		t = sema_type_expr(x, n->size.expr);
	else
		t = resolve_named(x, n->size.of_type, &n->loc);
	if (!t)
		return NULL;
	return sema_uint64(x);
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
		t = type_map(x, n);
		break;
	case AST_CALL:
		t = type_call(x, n);
		break;
	case AST_SIZEOF:
		t = type_sizeof(x, n);
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
		t = type_field(x, n);
		break;
	case AST_INDEX:
		t = type_index(x, n);
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
		sema_error(x, &n->loc, "offsetof() is not supported yet");
		break;
	case AST_BLOCK_EXPR:
		sema_error(x, &n->loc, "block expressions are not supported yet");
		break;
	case AST_RECORD:
		sema_error(x, &n->loc, "records are not supported yet");
		break;
	default:
		BUG("%s is not an expression", ast_kind_name(n->kind));
	}
	n->type = t;
	if (!t)
		x->unresolved++;
	return t;
}

/* Statements. */

static int type_stmt(struct sema_ctx *x, struct ast_node *n);

static int type_stmts(struct sema_ctx *x, struct ast_node *n)
{
	int err = 0;

	for (; n; n = n->next)
		if (type_stmt(x, n))
			err = -EINVAL;
	return err;
}

static bool is_agg_call(const struct ast_node *n)
{
	const struct sema_func_ops *f;

	if (n->kind != AST_CALL || !n->sema)
		return false;
	f = sema_func_ops(n->sema->func);
	return f && (f->flags & FN_F_AGG);
}

static int assign_map(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *lhs = n->assign.lhs, *rhs = n->assign.rhs;
	struct sema_map *m = sema_map_of(lhs);
	struct type *t;

	if (map_keys(x, lhs, m))
		return -EINVAL;
	if (n->assign.op != OP_NONE) {
		struct ast_node fake = {
			.kind = AST_BINOP, .loc = n->loc,
			.op = { .op = n->assign.op, .left = lhs, .right = rhs },
		};
		struct type *rt = sema_type_expr(x, rhs);

		if (!m->value) {
			m->value = sema_int64(x);
			x->changed++;
		}
		lhs->type = m->value;
		if (!rt)
			return -EINVAL;
		t = type_binop_types(x, &fake, m->value, rt);
		if (fake.sema)
			n->sema = fake.sema;
	} else {
		if (is_agg_call(rhs)) {
			x->agg_call = rhs;
			x->agg_map = m;
		}
		t = sema_type_expr(x, rhs);
		x->agg_call = NULL;
	}
	if (!t)
		return -EINVAL;
	if (map_set_value(x, m, t, &lhs->loc, &rhs->loc))
		return -EINVAL;
	lhs->type = m->value;
	return 0;
}

static int assign_var(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *lhs = n->assign.lhs, *rhs = n->assign.rhs;
	struct type *t = sema_type_expr(x, rhs);
	struct ast_loc loc;

	if (!t)
		return -EINVAL;
	if (n->assign.op != OP_NONE) {
		struct ast_node fake = {
			.kind = AST_BINOP, .loc = n->loc,
			.op = { .op = n->assign.op, .left = lhs, .right = rhs },
		};
		struct type *lt = lhs->sema->var->type;

		if (!lt)
			return -EINVAL;
		t = type_binop_types(x, &fake, lt, t);
		if (fake.sema)
			n->sema = fake.sema;
		if (!t)
			return -EINVAL;
	}
	if (t->kind == TY_POINTER && t->is_ctx && rhs->kind == AST_BUILTIN &&
	    rhs->sema->builtin == BI_ARGS) {
		sema_error(x, &n->loc, "args cannot be assigned to a variable");
		return -EINVAL;
	}
	loc = assign_op_loc(n);
	return var_set(x, lhs, t, &loc);
}

static int type_assign(struct sema_ctx *x, struct ast_node *n)
{
	switch (n->assign.lhs->kind) {
	case AST_MAP:
		return assign_map(x, n);
	case AST_VAR:
		return assign_var(x, n);
	default:
		sema_type_expr(x, n->assign.rhs);
		sema_error(x, &n->assign.lhs->loc,
			   "Invalid expression for assignment: only maps and variables can be assigned to");
		return -EINVAL;
	}
}

static int type_cond(struct sema_ctx *x, struct ast_node *c, const char *what)
{
	struct type *t = sema_type_expr(x, c);

	if (!t)
		return -EINVAL;
	if (!is_cond(t)) {
		sema_error(x, &c->loc, "Invalid condition in %s(): %s", what,
			   type_class(t));
		return -EINVAL;
	}
	return 0;
}

static int type_let(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *v = n->let.var;
	struct type *dt = NULL;
	int err = 0;

	if (n->let.decl_type) {
		dt = resolve_named(x, n->let.decl_type, &n->loc);
		if (!dt)
			return -EINVAL;
		if (!v->sema->var->declared) {
			if (v->sema->var->type &&
			    !type_equal(v->sema->var->type, dt)) {
				mismatch(x, &n->loc, "variable",
					 v->sema->var->name,
					 v->sema->var->type, dt);
				return -EINVAL;
			}
			v->sema->var->type = dt;
			v->sema->var->declared = true;
		}
	}
	if (n->let.init) {
		struct type *t = sema_type_expr(x, n->let.init);

		if (!t)
			return -EINVAL;
		err = var_set(x, v, t, &n->loc);
	}
	/*
	 * let $x; alone: the type comes from a later assignment; when
	 * there is none by the final walk, an integer (zero, as every
	 * variable starts).
	 */
	if (!v->sema->var->type && x->final)
		v->sema->var->type = sema_int64(x);
	v->type = v->sema->var->type;
	return err;
}

static int type_for(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *v = n->for_.var;
	int err = 0;

	if (n->kind == AST_FOR_MAP) {
		struct sema_map *m = sema_map_of(n->for_.map);
		struct type *el[2];

		n->for_.map->type = m ? m->value : NULL;
		if (!m || !m->value || !m->key_set) {
			sema_error(x, &n->for_.map->loc, "Undefined map: %s",
				   n->for_.map->map.name);
			return -EINVAL;
		}
		if (!m->nkeys) {
			sema_error(x, &n->for_.map->loc,
				   "Loop expression must be a map with keys: %s",
				   m->name);
			return -EINVAL;
		}
		el[0] = m->key;
		el[1] = m->value;
		err = var_set(x, v, sema_tuple(x, el, 2), &v->loc);
	} else {
		struct type *a = sema_type_expr(x, n->for_.start);
		struct type *b = sema_type_expr(x, n->for_.end);

		if (!a || !b)
			return -EINVAL;
		if (!is_int(a) || !is_int(b)) {
			sema_error(x, &n->loc,
				   "Loop range requires integer start and end values");
			return -EINVAL;
		}
		err = var_set(x, v, int64_of(x, int_signed(a) && int_signed(b)),
			      &v->loc);
	}
	x->loop_depth++;
	if (type_stmt(x, n->for_.body))
		err = -EINVAL;
	x->loop_depth--;
	return err;
}

static int type_stmt(struct sema_ctx *x, struct ast_node *n)
{
	int err = 0;

	if (!n)
		return 0;
	switch (n->kind) {
	case AST_EXPR_STMT:
	case AST_DISCARD:
		return sema_type_expr(x, n->stmt.expr) ? 0 : -EINVAL;
	case AST_ASSIGN:
		return type_assign(x, n);
	case AST_LET:
		return type_let(x, n);
	case AST_IF:
		err = type_cond(x, n->if_.cond, "if");
		if (type_stmt(x, n->if_.then))
			err = -EINVAL;
		if (type_stmt(x, n->if_.else_))
			err = -EINVAL;
		return err;
	case AST_WHILE:
		err = type_cond(x, n->loop.cond, "while");
		x->loop_depth++;
		if (type_stmt(x, n->loop.body))
			err = -EINVAL;
		x->loop_depth--;
		return err;
	case AST_UNROLL:
		if (!sema_type_expr(x, n->loop.cond))
			err = -EINVAL;
		if (type_stmt(x, n->loop.body))
			err = -EINVAL;
		return err;
	case AST_FOR_MAP:
	case AST_FOR_RANGE:
		return type_for(x, n);
	case AST_JUMP:
		if (n->jump.value) {
			sema_type_expr(x, n->jump.value);
			sema_error(x, &n->loc,
				   "return with a value is only valid in functions");
			return -EINVAL;
		}
		return 0;
	case AST_BLOCK:
		return type_stmts(x, n->block.stmts);
	default:
		/* an expression used as a statement */
		return sema_type_expr(x, n) ? 0 : -EINVAL;
	}
}

static int type_probe(struct sema_ctx *x, struct ast_node *p)
{
	struct ast_node *pred = p->probe.pred;
	int err = 0;

	x->probe = p->sema->probe;
	if (pred) {
		struct type *t = sema_type_expr(x, pred);

		if (!t)
			err = -EINVAL;
		else if (!is_cond(t)) {
			sema_error(x, &pred->loc, "Invalid type for predicate: %s",
				   type_class(t));
			err = -EINVAL;
		}
	}
	if (type_stmt(x, p->probe.body))
		err = -EINVAL;
	return err;
}

static int walk(struct sema_ctx *x)
{
	int err = 0;

	x->unresolved = 0;
	x->changed = 0;
	for (struct ast_node *p = x->c->program->program.probes; p;
	     p = p->next)
		if (type_probe(x, p))
			err = -EINVAL;
	return err;
}

int sema_types(struct compile *c)
{
	struct sema_ctx x = {
		.c = c, .a = &c->arena, .d = &c->diag, .prog = c->sema,
	};
	int nerr = c->diag.nerrors;
	int err;

	for (int i = 0; i < MAX_WALKS; i++) {
		walk(&x);
		if (!x.changed)
			break;
	}
	x.final = true;
	err = walk(&x);
	/* declared with let @m = ... but never used */
	for (int i = 0; i < x.prog->nmaps; i++) {
		struct sema_map *m = x.prog->maps[i];

		if (m->value || err)
			continue;
		diag_warning(x.d, NULL, "Unused map: %s", m->name);
		m->value = sema_int64(&x);
		m->key_set = true;
	}
	if (err && c->diag.nerrors == nerr)
		BUG("types pass failed without a diagnostic");
	return c->diag.nerrors > nerr ? -EINVAL : 0;
}
