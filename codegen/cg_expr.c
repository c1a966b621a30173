/*
 * Lowering of expressions: the one dispatch, cg_expr() by node kind and
 * cg_call() by function, to the lowerings of builtins, maps, fields,
 * calls and block expressions in their files; here literals, variables,
 * operators, casts, tuples and ternaries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/bpf.h>

#include "cg_int.h"
#include "probes.h"
#include "tracepoint.h"
#include "util.h"

LLVMValueRef cg_cond(struct cg *g, struct ast_node *n)
{
	LLVMValueRef v = cg_expr(g, n);

	if (!cg_is_scalar(n->type)) {
		cg_unsupported(g, n, "a condition that is not an integer");
		return LLVMConstInt(g->ir.i1, 0, 0);
	}
	return LLVMBuildICmp(g->ir.b, LLVMIntNE, v, irb_const(&g->ir, 0), "");
}

/* Whether size bytes at a and b are the same, without branches: the OR
 * of the XORs of 8-byte (then single-byte) pieces is 0; i64 0 or 1. */
static LLVMValueRef cg_bytes_equal(struct cg *g, LLVMValueRef a,
				   LLVMValueRef b, size_t size)
{
	struct irb *ir = &g->ir;
	LLVMValueRef acc = irb_const(ir, 0);

	for (size_t i = 0; i < size;) {
		LLVMTypeRef t = size - i >= 8 ? ir->i64 : ir->i8;
		size_t step = size - i >= 8 ? 8 : 1;
		LLVMValueRef x = LLVMBuildLoad2(ir->b, t, irb_gep(ir, a, i), "");
		LLVMValueRef y = LLVMBuildLoad2(ir->b, t, irb_gep(ir, b, i), "");
		LLVMValueRef d = LLVMBuildXor(ir->b, x, y, "");

		LLVMSetAlignment(x, 1);
		LLVMSetAlignment(y, 1);
		if (step == 1)
			d = LLVMBuildZExt(ir->b, d, ir->i64, "");
		acc = LLVMBuildOr(ir->b, acc, d, "");
		i += step;
	}
	return LLVMBuildZExt(ir->b,
			     LLVMBuildICmp(ir->b, LLVMIntEQ, acc,
					   irb_const(ir, 0), ""),
			     ir->i64, "");
}

static LLVMValueRef cg_logical(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	bool is_and = n->op.op == OP_LAND;
	LLVMValueRef res = irb_alloca(ir, 8, "logic");
	LLVMBasicBlockRef rhs = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							      "logic_rhs");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(
		ir->ctx, ir->fn, "logic_done");
	LLVMValueRef l = cg_cond(g, n->op.left), r;

	LLVMBuildStore(ir->b, irb_const(ir, is_and ? 0 : 1), res);
	if (is_and)
		LLVMBuildCondBr(ir->b, l, rhs, done);
	else
		LLVMBuildCondBr(ir->b, l, done, rhs);
	LLVMPositionBuilderAtEnd(ir->b, rhs);
	r = cg_cond(g, n->op.right);
	LLVMBuildStore(ir->b, LLVMBuildZExt(ir->b, r, ir->i64, ""), res);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
	return LLVMBuildLoad2(ir->b, ir->i64, res, "");
}

/* Tuples element by element (sema: integers, strings, tuples); 0/1. */
static LLVMValueRef cg_tuple_equal(struct cg *g, LLVMValueRef a,
				   const struct type *at, LLVMValueRef b,
				   const struct type *bt)
{
	struct irb *ir = &g->ir;
	LLVMValueRef eq = irb_const(ir, 1);

	for (int i = 0; i < at->nfields; i++) {
		const struct type *x = at->fields[i].type;
		const struct type *y = bt->fields[i].type;
		LLVMValueRef pa = irb_gep(ir, a, at->fields[i].offset);
		LLVMValueRef pb = irb_gep(ir, b, bt->fields[i].offset);
		LLVMValueRef e;

		if (x->kind == TY_TUPLE)
			e = cg_tuple_equal(g, pa, x, pb, y);
		else if (x->kind == TY_STRING)
			e = cg_string_equal(g, pa, x, pb, y, 0);
		else
			e = LLVMBuildZExt(ir->b,
					  LLVMBuildICmp(ir->b, LLVMIntEQ,
							cg_load(g, pa, x),
							cg_load(g, pb, y), ""),
					  ir->i64, "");
		eq = LLVMBuildAnd(ir->b, eq, e, "");
	}
	return eq;
}

