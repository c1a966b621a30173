/*
 * Lowering for watchpoints (kernel only). watchpoint:FUNC+argN:LEN:MODE
 * runs in two programs: a uprobe at FUNC that reports argN's value (and,
 * unless asyncwatchpoint, stops the process with SIGSTOP until ubt has
 * placed the hardware watchpoint and sent SIGCONT), and the perf_event
 * program of the probe's body, attached to the watchpoint by ubt
 * (shim/kernel/kernel_watch.c). unwatch(addr) asks ubt to remove it.
 */
#include <linux/bpf.h>
#include <signal.h>

#include "cg_int.h"
#include "util.h"

/* struct pt_regs offsets of the integer argument registers */
static const size_t cg_watch_arg_off[] = { 112, 104, 96, 88, 72, 64 };

void cg_watch_setup_body(struct cg *g, int body, int argn, bool sync)
{
	struct irb *ir = &g->ir;
	size_t size = sizeof(struct cg_event_hdr) + 16;
	int ev = cg_event_new(g, CG_EV_WATCH, NULL);
	LLVMValueRef rec, addr, sig;

	g->obj->events[ev].size = size;
	g->obj->events[ev].prog = body;
	g->obj->events[ev].sync = sync;
	if (argn < 0 || argn >= (int)ARRAY_SIZE(cg_watch_arg_off)) {
		cg_unsupported(g, NULL, "a watchpoint on an argument past arg5");
		return;
	}
	addr = irb_ctx_load(ir, g->ctxp, cg_watch_arg_off[argn], 8);
	if (sync) {
		/* stopped when it returns to user space, until SIGCONT */
		sig = LLVMConstInt(ir->i32, SIGSTOP, 0);
		irb_helper(ir, BPF_FUNC_send_signal, &sig, 1);
	}
	rec = cg_record_begin(g, ev, size);
	LLVMBuildStore(ir->b, addr, irb_gep(ir, rec, 8));
	LLVMBuildStore(ir->b, irb_helper(ir, BPF_FUNC_get_current_pid_tgid,
					 NULL, 0),
		       irb_gep(ir, rec, 16));
	cg_record_send(g, rec, size);
}

void cg_watch_unwatch(struct cg *g, const struct ast_node *call,
		      LLVMValueRef addr)
{
	struct irb *ir = &g->ir;
	size_t size = sizeof(struct cg_event_hdr) + 8;
	int ev = cg_event_new(g, CG_EV_UNWATCH, call);
	LLVMValueRef rec;

	g->obj->events[ev].size = size;
	rec = cg_record_begin(g, ev, size);
	LLVMBuildStore(ir->b, addr, irb_gep(ir, rec, 8));
	cg_record_send(g, rec, size);
}
