/*
 * Division and modulo by zero as the newest bpftrace has them (compat
 * div-zero): the result is 1, and a located warning is printed each
 * time it happens ("Divide or modulo by 0 detected..."), carried by a
 * CG_EV_HELPER_ERROR event whose helper is CG_DIV_ZERO_HELPER.  0.17's
 * result, 0 (BPF's), needs nothing of this.
 */
#include "cg_int.h"

LLVMValueRef cg_div_zero(struct cg *g, LLVMValueRef isz, LLVMValueRef v)
{
	struct irb *ir = &g->ir;
	LLVMBasicBlockRef warn, done;
	struct cg_event *e;
	LLVMValueRef rec;
	int ev;

	v = LLVMBuildSelect(ir->b, isz, irb_const(ir, 1), v, "");
	if (g->err)
		return v;
	warn = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "div_zero");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "div_done");
	LLVMBuildCondBr(ir->b, isz, warn, done);
	LLVMPositionBuilderAtEnd(ir->b, warn);
	ev = cg_event_new(g, CG_EV_HELPER_ERROR, NULL);
	e = &g->obj->events[ev];
	e->helper = CG_DIV_ZERO_HELPER;
	e->loc = g->div_loc;
	e->size = sizeof(struct cg_event_hdr) + 8;
	rec = cg_record_begin(g, ev, e->size);
	LLVMBuildStore(ir->b, irb_const(ir, 0), irb_gep(ir, rec, 8));
	cg_record_send(g, rec, e->size);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
	return v;
}
