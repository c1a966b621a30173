/*
 * Lowering of reads of C data (types from the script's C definitions,
 * the program's DWARF or the kernel's BTF): *p, p->f, s.f, a[i], p[i]
 * and chains of them (p->inner.arr[2], curtask->se.vruntime). A chain is lowered to a place, an address in
 * the traced memory or a pointer into a value ubt already holds (a
 * record in a variable or map), and only the bytes of the last link are
 * read: p->a reads the 4 bytes of a, not the whole struct. Reads of
 * traced memory go through irb_probe_read(): bpf_probe_read_user or
 * _kernel in the kernel, the runtime's fault-safe copy in user mode.
 */
#include <errno.h>
#include <string.h>

#include "compat.h"
#include "cg_int.h"
#include "util.h"

/* The largest value read at once: the BPF stack's size. */
#define CG_READ_MAX 512

/* Where the value of an expression is. */
struct cg_place {
	bool mem;		/* in traced memory at addr, else at buf */
	LLVMValueRef addr;	/* i64 */
	LLVMValueRef buf;	/* a pointer into a buffer of ubt's */
	enum irb_read read;	/* IRB_READ_USER or _KERNEL, when mem */
	LLVMValueRef ok;	/* i1: every array index in bounds (NULL:
				 * no index to check) */
	bool ctx;		/* buf is in the probe's context: whole
				 * aligned 8-byte loads only */
	bool ctx_null_ret;	/* ctx: a null value ends the probe */
};

/* A probe of no address space (bpftrace's AddrSpace::none). */
static bool cg_no_addrspace(struct cg *g)
{
	switch (g->sap ? g->sap->provider : g->probe->provider) {
	case PROV_BEGIN:
	case PROV_END:
	case PROV_INTERVAL:
	case PROV_PROFILE:
	case PROV_SOFTWARE:
	case PROV_HARDWARE:
		return true;
	default:
		return false;
	}
}

/* User or kernel memory behind a pointer of type t: its address space
 * (the kernel for BTF types and kernel pointers, the user for DWARF
 * types and syscall arguments), else the probe's (cg_reads_user()); in
 * a probe of neither, by the address, as bpftrace (bpf_probe_read()). */
static enum irb_read cg_read_kind(struct cg *g, const struct type *t)
{
	if (t && t->is_local)	/* &$x: the probe's own stack */
		return g->ir.target == CG_TARGET_BPF ? IRB_READ_KERNEL :
						       IRB_READ_USER;
	if (t && t->addrspace == AS_USER)
		return IRB_READ_USER;
	if (t && t->addrspace == AS_KERNEL)
		return IRB_READ_KERNEL;
	if (cg_no_addrspace(g))
		return IRB_READ_ANY;
	return cg_reads_user(g) ? IRB_READ_USER : IRB_READ_KERNEL;
}

static const struct type_field *cg_field_of(const struct type *rec,
					    const char *name)
{
	for (int i = 0; rec && i < rec->nfields; i++)
		if (rec->fields[i].name && !strcmp(rec->fields[i].name, name))
			return &rec->fields[i];
	return NULL;
}

static bool cg_is_args(const struct ast_node *e)
{
	return e->kind == AST_BUILTIN && e->sema &&
	       e->sema->builtin == BI_ARGS;
}

static void cg_place_of(struct cg *g, struct ast_node *n,
			struct cg_place *p);

/* (struct x *)ctx */
static bool cg_is_ctx_cast(const struct ast_node *e)
{
	const struct ast_node *c = e->kind == AST_CAST ? e->cast.expr : NULL;

	return c && c->kind == AST_BUILTIN && c->sema &&
	       c->sema->builtin == BI_CTX;
}

/*
 * ctx->task, ctx->file in an iterator: loaded from the context as
 * bpftrace 0.17 does, so that the verifier knows the pointer's type (as
 * path(ctx->file->f_path) needs), and a null one ends the probe there
 * (the kernel's last call has none).  Not in a loop's callback, whose
 * return is not the probe's.
 */
