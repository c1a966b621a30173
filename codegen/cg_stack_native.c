/*
 * The native target's stacks and registers (cg_stack.c has the BPF
 * target's).
 */
#include "cg_int.h"
#include "irb_native.h"
#include "stack.h"

LLVMValueRef cg_stack_native(struct cg *g, struct ast_node *n)
{
	cg_unsupported(g, n, "ustack in a user-mode probe");
	return irb_alloca(&g->ir, n->type->size, "");
}

LLVMValueRef cg_reg_native(struct cg *g, struct ast_node *n, size_t off)
{
	(void)off;
	cg_unsupported(g, n, "reg() in a user-mode probe");
	return irb_const(&g->ir, 0);
}
