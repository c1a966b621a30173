/*
 * Functions of bpftrace releases after 0.17 (v0.26's semantics): strlen,
 * nsecs(mode), signal_name, and the builtins written as calls with an
 * argument, pid(curr_ns|init) and tid(curr_ns|init), which
 * sema_new_builtin_call() turns into the builtins before resolution.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "sema.h"
#include "sema_int.h"
#include "sema_type_int.h"
#include "util.h"

/* The kernel's inode number of the initial PID namespace. */
#define PROC_PID_INIT_INO 0xEFFFFFFCU

static bool in_init_pidns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) || st.st_ino == PROC_PID_INIT_INO;
}

/*
 * pid(ns), tid(ns): ns is curr_ns (ubt's own PID namespace) or init. ubt
 * in the initial namespace: both are the builtin's value (the ids the
 * kernel's helper gives, and user mode as the kernel). 1 when n became
 * the builtin, 0 when it is not such a call, -EINVAL after an error.
 */
int sema_new_builtin_call(struct sema_ctx *x, struct ast_node *n)
{
	const char *name = n->call.name;
	struct ast_node *a = n->call.args;

	if (strcmp(name, "pid") && strcmp(name, "tid"))
		return 0;
	if (!a)
		return 0;
	if (a->next || a->kind != AST_IDENT) {
		sema_error(x, &n->loc,
			   "%s() only supports curr_ns and init as the argument",
			   name);
		return -EINVAL;
	}
	if (strcmp(a->ident.name, "curr_ns") && strcmp(a->ident.name, "init")) {
		sema_error(x, &a->loc,
			   "Invalid PID namespace mode: %s (expects: curr_ns or init)",
			   a->ident.name);
		return -EINVAL;
	}
	if (!strcmp(a->ident.name, "curr_ns") && !in_init_pidns()) {
		sema_error(x, &n->loc,
			   "%s(curr_ns) while ubt runs in a PID namespace other than the initial one is not supported yet",
			   name);
		return -EINVAL;
	}
	n->kind = AST_IDENT;
	n->ident.name = name;
	return 1;
}

/*
 * nsecs(mode): monotonic is the builtin nsecs (sema_resolve.c makes it
 * one); boot, tai and sw_tai are this call, the mode in iargs[0]
 * (enum sema_nsecs_mode).
 */
static struct type *ty_nsecs(struct sema_ctx *x, struct ast_node *call,
			     struct sema_map *m)
{
	static const char *const modes[] = {
		[NSECS_BOOT] = "boot", [NSECS_TAI] = "tai",
		[NSECS_SW_TAI] = "sw_tai",
	};
	struct ast_node *a = call->call.args;

	(void)m;
	if (a->kind != AST_IDENT) {
		sema_error(x, &call->loc,
			   "nsecs() expects a timestamp mode (monotonic, boot, tai or sw_tai)");
		return NULL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (!strcmp(a->ident.name, modes[i])) {
			sema_node(x, call)->iargs[0] = (int64_t)i;
			return sema_uint64(x);
		}
	sema_error(x, &a->loc, "Invalid timestamp mode: %s", a->ident.name);
	return NULL;
}

/*
 * strlen(s): the bytes of a string (or a char array) before its first
 * NUL, at most its size; uint64.
 */
static struct type *ty_strlen(struct sema_ctx *x, struct ast_node *call,
			      struct sema_map *m)
{
	struct type *t = call->call.args->type;

	(void)m;
	if (t->kind == TY_STRING)
		return sema_uint64(x);
	if (t->kind == TY_ARRAY && t->elem && t->elem->kind == TY_INT &&
	    t->elem->size == 1)
		return sema_uint64(x);
	if (t->kind == TY_ARRAY || t->kind == TY_POINTER) {
		sema_error(x, &call->loc,
			   "strlen() of a %s is not supported yet: use strlen(str(...))",
			   t->kind == TY_ARRAY ? "non-char array" : "pointer");
		return NULL;
	}
	sema_error(x, &call->loc,
		   "string-like values must be either strings, arrays or pointers");
	return NULL;
}

/* signal_name(sig): TY_SIGNAL_NAME, the number; strsignal()'s text
 * printed ("N/A" out of range, as bpftrace). */
static struct type *ty_signal_name(struct sema_ctx *x, struct ast_node *call,
				   struct sema_map *m)
{
	struct type *t = call->call.args->type;