static bool cg_is_iter_ctx(struct cg *g, const struct ast_node *e,
			   const struct type_field *f)
{
	enum sema_provider prov = g->sap ? g->sap->provider :
					   g->probe->provider;

	return prov == PROV_ITER && e->kind == AST_BUILTIN && e->sema &&
	       e->sema->builtin == BI_CTX && !g->in_for && !g->loop_ret &&
	       f->type && f->type->kind == TY_POINTER &&
	       f->type->size == 8 && !(f->offset & 7) && !f->bitfield_bits;
}

static void cg_place_offset(struct cg *g, struct cg_place *p,
			    LLVMValueRef off)
{
	struct irb *ir = &g->ir;

	if (p->mem)
		p->addr = LLVMBuildAdd(ir->b, p->addr, off, "");
	else
		p->buf = LLVMBuildGEP2(ir->b, ir->i8, p->buf, &off, 1, "");
}

static void cg_place_of(struct cg *g, struct ast_node *n, struct cg_place *p)
{
	struct irb *ir = &g->ir;

	memset(p, 0, sizeof(*p));
	switch (n->kind) {
	case AST_UNOP:
		if (n->op.op != OP_DEREF)
			break;
		p->mem = true;
		p->addr = cg_expr(g, n->op.left);
		p->read = cg_read_kind(g, n->op.left->type);
		return;
	case AST_FIELD: {
		struct ast_node *e = n->field.expr;
		const struct type *et = e->type, *rec;
		const struct type_field *f;

		if (!et || cg_is_args(e))
			break;
		rec = et->kind == TY_POINTER ? et->elem : et;
		f = cg_field_of(rec, n->field.field);
		if (!f)
			break;
		if (cg_is_ctx_cast(e)) {
			/* ((struct x *)ctx)->f: loads from the context */
			p->buf = g->ctxp;
			p->ctx = true;
		} else if (cg_is_iter_ctx(g, e, f)) {
			p->buf = g->ctxp;
			p->ctx = true;
			p->ctx_null_ret = true;
		} else if (et->kind == TY_POINTER) {
			p->mem = true;
			p->addr = cg_expr(g, e);
			p->read = cg_read_kind(g, et);
		} else {
			cg_place_of(g, e, p);
		}
		cg_place_offset(g, p, irb_const(ir, f->offset));
		return;
	}
	case AST_INDEX: {
		struct ast_node *e = n->index.expr;
		const struct type *et = e->type;
		size_t esz = n->type ? n->type->size : 0;
		LLVMValueRef idx;

		bool str = et && et->kind == TY_STRING;

		if (!et || !esz ||
		    (et->kind != TY_POINTER && et->kind != TY_ARRAY && !str))
			break;
		if (et->kind == TY_POINTER) {
			p->mem = true;
			p->addr = cg_expr(g, e);
			p->read = cg_read_kind(g, et);
		} else {
			cg_place_of(g, e, p);
		}
		idx = cg_expr(g, n->index.index);
		/* flex-array: a[i] of a flexible member in memory reads
		 * past it (its size is 0); a copy ubt holds stays checked */
		if ((et->kind == TY_ARRAY && !(p->mem && !et->nelems &&
					       compat_has(COMPAT_FLEX_ARRAY))) ||
		    str) {
			/* sema checks literal indices only: outside the
			 * array (a string's buffer) the value read is zero
			 * (the address stays inside it) */
			LLVMValueRef in = LLVMBuildICmp(
				ir->b, LLVMIntULT, idx,
				irb_const(ir, str ? et->size : et->nelems), "");

			idx = LLVMBuildSelect(ir->b, in, idx, irb_const(ir, 0),
					      "");
			/* v0.26 warns of it (compat array-bounds) */
			if (!str && compat_has(COMPAT_ARRAY_BOUNDS))
				cg_array_oob(g, in, &n->loc);
			p->ok = p->ok ? LLVMBuildAnd(ir->b, p->ok, in, "") : in;
		}
		cg_place_offset(g, p,
				LLVMBuildMul(ir->b, idx, irb_const(ir, esz),
					     ""));
		return;
	}
	default:
		break;
	}
	/* a value: a record, array or string ubt holds in a buffer */
	p->buf = cg_expr(g, n);
	if (cg_is_scalar(n->type)) {
		/* an integer as a place: store it (not reached for the
		 * expressions sema types as records or arrays) */
		LLVMValueRef b = irb_alloca(ir, 8, "place");

		LLVMBuildStore(ir->b, p->buf, b);
		p->buf = b;
	}
}

