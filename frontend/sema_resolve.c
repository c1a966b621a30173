/*
 * Identifier resolution: builtins, functions, maps (one table for the
 * program, ids in order of first appearance), scratch variables (one
 * table per probe, used only after a first assignment in program order,
 * as bpftrace requires), loop-only statements and unroll counts.
 */
#include <errno.h>
#include <string.h>

#include "compat.h"
#include "sema.h"
#include "sema_int.h"
#include "util.h"

static struct sema_map *map_get(struct sema_ctx *x, struct ast_node *n)
{
	struct sema_program *p = x->prog;
	struct sema_map *m, **v;

	for (int i = 0; i < p->nmaps; i++)
		if (!strcmp(p->maps[i]->name, n->map.name))
			return p->maps[i];
	m = arena_alloc(x->a, sizeof(*m));
	m->id = p->nmaps;
	m->name = n->map.name;
	m->first = n;
	v = arena_alloc(x->a, sizeof(*v) * (p->nmaps + 1));
	if (p->nmaps)
		memcpy(v, p->maps, sizeof(*v) * p->nmaps);
	v[p->nmaps++] = m;
	p->maps = v;
	return m;
}

static int resolve_child(struct ast_node *n, void *ctx);

/* The variable a name means here: the newest one not hidden. */
static struct sema_var *var_find(struct sema_probe *sp, const char *name)
{
	for (int i = sp->nvars - 1; i >= 0; i--)
		if (!sp->vars[i]->hidden && !strcmp(sp->vars[i]->name, name))
			return sp->vars[i];
	return NULL;
}

static struct sema_var *var_new(struct sema_ctx *x, struct ast_node *n,
				bool fresh)
{
	struct sema_probe *sp = x->probe;
	struct sema_var *v = fresh ? NULL : var_find(sp, n->ident.name);
	struct sema_var **vv;

	if (!v) {
		v = arena_alloc(x->a, sizeof(*v));
		v->name = n->ident.name;
		v->slot = sp->nvars;
		v->first = n;
		vv = arena_alloc(x->a, sizeof(*vv) * (sp->nvars + 1));
		if (sp->nvars)
			memcpy(vv, sp->vars, sizeof(*vv) * sp->nvars);
		vv[sp->nvars++] = v;
		sp->vars = vv;
	}
	sema_node(x, n)->var = v;
	sema_node(x, n)->probe = sp;
	return v;
}

static void let_push(struct sema_ctx *x, struct sema_var *v);

/*
 * $x = ...: the variable known by that name, else a new one; in the
 * newest mode (compat block-scope, v0.26) a new one is known until the
 * end of its block, as if declared there with let.
 */
static struct sema_var *var_define(struct sema_ctx *x, struct ast_node *n)
{
	struct sema_var *v;

	if (!compat_has(COMPAT_BLOCK_SCOPE) ||
	    var_find(x->probe, n->ident.name))
		return var_new(x, n, false);
	v = var_new(x, n, true);
	let_push(x, v);
	return v;
}

/*
 * let $x (bpftrace v0.25's scoping): a new variable, known until the end
 * of the block it is declared in; declaring a name already known here
 * is an error (no shadowing).  Variables only assigned keep bpftrace
 * 0.17's rule: known in the whole probe after the assignment.
 */
static int var_declare(struct sema_ctx *x, struct ast_node *let,
		       struct ast_node *n)
{
	struct sema_var *v;

	if (var_find(x->probe, n->ident.name)) {
		sema_error(x, &let->loc,
			   "Variable %s was already declared. Variable shadowing is not allowed.",
			   n->ident.name);
		var_define(x, n);
		return -EINVAL;
	}
	v = var_new(x, n, true);
	let_push(x, v);
	return 0;
}

/* v is known until the end of the block being resolved */
static void let_push(struct sema_ctx *x, struct sema_var *v)
{
	if (x->nlets == x->lets_cap) {
		struct sema_var **l;
		int *d;

		x->lets_cap = x->lets_cap ? 2 * x->lets_cap : 8;
		l = arena_alloc(x->a, x->lets_cap * sizeof(*l));
		d = arena_alloc(x->a, x->lets_cap * sizeof(*d));
		if (x->nlets) {
			memcpy(l, x->lets, x->nlets * sizeof(*l));
			memcpy(d, x->let_depth, x->nlets * sizeof(*d));
		}
		x->lets = l;
		x->let_depth = d;
	}
	x->lets[x->nlets] = v;
	x->let_depth[x->nlets++] = x->block_depth;
}

