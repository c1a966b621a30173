/*
 * usermode (v0.26, x86-64): a leaf of cg_builtin.c (no calls back into
 * the expression lowering).
 */
#include "cg_int.h"

/*
 * usermode (v0.26, x86-64): 1 when the probe fired in user mode.  As
 * bpftrace decides: BEGIN/END 1; probes whose context has no registers
 * (tracepoints, fentry, raw tracepoints, iterators) 0; the others read
 * the saved %cs (its privilege level 3).  Native code runs in the
 * traced process: 1.
 */
#define CG_PT_CS 136	/* offsetof(struct pt_regs, cs), x86-64 */

LLVMValueRef cg_usermode(struct cg *g)
{
	struct irb *ir = &g->ir;
	enum sema_provider p = g->sap ? g->sap->provider : g->probe->provider;
	LLVMValueRef cs;

	if (p == PROV_BEGIN || p == PROV_END)
		return irb_const(ir, 1);
	if (!sema_provider_regs(p))
		return irb_const(ir, 0);
	if (ir->target != CG_TARGET_BPF)
		return irb_const(ir, 1);
	cs = irb_ctx_load(ir, g->ctxp, CG_PT_CS, 8);
	cs = LLVMBuildAnd(ir->b, cs, irb_const(ir, 3), "");
	return LLVMBuildZExt(ir->b,
			     LLVMBuildICmp(ir->b, LLVMIntEQ, cs,
					   irb_const(ir, 3), "usermode"),
			     ir->i64, "");
}
