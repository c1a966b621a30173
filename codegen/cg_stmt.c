/*
 * Lowering of statements: assignments, if/else, while, unroll, jumps;
 * block expressions (cg_block_expr(), the statements of a macro's or an
 * inlined fn's expansion).
 */
#include <errno.h>
#include <string.h>

#include <linux/bpf.h>

#include "cg_int.h"
#include "irb_native.h"
#include "kfeat.h"
#include "util.h"

static void cg_stmt_body(struct cg *g, struct ast_node *n);

/* After a terminator: continue in a fresh, unreachable block. */
static void cg_dead_block(struct cg *g)
{
	LLVMBasicBlockRef dead = LLVMAppendBasicBlockInContext(
		g->ir.ctx, g->ir.fn, "dead");

	LLVMPositionBuilderAtEnd(g->ir.b, dead);
}

static bool cg_is_agg_call(const struct ast_node *n)
{
	return n && n->kind == AST_CALL && n->sema &&
	       n->sema->func >= FN_COUNT && n->sema->func <= FN_TSERIES;
}

static void cg_assign(struct cg *g, struct ast_node *n)
{
	struct ast_node *lhs = n->assign.lhs, *rhs = n->assign.rhs;
	LLVMValueRef v;

	if (lhs->kind == AST_MAP && cg_is_agg_call(rhs) &&
	    rhs->sema->func == FN_TSERIES) {
		cg_tseries(g, lhs, rhs);
		return;
	}
	if (lhs->kind == AST_MAP && cg_is_agg_call(rhs)) {
		cg_aggregate(g, lhs, rhs);
		return;
	}
	if (lhs->kind != AST_MAP && lhs->kind != AST_VAR) {
		cg_unsupported(g, lhs, "assigning to this expression");
		return;
	}
	if (rhs->type && rhs->type->kind == TY_INT &&
	    (n->assign.op == OP_ADD || n->assign.op == OP_SUB) &&
	    cg_map_can_add(g, lhs)) {
		LLVMValueRef d = cg_expr(g, rhs), old;

		if (LLVMGetIntTypeWidth(LLVMTypeOf(d)) < 64)
			d = cg_signed(rhs->type) ?
				    LLVMBuildSExt(g->ir.b, d, g->ir.i64, "") :
				    LLVMBuildZExt(g->ir.b, d, g->ir.i64, "");
		if (n->assign.op == OP_SUB)
			d = LLVMBuildNeg(g->ir.b, d, "");
		cg_map_add(g, lhs, d, &n->loc, &old);
		return;
	}
	if (n->assign.op != OP_NONE) {
		LLVMValueRef old = cg_expr(g, lhs);
		LLVMValueRef r = cg_expr(g, rhs);

		if (!cg_is_scalar(lhs->type) || !cg_is_scalar(rhs->type)) {
			cg_unsupported(g, n, "this compound assignment");
			return;
		}
		g->div_loc = &n->loc;
		v = cg_binop_values(g, n->assign.op, old, lhs->type, r,
				    rhs->type, lhs->type);
		g->div_loc = NULL;
		if (lhs->kind == AST_VAR) {
			cg_store(g, g->vars[lhs->sema->var->slot],
				 lhs->sema->var->type, v, lhs->type);
		} else {
			/* -k reports the statement (bpftrace's) */
			g->update_loc = &n->loc;
			cg_map_assign(g, lhs, v, lhs->type);
			g->update_loc = NULL;
		}
		return;
	}
	v = cg_expr(g, rhs);
	if (lhs->kind == AST_VAR) {
		if (!lhs->sema || !lhs->sema->var)
			BUG("variable %s without sema", lhs->ident.name);
		cg_store(g, g->vars[lhs->sema->var->slot],
			 lhs->sema->var->type, v, rhs->type);
	} else {
		/* -k reports the "=" (bpftrace's) */
		g->update_loc = &n->assign.op_loc;
		cg_map_assign(g, lhs, v, rhs->type);
		g->update_loc = NULL;
	}
}