/* Leave a block: its let variables are hidden after it. */
static void block_leave(struct sema_ctx *x)
{
	x->block_depth--;
	while (x->nlets && x->let_depth[x->nlets - 1] > x->block_depth)
		x->lets[--x->nlets]->hidden = true;
}

/* A block's statements; its let variables are hidden after it. */
static int resolve_block(struct sema_ctx *x, struct ast_node *n)
{
	x->block_depth++;
	ast_visit_children(n, resolve_child, x);
	block_leave(x);
	return 0;
}

static int var_use(struct sema_ctx *x, struct ast_node *n)
{
	struct sema_var *v = var_find(x->probe, n->ident.name);

	if (!v) {
		sema_error(x, x->use_loc ? x->use_loc : &n->loc,
			   "Undefined or undeclared variable: %s", n->ident.name);
		return -EINVAL;
	}
	sema_node(x, n)->var = v;
	sema_node(x, n)->probe = x->probe;
	return 0;
}

static int resolve(struct ast_node *n, void *ctx);
static int resolve_child(struct ast_node *n, void *ctx);

static int resolve_list(struct sema_ctx *x, struct ast_node *n)
{
	int err = 0;

	for (; n; n = n->next)
		if (resolve(n, x))
			err = -EINVAL;
	return err;
}

static int resolve_builtin(struct sema_ctx *x, struct ast_node *n)
{
	const struct sema_builtin_ops *b;
	struct sema_node *sn;
	int arg = 0;

	if (sema_new_ident(x, n))
		return resolve(n, x);
	b = sema_builtin_find(n->ident.name, &arg);
	if (!b && !strncmp(n->ident.name, "__builtin_", 10))
		b = sema_builtin_find(n->ident.name + 10, &arg);	/* v0.25 */
	if (!b) {
		if (n->kind == AST_IDENT)
			return 0;	/* the types pass words it */
		sema_error(x, &n->loc, "Unknown builtin variable: '%s'",
			   n->ident.name);
		return -EINVAL;
	}
	n->kind = AST_BUILTIN;
	if (b->id == BI_ELAPSED)
		x->prog->uses_elapsed = true;
	sn = sema_node(x, n);
	sn->builtin = b->id;
	sn->arg = arg;
	sn->probe = x->probe;
	return 0;
}

static int resolve_call(struct sema_ctx *x, struct ast_node *n)
{
	const struct sema_func_ops *f = sema_func_find(n->call.name);
	const struct ast_loc *saved = x->use_loc;
	struct sema_node *sn;
	int err = sema_new_builtin_call(x, n);

	if (err)
		return err < 0 ? err : resolve_builtin(x, n);
	if (!f && (err = sema_new_assert(x, n)))
		return err < 0 ? err : resolve(n, x);
	if (!f && (err = sema_macro_call(x, n)))
		return err < 0 ? err : resolve(n, x);
	/* nsecs(monotonic) is the builtin */
	if (f && f->id == FN_NSECS && n->call.args &&
	    n->call.args->kind == AST_IDENT && !n->call.args->next &&
	    !strcmp(n->call.args->ident.name, "monotonic"))
		n->call.args = NULL;
	if (f && f->id == FN_NSECS && !n->call.args)
		f = NULL;
	if (!f && !n->call.args && (sema_builtin_find(n->call.name, NULL) ||
				    !strcmp(n->call.name, "probetype") ||
				    !strcmp(n->call.name, "leader_comm") ||
				    !strcmp(n->call.name, "leader_tid"))) {
		/* comm(), nsecs(): a builtin written as a call (v0.25) */
		const char *name = n->call.name;

		n->kind = AST_IDENT;
		n->ident.name = name;
		return resolve_builtin(x, n);
	}

	/* bpftrace 0.17 locates errors in print()'s argument at the call */
	for (struct ast_node *a = n->call.args; a; a = a->next) {
		if (f && f->id == FN_PRINT && a == n->call.args && !saved) {
			x->use_loc_buf = sema_call_arg_loc(n);
			x->use_loc = &x->use_loc_buf;
		}
		if (resolve(a, x))
			err = -EINVAL;
		x->use_loc = saved;
	}
	if (!f) {
		/* located on the name, as bpftrace does */
		struct ast_loc loc = n->loc;

		if (loc.first_line)
			loc.last_line = loc.first_line,
			loc.last_column = loc.first_column +
					  (int)strlen(n->call.name);
		if (!strcmp(n->call.name, "comm"))	/* v0.26's comm(pid) */
			sema_error(x, &n->loc,
				   "comm(pid) is not supported yet");
		else
			sema_error(x, &loc, "Unknown function: %s",
				   n->call.name);
		return -EINVAL;
	}
	sn = sema_node(x, n);
	sn->func = f->id;
	sn->probe = x->probe;
	if ((f->flags & FN_F_UNSAFE) && !x->c->unsafe) {
		sema_error(x, &n->loc,
			   "%s() is an unsafe function being used in safe mode",
			   n->call.name);
		return -EINVAL;
	}
	return err;
}

