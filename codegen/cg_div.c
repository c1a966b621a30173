/*
 * Division and modulo by zero as the newest bpftrace has them (compat
 * div-zero): the result is 1, and a located warning is printed each
 * time it happens ("Divide or modulo by 0 detected..."), carried by a
 * CG_EV_HELPER_ERROR event whose helper is CG_DIV_ZERO_HELPER.  0.17's
 * result, 0 (BPF's), needs nothing of this.  An index past an array's
 * end (compat array-bounds) is warned of the same way.
 */
#include "cg_int.h"

/* When cond holds: a located warning, helper (CG_*_HELPER) naming it. */
static void cg_warn_if(struct cg *g, LLVMValueRef cond, const char *helper,
		       const struct ast_loc *loc)
{
	struct irb *ir = &g->ir;
	LLVMBasicBlockRef warn, done;
	struct cg_event *e;
	LLVMValueRef rec;
	int ev;

	warn = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "warn");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "warn_done");
	LLVMBuildCondBr(ir->b, cond, warn, done);
	LLVMPositionBuilderAtEnd(ir->b, warn);
	ev = cg_event_new(g, CG_EV_HELPER_ERROR, NULL);
	e = &g->obj->events[ev];
	e->helper = helper;
	e->loc = loc;
	e->size = sizeof(struct cg_event_hdr) + 8;
	rec = cg_record_begin(g, ev, e->size);
	LLVMBuildStore(ir->b, irb_const(ir, 0), irb_gep(ir, rec, 8));
	cg_record_send(g, rec, e->size);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
}

void cg_array_oob(struct cg *g, LLVMValueRef in, const struct ast_loc *loc)
{
	if (g->err)
		return;
	cg_warn_if(g, LLVMBuildNot(g->ir.b, in, ""), CG_ARRAY_OOB_HELPER, loc);
}

LLVMValueRef cg_div_zero(struct cg *g, LLVMValueRef isz, LLVMValueRef v)
{
	struct irb *ir = &g->ir;

	v = LLVMBuildSelect(ir->b, isz, irb_const(ir, 1), v, "");
	if (g->err)
		return v;
	cg_warn_if(g, isz, CG_DIV_ZERO_HELPER, g->div_loc);
	return v;
}
