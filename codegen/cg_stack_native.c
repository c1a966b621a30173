/*
 * The native target's stacks and registers (cg_stack.c has the BPF
 * target's).
 *
 * ustack at a function's entry: the runtime walks the frame pointers in
 * the thread that hit the probe (RT_FN_USTACK) into a CG_EV_USTACK record
 * { hdr; u64 id; u64 n; u64 frames[limit] }, id a hash of the frames.
 * The value is { id; u32 pid; u32 CG_USTACK_NATIVE } (cg.h).  Each thread
 * sends a stack's frames to ubt once: a per-thread table of the ids it
 * sent (the map NATIVE_USTACK_SEEN, native only) says which.  ubt prints
 * the value from the frames it received (shim/kernel/stack_sym.h).
 */
#include <linux/bpf.h>

#include "cg_int.h"
#include "irb_native.h"
#include "stack.h"

#define NATIVE_USTACK_SEEN "ubt_ustack_seen"
#define NATIVE_USTACK_SEEN_MAX 4096

/* x86-64 struct pt_regs offsets the native context holds (irb_native.c) */
#define PT_BP 32
#define PT_R9 64
#define PT_R8 72
#define PT_AX 80
#define PT_CX 88
#define PT_DX 96
#define PT_SI 104
#define PT_DI 112
#define PT_IP 128
#define PT_SP 152

/* The seen table of this build, defined on first use. */
static LLVMValueRef cg_ustack_seen(struct cg *g)
{
	LLVMValueRef ref = irb_native_map_named(&g->ir, NATIVE_USTACK_SEEN);

	if (!ref)
		ref = irb_map_define(&g->ir, NATIVE_USTACK_SEEN,
				     BPF_MAP_TYPE_HASH, 8, 8,
				     NATIVE_USTACK_SEEN_MAX);
	return ref;
}

LLVMValueRef cg_stack_native(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	int limit = stack_limit(n->type);
	size_t size = 8 + 16 + 8 * (size_t)limit;
	int ev = cg_event_new(g, CG_EV_USTACK, n);
	LLVMValueRef rec, ip, sp, fp, id, key, p, v, buf, pid;
	LLVMBasicBlockRef have, send, done;

	/* the record's room: its time stamp may follow (cg_record_room) */
	rec = irb_alloca(ir, size + 8, "ustack_rec");
	LLVMBuildStore(ir->b, irb_const(ir, ev), rec);
	ip = irb_native_func_ip(ir);
	sp = irb_ctx_load(ir, g->ctxp, PT_SP, 8);
	fp = irb_native_entry_fp(ir);
	irb_native_ustack(ir, irb_gep(ir, rec, 8), limit, ip, sp, fp);
	id = LLVMBuildLoad2(ir->b, ir->i64, irb_gep(ir, rec, 8), "stack_id");

	/* frames to ubt unless this thread sent them before */
	key = irb_alloca(ir, 8, "ustack_key");
	LLVMBuildStore(ir->b, id, key);
	p = irb_map_lookup(ir, cg_ustack_seen(g), key);
	have = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "ustack_have");
	send = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "ustack_send");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "ustack_done");
	LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, p, ""), send, have);
	LLVMPositionBuilderAtEnd(ir->b, have);
	v = LLVMBuildLoad2(ir->b, ir->i64, p, "seen");
	LLVMBuildStore(ir->b, irb_const(ir, 1), p);
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntEQ, v, irb_const(ir, 0),
				      ""),
			send, done);
	LLVMPositionBuilderAtEnd(ir->b, send);
	cg_record_send(g, rec, size);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);

	buf = irb_alloca(ir, n->type->size, "ustack");
	LLVMBuildStore(ir->b, id, buf);
	pid = LLVMBuildLShr(ir->b,
			    irb_helper(ir, BPF_FUNC_get_current_pid_tgid,
				       NULL, 0),
			    irb_const(ir, 32), "");
	LLVMBuildStore(ir->b,
		       LLVMBuildOr(ir->b, pid,
				   irb_const(ir, (uint64_t)CG_USTACK_NATIVE
							 << 32),
				   ""),
		       irb_gep(ir, buf, 8));
	return buf;
}

/*
 * The registers a user-mode probe has (shim/place/place_body.c lets only these
 * run natively): the arguments and %rsp, %rip (the probed address) and
 * %rbp at a function's entry; %rax (the return value) in return probes.
 */
LLVMValueRef cg_reg_native(struct cg *g, struct ast_node *n, size_t off)
{
	struct irb *ir = &g->ir;

	switch (off) {
	case PT_DI:
	case PT_SI:
	case PT_DX:
	case PT_CX:
	case PT_R8:
	case PT_R9:
	case PT_AX:
	case PT_SP:
		return irb_ctx_load(ir, g->ctxp, off, 8);
	case PT_IP:
		return irb_native_func_ip(ir);
	case PT_BP:
		return irb_native_entry_fp(ir);
	default:
		cg_unsupported(g, n, "this register in a user-mode probe");
		return irb_const(ir, 0);
	}
}
