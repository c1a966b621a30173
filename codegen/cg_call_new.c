/*
 * Functions of bpftrace releases after 0.17 (frontend/func_new.c):
 * nsecs(boot|tai|sw_tai) and strlen().
 */
#include <string.h>
#include <time.h>
#include <linux/bpf.h>

#include "cg_int.h"

/*
 * nsecs(mode): CLOCK_BOOTTIME and CLOCK_TAI from the kernel's helpers;
 * sw_tai, as bpftrace computes it, the boot clock plus TAI's offset from
 * it measured here once (kernel probes only: shim/place keeps the call
 * out of user mode).
 */
LLVMValueRef cg_nsecs_mode(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;

	switch (n->sema->iargs[0]) {
	case NSECS_BOOT:
		return irb_helper(ir, BPF_FUNC_ktime_get_boot_ns, NULL, 0);
	case NSECS_TAI:
		return irb_helper(ir, BPF_FUNC_ktime_get_tai_ns, NULL, 0);
	default:
		return cg_sw_tai(g);
	}
}

LLVMValueRef cg_sw_tai(struct cg *g)
{
	struct irb *ir = &g->ir;
	struct timespec a, b, c;
	int64_t delta;

	/* the boot clock read on both sides of the TAI clock */
	clock_gettime(CLOCK_BOOTTIME, &a);
	clock_gettime(CLOCK_TAI, &b);
	clock_gettime(CLOCK_BOOTTIME, &c);
	delta = (int64_t)b.tv_sec * 1000000000 + b.tv_nsec -
		((int64_t)a.tv_sec * 1000000000 + a.tv_nsec +
		 (int64_t)c.tv_sec * 1000000000 + c.tv_nsec) / 2;
	return LLVMBuildAdd(ir->b,
			    irb_helper(ir, BPF_FUNC_ktime_get_boot_ns, NULL, 0),
			    irb_const(ir, (uint64_t)delta), "sw_tai");
}

/*
 * strlen(s): the index of the first NUL of the string's buffer, or its
 * size; a loop bounded by the size (the verifier walks it).
 */
LLVMValueRef cg_strlen(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *a = cg_call_arg(n, 0);
	LLVMValueRef s = cg_expr(g, a), ip = irb_alloca(ir, 8, "strlen_i");
	LLVMValueRef res = irb_alloca(ir, 8, "strlen");
	LLVMValueRef i, c, size = irb_const(ir, a->type->size);
	LLVMBasicBlockRef cond, body, nul, next, done;

	cond = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "strlen_cond");
	body = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "strlen_body");
	nul = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "strlen_nul");
	next = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "strlen_next");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "strlen_done");
	LLVMBuildStore(ir->b, irb_const(ir, 0), ip);
	LLVMBuildStore(ir->b, size, res);
	LLVMBuildBr(ir->b, cond);

	LLVMPositionBuilderAtEnd(ir->b, cond);
	i = LLVMBuildLoad2(ir->b, ir->i64, ip, "i");
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntULT, i, size, ""),
			body, done);

	LLVMPositionBuilderAtEnd(ir->b, body);
	c = LLVMBuildLoad2(ir->b, ir->i8,
			   LLVMBuildGEP2(ir->b, ir->i8, s, &i, 1, ""), "");
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntEQ, c,
				      LLVMConstInt(ir->i8, 0, 0), ""),
			nul, next);

	LLVMPositionBuilderAtEnd(ir->b, nul);
	LLVMBuildStore(ir->b, i, res);
	LLVMBuildBr(ir->b, done);

	LLVMPositionBuilderAtEnd(ir->b, next);
	LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, i, irb_const(ir, 1), ""),
		       ip);
	LLVMBuildBr(ir->b, cond);

	LLVMPositionBuilderAtEnd(ir->b, done);
	return LLVMBuildLoad2(ir->b, ir->i64, res, "strlen");
}