static void cg_if(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "if_then");
	LLVMBasicBlockRef els = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							      "if_else");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "if_done");

	LLVMBuildCondBr(ir->b, cg_cond(g, n->if_.cond), then, els);
	LLVMPositionBuilderAtEnd(ir->b, then);
	cg_stmt(g, n->if_.then);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, els);
	if (n->if_.else_)
		cg_stmt(g, n->if_.else_);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
}

static void cg_while(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	LLVMBasicBlockRef cond = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "while_cond");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "while_body");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "while_done");
	LLVMBasicBlockRef obrk = g->brk, ocont = g->cont;

	LLVMBuildBr(ir->b, cond);
	LLVMPositionBuilderAtEnd(ir->b, cond);
	LLVMBuildCondBr(ir->b, cg_cond(g, n->loop.cond), body, done);
	LLVMPositionBuilderAtEnd(ir->b, body);
	g->brk = done;
	g->cont = cond;
	cg_stmt(g, n->loop.body);
	g->brk = obrk;
	g->cont = ocont;
	LLVMBuildBr(ir->b, cond);
	LLVMPositionBuilderAtEnd(ir->b, done);
}

static void cg_unroll(struct cg *g, struct ast_node *n)
{
	struct ast_node *c = n->loop.cond;
	int64_t count;

	if (n->sema) {
		count = n->sema->iargs[0];	/* sema: a literal or $N */
	} else if (c && c->kind == AST_INT) {
		count = c->num.is_negative ? -(int64_t)c->num.value :
					     (int64_t)c->num.value;
	} else {
		cg_unsupported(g, n, "unroll with a count that is not a literal");
		return;
	}
	if (count < 0 || count > 100) {
		cg_unsupported(g, n, "this unroll count");
		return;
	}
	for (int64_t i = 0; i < count; i++)
		cg_stmt(g, n->loop.body);
}

struct cg_for_check {
	const struct ast_node *bad;
};

/* What a loop's callback cannot use yet: the probe's context. */
static int cg_for_check_fn(struct ast_node *n, void *ctx)
{
	struct cg_for_check *fc = ctx;

	if (n->kind == AST_BUILTIN && n->sema &&
	    (n->sema->builtin == BI_ARG || n->sema->builtin == BI_SARG ||
	     n->sema->builtin == BI_RETVAL || n->sema->builtin == BI_FUNC ||
	     n->sema->builtin == BI_ARGS || n->sema->builtin == BI_CTX)) {
		fc->bad = n;
		return 1;
	}
	return ast_visit_children(n, cg_for_check_fn, ctx);
}

static int cg_has_exit_fn(struct ast_node *n, void *ctx)
{
	(void)ctx;
	if (n->kind == AST_CALL && n->sema && n->sema->func == FN_EXIT)
		return 1;
	return ast_visit_children(n, cg_has_exit_fn, NULL);
}

/* After a for loop whose body called exit(): the probe returns. */
static void cg_return_if_exited(struct cg *g)
{
	struct irb *ir = &g->ir;
	LLVMValueRef gp = cg_globals_ptr(g);
	LLVMBasicBlockRef cont = cg_if_nonnull(g, gp);
	LLVMBasicBlockRef stop = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "for_exited");
	LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							     "for_go");
	LLVMValueRef ex = LLVMBuildLoad2(ir->b, ir->i64,
					 irb_gep(ir, gp, CG_GLOBALS_EXIT), "");

	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntNE, ex, irb_const(ir, 0),
				      ""),
			stop, go);
	LLVMPositionBuilderAtEnd(ir->b, stop);
	LLVMBuildRet(ir->b, irb_const(ir, g->in_for ? 1 : 0));
	LLVMPositionBuilderAtEnd(ir->b, go);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
}