static LLVMValueRef cg_binop(struct cg *g, struct ast_node *n)
{
	struct ast_node *a = n->op.left, *b = n->op.right;
	LLVMValueRef l, r;

	if (n->op.op == OP_LAND || n->op.op == OP_LOR)
		return cg_logical(g, n);
	if (n->type && n->type->kind == TY_STRING && n->sema) {
		/* str($N + k): the parameter's text from byte k (sema) */
		struct ast_node *p = a->kind == AST_POSITIONAL ? a : b;
		const char *s = "";
		size_t k = n->sema->iargs[0];

		if (p->pos.num >= 1 && p->pos.num <= g->c->nparams)
			s = g->c->params[p->pos.num - 1];
		if (k > strlen(s))
			k = strlen(s);
		return cg_string_lit(g, s + k, strlen(s + k), n->type->size);
	}
	l = cg_expr(g, a);
	r = cg_expr(g, b);
	if (a->type && b->type && a->type->kind == TY_ARRAY &&
	    b->type->kind == TY_ARRAY &&
	    (n->op.op == OP_EQ || n->op.op == OP_NE)) {
		LLVMValueRef eq = cg_bytes_equal(g, l, r, a->type->size);

		if (n->op.op == OP_NE)
			eq = LLVMBuildXor(g->ir.b, eq, irb_const(&g->ir, 1),
					  "");
		return eq;
	}
	if (!cg_is_scalar(a->type) || !cg_is_scalar(b->type)) {
		LLVMValueRef eq;

		if (a->type && b->type && a->type->kind == TY_TUPLE &&
		    b->type->kind == TY_TUPLE &&
		    (n->op.op == OP_EQ || n->op.op == OP_NE)) {
			eq = cg_tuple_equal(g, l, a->type, r, b->type);
			if (n->op.op == OP_NE)
				eq = LLVMBuildXor(g->ir.b, eq,
						  irb_const(&g->ir, 1), "");
			return eq;
		}

		/* strings, or buf()s (length byte and bytes) */
		if (!a->type || !b->type ||
		    (a->type->kind != TY_STRING &&
		     a->type->kind != TY_BUFFER) ||
		    b->type->kind != a->type->kind ||
		    (n->op.op != OP_EQ && n->op.op != OP_NE)) {
			cg_unsupported(g, n, "this operator on these values");
			return irb_const(&g->ir, 0);
		}
		eq = cg_string_equal(g, l, a->type, r, b->type, 0);
		if (n->op.op == OP_NE)
			eq = LLVMBuildXor(g->ir.b, eq, irb_const(&g->ir, 1),
					  "");
		return eq;
	}
	{
		LLVMValueRef v;

		g->div_loc = &n->loc;
		v = cg_binop_values(g, n->op.op, l, a->type, r, b->type,
				    n->type);
		g->div_loc = NULL;
		return v;
	}
}

