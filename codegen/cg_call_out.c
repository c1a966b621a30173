/*
 * Lowering of output calls whose records do not fit the BPF stack:
 * join(argv[, sep]) builds its record (CG_EV_JOIN, 16 KiB) in a per-CPU
 * array map, then sends it.  BPF target only: a user-mode probe with
 * join() runs in the kernel (shim/place_body.c).
 */
#include <string.h>

#include <linux/bpf.h>

#include "cg_int.h"
#include "irb_native.h"
#include "util.h"

static void cg_join(struct cg *g, struct ast_node *n)
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

/* Is this call one of ours?  true when lowered. */
bool cg_call_out(struct cg *g, struct ast_node *n)
{
	switch (n->sema->func) {
	case FN_JOIN:
		cg_join(g, n);
		return true;
	default:
		return false;
	}
}