/*
 * The probe's variables travel into a loop's callback through its
 * context: copied into one block before the loop (offsets in off[]),
 * used there by the callback, copied back after it. A variable in the
 * scratch room (irb_scratch.c) stays there: the callback reaches it at
 * the same offset of the room (off[] has CG_LOOP_IN_SCRATCH then), and
 * the context, which the helpers want on the stack, stays small.
 */
#define CG_LOOP_IN_SCRATCH ((size_t)1 << 62)
/* The most of the probe's variables a loop copies to its context on the
 * stack, beside the callback's own frame, without a scratch room. */
#define CG_LOOP_CTX_STACK 128

static LLVMValueRef cg_loop_ctx_in(struct cg *g, size_t **offp,
				   size_t head)
{
	struct irb *ir = &g->ir;
	int nv = g->probe->nvars;
	size_t *off = arena_alloc(&g->c->arena, (nv + 1) * sizeof(*off));
	size_t total = head, so;
	LLVMValueRef ctx;

	for (int i = 0; i < nv; i++) {
		struct sema_var *v = g->probe->vars[i];
		size_t sz = v->type && v->type->size ? v->type->size : 8;

		if (irb_scratch_offset(ir, g->vars[i], &so)) {
			off[i] = CG_LOOP_IN_SCRATCH | so;
			continue;
		}
		off[i] = total;
		total += (sz + 7) & ~(size_t)7;
	}
	/* a uprobe's variables on its stack, copied to a large context on
	 * the stack too: both frames count (cg_build() gives it a room) */
	if (!irb_scratch_here(ir) && total > CG_LOOP_CTX_STACK)
		ir->room_wanted = true;
	/* the helpers want the context on the stack */
	ctx = irb_alloca_stack(ir, total ? total : 8, "loop_ctx");
	for (int i = 0; i < nv; i++) {
		struct sema_var *v = g->probe->vars[i];

		if (off[i] & CG_LOOP_IN_SCRATCH)
			continue;
		irb_memcpy(ir, irb_gep(ir, ctx, off[i]), g->vars[i],
			   v->type && v->type->size ? v->type->size : 8);
	}
	*offp = off;
	return ctx;
}

static void cg_loop_ctx_out(struct cg *g, LLVMValueRef ctx,
			    const size_t *off)
{
	for (int i = 0; i < g->probe->nvars; i++) {
		struct sema_var *v = g->probe->vars[i];

		if (off[i] & CG_LOOP_IN_SCRATCH)
			continue;
		irb_memcpy(&g->ir, g->vars[i], irb_gep(&g->ir, ctx, off[i]),
			   v->type && v->type->size ? v->type->size : 8);
	}
}

/* The callback's variables: in its context block or the scratch room. */
static LLVMValueRef *cg_loop_vars(struct cg *g, LLVMValueRef cbctx,
				  const size_t *off)
{
	int nv = g->probe->nvars;
	LLVMValueRef *v = arena_alloc(&g->c->arena, (nv + 1) * sizeof(*v));

	for (int i = 0; i < nv; i++)
		v[i] = off[i] & CG_LOOP_IN_SCRATCH ?
			       irb_scratch_at(&g->ir,
					      off[i] & ~CG_LOOP_IN_SCRATCH) :
			       irb_gep(&g->ir, cbctx, off[i]);
	return v;
}

/* What a loop's callback cannot use: the probe's context (return
 * leaves the loop and the probe: cg_loop_returned()). */
static int cg_loop_check(struct cg *g, struct ast_node *n,
			 struct ast_node *body)
{
	struct cg_for_check fc = { 0 };

	if (!cg_for_check_fn(body, &fc))
		return 0;
	cg_unsupported(g, fc.bad, "in a for loop, the probe's arguments");
	(void)n;
	return -1;
}

/*
 * After a loop's helper: when the callback returned from the probe (its
 * flag in ctx at ret_off), return too: from the probe, or from the
 * enclosing loop's callback with its flag set.
 */