/* Where -kk reports a failed read of n: the "*" of a dereference (as
 * bpftrace), else the expression. */
static const struct ast_loc *cg_read_loc(struct cg *g,
					 const struct ast_node *n)
{
	struct ast_loc *op;

	if (n->kind != AST_UNOP || n->op.op != OP_DEREF)
		return &n->loc;
	op = arena_alloc(&g->c->arena, sizeof(*op));
	*op = n->loc;
	op->last_line = op->first_line;
	op->last_column = op->first_column + 1;
	return op;
}

/* The value of n (of type t) at place p: an i64, or a buffer of t->size
 * bytes. */
static LLVMValueRef cg_place_load(struct cg *g, const struct cg_place *p,
				  const struct ast_node *n)
{
	const struct type *t = n->type;
	struct irb *ir = &g->ir;
	size_t sz = t && t->size ? t->size : 8;
	LLVMValueRef buf;

	if (p->ctx) {
		LLVMValueRef v;

		if (!cg_is_scalar(t) || sz != 8 || p->ok) {
			cg_unsupported(g, n,
				       "reading a context field that is not 8 bytes");
			return cg_is_scalar(t) ? irb_const(ir, 0) :
						 irb_alloca(ir, 8, "read");
		}
		v = LLVMBuildLoad2(ir->b, ir->i64, p->buf, "");
		LLVMSetAlignment(v, 8);
		if (p->ctx_null_ret) {
			LLVMBasicBlockRef stop = LLVMAppendBasicBlockInContext(
				ir->ctx, ir->fn, "ctx_null");
			LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(
				ir->ctx, ir->fn, "ctx_set");

			LLVMBuildCondBr(ir->b,
					LLVMBuildICmp(ir->b, LLVMIntEQ, v,
						      irb_const(ir, 0), ""),
					stop, go);
			LLVMPositionBuilderAtEnd(ir->b, stop);
			LLVMBuildRet(ir->b, irb_const(ir, 0));
			LLVMPositionBuilderAtEnd(ir->b, go);
		}
		return v;
	}
	if (!p->mem && !p->ok)
		return cg_load(g, p->buf, t);
	if (p->mem && sz > CG_READ_MAX) {
		/* the BPF stack's size; in user mode the traced thread's
		 * stack, which may be small, holds it */
		diag_error(&g->c->diag, &n->loc,
			   "reading %s (%zu bytes) does not fit in the BPF stack (%d bytes)",
			   type_str(&g->c->arena, t), sz, CG_READ_MAX);
		g->err = -EINVAL;
		return cg_is_scalar(t) ? irb_const(ir, 0) :
					 irb_alloca(ir, 8, "read");
	}
	buf = irb_alloca(ir, sz, "read");
	irb_memset(ir, buf, 0, (sz + 7) & ~(size_t)7);
	if (p->ok) {
		LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(
			ir->ctx, ir->fn, "in_bounds");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(
			ir->ctx, ir->fn, "read_done");

		LLVMBuildCondBr(ir->b, p->ok, yes, done);
		LLVMPositionBuilderAtEnd(ir->b, yes);
		if (p->mem)
			irb_probe_read(ir, p->read, buf,
				       LLVMConstInt(ir->i32, sz, 0), p->addr);
		else
			irb_memcpy(ir, buf, p->buf, sz);
		LLVMBuildBr(ir->b, done);
		LLVMPositionBuilderAtEnd(ir->b, done);
		return cg_load(g, buf, t);
	}
	cg_helper_check(g, cg_read_loc(g, n), cg_read_helper_name(p->read),
			irb_probe_read(ir, p->read, buf,
				       LLVMConstInt(ir->i32, sz, 0), p->addr),
			CG_CHECK_READ);
	return cg_load(g, buf, t);
}

