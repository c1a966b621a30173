/*
 * The & operator (v0.26): the address of a scratch variable, a pointer
 * to its type.  The variable lives on the probe's stack (the BPF
 * program's, or in user mode the traced thread's), so the pointer is
 * marked is_local: codegen reads it there (cg_field.c).
 */
#include "sema.h"
#include "sema_int.h"
#include "sema_type_int.h"

struct type *sema_t_addr_of(struct sema_ctx *x, struct ast_node *n,
			    struct type *t)
{
	struct ast_node *e = n->op.left;
	struct type *p;

	if (e->kind == AST_MAP) {
		sema_error(x, &n->loc,
			   "The & operator on a map is not supported yet");
		return NULL;
	}
	if (e->kind != AST_VAR) {
		sema_error(x, &n->loc,
			   "The & operator can only be used on variables");
		return NULL;
	}
	if (t->kind == TY_VOID || type_is_aggregation(t)) {
		sema_error(x, &n->loc,
			   "The & operator can not be used on expressions of type '%s'",
			   sema_tstr(x, t));
		return NULL;
	}
	p = type_pointer(x->a, t);
	p->is_local = true;
	return p;
}
