/*
 * Functions of watchpoints: unwatch(addr) removes the watchpoints set at
 * addr (kernel probes only; the shim closes them when the event comes).
 */
#include <errno.h>

#include "sema.h"
#include "sema_int.h"

static struct type *ty_unwatch(struct sema_ctx *x, struct ast_node *call,
			       struct sema_map *m)
{
	struct ast_node *a = call->call.args;

	(void)m;
	if (a->type->kind != TY_INT && a->type->kind != TY_POINTER) {
		sema_error(x, &call->loc,
			   "unwatch() only supports integer arguments (%s provided)",
			   type_class(a->type));
		return NULL;
	}
	return type_new(x->a, TY_VOID, 0);
}

const struct sema_func_ops sema_funcs_watch[] = {
	{ .name = "unwatch", .id = FN_UNWATCH, .min_args = 1, .max_args = 1,
	  .flags = FN_F_VOID, .type = ty_unwatch },
	{ 0 },
};
