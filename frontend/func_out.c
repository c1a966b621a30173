/*
 * Output functions besides printf's family (func_print.c): join, which
 * prints an argv-style array of strings on one line.
 */
#include <errno.h>
#include <string.h>

#include "sema.h"
#include "sema_int.h"
#include "util.h"

/* join(char **argv[, "sep"]): a statement; the separator in iargs. */
static struct type *ty_join(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	struct ast_node *a = call->call.args, *sep = a->next;
	const struct type *t = a->type;

	(void)m;
	if (t->kind != TY_INT && t->kind != TY_POINTER) {
		sema_error(x, &call->loc,
			   "join() only supports int or pointer arguments (%s provided)",
			   type_class(t));
		return NULL;
	}
	if (sep && (sep->kind != AST_STRING || !sema_str_literal(x, sep, NULL))) {
		sema_error(x, &call->loc,
			   "join() expects a string literal (%s provided)",
			   type_class(sep->type));
		return NULL;
	}
	return type_new(x->a, TY_VOID, 0);
}

const struct sema_func_ops sema_funcs_out[] = {
	{ .name = "join", .id = FN_JOIN, .min_args = 1, .max_args = 2,
	  .flags = FN_F_VOID, .type = ty_join },
	{ 0 },
};
