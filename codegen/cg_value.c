/*
 * Operations on lowered values, below every lowering: a binary
 * operator on two i64s (pointer steps, division by zero, comparisons)
 * and string equality over two buffers.  Calls only cg_util.c and irb.
 */
#include "cg_int.h"
#include "compat.h"
#include "util.h"

/* String equality over the shorter buffer; returns i64 0/1. */
static LLVMValueRef cg_strcmp(struct cg *g, LLVMValueRef a, size_t asz,
			      LLVMValueRef b, size_t bsz, size_t limit)
{
	struct irb *ir = &g->ir;
	size_t n = asz < bsz ? asz : bsz;
	LLVMValueRef res = irb_alloca(ir, 8, "streq");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(
		ir->ctx, ir->fn, "streq_done");
	LLVMBasicBlockRef ne = LLVMAppendBasicBlockInContext(
		ir->ctx, ir->fn, "streq_ne");

	if (limit && limit < n)
		n = limit;
	LLVMBuildStore(ir->b, irb_const(ir, 1), res);
	for (size_t i = 0; i < n; i++) {
		LLVMValueRef ca = LLVMBuildLoad2(ir->b, ir->i8,
						 irb_gep(ir, a, i), "");
		LLVMValueRef cb = LLVMBuildLoad2(ir->b, ir->i8,
						 irb_gep(ir, b, i), "");
		LLVMBasicBlockRef same = LLVMAppendBasicBlockInContext(
			ir->ctx, ir->fn, "streq_same");
		LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(
			ir->ctx, ir->fn, "streq_next");

		LLVMBuildCondBr(ir->b,
				LLVMBuildICmp(ir->b, LLVMIntEQ, ca, cb, ""),
				same, ne);
		LLVMPositionBuilderAtEnd(ir->b, same);
		LLVMBuildCondBr(ir->b,
				LLVMBuildICmp(ir->b, LLVMIntEQ, ca,
					      LLVMConstInt(ir->i8, 0, 0), ""),
				done, next);
		LLVMPositionBuilderAtEnd(ir->b, next);
	}
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, ne);
	LLVMBuildStore(ir->b, irb_const(ir, 0), res);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
	return LLVMBuildLoad2(ir->b, ir->i64, res, "");
}

LLVMValueRef cg_string_equal(struct cg *g, LLVMValueRef a,
			     const struct type *at, LLVMValueRef b,
			     const struct type *bt, size_t limit)
{
	return cg_strcmp(g, a, at ? at->size : 64, b, bt ? bt->size : 64,
			 limit);
}

LLVMValueRef cg_binop_values(struct cg *g, enum ast_op op, LLVMValueRef l,
			     const struct type *lt, LLVMValueRef r,
			     const struct type *rt, const struct type *result)
{
	struct irb *ir = &g->ir;
	bool sgn = cg_signed(lt) && cg_signed(rt);
	bool lsgn = cg_signed(result ? result : lt);
	LLVMValueRef v;
	LLVMIntPredicate pred;

	/* pointer arithmetic counts elements, as in C */
	if (op == OP_ADD || op == OP_SUB) {
		if (lt && lt->kind == TY_POINTER && !(rt && rt->kind == TY_POINTER))
			r = LLVMBuildMul(ir->b, r,
					 irb_const(ir, cg_pointee_size(lt)), "");
		else if (rt && rt->kind == TY_POINTER && !(lt && lt->kind == TY_POINTER))
			l = LLVMBuildMul(ir->b, l,
					 irb_const(ir, cg_pointee_size(rt)), "");
	}
	switch (op) {
	case OP_ADD:
		v = LLVMBuildAdd(ir->b, l, r, "");
		break;
	case OP_SUB:
		v = LLVMBuildSub(ir->b, l, r, "");
		break;
	case OP_MUL:
		v = LLVMBuildMul(ir->b, l, r, "");
		break;
	case OP_DIV:
	case OP_MOD: {
		/* division by zero gives 0 as in BPF, without UB in LLVM */
		LLVMValueRef isz = LLVMBuildICmp(ir->b, LLVMIntEQ, r,
						 irb_const(ir, 0), "");
		LLVMValueRef d = LLVMBuildSelect(ir->b, isz, irb_const(ir, 1),
						 r, "");

		/* unsigned, as bpftrace 0.17 (which warns about signed
		 * operands): -7 / 2 is 0x7ffffffffffffffc */
		if (op == OP_DIV)
			v = LLVMBuildUDiv(ir->b, l, d, "");
		else
			v = LLVMBuildURem(ir->b, l, d, "");
		if (g->div_loc && compat_has(COMPAT_DIV_ZERO))
			v = cg_div_zero(g, isz, v);
		else
			v = LLVMBuildSelect(ir->b, isz, irb_const(ir, 0), v,
					    "");
		break;
	}
	case OP_BAND:
		v = LLVMBuildAnd(ir->b, l, r, "");
		break;
	case OP_BOR:
		v = LLVMBuildOr(ir->b, l, r, "");
		break;
	case OP_BXOR:
		v = LLVMBuildXor(ir->b, l, r, "");
		break;
	case OP_SHL:
		v = LLVMBuildShl(ir->b, l,
				 LLVMBuildAnd(ir->b, r, irb_const(ir, 63), ""),
				 "");
		break;
	case OP_SHR:
		r = LLVMBuildAnd(ir->b, r, irb_const(ir, 63), "");
		v = lsgn && cg_signed(lt) ? LLVMBuildAShr(ir->b, l, r, "") :
					    LLVMBuildLShr(ir->b, l, r, "");
		break;
	case OP_EQ:
	case OP_NE:
	case OP_LT:
	case OP_LE:
	case OP_GT:
	case OP_GE:
		switch (op) {
		case OP_EQ:
			pred = LLVMIntEQ;
			break;
		case OP_NE:
			pred = LLVMIntNE;
			break;
		case OP_LT:
			pred = sgn ? LLVMIntSLT : LLVMIntULT;
			break;
		case OP_LE:
			pred = sgn ? LLVMIntSLE : LLVMIntULE;
			break;
		case OP_GT:
			pred = sgn ? LLVMIntSGT : LLVMIntUGT;
			break;
		default:
			pred = sgn ? LLVMIntSGE : LLVMIntUGE;
			break;
		}
		return LLVMBuildZExt(ir->b,
				     LLVMBuildICmp(ir->b, pred, l, r, ""),
				     ir->i64, "");
	default:
		BUG("binop %d", op);
	}
	return cg_int_norm(g, v, result);
}
