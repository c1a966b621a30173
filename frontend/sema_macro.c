/*
 * Macro expansion (bpftrace v0.25 macros), the pass before resolution:
 * every call of a macro in a probe, name(args) or a bare name for a
 * macro without parameters, becomes a copy of the macro's body, a block
 * expression whose value is the body's last expression (none when the
 * body ends in a statement).
 *
 * Parameters say how an argument is used:
 *   x    an expression, copied wherever x appears in the body;
 *   $x   a scratch variable of the caller (the body uses and may set it);
 *   @x   a map of the caller.
 * The body is hygienic: its other variables are its own (renamed per
 * expansion), and it may not use maps that are not passed in.
 *
 * A fn subprogram, fn name($a: type, ...): type { body }, is inlined the
 * same way: its parameters become `let $a: type = argument` at the start
 * of the block, its variables are its own, it may use any map, and its
 * return statements leave the block with the value (block.fn_ret).
 */
#include <errno.h>
#include <string.h>

#include "sema.h"
#include "sema_int.h"
#include "util.h"

/* Expansions of macros inside macros, before calling it recursion. */
#define MACRO_MAX_DEPTH 32

struct mx {
	struct sema_ctx *x;
	int serial;		/* expansions so far: hygienic names */
	int err;
};

/* The child slots of n: single children and list heads. */
struct slots {
	struct ast_node **one[8];
	struct ast_node **list[4];
	int n1, nl;
};

static void slots_of(struct ast_node *n, struct slots *s)
{
	s->n1 = s->nl = 0;
#define ONE(f) (s->one[s->n1++] = &(f))
#define LIST(f) (s->list[s->nl++] = &(f))
	switch (n->kind) {
	case AST_EXPR_STMT:
	case AST_DISCARD:
		ONE(n->stmt.expr);
		break;
	case AST_ASSIGN:
		ONE(n->assign.lhs);
		ONE(n->assign.rhs);
		break;
	case AST_LET:
		ONE(n->let.var);
		ONE(n->let.decl_typeof);
		ONE(n->let.init);
		break;
	case AST_IF:
		ONE(n->if_.cond);
		ONE(n->if_.then);
		ONE(n->if_.else_);
		break;
	case AST_WHILE:
	case AST_UNROLL:
		ONE(n->loop.cond);
		ONE(n->loop.body);
		break;
	case AST_FOR_MAP:
	case AST_FOR_RANGE:
		ONE(n->for_.var);
		ONE(n->for_.map);
		ONE(n->for_.start);
		ONE(n->for_.end);
		ONE(n->for_.body);
		break;
	case AST_JUMP:
		ONE(n->jump.value);
		break;
	case AST_BLOCK:
	case AST_BLOCK_EXPR:
		LIST(n->block.stmts);
		ONE(n->block.expr);
		break;
	case AST_MAP:
		LIST(n->map.keys);
		break;
	case AST_CALL:
		LIST(n->call.args);
		break;
	case AST_SIZEOF:
	case AST_OFFSETOF:
		ONE(n->size.expr);
		break;
	case AST_BINOP:
	case AST_UNOP:
		ONE(n->op.left);
		ONE(n->op.right);
		break;
	case AST_TERNARY:
		ONE(n->ternary.cond);
		ONE(n->ternary.then);
		ONE(n->ternary.else_);
		break;
	case AST_FIELD:
		ONE(n->field.expr);
		break;
	case AST_INDEX:
		ONE(n->index.expr);
		ONE(n->index.index);
		break;
	case AST_TUPLE:
	case AST_RECORD:
		LIST(n->tuple.elems);
		break;
	case AST_TUPLE_INDEX:
		ONE(n->tindex.expr);
		break;
	case AST_CAST:
		ONE(n->cast.to_typeof);
		ONE(n->cast.expr);
		break;
	case AST_RECORD_FIELD:
		ONE(n->rfield.value);
		break;
	default:
		break;
	}
#undef ONE
#undef LIST
}

static struct ast_node *clone_list(struct arena *a, const struct ast_node *h);