/* ++/-- on a variable or a map; returns the value before or after. */
static LLVMValueRef cg_incdec(struct cg *g, struct ast_node *n)
{
	struct ast_node *e = n->op.left;
	bool inc = n->op.op == OP_PRE_INC || n->op.op == OP_POST_INC;
	bool pre = n->op.op == OP_PRE_INC || n->op.op == OP_PRE_DEC;
	uint64_t step = e->type && e->type->kind == TY_POINTER ?
				cg_pointee_size(e->type) : 1;
	LLVMValueRef old, nv;

	if (e->kind == AST_MAP && step == 1 &&
	    cg_map_add(g, e, irb_const(&g->ir, inc ? 1 : (uint64_t)-1),
		       &n->loc, &old)) {
		nv = cg_int_norm(g, inc ? LLVMBuildAdd(g->ir.b, old,
						       irb_const(&g->ir, 1),
						       "") :
					  LLVMBuildSub(g->ir.b, old,
						       irb_const(&g->ir, 1),
						       ""),
				 e->type);
		return pre ? nv : old;
	}
	old = cg_expr(g, e);
	nv = inc ? LLVMBuildAdd(g->ir.b, old, irb_const(&g->ir, step), "") :
		   LLVMBuildSub(g->ir.b, old, irb_const(&g->ir, step), "");
	nv = cg_int_norm(g, nv, e->type);
	if (e->kind == AST_VAR && e->sema && e->sema->var)
		cg_store(g, g->vars[e->sema->var->slot], e->sema->var->type,
			 nv, e->type);
	else if (e->kind == AST_MAP) {
		g->update_loc = &n->loc;
		cg_map_assign(g, e, nv, e->type);
		g->update_loc = NULL;
	} else {
		cg_unsupported(g, n, "++/-- on this expression");
	}
	return pre ? nv : old;
}

static LLVMValueRef cg_unop(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	LLVMValueRef v;

	switch (n->op.op) {
	case OP_PRE_INC:
	case OP_PRE_DEC:
	case OP_POST_INC:
	case OP_POST_DEC:
		return cg_incdec(g, n);
	case OP_DEREF:
		return cg_deref(g, n);
	case OP_ADDR:	/* &$x (frontend/sema_addr.c) */
		if (n->op.left->kind == AST_VAR && n->op.left->sema &&
		    n->op.left->sema->var)
			return LLVMBuildPtrToInt(
				ir->b, g->vars[n->op.left->sema->var->slot],
				ir->i64, "addr");
		cg_unsupported(g, n, "& of this expression");
		return irb_const(ir, 0);
	default:
		break;
	}
	v = cg_expr(g, n->op.left);
	if (!cg_is_scalar(n->op.left->type)) {
		cg_unsupported(g, n, "this operator on a non-integer");
		return irb_const(ir, 0);
	}
	switch (n->op.op) {
	case OP_NEG:
		return cg_int_norm(g, LLVMBuildNeg(ir->b, v, ""), n->type);
	case OP_POS:
		return v;
	case OP_LNOT:
		return LLVMBuildZExt(ir->b,
				     LLVMBuildICmp(ir->b, LLVMIntEQ, v,
						   irb_const(ir, 0), ""),
				     ir->i64, "");
	case OP_BNOT:
		return cg_int_norm(g, LLVMBuildNot(ir->b, v, ""), n->type);
	default:
		cg_unsupported(g, n, "this operator");
		return irb_const(ir, 0);
	}
}

/* cond ? a : b of void calls: one of them, no value. */
static LLVMValueRef cg_ternary_void(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	LLVMBasicBlockRef t = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							    "tern_then");
	LLVMBasicBlockRef e = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							    "tern_else");
	LLVMBasicBlockRef d = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							    "tern_done");

	LLVMBuildCondBr(ir->b, cg_cond(g, n->ternary.cond), t, e);
	LLVMPositionBuilderAtEnd(ir->b, t);
	cg_expr(g, n->ternary.then);
	LLVMBuildBr(ir->b, d);
	LLVMPositionBuilderAtEnd(ir->b, e);
	cg_expr(g, n->ternary.else_);
	LLVMBuildBr(ir->b, d);
	LLVMPositionBuilderAtEnd(ir->b, d);
	return irb_const(ir, 0);
}

