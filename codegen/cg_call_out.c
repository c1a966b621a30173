/*
 * Lowering of output calls of the kernel alone: join(argv[, sep])
 * builds its record (CG_EV_JOIN, 16 KiB, more than the BPF stack) in a
 * per-CPU array map, then sends it; debugf() writes to the trace pipe.
 * BPF target only: a user-mode probe with either runs in the kernel
 * (shim/place/place_body.c).  And signal(), on both targets.
 */
#include <string.h>

#include <linux/bpf.h>

#include "cg_int.h"
#include "irb_native.h"
#include "util.h"

void cg_join(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *a = n->call.args, *sep = a->next;
	size_t size = sizeof(struct cg_event_hdr) +
		      CG_JOIN_ARGS * CG_JOIN_SIZE;
	size_t room = (size + 7) / 8 * 8 + 8;	/* a time stamp after it */
	enum irb_read pk = cg_is_uprobe(g) ? IRB_READ_USER : IRB_READ_KERNEL;
	enum irb_read sk = cg_is_uprobe(g) ? IRB_READ_USER_STR :
					     IRB_READ_KERNEL_STR;
	LLVMValueRef key, rec, argv, slot;
	LLVMBasicBlockRef cont;
	int ev;

	if (a->type->addrspace == AS_USER) {
		pk = IRB_READ_USER;
		sk = IRB_READ_USER_STR;
	} else if (a->type->addrspace == AS_KERNEL) {
		pk = IRB_READ_KERNEL;
		sk = IRB_READ_KERNEL_STR;
	}
	if (irb_is_native(ir)) {
		cg_unsupported(g, n, "join() in a user-mode probe");
		return;
	}
	if (!g->join)
		g->join = irb_map_define(ir, CG_MAP_JOIN,
					 BPF_MAP_TYPE_PERCPU_ARRAY, 4, room,
					 1);
	ev = cg_event_new(g, CG_EV_JOIN, n);
	g->obj->events[ev].size = size;
	g->obj->events[ev].fmt = sep ? sep->str.value : " ";
	argv = cg_expr(g, a);
	key = irb_alloca(ir, 4, "join_key");
	LLVMBuildStore(ir->b, LLVMConstInt(ir->i32, 0, 0), key);
	rec = irb_map_lookup(ir, g->join, key);
	cont = cg_if_nonnull(g, rec);
	LLVMBuildStore(ir->b, irb_const(ir, ev), rec);
	slot = irb_alloca(ir, 8, "join_ptr");
	for (int i = 0; i < CG_JOIN_ARGS; i++) {
		LLVMValueRef dst = irb_gep(ir, rec,
					   sizeof(struct cg_event_hdr) +
						   (size_t)i * CG_JOIN_SIZE);

		/* "" unless the pointer and its string read */
		LLVMBuildStore(ir->b, LLVMConstInt(ir->i8, 0, 0), dst);
		LLVMBuildStore(ir->b, irb_const(ir, 0), slot);
		irb_probe_read(ir, pk, slot, irb_const(ir, 8),
			       LLVMBuildAdd(ir->b, argv,
					    irb_const(ir, 8 * (uint64_t)i),
					    ""));
		irb_probe_read(ir, sk, dst, irb_const(ir, CG_JOIN_SIZE),
			       LLVMBuildLoad2(ir->b, ir->i64, slot, ""));
	}
	cg_record_send(g, rec, size);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
}

/*
 * debugf(fmt, args): bpf_trace_printk() for up to 3 arguments, else
 * bpf_trace_vprintk() with the u64 values in an array; strings and
 * other buffers by address (%s).
 */
void cg_debugf(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *f = n->call.args, *a;
	LLVMValueRef args[5], vals[12], fmt;
	int nv = 0;

	if (irb_is_native(ir)) {
		cg_unsupported(g, n, "debugf() in a user-mode probe");
		return;
	}
	for (a = f->next; a && nv < 12; a = a->next) {
		LLVMValueRef v = cg_expr(g, a);

		if (!cg_is_scalar(a->type))
			v = LLVMBuildPtrToInt(ir->b, v, ir->i64, "");
		vals[nv++] = v;
	}
	fmt = cg_string_lit(g, f->str.value, f->str.len, f->str.len + 1);
	args[0] = fmt;
	args[1] = LLVMConstInt(ir->i32, f->str.len + 1, 0);
	if (nv <= 3) {
		for (int i = 0; i < nv; i++)
			args[2 + i] = vals[i];
		irb_helper(ir, BPF_FUNC_trace_printk, args, 2 + nv);
		return;
	}
	args[2] = irb_alloca(ir, 8 * (size_t)nv, "debugf_args");
	for (int i = 0; i < nv; i++)
		LLVMBuildStore(ir->b, vals[i], irb_gep(ir, args[2], 8 * i));
	args[3] = LLVMConstInt(ir->i32, 8 * nv, 0);
	irb_helper(ir, BPF_FUNC_trace_vprintk, args, 4);
}

/*
 * signal(sig): bpf_send_signal() to the current process in the kernel
 * (as bpftrace); native code raises it in the calling thread.
 */
void cg_signal(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *a = n->call.args;
	LLVMValueRef sig;

	if (a->kind == AST_STRING)
		sig = irb_const(ir, n->sema->iargs[0]);
	else
		sig = cg_expr(g, a);
	sig = LLVMBuildTrunc(ir->b, sig, ir->i32, "");
	irb_helper(ir, BPF_FUNC_send_signal, &sig, 1);
}