static void cg_loop_returned(struct cg *g, LLVMValueRef flag)
{
	struct irb *ir = &g->ir;
	LLVMBasicBlockRef ret = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							      "loop_returned");
	LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(
		ir->ctx, ir->fn, "loop_done");
	LLVMValueRef v = LLVMBuildLoad2(ir->b, ir->i64, flag, "");

	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntNE, v,
					     irb_const(ir, 0), ""),
			ret, cont);
	LLVMPositionBuilderAtEnd(ir->b, ret);
	if (g->loop_ret) {
		LLVMBuildStore(ir->b, irb_const(ir, 1), g->loop_ret);
		LLVMBuildRet(ir->b, irb_const(ir, 1));
	} else {
		LLVMBuildRet(ir->b, irb_const(ir, 0));
	}
	LLVMPositionBuilderAtEnd(ir->b, cont);
}

/* What a loop's callback changes in struct cg, kept to go back. */
struct cg_loop {
	LLVMValueRef fn, *vars, ctxp, loop_ret;
	LLVMBasicBlockRef entry, bb, brk, cont;
	int scope;
	bool in_for;
};

/*
 * Start a loop's callback (kind: "for" or "range"; nparams, its
 * context in parameter ctx_param, the returned flag at ret_off of the
 * context): the probe's state saved in *s, the probe's variables in the
 * context at off[].  The callback's context is returned.
 */
static LLVMValueRef cg_loop_cb_begin(struct cg *g, struct cg_loop *s,
				     const char *kind, int nparams,
				     int ctx_param, const size_t *off,
				     size_t ret_off)
{
	struct irb *ir = &g->ir;
	LLVMValueRef cb, cbctx;
	char name[32];

	*s = (struct cg_loop){
		.fn = ir->fn, .vars = g->vars, .ctxp = g->ctxp,
		.loop_ret = g->loop_ret, .entry = ir->entry,
		.bb = LLVMGetInsertBlock(ir->b), .brk = g->brk,
		.cont = g->cont, .scope = ir->scope, .in_for = g->in_for,
	};
	snprintf(name, sizeof(name), "%s_%d_%d", kind, g->prog, g->nfor++);
	cb = irb_callback_begin(ir, name, nparams);
	ir->scope = 0;
	g->ctxp = NULL;
	cbctx = LLVMGetParam(cb, ctx_param);
	g->vars = cg_loop_vars(g, cbctx, off);
	g->loop_ret = ret_off ? irb_gep(ir, cbctx, ret_off) : cbctx;
	return cbctx;
}

/*
 * The callback's body and its two ways out: break returns 1 (stop),
 * the end of an iteration 0 (go on); then back in the probe, with its
 * state from *s.
 */
static void cg_loop_cb_end(struct cg *g, struct cg_loop *s,
			   struct ast_node *body)
{
	struct irb *ir = &g->ir;
	LLVMBasicBlockRef brk, cont;

	brk = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "loop_break");
	cont = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "loop_next");
	g->brk = brk;
	g->cont = cont;
	g->in_for = true;
	cg_stmt(g, body);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, brk);
	LLVMBuildRet(ir->b, irb_const(ir, 1));
	LLVMPositionBuilderAtEnd(ir->b, cont);
	LLVMBuildRet(ir->b, irb_const(ir, 0));

	ir->fn = s->fn;
	ir->entry = s->entry;
	ir->scope = s->scope;
	g->vars = s->vars;
	g->ctxp = s->ctxp;
	g->brk = s->brk;
	g->cont = s->cont;
	g->in_for = s->in_for;
	g->loop_ret = s->loop_ret;
	LLVMPositionBuilderAtEnd(ir->b, s->bb);
}

/* After the loop's helper: the callback's return, variables and exit(). */
static void cg_loop_after(struct cg *g, struct ast_node *body,
			  LLVMValueRef ctx, LLVMValueRef flag,
			  const size_t *off)
{
	cg_loop_returned(g, flag);
	cg_loop_ctx_out(g, ctx, off);
	if (cg_has_exit_fn(body, NULL))
		cg_return_if_exited(g);
}