static LLVMValueRef cg_ternary_value(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	bool scalar = cg_is_scalar(n->type);
	size_t sz = n->type && n->type->size ? n->type->size : 8;
	LLVMValueRef res;
	LLVMBasicBlockRef t = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							    "tern_then");
	LLVMBasicBlockRef e = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							    "tern_else");
	LLVMBasicBlockRef d = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							    "tern_done");
	struct type *st = scalar ? type_int(&g->c->arena, 8, false) :
				   n->type;

	res = irb_alloca(ir, sz, "ternary");
	LLVMBuildCondBr(ir->b, cg_cond(g, n->ternary.cond), t, e);
	LLVMPositionBuilderAtEnd(ir->b, t);
	cg_store(g, res, st, cg_expr(g, n->ternary.then),
		 n->ternary.then->type);
	LLVMBuildBr(ir->b, d);
	LLVMPositionBuilderAtEnd(ir->b, e);
	cg_store(g, res, st, cg_expr(g, n->ternary.else_),
		 n->ternary.else_->type);
	LLVMBuildBr(ir->b, d);
	LLVMPositionBuilderAtEnd(ir->b, d);
	if (scalar)
		return LLVMBuildLoad2(ir->b, ir->i64, res, "");
	return res;
}

static LLVMValueRef cg_ternary(struct cg *g, struct ast_node *n)
{
	if (n->type && n->type->kind == TY_VOID)
		return cg_ternary_void(g, n);
	return cg_ternary_value(g, n);
}

static LLVMValueRef cg_tuple(struct cg *g, struct ast_node *n)
{
	const struct type *t = n->type;
	LLVMValueRef buf;
	int i = 0;

	/* refused before LLVM spends minutes on a tuple of 100000
	 * elements only to find it too large */
	if (g->ir.target == CG_TARGET_BPF && t->size > IRB_SCRATCH_MAX) {
		diag_error(&g->c->diag, &n->loc,
			   "tuple of %zu bytes does not fit in a kernel probe's room for temporaries (%d bytes)",
			   t->size, IRB_SCRATCH_MAX);
		g->err = -EINVAL;
		return irb_alloca(&g->ir, 8, "tuple");
	}
	buf = irb_alloca(&g->ir, t->size, "tuple");

	irb_memset(&g->ir, buf, 0, (t->size + 7) & ~(size_t)7);
	for (struct ast_node *e = n->tuple.elems; e && i < t->nfields;
	     e = e->next, i++) {
		struct type_field *f = &t->fields[i];

		cg_store(g, irb_gep(&g->ir, buf, f->offset), f->type,
			 cg_expr(g, e), e->type);
	}
	return buf;
}

static LLVMValueRef cg_positional(struct cg *g, struct ast_node *n)
{
	const char *s = "";

	if (n->pos.num == -1)
		return irb_const(&g->ir, g->c->nparams);
	if (n->pos.num >= 1 && n->pos.num <= g->c->nparams)
		s = g->c->params[n->pos.num - 1];
	if (n->type && n->type->kind == TY_STRING)
		return cg_string_lit(g, s, strlen(s), n->type->size);
	/* past INT64_MAX: a uint64 (compat int-literals, sema) */
	if (n->type && !n->type->is_signed)
		return irb_const(&g->ir, strtoull(s, NULL, 0));
	return irb_const(&g->ir, strtoll(s, NULL, 0));
}

/*
 * The dispatch of calls by function: each to its lowering (cg_call.c,
 * cg_call_val.c, cg_call_out.c, cg_map.c, cg_stack.c, cg_watch.c),
 * which lowers its arguments through cg_expr().
 */
