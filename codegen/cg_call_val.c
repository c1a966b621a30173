/*
 * Lowering of the calls that make a value from bytes: buf(), ntop(),
 * pton(), bswap(), macaddr(), strcontains().  Each gives what sema typed
 * (frontend/func_str.c, func_net.c): a buffer of n->type->size bytes, or
 * an i64.  Plain IR over irb's reads, so that both targets share it.
 */
#include <string.h>
#include <sys/socket.h>

#include "cg_int.h"
#include "util.h"

static struct ast_node *arg_n(struct ast_node *call, int i)
{
	struct ast_node *a = call->call.args;

	while (a && i--)
		a = a->next;
	return a;
}

/* Read from user memory in user probes and for uptr(), else kernel. */
static enum irb_read read_kind(struct cg *g, const struct type *t)
{
	if (t && t->addrspace == AS_USER)
		return IRB_READ_USER;
	if (t && t->addrspace == AS_KERNEL)
		return IRB_READ_KERNEL;
	return cg_is_uprobe(g) ? IRB_READ_USER : IRB_READ_KERNEL;
}

/*
 * Copy the bytes of expression a into dst[0..room): a string, array or
 * record (already in a buffer) by copy; an integer or pointer as an
 * address to read len (i64, at most room) bytes from.
 */
static void bytes_from(struct cg *g, struct ast_node *a, LLVMValueRef dst,
		       size_t room, LLVMValueRef len)
{
	struct irb *ir = &g->ir;
	LLVMValueRef v = cg_expr(g, a);

	if (!cg_is_scalar(a->type)) {
		size_t have = a->type->size < room ? a->type->size : room;

		if (have)
			irb_memcpy(ir, dst, v, have);
		return;
	}
	if (!room)
		return;
	irb_probe_read(ir, read_kind(g, a->type), dst, len, v);
}

/* buf(p, n): u8 length, then the bytes (zero after the length). */
static LLVMValueRef cg_buf(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *a = arg_n(n, 0), *l = arg_n(n, 1);
	size_t size = n->type->size, room = size - 1;
	LLVMValueRef buf = irb_alloca(ir, size, "buf"), len;

	irb_memset(ir, buf, 0, size);
	if (l) {
		LLVMValueRef big;

		len = cg_expr(g, l);
		big = LLVMBuildICmp(ir->b, LLVMIntUGT, len,
				    irb_const(ir, room), "");
		len = LLVMBuildSelect(ir->b, big, irb_const(ir, room), len,
				      "");
	} else {
		len = irb_const(ir, room);
	}
	LLVMBuildStore(ir->b, LLVMBuildTrunc(ir->b, len, ir->i8, ""), buf);
	bytes_from(g, a, irb_gep(ir, buf, 1), room, len);
	return buf;
}

/* Is this call one of ours?  Its value, else NULL. */
LLVMValueRef cg_call_val(struct cg *g, struct ast_node *n)
{
	switch (n->sema->func) {
	case FN_BUF:
		return cg_buf(g, n);
	default:
		return NULL;
	}
}