/*
 * for ($kv : @m) { body }: the body becomes a callback of
 * bpf_for_each_map_elem(), with $kv = (key, value) of each entry; the
 * probe's variables through its context (native code: the callback's
 * first parameter, irb_native_helper.c).
 */
static void cg_for_map(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *mapn = n->for_.map, *var = n->for_.var;
	struct sema_map *sm = mapn->sema ? mapn->sema->map : NULL;
	struct sema_var *kv = var->sema ? var->sema->var : NULL;
	LLVMValueRef args[4], ctx, cb;
	const struct type *kt;
	const struct cg_map *m;
	struct cg_loop s;
	size_t *off;

	if (!sm || !kv || !kv->type || kv->type->kind != TY_TUPLE ||
	    kv->type->nfields != 2 || g->obj->maps[sm->id].bucketed ||
	    !g->obj->maps[sm->id].key_type) {
		cg_unsupported(g, n, "this for loop");
		return;
	}
	if (cg_loop_check(g, n, n->for_.body))
		return;
	m = &g->obj->maps[sm->id];
	kt = kv->type;
	ctx = cg_loop_ctx_in(g, &off, 8);
	LLVMBuildStore(ir->b, irb_const(ir, 0), ctx);	/* returned */
	cg_loop_cb_begin(g, &s, "for", 4, irb_is_native(ir) ? 0 : 3, off, 0);
	cb = ir->fn;
	/* $kv = (key, value) */
	cg_store(g, irb_gep(ir, g->vars[kv->slot], kt->fields[0].offset),
		 kt->fields[0].type,
		 cg_load(g, LLVMGetParam(cb, 1), m->key_type), m->key_type);
	if (cg_map_agg(sm) != FN_NONE)	/* count, sum, min, max, avg */
		cg_store(g, irb_gep(ir, g->vars[kv->slot],
				    kt->fields[1].offset),
			 kt->fields[1].type,
			 cg_agg_value(g, sm->id, LLVMGetParam(cb, 1),
				      LLVMGetParam(cb, 2)),
			 kt->fields[1].type);
	else
		cg_store(g, irb_gep(ir, g->vars[kv->slot],
				    kt->fields[1].offset),
			 kt->fields[1].type,
			 cg_load(g, LLVMGetParam(cb, 2), m->value_type),
			 m->value_type);
	cg_loop_cb_end(g, &s, n->for_.body);
	args[0] = g->maps[sm->id];
	args[1] = cb;
	args[2] = ctx;
	args[3] = irb_const(ir, 0);
	irb_helper(ir, BPF_FUNC_for_each_map_elem, args, 4);
	cg_loop_after(g, n->for_.body, ctx, ctx, off);
}

/* for over a range in native code: a plain loop (no verifier). */
static void cg_for_range_plain(struct cg *g, struct ast_node *n,
			       LLVMValueRef start, LLVMValueRef end, bool sgn)
{
	struct irb *ir = &g->ir;
	struct sema_var *sv = n->for_.var->sema->var;
	LLVMBasicBlockRef cond, body, step, done;
	LLVMBasicBlockRef obrk = g->brk, ocont = g->cont;
	LLVMValueRef cnt = irb_alloca(ir, 8, "for_i"), i;

	LLVMBuildStore(ir->b, start, cnt);
	cond = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "for_cond");
	body = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "for_body");
	step = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "for_step");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "for_done");
	LLVMBuildBr(ir->b, cond);
	LLVMPositionBuilderAtEnd(ir->b, cond);
	i = LLVMBuildLoad2(ir->b, ir->i64, cnt, "");
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, sgn ? LLVMIntSLT : LLVMIntULT, i,
				      end, ""),
			body, done);
	LLVMPositionBuilderAtEnd(ir->b, body);
	cg_store(g, g->vars[sv->slot], sv->type, i, sv->type);
	g->brk = done;
	g->cont = step;
	cg_stmt(g, n->for_.body);
	g->brk = obrk;
	g->cont = ocont;
	LLVMBuildBr(ir->b, step);
	LLVMPositionBuilderAtEnd(ir->b, step);
	i = LLVMBuildLoad2(ir->b, ir->i64, cnt, "");
	LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, i, irb_const(ir, 1), ""),
		       cnt);
	LLVMBuildBr(ir->b, cond);
	LLVMPositionBuilderAtEnd(ir->b, done);
}

