/*
 * Lowering of the calls that make a value from bytes: buf(), ntop(),
 * pton(), bswap(), macaddr(), strcontains(), cgroup_path().  Each gives
 * what sema typed (frontend/func_str.c, func_net.c): a buffer of
 * n->type->size bytes, or an i64.  Plain IR over irb's reads, so that
 * both targets share it.  Reached from the call dispatch (cg_expr.c).
 */
#include <string.h>
#include <sys/socket.h>

#include "cg_int.h"
#include "util.h"

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
LLVMValueRef cg_buf(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *a = cg_call_arg(n, 0), *l = cg_call_arg(n, 1);
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

/*
 * ntop([af,] addr): u64 address family, then 16 bytes of address in
 * network order (an integer's low 4 bytes as they lie in memory, an
 * array's bytes).  One argument: AF_INET for 4 bytes, AF_INET6 for 16.
 */
LLVMValueRef cg_ntop(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *a = cg_call_arg(n, 0), *addr = cg_call_arg(n, 1);
	LLVMValueRef buf = irb_alloca(ir, n->type->size, "inet"), af, v;

	irb_memset(ir, buf, 0, n->type->size);
	if (addr) {
		af = cg_expr(g, a);
	} else {
		addr = a;
		af = irb_const(ir, !cg_is_scalar(addr->type) &&
					   addr->type->size == 16 ?
					   AF_INET6 : AF_INET);
	}
	LLVMBuildStore(ir->b, af, buf);
	v = cg_expr(g, addr);
	if (cg_is_scalar(addr->type))
		LLVMBuildStore(ir->b, LLVMBuildTrunc(ir->b, v, ir->i32, ""),
			       irb_gep(ir, buf, 8));
	else
		irb_memcpy(ir, irb_gep(ir, buf, 8), v,
			   addr->type->size < 16 ? addr->type->size : 16);
	return buf;
}

/* pton("addr"): the bytes sema parsed (iargs), 4 or 16 of them. */
LLVMValueRef cg_pton(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	const unsigned char *b = (const unsigned char *)n->sema->iargs;
	LLVMValueRef buf = irb_alloca(ir, 16, "pton");

	for (size_t i = 0; i < n->type->size && i < 16; i++)
		LLVMBuildStore(ir->b, LLVMConstInt(ir->i8, b[i], 0),
			       irb_gep(ir, buf, i));
	return buf;
}

/* macaddr(p or bytes): six bytes, copied or read from the address. */
LLVMValueRef cg_macaddr(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	LLVMValueRef buf = irb_alloca(ir, 8, "mac");

	irb_memset(ir, buf, 0, 8);
	bytes_from(g, cg_call_arg(n, 0), buf, 6, irb_const(ir, 6));
	return buf;
}

/* bswap(x): llvm.bswap on x's own width (a byte is itself). */
LLVMValueRef cg_bswap(struct cg *g, struct ast_node *n)
{
	static const char name[] = "llvm.bswap";
	struct irb *ir = &g->ir;
	struct ast_node *a = cg_call_arg(n, 0);
	size_t size = a->type->size;
	LLVMValueRef v = cg_expr(g, a), fn;
	LLVMTypeRef ty, ft;
	unsigned id;

	if (size < 2 || size > 8)
		return v;
	ty = LLVMIntTypeInContext(ir->ctx, size * 8);
	id = LLVMLookupIntrinsicID(name, sizeof(name) - 1);
	fn = LLVMGetIntrinsicDeclaration(ir->mod, id, &ty, 1);
	ft = LLVMIntrinsicGetType(ir->ctx, id, &ty, 1);
	v = LLVMBuildTrunc(ir->b, v, ty, "");
	v = LLVMBuildCall2(ir->b, ft, fn, &v, 1, "bswap");
	return LLVMBuildZExt(ir->b, v, ir->i64, "");
}

static LLVMBasicBlockRef block(struct irb *ir, const char *name)
{
	return LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, name);
}

static LLVMValueRef byte_at(struct irb *ir, LLVMValueRef p, LLVMValueRef i)
{
	return LLVMBuildLoad2(ir->b, ir->i8,
			      LLVMBuildGEP2(ir->b, ir->i8, p, &i, 1, ""), "");
}

/*
 * strcontains(hay, needle): 1 when needle (up to its NUL) occurs in hay
 * (up to its NUL), an empty needle included; loops bounded by the two
 * buffers' sizes (the verifier walks them), indexes checked.
 */