static void set_from(struct ast_node *n, const struct ast_expansion *from);

/* n and what is under it (not its siblings) */
static void set_from_one(struct ast_node *n, const struct ast_expansion *from)
{
	struct slots s;

	n->from = from;
	slots_of(n, &s);
	for (int i = 0; i < s.n1; i++)
		if (*s.one[i])
			set_from_one(*s.one[i], from);
	for (int i = 0; i < s.nl; i++)
		set_from(*s.list[i], from);
}

/* A macro's copied body came from the call: every node of it says so
 * (a list: each of its nodes). */
static void set_from(struct ast_node *n, const struct ast_expansion *from)
{
	for (; n; n = n->next)
		set_from_one(n, from);
}

/* The expansion of one call: where it is, and where that came from. */
static const struct ast_expansion *expansion_of(struct arena *a,
						const struct ast_node *call)
{
	struct ast_expansion *e = arena_alloc(a, sizeof(*e));

	e->loc = call->loc;
	e->up = call->from;
	return e;
}

/* A deep copy of n (not of its siblings), without sema's annotations. */
static struct ast_node *clone(struct arena *a, const struct ast_node *n)
{
	struct ast_node *c;
	struct slots s;

	if (!n)
		return NULL;
	c = arena_alloc(a, sizeof(*c));
	*c = *n;
	c->next = NULL;
	c->sema = NULL;
	c->type = NULL;
	slots_of(c, &s);
	for (int i = 0; i < s.n1; i++)
		*s.one[i] = clone(a, *s.one[i]);
	for (int i = 0; i < s.nl; i++)
		*s.list[i] = clone_list(a, *s.list[i]);
	return c;
}

static struct ast_node *clone_list(struct arena *a, const struct ast_node *h)
{
	struct ast_node *head = NULL, **tail = &head;

	for (; h; h = h->next) {
		*tail = clone(a, h);
		tail = &(*tail)->next;
	}
	return head;
}

/*
 * The macro named name taking nargs arguments; else, in *other, one of
 * that name taking another number (NULL when there is none).
 */
static struct ast_node *macro_find(struct compile *c, const char *name,
				   int nargs, struct ast_node **other)
{
	*other = NULL;
	for (struct ast_node *m = c->program->program.macros; m; m = m->next) {
		if (strcmp(m->macro.name, name))
			continue;
		if (ast_list_len(m->macro.params) == nargs)
			return m;
		if (!*other)
			*other = m;
	}
	return NULL;
}

/*
 * A builtin or function of that name (a stdlib macro in v0.26): a user
 * macro of the name with other parameters leaves its calls to it.
 */
static bool stdlib_name(const char *name)
{
	return sema_builtin_find(name, NULL) || sema_func_find(name) ||
	       !strcmp(name, "ppid") || !strcmp(name, "is_err");
}

/* One expansion: the parameters, their arguments, the hygienic suffix. */
struct expansion {
	struct ast_node *macro;
	struct ast_node **args;
	int nargs;
	int serial;
};

static struct ast_node *param_n(struct ast_node *m, int i)
{
	struct ast_node *p = m->macro.params;

	while (p && i--)
		p = p->next;
	return p;
}

static const char *param_name(const struct ast_node *p)
{
	return p->kind == AST_MAP ? p->map.name : p->ident.name;
}

/* The parameter of kind k named name, its index, or -1. */
static int param_find(struct ast_node *m, enum ast_kind k, const char *name)
{
	int i = 0;

	for (struct ast_node *p = m->macro.params; p; p = p->next, i++)
		if (p->kind == k && !strcmp(param_name(p), name))
			return i;
	return -1;
}

/*
 * Substitute in the copied body at *slot: ident parameters become copies
 * of their arguments (not walked again: they are the caller's), $param
 * and @param the caller's names, other variables the expansion's own.
 */
