/*
 * Functions that v0.26's stdlib defines as macros over other
 * expressions, rewritten in place before they are resolved:
 *   ppid(task)   task->real_parent->pid (ppid() of curtask)
 *   is_err(x)    (int64)x < 0 && (int64)x >= -4095, the kernel's IS_ERR()
 */
#include <errno.h>
#include <string.h>

#include "sema.h"
#include "sema_int.h"
#include "sema_type_int.h"
#include "util.h"

static struct ast_node *node(struct sema_ctx *x, enum ast_kind k,
			     const struct ast_loc *loc)
{
	return ast_new(x->a, k, loc);
}

static struct ast_node *int_lit(struct sema_ctx *x, int64_t v,
				const char *text, const struct ast_loc *loc)
{
	struct ast_node *n = node(x, AST_INT, loc);

	n->num.value = (uint64_t)v;
	n->num.is_negative = v < 0;
	n->num.text = text;
	return n;
}

static struct ast_node *binop(struct sema_ctx *x, enum ast_op op,
			      struct ast_node *l, struct ast_node *r,
			      const struct ast_loc *loc)
{
	struct ast_node *n = node(x, AST_BINOP, loc);

	n->op.op = op;
	n->op.left = l;
	n->op.right = r;
	return n;
}

static struct ast_node *as_int64(struct sema_ctx *x, struct ast_node *e)
{
	struct ast_node *n = node(x, AST_CAST, &e->loc);

	n->cast.to = type_int(x->a, 8, true);
	n->cast.expr = e;
	return n;
}

static int wrong_args(struct sema_ctx *x, struct ast_node *n,
		      const char *want)
{
	sema_error(x, &n->loc,
		   "Call to %s() has the wrong number of arguments: %d given, %s expected",
		   n->call.name, n->call.nargs, want);
	return -EINVAL;
}

int sema_macro_call(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_loc loc = n->loc;
	struct ast_node *a = n->call.args, *f, *b;

	if (!strcmp(n->call.name, "ppid")) {
		if (n->call.nargs > 1)
			return wrong_args(x, n, "0 or 1");
		if (!a) {
			a = node(x, AST_IDENT, &loc);
			a->ident.name = "curtask";
		}
		f = node(x, AST_FIELD, &loc);
		f->field.expr = a;
		f->field.field = "real_parent";
		f->field.arrow = true;
		n->kind = AST_FIELD;
		n->field.expr = f;
		n->field.field = "pid";
		n->field.arrow = true;
		return 1;
	}
	if (!strcmp(n->call.name, "is_err")) {
		if (n->call.nargs != 1)
			return wrong_args(x, n, "1");
		/* the argument is read twice, as the macro reads it */
		f = binop(x, OP_LT, as_int64(x, a), int_lit(x, 0, "0", &loc),
			  &loc);
		b = binop(x, OP_GE, as_int64(x, a),
			  int_lit(x, -4095, "-4095", &loc), &loc);
		n->kind = AST_BINOP;
		n->op.op = OP_LAND;
		n->op.left = f;
		n->op.right = b;
		return 1;
	}
	return 0;
}