/*
 * for $i : start..end { body } in BPF: bpf_loop(end - start, callback,
 * ctx) as bpftrace does, so that the verifier need not walk every
 * iteration; the callback gets the probe's variables through ctx, after
 * start at offset 0 ($i = start + index).
 */
static void cg_for_range(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct sema_var *sv = n->for_.var->sema ? n->for_.var->sema->var :
						  NULL;
	LLVMValueRef start, end, nr, ctx, args[4], cbctx, idx, cb;
	struct cg_loop s;
	size_t *off;
	bool sgn;

	if (!sv) {
		cg_unsupported(g, n, "this for loop");
		return;
	}
	sgn = cg_signed(sv->type);
	start = cg_expr(g, n->for_.start);
	end = cg_expr(g, n->for_.end);
	if (irb_is_native(ir)) {
		cg_for_range_plain(g, n, start, end, sgn);
		return;
	}
	if (cg_loop_check(g, n, n->for_.body))
		return;
	if (!kfeat_has(KFEAT_LOOP)) {
		diag_error(&g->c->diag, &n->loc,
			   "this for loop needs the bpf_loop() helper: %s",
			   kfeat_missing(KFEAT_LOOP));
		g->err = -ENOTSUP;
		return;
	}
	/* iterations: end - start, 0 when end <= start */
	nr = LLVMBuildSelect(ir->b,
			     LLVMBuildICmp(ir->b, sgn ? LLVMIntSLT : LLVMIntULT,
					   start, end, ""),
			     LLVMBuildSub(ir->b, end, start, ""),
			     irb_const(ir, 0), "");
	ctx = cg_loop_ctx_in(g, &off, 16);
	LLVMBuildStore(ir->b, start, ctx);	/* offset 0: start */
	LLVMBuildStore(ir->b, irb_const(ir, 0), irb_gep(ir, ctx, 8));
	cbctx = cg_loop_cb_begin(g, &s, "range", 2, 1, off, 8);
	cb = ir->fn;
	idx = LLVMBuildPtrToInt(ir->b, LLVMGetParam(cb, 0), ir->i64, "");
	cg_store(g, g->vars[sv->slot], sv->type,
		 LLVMBuildAdd(ir->b, LLVMBuildLoad2(ir->b, ir->i64, cbctx, ""),
			      idx, ""),
		 sv->type);
	cg_loop_cb_end(g, &s, n->for_.body);
	args[0] = LLVMBuildTrunc(ir->b, nr, ir->i32, "");
	args[1] = cb;
	args[2] = ctx;
	args[3] = irb_const(ir, 0);
	irb_helper(ir, BPF_FUNC_loop, args, 4);
	cg_loop_after(g, n->for_.body, ctx, irb_gep(ir, ctx, 8), off);
}

static void cg_jump(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;

	switch (n->jump.kind) {
	case JUMP_RETURN:
		if (g->fn_exit) {
			/* return of an inlined fn: leave its block */
			if (n->jump.value)
				cg_store(g, g->fn_slot, g->fn_ret,
					 cg_expr(g, n->jump.value),
					 n->jump.value->type);
			LLVMBuildBr(ir->b, g->fn_exit);
			break;
		}
		if (n->jump.value)	/* a probe's (v0.26): evaluated */
			cg_expr(g, n->jump.value);
		if (g->loop_ret) {
			/* in a loop's callback: leave it, and the probe */
			LLVMBuildStore(ir->b, irb_const(ir, 1), g->loop_ret);
			LLVMBuildRet(ir->b, irb_const(ir, 1));
			break;
		}
		LLVMBuildRet(ir->b, irb_const(ir, 0));
		break;
	case JUMP_BREAK:
	case JUMP_CONTINUE:
		if (!g->brk) {
			cg_unsupported(g, n, "break/continue outside while");
			return;
		}
		LLVMBuildBr(ir->b, n->jump.kind == JUMP_BREAK ? g->brk :
								g->cont);
		break;
	}
	cg_dead_block(g);
}