static void subst(struct mx *mx, struct expansion *e, struct ast_node **slot)
{
	struct ast_node *n = *slot, *m = e->macro;
	struct slots s;
	int i;

	if (!n)
		return;
	switch (n->kind) {
	case AST_IDENT:
		i = param_find(m, AST_IDENT, n->ident.name);
		if (i >= 0) {
			struct ast_node *c = clone(&mx->x->c->arena,
						   e->args[i]);

			c->next = n->next;
			*slot = c;
			return;
		}
		break;
	case AST_VAR:
		i = param_find(m, AST_VAR, n->ident.name);
		if (i >= 0)
			n->ident.name = e->args[i]->ident.name;
		else
			n->ident.name = arena_printf(&mx->x->c->arena,
						     "%s.%s.%d",
						     n->ident.name,
						     m->macro.name, e->serial);
		break;
	case AST_MAP:
		i = param_find(m, AST_MAP, n->map.name);
		if (i >= 0) {
			n->map.name = e->args[i]->map.name;
		} else if (!m->macro.is_fn) {
			sema_error(mx->x, &n->loc,
				   "Unhygienic access to map: %s. Maps must be passed into the macro as arguments",
				   n->map.name);
			mx->err = -EINVAL;
		}
		break;
	default:
		break;
	}
	slots_of(n, &s);
	for (i = 0; i < s.n1; i++)
		subst(mx, e, s.one[i]);
	for (i = 0; i < s.nl; i++)
		for (struct ast_node **p = s.list[i]; *p; p = &(*p)->next)
			subst(mx, e, p);
}

static void expand_in(struct mx *mx, struct ast_node **slot, int depth);

/* A fn call: { let $p.f.N: T = arg; ...; body } returning fn_ret. */
static struct ast_node *expand_fn(struct mx *mx, struct expansion *e,
				  struct ast_node *call, struct ast_node *args,
				  int depth)
{
	struct arena *a = &mx->x->c->arena;
	struct ast_node *m = e->macro, *body, *lets = NULL, **tail = &lets;
	struct ast_node *p = m->macro.params;

	body = clone(a, m->macro.body);
	set_from_one(body, expansion_of(a, call));
	body->kind = AST_BLOCK_EXPR;
	body->loc = call->loc;
	body->from = call->from;	/* the block is the call */
	body->block.fn_ret = m->macro.ret_type;
	if (body->block.fn_ret->kind == TY_STRING &&
	    !body->block.fn_ret->size)	/* `: string`: max_strlen */
		body->block.fn_ret = type_string(a, mx->x->c->max_strlen);
	subst(mx, e, &body);
	for (struct ast_node *g = args; g && p; g = g->next, p = p->next) {
		struct ast_node *let = clone(a, p);

		let->let.var->ident.name =
			arena_printf(a, "%s.%s.%d", p->let.var->ident.name,
				     m->macro.name, e->serial);
		let->let.init = clone(a, g);
		*tail = let;
		tail = &let->next;
	}
	*tail = body->block.stmts;
	body->block.stmts = lets;
	body->next = call->next;
	/* fns called by the body (the arguments were expanded before) */
	for (struct ast_node **s = tail; *s; s = &(*s)->next)
		expand_in(mx, s, depth + 1);
	return body;
}