/* A bit field: the bytes that hold it, shifted and masked. */
static LLVMValueRef cg_bitfield(struct cg *g, const struct cg_place *p,
				const struct type_field *f)
{
	struct irb *ir = &g->ir;
	size_t nbytes = (f->bitfield_shift + f->bitfield_bits + 7) / 8;
	LLVMValueRef buf = irb_alloca(ir, 8, "bits"), v;
	int bits = f->bitfield_bits;

	LLVMBuildStore(ir->b, irb_const(ir, 0), buf);
	if (p->mem)
		irb_probe_read(ir, p->read, buf,
			       LLVMConstInt(ir->i32, nbytes, 0), p->addr);
	else
		LLVMBuildMemCpy(ir->b, buf, 1, p->buf, 1,
				irb_const(ir, nbytes));
	v = LLVMBuildLoad2(ir->b, ir->i64, buf, "");
	if (cg_signed(f->type)) {
		/* move the field to the top, then shift it down with its
		 * sign */
		v = LLVMBuildShl(ir->b, v,
				 irb_const(ir, 64 - bits - f->bitfield_shift),
				 "");
		return LLVMBuildAShr(ir->b, v, irb_const(ir, 64 - bits), "");
	}
	v = LLVMBuildLShr(ir->b, v, irb_const(ir, f->bitfield_shift), "");
	return LLVMBuildAnd(ir->b, v,
			    irb_const(ir, bits >= 64 ? ~0ull :
						       (1ull << bits) - 1),
			    "");
}

LLVMValueRef cg_member(struct cg *g, struct ast_node *n)
{
	struct ast_node *e = n->field.expr;
	const struct type *et = e->type, *rec;
	const struct type_field *f;
	struct cg_place p;

	if (cg_is_args(e))
		return cg_field(g, n);	/* tracepoint and uprobe args */
	rec = et && et->kind == TY_POINTER ? et->elem : et;
	f = cg_field_of(rec, n->field.field);
	if (!f || !n->type) {
		cg_unsupported(g, n, "this field access");
		return irb_const(&g->ir, 0);
	}
	cg_place_of(g, n, &p);
	if (f->bitfield_bits) {
		if (f->bitfield_shift + f->bitfield_bits > 64) {
			cg_unsupported(g, n, "a bit field across 8 bytes");
			return irb_const(&g->ir, 0);
		}
		/* the place is the byte holding the field's first bit */
		return cg_bitfield(g, &p, f);
	}
	return cg_place_load(g, &p, n);
}

/* (struct s *)p->arr: the address of an array in traced memory. */
LLVMValueRef cg_array_addr(struct cg *g, struct ast_node *n)
{
	struct cg_place p;

	cg_place_of(g, n, &p);
	if (!p.mem) {
		cg_unsupported(g, n, "the address of an array ubt holds");
		return irb_const(&g->ir, 0);
	}
	return p.addr;
}

/* A record in traced memory (p->rec, s.inner): its address. */
LLVMValueRef cg_record_addr(struct cg *g, struct ast_node *n)
{
	struct cg_place p;

	cg_place_of(g, n, &p);
	if (!p.mem) {
		cg_unsupported(g, n, "the address of a record ubt holds");
		return irb_const(&g->ir, 0);
	}
	return p.addr;
}

LLVMValueRef cg_index(struct cg *g, struct ast_node *n)
{
	const struct type *t = n->index.expr->type;
	struct cg_place p;

	if (!t || !n->type || !n->type->size ||
	    (t->kind != TY_POINTER && t->kind != TY_ARRAY &&
	     t->kind != TY_STRING) ||
	    !cg_is_scalar(n->index.index->type)) {
		cg_unsupported(g, n, "this index expression");
		return irb_const(&g->ir, 0);
	}
	cg_place_of(g, n, &p);
	return cg_place_load(g, &p, n);
}

LLVMValueRef cg_deref(struct cg *g, struct ast_node *n)
{
	struct cg_place p;

	cg_place_of(g, n, &p);
	return cg_place_load(g, &p, n);
}
