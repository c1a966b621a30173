/*
 * Fields of records in memory (types from BTF, DWARF or the script):
 * p->f reads the field at p + offset; r.f of a record that is itself in
 * memory (p->inner.f, (*p).f) adds offsets and reads the field alone, so
 * that a chain such as curtask->se.vruntime reads 8 bytes, not the
 * records around them (a task_struct is larger than the BPF stack).
 * A record value held in a buffer (a variable, a map value) is read from
 * the buffer. Bitfields are shifted and masked, signed ones extended.
 * Reads use the pointer's address space: the kernel for BTF types and
 * kernel pointers, the user for DWARF types, syscall arguments and
 * pointers without one in uprobes (fault-safe in user-mode probes).
 */
#include <string.h>

#include "cg_int.h"
#include "util.h"

static enum irb_read read_kind(struct cg *g, const struct type *ptr)
{
	if (ptr->addrspace == AS_USER)
		return IRB_READ_USER;
	if (ptr->addrspace == AS_KERNEL)
		return IRB_READ_KERNEL;
	return cg_reads_user(g) ? IRB_READ_USER : IRB_READ_KERNEL;
}

static const struct type_field *field_of(const struct type *rec,
					 const char *name)
{
	if (!rec || rec->kind != TY_RECORD)
		return NULL;
	for (int i = 0; i < rec->nfields; i++)
		if (rec->fields[i].name && !strcmp(rec->fields[i].name, name))
			return &rec->fields[i];
	return NULL;
}

/* A bitfield from the bytes at buf (at least 8, zero-padded). */
static LLVMValueRef bitfield_value(struct cg *g, LLVMValueRef buf,
				   const struct type_field *f)
{
	struct irb *ir = &g->ir;
	int bits = f->bitfield_bits;
	LLVMValueRef v = LLVMBuildLoad2(ir->b, ir->i64, buf, "");

	LLVMSetAlignment(v, 1);
	if (f->type->is_signed) {
		v = LLVMBuildShl(ir->b, v,
				 irb_const(ir, 64 - bits - f->bitfield_shift),
				 "");
		return LLVMBuildAShr(ir->b, v, irb_const(ir, 64 - bits), "");
	}
	v = LLVMBuildLShr(ir->b, v, irb_const(ir, f->bitfield_shift), "");
	if (bits < 64)
		v = LLVMBuildAnd(ir->b, v,
				 irb_const(ir, (UINT64_C(1) << bits) - 1), "");
	return v;
}

/* Read field f of the record at address addr (an i64). */
static LLVMValueRef read_field(struct cg *g, struct ast_node *n,
			       LLVMValueRef addr, enum irb_read kind,
			       const struct type_field *f)
{
	struct irb *ir = &g->ir;
	size_t sz = f->type->size;
	LLVMValueRef buf;

	addr = LLVMBuildAdd(ir->b, addr, irb_const(ir, f->offset), "field");
	if (f->bitfield_bits) {
		size_t nb = (f->bitfield_shift + f->bitfield_bits + 7) / 8;

		if (nb > 8) {
			cg_unsupported(g, n, "a bitfield across 8 bytes");
			return irb_const(ir, 0);
		}
		buf = irb_alloca(ir, 8, "bits");
		LLVMBuildStore(ir->b, irb_const(ir, 0), buf);
		irb_probe_read(ir, kind, buf, LLVMConstInt(ir->i32, nb, 0),
			       addr);
		return bitfield_value(g, buf, f);
	}
	if (!sz) {
		cg_unsupported(g, n, "a field of no size");
		return irb_const(ir, 0);
	}
	buf = irb_alloca(ir, sz < 8 ? 8 : sz, "field");
	irb_memset(ir, buf, 0, (sz + 7) & ~(size_t)7);
	irb_probe_read(ir, kind, buf, LLVMConstInt(ir->i32, sz, 0), addr);
	return cg_load(g, buf, f->type);
}

/*
 * The address of e when its value lives in memory: a field reached
 * through a pointer or through a record that is itself in memory, or
 * *p. NULL when e's value is computed (or held in a buffer).
 */
static LLVMValueRef mem_addr(struct cg *g, struct ast_node *e,
			     enum irb_read *kind)
{
	struct irb *ir = &g->ir;