/* The expansion of macro m called at call with args (nargs of them). */
static struct ast_node *expand(struct mx *mx, struct ast_node *m,
			       struct ast_node *call, struct ast_node *args,
			       int depth)
{
	struct arena *a = &mx->x->c->arena;
	struct expansion e = { .macro = m, .serial = ++mx->serial };
	int np = ast_list_len(m->macro.params), i = 0;
	struct ast_node *body;

	e.nargs = ast_list_len(args);
	if (e.nargs != np) {
		sema_error(mx->x, &call->loc,
			   "Call to %s() has the wrong number of arguments: %d given, %d expected",
			   m->macro.name, e.nargs, np);
		mx->err = -EINVAL;
		return call;
	}
	if (depth >= MACRO_MAX_DEPTH) {
		sema_error(mx->x, &call->loc,
			   "Macro recursion limit reached: %s", m->macro.name);
		mx->err = -EINVAL;
		return call;
	}
	e.args = arena_alloc(a, (np + 1) * sizeof(*e.args));
	if (m->macro.is_fn)
		return expand_fn(mx, &e, call, args, depth);
	for (struct ast_node *g = args; g; g = g->next, i++) {
		struct ast_node *p = param_n(m, i);

		e.args[i] = g;
		if (p->kind == AST_VAR && g->kind != AST_VAR) {
			sema_error(mx->x, &g->loc,
				   "Macro '%s' expects a scratch variable for parameter %s",
				   m->macro.name, p->ident.name);
			mx->err = -EINVAL;
			return call;
		}
		if (p->kind == AST_MAP &&
		    (g->kind != AST_MAP || g->map.keys)) {
			sema_error(mx->x, &g->loc,
				   "Macro '%s' expects a map for parameter %s",
				   m->macro.name, p->map.name);
			mx->err = -EINVAL;
			return call;
		}
	}
	body = clone(a, m->macro.body);
	set_from_one(body, expansion_of(a, call));
	body->kind = AST_BLOCK_EXPR;	/* a value, or none */
	body->loc = call->loc;
	body->from = call->from;	/* the block is the call */
	subst(mx, &e, &body);
	if (!body->block.stmts && body->block.expr &&
	    (body->block.expr->kind == AST_STRING ||
	     body->block.expr->kind == AST_INT ||
	     body->block.expr->kind == AST_BOOL)) {
		/* a literal stays one: printf(m()) takes it as its format */
		body = body->block.expr;
		body->loc = call->loc;
		body->from = call->from;
	}
	body->next = call->next;
	/* macros called by the body */
	expand_in(mx, &body, depth + 1);
	return body;
}

/* Expand the macro calls at *slot and below it. */
static void expand_in(struct mx *mx, struct ast_node **slot, int depth)
{
	struct ast_node *n = *slot, *m, *o;
	struct slots s;

	if (!n)
		return;
	if (n->kind == AST_CALL &&
	    ((m = macro_find(mx->x->c, n->call.name,
			     ast_list_len(n->call.args), &o)) ||
	     (o && !stdlib_name(n->call.name)))) {
		/* the arguments first: they are the caller's */
		for (struct ast_node **p = &n->call.args; *p; p = &(*p)->next)
			expand_in(mx, p, depth);
		*slot = expand(mx, m ? m : o, n, n->call.args, depth);
		return;
	}
	/* a bare name, a builtin's too: a macro without parameters */
	if ((n->kind == AST_IDENT || n->kind == AST_BUILTIN) &&
	    (m = macro_find(mx->x->c, n->ident.name, 0, &o)) &&
	    !m->macro.is_fn) {
		*slot = expand(mx, m, n, NULL, depth);
		return;
	}
	slots_of(n, &s);
	for (int i = 0; i < s.n1; i++)
		expand_in(mx, s.one[i], depth);
	for (int i = 0; i < s.nl; i++)
		for (struct ast_node **p = s.list[i]; *p; p = &(*p)->next)
			expand_in(mx, p, depth);
}

int sema_macro(struct compile *c)
{
	struct sema_ctx x = {
		.c = c, .a = &c->arena, .d = &c->diag, .prog = c->sema,
		.final = true,
	};
	struct mx mx = { .x = &x };
	struct ast_node *prog = c->program;

	if (!prog->program.macros)
		return 0;
	for (struct ast_node *m = prog->program.macros; m; m = m->next)
		for (struct ast_node *o = prog->program.macros; o != m;
		     o = o->next)
			if (!strcmp(o->macro.name, m->macro.name) &&
			    ast_list_len(o->macro.params) ==
				    ast_list_len(m->macro.params)) {
				sema_error(&x, &m->loc,
					   "Redefinition of %s: %s",
					   m->macro.is_fn ? "function" :
							    "macro",
					   m->macro.name);
				mx.err = -EINVAL;
			}
	for (struct ast_node *p = prog->program.probes; p; p = p->next) {
		expand_in(&mx, &p->probe.pred, 0);
		expand_in(&mx, &p->probe.body, 0);
	}
	return mx.err;
}