static LLVMValueRef cg_call(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	enum sema_func f = n->sema ? n->sema->func : FN_NONE;

	switch (f) {
	case FN_PRINTF:
	case FN_ERRORF:	/* the shim prints it located (e->call) */
	case FN_WARNF:
		cg_fmt_event(g, n, CG_EV_PRINTF);
		return irb_const(ir, 0);
	case FN_TIME:
		cg_fmt_event(g, n, CG_EV_TIME);
		return irb_const(ir, 0);
	case FN_SYSTEM:
		cg_fmt_event(g, n, CG_EV_SYSTEM);
		return irb_const(ir, 0);
	case FN_CAT:
		cg_fmt_event(g, n, CG_EV_CAT);
		return irb_const(ir, 0);
	case FN_EXIT:
		cg_exit(g, n);
		return irb_const(ir, 0);
	case FN_PRINT:
		cg_print(g, n);
		return irb_const(ir, 0);
	case FN_UNWATCH:
		cg_watch_unwatch(g, n, cg_expr(g, n->call.args));
		return irb_const(ir, 0);
	case FN_CLEAR:
		cg_map_event(g, n, CG_EV_CLEAR);
		return irb_const(ir, 0);
	case FN_ZERO:
		cg_map_event(g, n, CG_EV_ZERO);
		return irb_const(ir, 0);
	case FN_DELETE:
		return cg_delete(g, n);
	case FN_STR:
		return cg_str(g, n);
	case FN_HAS_KEY:
		return cg_has_key(g, n);
	case FN_LEN:
		return cg_len(g, n);
	case FN_STRNCMP:
		return cg_strncmp(g, n);
	case FN_USYM:
		cg_stack_note(g, n);
		return cg_usym(g, n);
	case FN_KSYM:
		return cg_expr(g, cg_call_arg(n, 0));
	case FN_KSTACK:
	case FN_USTACK:
		return cg_stack(g, n);
	case FN_REG:
		return cg_reg(g, n);
	case FN_KADDR:
		return cg_kaddr(g, n);
	case FN_UADDR:
		return cg_uaddr(g, n);
	case FN_UPTR:
	case FN_KPTR:
		return cg_expr(g, cg_call_arg(n, 0));
	case FN_SIZEOF_: {
		struct ast_node *a = cg_call_arg(n, 0);

		return irb_const(ir, a && a->type ? a->type->size : 0);
	}
	case FN_COUNT:
	case FN_SUM:
	case FN_AVG:
	case FN_MIN:
	case FN_MAX:
	case FN_STATS:
	case FN_HIST:
	case FN_LHIST:
	case FN_TSERIES:
		if (n->sema->map) {
			cg_unsupported(g, n, "an aggregation outside an assignment");
			return irb_const(ir, 0);
		}
		break;
	case FN_BUF:
		return cg_buf(g, n);
	case FN_NTOP:
		return cg_ntop(g, n);
	case FN_PTON:
		return cg_pton(g, n);
	case FN_MACADDR:
		return cg_macaddr(g, n);
	case FN_BSWAP:
		return cg_bswap(g, n);
	case FN_STRCONTAINS:
		return cg_strcontains(g, n);
	case FN_CGROUP_PATH:
		return cg_cgroup_path(g, n);
	case FN_PATH:
		return cg_path(g, n);
	case FN_NSECS:
		return cg_nsecs_mode(g, n);
	case FN_STRLEN:
		return cg_strlen(g, n);
	case FN_SIGNAL_NAME:	/* the value; its text when printed */
	case FN_STRERROR:	/* the value; its text when printed */
	case FN_SYSCALL_NAME:
	case FN_STRFTIME:
		/* the value (strftime: the time, the format is the type's) */
		return cg_expr(g, cg_call_arg(n, f == FN_STRFTIME));
	case FN_JOIN:
		cg_join(g, n);
		return irb_const(ir, 0);
	case FN_DEBUGF:
		cg_debugf(g, n);
		return irb_const(ir, 0);
	case FN_SIGNAL:
		cg_signal(g, n);
		return irb_const(ir, 0);
	default:
		break;
	}
	cg_unsupported(g, n, arena_printf(&g->c->arena, "%s()",
					  n->call.name));
	return cg_is_scalar(n->type) ? irb_const(ir, 0) :
				       irb_alloca(ir, n->type->size, "");
}