	if (e->kind == AST_UNOP && e->op.op == OP_DEREF && e->op.left->type &&
	    e->op.left->type->kind == TY_POINTER && !e->op.left->type->is_ctx) {
		*kind = read_kind(g, e->op.left->type);
		return cg_expr(g, e->op.left);
	}
	if (e->kind == AST_FIELD) {
		struct ast_node *b = e->field.expr;
		const struct type *bt = b->type;
		const struct type_field *f;
		LLVMValueRef base;

		if (!bt || b->kind == AST_BUILTIN)
			return NULL;	/* args: the context's record */
		if (bt->kind == TY_POINTER && !bt->is_ctx) {
			f = field_of(bt->elem, e->field.field);
			if (!f || f->bitfield_bits)
				return NULL;
			*kind = read_kind(g, bt);
			base = cg_expr(g, b);
		} else {
			f = field_of(bt, e->field.field);
			if (!f || f->bitfield_bits)
				return NULL;
			base = mem_addr(g, b, kind);
			if (!base)
				return NULL;
		}
		return LLVMBuildAdd(ir->b, base, irb_const(ir, f->offset), "");
	}
	return NULL;
}

static LLVMValueRef record_addr(struct cg *g, struct ast_node *e,
				enum irb_read *kind)
{
	if (!e->type || e->type->kind != TY_RECORD)
		return NULL;
	return mem_addr(g, e, kind);
}

LLVMValueRef cg_index_mem(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	const struct type *t = n->index.expr->type;
	size_t esz;
	enum irb_read kind;
	LLVMValueRef base, idx, buf, inb, addr;
	LLVMBasicBlockRef yes, done;

	if (!t || t->kind != TY_ARRAY || !t->elem || !t->elem->size ||
	    n->index.expr->kind != AST_FIELD)
		return NULL;
	esz = t->elem->size;
	base = mem_addr(g, n->index.expr, &kind);
	if (!base)
		return NULL;
	idx = cg_expr(g, n->index.index);
	buf = irb_alloca(ir, esz < 8 ? 8 : esz, "elem");
	irb_memset(ir, buf, 0, (esz + 7) & ~(size_t)7);
	/* outside the array: 0, as for an array value */
	inb = LLVMBuildICmp(ir->b, LLVMIntULT, idx, irb_const(ir, t->nelems),
			    "");
	yes = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "elem_in");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "elem_done");
	LLVMBuildCondBr(ir->b, inb, yes, done);
	LLVMPositionBuilderAtEnd(ir->b, yes);
	addr = LLVMBuildAdd(ir->b, base,
			    LLVMBuildMul(ir->b, idx, irb_const(ir, esz), ""),
			    "");
	irb_probe_read(ir, kind, buf, LLVMConstInt(ir->i32, esz, 0), addr);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
	return cg_load(g, buf, t->elem);
}

LLVMValueRef cg_field_mem(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *e = n->field.expr;
	const struct type *t = e->type;
	const struct type_field *f;
	enum irb_read kind;
	LLVMValueRef addr, buf;

	if (t && t->kind == TY_POINTER && !t->is_ctx) {
		f = field_of(t->elem, n->field.field);
		if (!f)
			goto unsupported;
		return read_field(g, n, cg_expr(g, e), read_kind(g, t), f);
	}
	if (!t || t->kind != TY_RECORD)
		goto unsupported;
	f = field_of(t, n->field.field);
	if (!f)
		goto unsupported;
	addr = record_addr(g, e, &kind);
	if (addr)
		return read_field(g, n, addr, kind, f);
	/* a record value in a buffer */
	buf = irb_gep(ir, cg_expr(g, e), f->offset);
	if (f->bitfield_bits) {
		LLVMValueRef tmp = irb_alloca(ir, 8, "bits");
		size_t nb = (f->bitfield_shift + f->bitfield_bits + 7) / 8;

		if (nb > 8)
			goto unsupported;
		LLVMBuildStore(ir->b, irb_const(ir, 0), tmp);
		LLVMBuildMemCpy(ir->b, tmp, 1, buf, 1, irb_const(ir, nb));
		return bitfield_value(g, tmp, f);
	}
	return cg_load(g, buf, f->type);
unsupported:
	cg_unsupported(g, n, "this field access");
	return irb_const(ir, 0);
}