LLVMValueRef cg_strcontains(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *a = cg_call_arg(n, 0), *b = cg_call_arg(n, 1);
	LLVMValueRef hay = cg_expr(g, a), needle = cg_expr(g, b);
	LLVMValueRef res = irb_alloca(ir, 8, "contains");
	LLVMValueRef jp = irb_alloca(ir, 8, "contains_j");
	LLVMValueRef ip = irb_alloca(ir, 8, "contains_i");
	LLVMValueRef hs = irb_const(ir, a->type->size);
	LLVMValueRef ns = irb_const(ir, b->type->size);
	LLVMValueRef zero8 = LLVMConstInt(ir->i8, 0, 0), one = irb_const(ir, 1);
	LLVMBasicBlockRef outer = block(ir, "contains_outer");
	LLVMBasicBlockRef inner = block(ir, "contains_inner");
	LLVMBasicBlockRef cmp = block(ir, "contains_cmp");
	LLVMBasicBlockRef step = block(ir, "contains_step");
	LLVMBasicBlockRef next = block(ir, "contains_next");
	LLVMBasicBlockRef yes = block(ir, "contains_yes");
	LLVMBasicBlockRef done = block(ir, "contains_done");
	LLVMValueRef i, j, ij, c;

	LLVMBuildStore(ir->b, irb_const(ir, 0), res);
	LLVMBuildStore(ir->b, irb_const(ir, 0), jp);
	LLVMBuildBr(ir->b, outer);

	/* for (j = 0; j < hs; j++) { for (i = 0; i < ns; i++) ... } */
	LLVMPositionBuilderAtEnd(ir->b, outer);
	j = LLVMBuildLoad2(ir->b, ir->i64, jp, "j");
	LLVMBuildStore(ir->b, irb_const(ir, 0), ip);
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntULT, j, hs, ""),
			inner, done);

	LLVMPositionBuilderAtEnd(ir->b, inner);
	i = LLVMBuildLoad2(ir->b, ir->i64, ip, "i");
	j = LLVMBuildLoad2(ir->b, ir->i64, jp, "j");
	ij = LLVMBuildAdd(ir->b, i, j, "");
	/* i < ns (else the needle filled its buffer: found) */
	c = LLVMBuildICmp(ir->b, LLVMIntUGE, i, ns, "");
	LLVMBuildCondBr(ir->b, c, yes, cmp);

	LLVMPositionBuilderAtEnd(ir->b, cmp);
	c = LLVMBuildICmp(ir->b, LLVMIntEQ, byte_at(ir, needle, i), zero8, "");
	{
		LLVMBasicBlockRef more = block(ir, "contains_more");
		LLVMBasicBlockRef inhay = block(ir, "contains_inhay");

		LLVMBuildCondBr(ir->b, c, yes, more);
		LLVMPositionBuilderAtEnd(ir->b, more);
		LLVMBuildCondBr(ir->b,
				LLVMBuildICmp(ir->b, LLVMIntUGE, ij, hs, ""),
				next, inhay);
		LLVMPositionBuilderAtEnd(ir->b, inhay);
		c = LLVMBuildICmp(ir->b, LLVMIntEQ, byte_at(ir, hay, ij),
				  byte_at(ir, needle, i), "");
		LLVMBuildCondBr(ir->b, c, step, next);
	}

	LLVMPositionBuilderAtEnd(ir->b, step);
	LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, i, one, ""), ip);
	LLVMBuildBr(ir->b, inner);

	/* no match at j: stop at the haystack's NUL */
	LLVMPositionBuilderAtEnd(ir->b, next);
	j = LLVMBuildLoad2(ir->b, ir->i64, jp, "j");
	LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, j, one, ""), jp);
	c = LLVMBuildICmp(ir->b, LLVMIntEQ, byte_at(ir, hay, j), zero8, "");
	LLVMBuildCondBr(ir->b, c, done, outer);

	LLVMPositionBuilderAtEnd(ir->b, yes);
	LLVMBuildStore(ir->b, one, res);
	LLVMBuildBr(ir->b, done);

	LLVMPositionBuilderAtEnd(ir->b, done);
	return LLVMBuildLoad2(ir->b, ir->i64, res, "");
}

/* cgroup_path(id): the id; the filter is the type's (output) */
LLVMValueRef cg_cgroup_path(struct cg *g, struct ast_node *n)
{
	LLVMValueRef buf = irb_alloca(&g->ir, 8, "cgroup_path");

	LLVMBuildStore(g->ir.b, cg_expr(g, cg_call_arg(n, 0)), buf);
	return buf;
}