static int resolve_map(struct sema_ctx *x, struct ast_node *n)
{
	struct sema_map *m = map_get(x, n);
	struct sema_node *sn = sema_node(x, n);
	int idx = x->probe->index;
	enum sema_provider p = x->probe->provider;

	sn->map = m;
	sn->probe = x->probe;
	if (!m->first)
		m->first = n;
	if (idx < 64)
		m->probes |= 1ull << idx;
	const struct ast_loc *saved = x->use_loc;
	int err;

	if (p == PROV_BEGIN || p == PROV_END)
		m->used_in_begin_end = true;
	/* bpftrace 0.17 locates errors in map keys at the map */
	if (!saved)
		x->use_loc = &n->loc;
	err = resolve_list(x, n->map.keys);
	x->use_loc = saved;
	return err;
}

static int resolve_assign(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *lhs = n->assign.lhs;
	int err = resolve(n->assign.rhs, x);

	if (lhs->kind == AST_VAR) {
		if (n->assign.op != OP_NONE && var_use(x, lhs))
			return -EINVAL;
		var_define(x, lhs);
		return err;
	}
	if (resolve(lhs, x))
		err = -EINVAL;
	return err;
}

static int resolve_unroll(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_loc loc = n->loc;	/* "unroll(N)" */
	int64_t v;
	int err = resolve(n->loop.cond, x);

	if (n->loop.cond->loc.last_line == loc.first_line) {
		loc.last_line = loc.first_line;
		loc.last_column = n->loop.cond->loc.last_column + 1;
	}

	if (!sema_int_literal(x, n->loop.cond, &v)) {
		sema_error(x, &n->loop.cond->loc, "invalid unroll value");
		err = -EINVAL;
	} else if (v > 100) {
		sema_error(x, &loc, "unroll maximum value is 100");
		err = -EINVAL;
	} else if (v < 1) {
		sema_error(x, &loc, "unroll minimum value is 1");
		err = -EINVAL;
	} else {
		/* the count, also of unroll($1), for codegen */
		sema_node(x, n)->iargs[0] = v;
	}
	if (resolve(n->loop.body, x))
		err = -EINVAL;
	return err;
}

static int resolve_loop(struct sema_ctx *x, struct ast_node *n)
{
	int err = 0;

	/* a for loop's variable is the loop's (block-scope) */
	x->block_depth++;
	switch (n->kind) {
	case AST_WHILE:
		err = resolve(n->loop.cond, x);
		break;
	case AST_FOR_MAP:
		err = resolve(n->for_.map, x);
		var_define(x, n->for_.var);
		break;
	case AST_FOR_RANGE:
		err = resolve(n->for_.start, x);
		if (resolve(n->for_.end, x))
			err = -EINVAL;
		var_define(x, n->for_.var);
		break;
	default:
		BUG("not a loop");
	}
	x->loop_depth++;
	if (resolve(n->kind == AST_WHILE ? n->loop.body : n->for_.body, x))
		err = -EINVAL;
	x->loop_depth--;
	block_leave(x);
	return err;
}

static const char *const jump_names[] = {
	[JUMP_BREAK] = "break",
	[JUMP_CONTINUE] = "continue",
	[JUMP_RETURN] = "return",
};

