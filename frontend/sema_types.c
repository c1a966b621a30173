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

#include "compat.h"
#include "sema.h"
#include "sema_int.h"
#include "sema_type_int.h"
#include "util.h"

#define MAX_WALKS 10
/* Statements. */

static int type_stmt(struct sema_ctx *x, struct ast_node *n);

/* A statement after which the block's others never run (v0.26). */
static bool ends_block(const struct ast_node *n)
{
	const struct ast_node *e = n->kind == AST_EXPR_STMT ? n->stmt.expr :
							      NULL;

	return n->kind == AST_JUMP ||
	       (e && e->kind == AST_CALL && !strcmp(e->call.name, "exit"));
}

static int type_stmts(struct sema_ctx *x, struct ast_node *n)
{
	bool dead = false, warned = false;
	int err = 0;

	for (; n; n = n->next) {
		/* the first unreachable statement only */
		if (dead && !warned && compat_has(COMPAT_UNREACHABLE)) {
			sema_warning(x, &n->loc, "Unreachable statement.");
			warned = true;
		}
		if (type_stmt(x, n))
			err = -EINVAL;
		dead |= ends_block(n);
	}
	return err;
}

int sema_t_stmts(struct sema_ctx *x, struct ast_node *list)
{
	return type_stmts(x, list);
}

static int assign_map(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *lhs = n->assign.lhs, *rhs = n->assign.rhs;
	struct sema_map *m = sema_map_of(lhs);
	struct type *t;

	if (sema_t_map_keys(x, lhs, m))
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
		t = sema_t_binop_types(x, &fake, m->value, rt);
		if (fake.sema)
			n->sema = fake.sema;
	} else {
		if (sema_t_is_agg_call(rhs)) {
			x->agg_call = rhs;
			x->agg_map = m;
		}
		t = sema_t_args_value(x, rhs, sema_type_expr(x, rhs));
		x->agg_call = NULL;
	}
	if (!t)
		return -EINVAL;
	if (sema_t_map_set_value(x, m, t, &lhs->loc, &rhs->loc))
		return -EINVAL;
	lhs->type = m->value;
	return 0;
}

static int assign_var(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *lhs = n->assign.lhs, *rhs = n->assign.rhs;
	struct type *t = sema_t_agg_value(x, rhs, sema_type_expr(x, rhs));
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
		t = sema_t_binop_types(x, &fake, lt, t);
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
	loc = sema_t_assign_op_loc(n);
	return sema_t_var_set(x, lhs, t, &loc);
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
	struct type *t = sema_t_agg_value(x, c, sema_type_expr(x, c));

	if (!t)
		return -EINVAL;
	if (!sema_t_is_cond(t)) {
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

	if (n->let.decl_type || n->let.decl_typeof) {
		/* typeof(expr): the expression's type, not evaluated */
		dt = n->let.decl_typeof ?
			     sema_type_expr(x, n->let.decl_typeof) :
			     sema_t_resolve_named(x, n->let.decl_type,
						  &n->loc);
		if (!dt)
			return -EINVAL;
		if (dt->kind == TY_VOID || dt->kind == TY_NONE ||
		    type_is_aggregation(dt)) {
			sema_error(x, &n->let.decl_typeof->loc,
				   "typeof() of this expression (%s) cannot type a variable",
				   sema_tstr(x, dt));
			return -EINVAL;
		}
		if (dt->kind == TY_STRING && !dt->size)	/* `: string` */
			dt = type_string(x->a, x->c->max_strlen);
		if (!v->sema->var->declared) {
			if (v->sema->var->type &&
			    !type_equal(v->sema->var->type, dt)) {
				sema_t_mismatch(x, &n->loc, "variable",
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
		err = sema_t_var_set(x, v, t, &n->loc);
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
		/* count, sum, min, max, avg: their merged value, an
		 * integer (v0.26); stats and histograms are not values */
		if (m->value->kind == TY_COUNT)
			el[1] = sema_uint64(x);
		else if (m->value->kind == TY_SUM ||
			 m->value->kind == TY_MIN ||
			 m->value->kind == TY_MAX || m->value->kind == TY_AVG)
			el[1] = sema_t_int64_of(x, m->value->is_signed);
		err = sema_t_var_set(x, v, sema_tuple(x, el, 2), &v->loc);
	} else {
		struct type *a = sema_type_expr(x, n->for_.start);
		struct type *b = sema_type_expr(x, n->for_.end);

		if (!a || !b)
			return -EINVAL;
		if (!sema_t_is_int(a) || !sema_t_is_int(b)) {
			sema_error(x, &n->loc,
				   "Loop range requires integer start and end values");
			return -EINVAL;
		}
		if (compat_has(COMPAT_INT_TYPES) && a->kind == TY_INT &&
		    b->kind == TY_INT) {
			/* v0.26: the start's type, promoted with the end's
			 * when their sizes differ */
			struct type *r = a;
			bool grew = false;

			if (a->size != b->size && sema_t_merge(x, &r, b, &grew))
				r = a;
			err = sema_t_var_set(x, v, r, &v->loc);
		} else {
			err = sema_t_var_set(x, v, sema_t_int64_of(x, sema_t_int_signed(a) && sema_t_int_signed(b)),
					     &v->loc);
		}
	}
	x->loop_depth++;
	if (type_stmt(x, n->for_.body))
		err = -EINVAL;
	x->loop_depth--;
	return err;
}

/* return [value] in an inlined fn: the value must fit its type. */
static int type_fn_return(struct sema_ctx *x, struct ast_node *n)
{
	struct type *r = x->fn_ret, *v;

	if (!n->jump.value) {
		if (r->kind == TY_VOID)
			return 0;
		sema_error(x, &n->loc,
			   "Function must return a value of type %s",
			   sema_tstr(x, r));
		return -EINVAL;
	}
	v = sema_type_expr(x, n->jump.value);
	if (!v)
		return -EINVAL;
	if (r->kind == TY_VOID) {
		sema_error(x, &n->loc,
			   "Function has a void return type but returns a value");
		return -EINVAL;
	}
	if ((sema_t_is_int(r) && sema_t_is_int(v)) ||
	    (r->kind == TY_STRING && v->kind == TY_STRING) ||
	    type_equal(r, v))
		return 0;
	sema_error(x, &n->loc,
		   "Type mismatch for return value: expected %s, got %s",
		   sema_tstr(x, r), sema_tstr(x, v));
	return -EINVAL;
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
		if (n->jump.kind == JUMP_RETURN && x->fn_ret)
			return type_fn_return(x, n);
		if (n->jump.value) {
			/* v0.26: a probe's return value is an integer (the
			 * BPF program's; ubt evaluates it, and the probe
			 * returns as without one) */
			struct type *t = sema_type_expr(x, n->jump.value);

			if (!t)
				return -EINVAL;
			if (!sema_t_is_int(t)) {
				sema_error(x, &n->loc,
					   "Probe return values can only be integers. Found %s",
					   sema_tstr(x, t));
				return -EINVAL;
			}
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
		else if (!sema_t_is_cond(t)) {
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

