/*
 * Casts between integers and integer arrays (v0.26;
 * frontend/sema_arrcast.c): the bytes stay as they are, little-endian.
 */
#include "cg_int.h"

bool cg_is_array_cast(const struct ast_node *n)
{
	const struct type *to = n->type, *from = n->cast.expr->type;

	return to && from &&
	       ((to->kind == TY_BOOL && from->kind == TY_STRING) ||
		(to->kind == TY_ARRAY &&
		 (cg_is_scalar(from) || from->kind == TY_STRING)) ||
		(cg_is_scalar(to) && from->kind == TY_ARRAY));
}

/* v: the operand's value (an i64, or a pointer to its bytes) */
LLVMValueRef cg_array_cast(struct cg *g, struct ast_node *n, LLVMValueRef v)
{
	struct irb *ir = &g->ir;
	const struct type *to = n->type;
	LLVMValueRef buf;

	if (to->kind == TY_BOOL)	/* (bool)"str": a first byte */
		return LLVMBuildZExt(
			ir->b,
			LLVMBuildICmp(ir->b, LLVMIntNE,
				      LLVMBuildLoad2(ir->b, ir->i8, v, ""),
				      LLVMConstInt(ir->i8, 0, 0), ""),
			ir->i64, "strbool");
	if (to->kind != TY_ARRAY)	/* (uint32)arr: its bytes */
		return cg_load(g, v, to);
	if (!cg_is_scalar(n->cast.expr->type))	/* a string's bytes */
		return v;
	buf = irb_alloca(ir, to->size > 8 ? to->size : 8, "arrcast");
	LLVMBuildStore(ir->b, v, buf);
	return buf;
}
