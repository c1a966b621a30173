/*
 * Lowering of statements: assignments, if/else, while, unroll, jumps.
 */
#include <string.h>

#include "cg_int.h"
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
	       n->sema->func >= FN_COUNT && n->sema->func <= FN_LHIST;
}

static void cg_assign(struct cg *g, struct ast_node *n)
{
	struct ast_node *lhs = n->assign.lhs, *rhs = n->assign.rhs;
	LLVMValueRef v;

	if (lhs->kind == AST_MAP && cg_is_agg_call(rhs)) {
		cg_aggregate(g, lhs, rhs);
		return;
	}
	if (lhs->kind != AST_MAP && lhs->kind != AST_VAR) {
		cg_unsupported(g, lhs, "assigning to this expression");
		return;
	}
	if (n->assign.op != OP_NONE) {
		LLVMValueRef old = cg_expr(g, lhs);
		LLVMValueRef r = cg_expr(g, rhs);

		if (!cg_is_scalar(lhs->type) || !cg_is_scalar(rhs->type)) {
			cg_unsupported(g, n, "this compound assignment");
			return;
		}
		v = cg_binop_values(g, n->assign.op, old, lhs->type, r,
				    rhs->type, lhs->type);
		if (lhs->kind == AST_VAR)
			cg_store(g, g->vars[lhs->sema->var->slot],
				 lhs->sema->var->type, v, lhs->type);
		else
			cg_map_assign(g, lhs, v, lhs->type);
		return;
	}
	v = cg_expr(g, rhs);
	if (lhs->kind == AST_VAR) {
		if (!lhs->sema || !lhs->sema->var)
			BUG("variable %s without sema", lhs->ident.name);
		cg_store(g, g->vars[lhs->sema->var->slot],
			 lhs->sema->var->type, v, rhs->type);
	} else {
		cg_map_assign(g, lhs, v, rhs->type);
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

	if (!c || c->kind != AST_INT) {
		cg_unsupported(g, n, "unroll with a count that is not a literal");
		return;
	}
	count = c->num.is_negative ? -(int64_t)c->num.value :
				     (int64_t)c->num.value;
	if (count < 0 || count > 100) {
		cg_unsupported(g, n, "this unroll count");
		return;
	}
	for (int64_t i = 0; i < count; i++)
		cg_stmt(g, n->loop.body);
}

static void cg_jump(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;

	switch (n->jump.kind) {
	case JUMP_RETURN:
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