void cg_stmt(struct cg *g, struct ast_node *n)
{
	int mark;

	if (g->err)
		return;
	/* the statement's temporaries die with it */
	mark = irb_scope_begin(&g->ir);
	cg_stmt_body(g, n);
	irb_scope_end(&g->ir, mark);
}

static void cg_stmt_body(struct cg *g, struct ast_node *n)
{
	switch (n->kind) {
	case AST_EXPR_STMT:
	case AST_DISCARD:
		cg_expr(g, n->stmt.expr);
		break;
	case AST_ASSIGN:
		cg_assign(g, n);
		break;
	case AST_LET:
		if (n->let.init) {
			struct ast_node *v = n->let.var;

			cg_store(g, g->vars[v->sema->var->slot],
				 v->sema->var->type, cg_expr(g, n->let.init),
				 n->let.init->type);
		}
		break;
	case AST_IF:
		cg_if(g, n);
		break;
	case AST_WHILE:
		cg_while(g, n);
		break;
	case AST_UNROLL:
		cg_unroll(g, n);
		break;
	case AST_FOR_MAP:
		cg_for_map(g, n);
		break;
	case AST_FOR_RANGE:
		cg_for_range(g, n);
		break;
	case AST_JUMP:
		cg_jump(g, n);
		break;
	case AST_BLOCK:
		cg_stmts(g, n->block.stmts);
		break;
	default:
		cg_unsupported(g, n, arena_printf(&g->c->arena, "statement %s",
						  ast_kind_name(n->kind)));
		break;
	}
}

void cg_stmts(struct cg *g, struct ast_node *list)
{
	for (struct ast_node *n = list; n && !g->err; n = n->next)
		cg_stmt(g, n);
}

/*
 * An inlined fn (frontend/sema_macro.c): its statements, with return
 * storing the value in a slot and leaving for the block's end.
 */
static LLVMValueRef cg_fn_block(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	const struct type *rt = n->block.fn_ret;
	LLVMBasicBlockRef oexit = g->fn_exit;
	LLVMValueRef oslot = g->fn_slot;
	const struct type *oret = g->fn_ret;
	size_t sz = rt->size ? rt->size : 8;
	LLVMValueRef slot = irb_alloca(ir, sz, "fn_ret");

	irb_memset(ir, slot, 0, (sz + 7) & ~(size_t)7);
	g->fn_exit = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "fn_end");
	g->fn_slot = slot;
	g->fn_ret = rt;
	cg_stmts(g, n->block.stmts);
	LLVMBuildBr(ir->b, g->fn_exit);
	LLVMPositionBuilderAtEnd(ir->b, g->fn_exit);
	g->fn_exit = oexit;
	g->fn_slot = oslot;
	g->fn_ret = oret;
	if (rt->kind == TY_VOID)
		return irb_const(ir, 0);
	return cg_load(g, slot, rt);
}

/* { stmts; value }: a macro's expansion, or an inlined fn's (above).
 * The one entry by which an expression (cg_expr.c) reaches statements. */
LLVMValueRef cg_block_expr(struct cg *g, struct ast_node *n)
{
	if (n->block.fn_ret)
		return cg_fn_block(g, n);
	cg_stmts(g, n->block.stmts);
	return n->block.expr ? cg_expr(g, n->block.expr) :
			       irb_const(&g->ir, 0);
}
