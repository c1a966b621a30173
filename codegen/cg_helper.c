/*
 * -k and -kk, bpftrace's helper checks: a BPF helper that failed sends a
 * CG_EV_HELPER_ERROR event (its return value), which ubt prints as a
 * located warning, "Failed to map_update_elem: Argument list too long
 * (-7)".  -k checks map updates and deletes; -kk also map lookups and
 * memory reads, which give zero when they fail (what -k leaves to the
 * program).  User-mode code reports the same failures of its own
 * reads and map operations, which return the helpers' error codes.
 */
#include <linux/bpf.h>

#include "cg_int.h"

const char *cg_read_helper_name(enum irb_read kind)
{
	switch (kind) {
	case IRB_READ_USER:
		return "probe_read_user";
	case IRB_READ_KERNEL:
		return "probe_read_kernel";
	case IRB_READ_USER_STR:
		return "probe_read_user_str";
	case IRB_READ_KERNEL_STR:
		return "probe_read_kernel_str";
	case IRB_READ_ANY:
		break;
	}
	return "probe_read";
}

void cg_helper_check(struct cg *g, const struct ast_loc *loc,
		     const char *helper, LLVMValueRef ret,
		     enum cg_check how)
{
	struct irb *ir = &g->ir;
	int level = g->c->helper_check;
	LLVMBasicBlockRef fail, done;
	LLVMValueRef bad, rec, code;
	struct cg_event *e;
	int ev;

	if (!level || g->err)
		return;
	if (level < 2 && how != CG_CHECK_NEG)
		return;
	fail = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "helper_fail");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "helper_done");
	if (how == CG_CHECK_NULL) {
		bad = LLVMBuildIsNull(ir->b, ret, "");
		code = irb_const(ir, 0);
	} else {
		/* helpers return an int in a 64-bit register */
		code = LLVMBuildSExt(ir->b,
				     LLVMBuildTrunc(ir->b, ret, ir->i32, ""),
				     ir->i64, "");
		bad = LLVMBuildICmp(ir->b, LLVMIntSLT, code, irb_const(ir, 0),
				    "");
	}
	LLVMBuildCondBr(ir->b, bad, fail, done);
	LLVMPositionBuilderAtEnd(ir->b, fail);
	ev = cg_event_new(g, CG_EV_HELPER_ERROR, NULL);
	e = &g->obj->events[ev];
	e->helper = helper;
	e->loc = loc;
	e->size = sizeof(struct cg_event_hdr) + 8;
	rec = cg_record_begin(g, ev, e->size);
	LLVMBuildStore(ir->b, code, irb_gep(ir, rec, 8));
	cg_record_send(g, rec, e->size);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
}