static int resolve(struct ast_node *n, void *ctx)
{
	struct sema_ctx *x = ctx;
	int err = 0;

	if (!n)
		return 0;
	switch (n->kind) {
	case AST_BUILTIN:
	case AST_IDENT:
		return resolve_builtin(x, n);
	case AST_CALL:
		return resolve_call(x, n);
	case AST_MAP:
		return resolve_map(x, n);
	case AST_VAR:
		return var_use(x, n);
	case AST_ASSIGN:
		return resolve_assign(x, n);
	case AST_LET:
		err = resolve(n->let.init, x);
		if (resolve(n->let.decl_typeof, x))
			err = -EINVAL;
		if (var_declare(x, n, n->let.var))
			err = -EINVAL;
		return err;
	case AST_BLOCK:
	case AST_BLOCK_EXPR:
		return resolve_block(x, n);
	case AST_UNROLL:
		return resolve_unroll(x, n);
	case AST_WHILE:
	case AST_FOR_MAP:
	case AST_FOR_RANGE:
		return resolve_loop(x, n);
	case AST_JUMP:
		if (n->jump.kind != JUMP_RETURN && !x->loop_depth) {
			sema_error(x, &n->loc, "%s used outside of a loop",
				   jump_names[n->jump.kind]);
			return -EINVAL;
		}
		return resolve(n->jump.value, x);
	case AST_CAST:
		err = resolve(n->cast.to_typeof, x);
		if (resolve(n->cast.expr, x))
			err = -EINVAL;
		return err;
	case AST_SIZEOF:
	case AST_OFFSETOF:
		return resolve(n->size.expr, x);
	case AST_FIELD:
		return resolve(n->field.expr, x);
	case AST_TUPLE_INDEX:
		return resolve(n->tindex.expr, x);
	case AST_RECORD_FIELD:
		return resolve(n->rfield.value, x);
	default:
		/* keep going after errors: all of them are reported */
		ast_visit_children(n, resolve_child, x);
		return 0;
	}
}

static int resolve_child(struct ast_node *n, void *ctx)
{
	resolve(n, ctx);
	return 0;
}

static int map_decls(struct sema_ctx *x, struct ast_node *decls)
{
	static const char *const kinds[] = {
		"hash", "lruhash", "percpuhash", "percpulruhash", "array",
		"percpuarray",
	};
	int err = 0;

	for (struct ast_node *d = decls; d; d = d->next) {
		struct ast_node fake = { .kind = AST_MAP, .loc = d->loc };
		struct sema_map *m;
		bool ok = false;

		for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
			if (d->map_decl.bpf_type &&
			    !strcmp(kinds[i], d->map_decl.bpf_type))
				ok = true;
		if (!ok) {
			sema_error(x, &d->loc, "Invalid bpf map type: %s",
				   d->map_decl.bpf_type ?: "");
			err = -EINVAL;
			continue;
		}
		if (d->map_decl.max_entries < 1) {
			sema_error(x, &d->loc,
				   "Invalid map size: must be a positive integer");
			err = -EINVAL;
			continue;
		}
		fake.map.name = d->map_decl.name;
		m = map_get(x, &fake);
		m->first = NULL;
		m->bpf_type = d->map_decl.bpf_type;
		m->max_entries = d->map_decl.max_entries;
	}
	return err;
}

int sema_resolve(struct compile *c)
{
	struct sema_ctx x = {
		.c = c, .a = &c->arena, .d = &c->diag, .prog = c->sema,
		.final = true,
	};
	struct ast_node *prog = c->program;
	int nerr = c->diag.nerrors;
	int err = 0;

	if (prog->program.imports) {
		sema_error(&x, &prog->program.imports->loc,
			   "imports are not supported yet");
		err = -EINVAL;
	}
	if (map_decls(&x, prog->program.map_decls))
		err = -EINVAL;
	for (struct ast_node *p = prog->program.probes; p; p = p->next) {
		x.probe = p->sema->probe;
		if (resolve(p->probe.pred, &x))
			err = -EINVAL;
		if (resolve(p->probe.body, &x))
			err = -EINVAL;
	}
	return err || c->diag.nerrors > nerr ? -EINVAL : 0;
}