	(void)m;
	if (!sema_t_is_int(t)) {
		sema_error(x, &call->loc,
			   "signal_name() only supports integer arguments (%s provided)",
			   type_class(t));
		return NULL;
	}
	return type_new(x->a, TY_SIGNAL_NAME, 8);
}

const struct sema_func_ops sema_funcs_new[] = {
	{ .name = "nsecs", .id = FN_NSECS, .min_args = 1, .max_args = 1,
	  .flags = FN_F_IDENT_ARGS, .type = ty_nsecs },
	{ .name = "strlen", .id = FN_STRLEN, .min_args = 1, .max_args = 1,
	  .type = ty_strlen },
	{ .name = "signal_name", .id = FN_SIGNAL_NAME, .min_args = 1,
	  .max_args = 1, .type = ty_signal_name },
	{ 0 },
};

/* probetype's text: v0.26's name of the first attach point's type. */
static const char *probetype_name(enum sema_provider p)
{
	switch (p) {
	case PROV_BEGIN:
	case PROV_END:
		return "special";
	case PROV_KFUNC:
		return "fentry";
	case PROV_KRETFUNC:
		return "fexit";
	case PROV_ASYNCWATCHPOINT:
		return "watchpoint";
	default:
		return sema_provider_name(p);
	}
}

static struct ast_node *arrow(struct sema_ctx *x, struct ast_node *e,
			      const char *field, const struct ast_loc *loc)
{
	struct ast_node *f = ast_new(x->a, AST_FIELD, loc);

	f->field.expr = e;
	f->field.field = field;
	f->field.arrow = true;
	return f;
}

/*
 * Builtins of v0.26 that are other expressions (its stdlib's macros):
 * probetype becomes the string of the probe's type, leader_comm and
 * leader_tid reads of curtask->group_leader (in the kernel, as
 * bpftrace). n, an identifier, is rewritten in place: true when it was
 * one of them.
 */
bool sema_new_ident(struct sema_ctx *x, struct ast_node *n)
{
	const char *name = n->ident.name;
	struct ast_loc loc = n->loc;
	struct ast_node *task, *leader;

	if (!strncmp(name, "__builtin_", 10))
		name += 10;
	if (!strcmp(name, "probetype") && x->probe) {
		const char *s = probetype_name(x->probe->provider);

		n->kind = AST_STRING;
		n->str.value = s;
		n->str.len = strlen(s);
		return true;
	}
	if (strcmp(name, "leader_comm") && strcmp(name, "leader_tid"))
		return false;
	task = ast_new(x->a, AST_IDENT, &loc);
	task->ident.name = "curtask";
	leader = arrow(x, task, "group_leader", &loc);
	n->kind = AST_FIELD;
	n->field.expr = leader;
	n->field.field = !strcmp(name, "leader_comm") ? "comm" : "pid";
	n->field.arrow = true;
	return true;
}

static struct ast_node *stmt(struct sema_ctx *x, struct ast_node *e)
{
	struct ast_node *s = ast_new(x->a, AST_EXPR_STMT, &e->loc);

	s->stmt.expr = e;
	return s;
}

static struct ast_node *call(struct sema_ctx *x, const char *name,
			     struct ast_node *args, const struct ast_loc *loc)
{
	struct ast_node *c = ast_new(x->a, AST_CALL, loc);

	c->call.name = name;
	c->call.args = args;
	c->call.nargs = ast_list_len(args);
	return c;
}

/*
 * assert(cond, msg), v0.26's stdlib macro: if (!cond) { errorf("assert
 * failed: %s", msg); exit(1); }, a block expression in place of the call
 * (its messages located at the call). 0 when n is not assert(), 1 when
 * rewritten, -EINVAL after an error.
 */
int sema_new_assert(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *cond = n->call.args, *msg, *fmt, *one, *not, *iff;
	struct ast_node *then;
	struct ast_loc loc = n->loc;

	if (strcmp(n->call.name, "assert"))
		return 0;
	if (ast_list_len(cond) != 2) {
		sema_error(x, &loc,
			   "Call to assert() has the wrong number of arguments: %d given, 2 expected",
			   ast_list_len(cond));
		return -EINVAL;
	}
	msg = cond->next;
	cond->next = NULL;
	fmt = ast_new(x->a, AST_STRING, &loc);
	fmt->str.value = "assert failed: %s";
	fmt->str.len = strlen(fmt->str.value);
	fmt->next = msg;
	one = ast_new(x->a, AST_INT, &loc);
	one->num.value = 1;
	one->num.text = "1";
	not = ast_new(x->a, AST_UNOP, &cond->loc);
	not->op.op = OP_LNOT;
	not->op.left = cond;
	then = ast_new(x->a, AST_BLOCK, &loc);
	then->block.stmts = stmt(x, call(x, "errorf", fmt, &loc));
	{
		/* v0.26's assert is a macro of its stdlib/base.bt: its
		 * errorf() is located there, expanded from the call */
		static const struct ast_stdloc base = {
			.file = "stdlib/base.bt",
			.loc = { .first_line = 6, .first_column = 5,
				 .last_line = 6, .last_column = 37 },
		};
		struct ast_node *ef = then->block.stmts->stmt.expr;
		struct ast_expansion *e = arena_alloc(x->a, sizeof(*e));

		e->loc = loc;
		e->up = n->from;
		ef->from = e;
		ef->stdloc = &base;
	}
	then->block.stmts->next = stmt(x, call(x, "exit", one, &loc));
	iff = ast_new(x->a, AST_IF, &loc);
	iff->if_.cond = not;
	iff->if_.then = then;
	n->kind = AST_BLOCK_EXPR;
	n->block.stmts = iff;
	n->block.expr = NULL;
	n->block.fn_ret = NULL;
	return 1;
}