LLVMValueRef cg_expr(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;

	switch (n->kind) {
	case AST_INT:
	case AST_BOOL:
		return irb_const(ir, n->num.value);
	case AST_STRING:
		return cg_string_lit(g, n->str.value, n->str.len,
				     n->type ? n->type->size : n->str.len + 1);
	case AST_BUILTIN:
		return cg_builtin(g, n);
	case AST_POSITIONAL:
		return cg_positional(g, n);
	case AST_VAR:
		if (!n->sema || !n->sema->var)
			break;
		return cg_load(g, g->vars[n->sema->var->slot],
			       n->sema->var->type);
	case AST_MAP:
		return cg_map_read(g, n);
	case AST_CALL:
		return cg_call(g, n);
	case AST_BINOP:
		return cg_binop(g, n);
	case AST_UNOP:
		return cg_unop(g, n);
	case AST_TERNARY:
		return cg_ternary(g, n);
	case AST_BLOCK_EXPR:
		return cg_block_expr(g, n);
	case AST_FIELD:
		return cg_member(g, n);
	case AST_TUPLE:
	case AST_RECORD:	/* a tuple with names */
		return cg_tuple(g, n);
	case AST_RECORD_FIELD:
		return cg_expr(g, n->rfield.value);
	case AST_INDEX:
		return cg_index(g, n);
	case AST_TUPLE_INDEX: {
		LLVMValueRef t = cg_expr(g, n->tindex.expr);
		const struct type *tt = n->tindex.expr->type;

		if (!tt || tt->kind != TY_TUPLE || n->tindex.index < 0 ||
		    n->tindex.index >= tt->nfields)
			break;
		return cg_load(g,
			       irb_gep(ir, t,
				       tt->fields[n->tindex.index].offset),
			       tt->fields[n->tindex.index].type);
	}
	case AST_CAST: {
		LLVMValueRef v;

		/* (struct x *)ctx is read through its fields only
		 * (cg_field.c): as a value it would be the context's
		 * kernel address, not the registers */
		if (n->cast.expr->kind == AST_BUILTIN && n->cast.expr->sema &&
		    n->cast.expr->sema->builtin == BI_CTX &&
		    n->type && n->type->kind == TY_POINTER) {
			cg_unsupported(g, n,
				       "a context pointer cast other than for reading a field (((struct x *)ctx)->f)");
			return irb_const(&g->ir, 0);
		}
		if (n->cast.expr->type &&
		    n->cast.expr->type->kind == TY_ARRAY && n->type &&
		    n->type->kind == TY_POINTER)
			return cg_array_addr(g, n->cast.expr);
		v = cg_expr(g, n->cast.expr);
		if (cg_is_array_cast(n))
			return cg_array_cast(g, n, v);

		/* (bool)x: true for every non-zero value, as in C */
		if (n->type && n->type->kind == TY_BOOL &&
		    n->cast.expr->type &&
		    n->cast.expr->type->kind != TY_BOOL &&
		    cg_is_scalar(n->cast.expr->type))
			return LLVMBuildZExt(ir->b,
					     LLVMBuildICmp(ir->b, LLVMIntNE, v,
							   LLVMConstNull(LLVMTypeOf(v)),
							   ""),
					     ir->i64, "bool");
		if (cg_is_scalar(n->type) && cg_is_scalar(n->cast.expr->type))
			return cg_int_norm(g, v, n->type);
		break;
	}
	case AST_SIZEOF:
	case AST_OFFSETOF:
	case AST_IDENT:
		/* values sema found: size, offset, enum constant */
		if (!n->sema)
			break;
		return irb_const(ir, (uint64_t)n->sema->iargs[0]);
	default:
		break;
	}
	cg_unsupported(g, n, arena_printf(&g->c->arena, "expression %s",
					  ast_kind_name(n->kind)));
	return cg_is_scalar(n->type) ? irb_const(ir, 0) :
				       irb_alloca(ir, n->type->size, "");
}
