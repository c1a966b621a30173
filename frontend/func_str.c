/*
 * Functions on strings and values: str, buf, strncmp, strcontains, ksym,
 * usym, ntop, kstack, ustack, uptr, kptr, signal, override.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <strings.h>

#include "compat.h"
#include "sema.h"
#include "sema_int.h"
#include "sema_type_int.h"
#include "stack.h"
#include "util.h"

static bool int_or_ptr(const struct type *t)
{
	return t->kind == TY_INT || t->kind == TY_BOOL ||
	       t->kind == TY_POINTER || t->kind == TY_ENUM;
}

static bool is_integer(const struct type *t)
{
	return t->kind == TY_INT || t->kind == TY_BOOL || t->kind == TY_ENUM;
}

static int want_int(struct sema_ctx *x, struct ast_node *call,
		    struct ast_node *a)
{
	if (!is_integer(a->type)) {
		sema_error(x, &call->loc,
			   "%s() only supports integer arguments (%s provided)",
			   call->call.name, type_class(a->type));
		return -EINVAL;
	}
	return 0;
}

static struct type *ty_str(struct sema_ctx *x, struct ast_node *call,
			   struct sema_map *m)
{
	struct ast_node *a = call->call.args;
	struct type *t;
	int64_t n;
	size_t size;

	(void)m;
	if ((a->kind == AST_POSITIONAL || a->kind == AST_BINOP) &&
	    a->type->kind == TY_STRING)
		return a->type;	/* str($1), str($1 + k): the parameter's text */
	if (a->kind == AST_POSITIONAL && a->pos.num == -1) {
		sema_error(x, &call->loc, "use $#, not str($#)");
		return NULL;
	}
	if (!int_or_ptr(a->type)) {
		sema_error(x, &call->loc,
			   "str() expects an integer or a pointer type as first argument (%s provided)",
			   sema_tstr(x, a->type));
		return NULL;
	}
	if (a->next && want_int(x, call, a->next))
		return NULL;
	/*
	 * compat str-length: a literal n makes a string of n + 1 bytes (it
	 * reads n - 1 characters and the NUL, below a max_strlen of 1024 n
	 * characters); n + 1 bytes past max_strlen are shortened to it,
	 * with a warning
	 */
	size = x->c->max_strlen;
	if (a->next && compat_has(COMPAT_STR_LENGTH) &&
	    sema_int_literal(x, a->next, &n) && n >= 0) {
		if ((uint64_t)n + 1 > (uint64_t)x->c->max_strlen)
			sema_warning(x, &call->loc,
				     "length param (%lld) is too long and will be shortened to %d bytes (see BPFTRACE_MAX_STRLEN)",
				     (long long)n, x->c->max_strlen);
		else
			size = (size_t)n + 1;
	}
	t = type_string(x->a, size);
	t->addrspace = a->type->addrspace;
	return t;
}

/*
 * buf(p, n) / buf(array): a u8 length, then max(n) bytes, n at most
 * max_strlen (longer is shortened with bpftrace 0.17's warning); the
 * type's size counts the length byte, as bpftrace's buffer[N].
 */
static struct type *ty_buf(struct sema_ctx *x, struct ast_node *call,
			   struct sema_map *m)
{
	struct ast_node *a = call->call.args;
	int64_t n = x->c->max_strlen;
	struct type *t;

	(void)m;
	if (!int_or_ptr(a->type) && a->type->kind != TY_STRING &&
	    a->type->kind != TY_ARRAY) {
		sema_error(x, &call->loc,
			   "buf() expects an integer, string, or array argument but saw %s",
			   type_class(a->type));
		return NULL;
	}
	if (!a->next) {
		if (a->type->kind != TY_ARRAY) {
			sema_error(x, &call->loc,
				   "buf() expects a length argument for non-array type %s",
				   type_class(a->type));
			return NULL;
		}
		n = a->type->size;
	} else {
		int64_t v;

		if (want_int(x, call, a->next))
			return NULL;
		if (sema_int_literal(x, a->next, &v)) {
			if (v < 0) {
				sema_error(x, &call->loc,
					   "buf cannot use negative length (%lld)",
					   (long long)v);
				return NULL;
			}
			n = v;
		}
	}
	if (n > x->c->max_strlen) {
		sema_warning(x, &call->loc,
			     "buf() length is too long and will be shortened to %d bytes (see BPFTRACE_STRLEN)",
			     x->c->max_strlen);
		n = x->c->max_strlen;
	}
	t = type_new(x->a, TY_BUFFER, (size_t)n + 1);
	t->addrspace = a->type->addrspace;
	return t;
}

static struct type *ty_strncmp(struct sema_ctx *x, struct ast_node *call,
			       struct sema_map *m)
{
	struct ast_node *a = call->call.args, *b = a->next, *n = b->next;
	int64_t v;

	(void)m;
	if (a->type->kind != TY_STRING || b->type->kind != TY_STRING) {
		sema_error(x, &call->loc,
			   "strncmp() only supports string arguments (%s provided)",
			   type_class(a->type->kind != TY_STRING ? a->type :
								   b->type));
		return NULL;
	}
	if (!sema_int_literal(x, n, &v)) {
		sema_error(x, &call->loc,
			   "strncmp() expects a integer literal (%s provided)",
			   type_class(n->type));
		return NULL;
	}
	if (v < 0) {
		sema_error(x, &call->loc, "Builtin strncmp requires a non-negative size");
		return NULL;
	}
	sema_node(x, call)->iargs[0] = v;
	return sema_uint64(x);
}

static struct type *ty_strcontains(struct sema_ctx *x, struct ast_node *call,
				   struct sema_map *m)
{
	struct ast_node *a = call->call.args, *b = a->next;

	(void)m;
	if (a->type->kind != TY_STRING || b->type->kind != TY_STRING) {
		sema_error(x, &call->loc,
			   "strcontains() expects string arguments (%s and %s provided)",
			   type_class(a->type), type_class(b->type));
		return NULL;
	}
	return sema_t_bool_of(x, OP_EQ, sema_uint64(x));
}

static struct type *sym(struct sema_ctx *x, struct ast_node *call,
			enum type_kind k, size_t size)
{
	struct ast_node *a = call->call.args;

	if (!int_or_ptr(a->type)) {
		sema_error(x, &call->loc,
			   "%s() expects an integer or pointer argument",
			   call->call.name);
		return NULL;
	}
	return type_new(x->a, k, size);
}

static struct type *ty_ksym(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	(void)m;
	return sym(x, call, TY_KSYM, 8);
}

static struct type *ty_usym(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	(void)m;
	return sym(x, call, TY_USYM, 16);
}

static struct type *ty_ntop(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	struct ast_node *a = call->call.args;
	struct type *t;

	(void)m;
	if (a->next) {
		if (want_int(x, call, a))
			return NULL;
		a = a->next;
	}
	t = a->type;
	if (!is_integer(t) &&
	    !(t->kind == TY_ARRAY && (t->size == 4 || t->size == 16))) {
		sema_error(x, &call->loc,
			   "ntop() expects an integer or array argument, got %s",
			   sema_tstr(x, t));
		return NULL;
	}
	if (t->kind == TY_ARRAY && t->size != 4 && t->size != 16) {
		sema_error(x, &call->loc,
			   "ntop() argument must be 4 or 16 bytes in size");
		return NULL;
	}
	return type_new(x->a, TY_INET, 24);
}

static struct type *stack(struct sema_ctx *x, struct ast_node *call,
			  enum type_kind k, size_t size)
{
	enum stack_mode mode = x->prog->stack_mode;
	int64_t v, limit = STACK_DEFAULT_LIMIT;
	struct type *t;

	for (struct ast_node *a = call->call.args; a; a = a->next) {
		if (a->kind == AST_IDENT) {
			if (!strcmp(a->ident.name, "perf")) {
				mode = STACK_MODE_PERF;
			} else if (!strcmp(a->ident.name, "raw")) {
				mode = STACK_MODE_RAW;
			} else if (!strcmp(a->ident.name, "bpftrace")) {
				mode = STACK_MODE_BPFTRACE;
			} else {
				sema_error(x, &a->loc, "Unknown stack mode: '%s'",
					   a->ident.name);
				return NULL;
			}
			continue;
		}
		if (!sema_int_literal(x, a, &v)) {
			sema_error(x, &call->loc,
				   "%s() expects a integer literal (%s provided)",
				   call->call.name, type_class(a->type));
			return NULL;
		}
		if (v < 1 || v > 1024) {
			sema_error(x, &call->loc,
				   "%s([int limit]): limit shouldn't exceed 1024, %lld given",
				   call->call.name, (long long)v);
			return NULL;
		}
		sema_node(x, call)->iargs[0] = v;
		limit = v;
	}
	t = type_new(x->a, k, size);
	stack_type_set(t, (int)limit, mode);
	return t;
}

static struct type *ty_kstack(struct sema_ctx *x, struct ast_node *call,
			      struct sema_map *m)
{
	(void)m;
	return stack(x, call, TY_KSTACK, 8);
}

static struct type *ty_ustack(struct sema_ctx *x, struct ast_node *call,
			      struct sema_map *m)
{
	(void)m;
	return stack(x, call, TY_USTACK, 16);
}

static struct type *addrspace_cast(struct sema_ctx *x, struct ast_node *call,
				   int as)
{
	struct ast_node *a = call->call.args;
	struct type *t;

	if (!int_or_ptr(a->type)) {
		sema_error(x, &call->loc,
			   "%s() only supports integer or pointer arguments (%s provided)",
			   call->call.name, type_class(a->type));
		return NULL;
	}
	t = type_new(x->a, a->type->kind, a->type->size);
	*t = *a->type;
	t->addrspace = as;
	return t;
}

static struct type *ty_uptr(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	(void)m;
	return addrspace_cast(x, call, AS_USER);
}

static struct type *ty_kptr(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	(void)m;
	return addrspace_cast(x, call, AS_KERNEL);
}

/* Signal names bpftrace knows, with or without "SIG", any case. */
static int signal_num(const char *name)
{
	static const struct {
		const char *name;
		int num;
	} sigs[] = {
		{ "ABRT", SIGABRT }, { "ALRM", SIGALRM }, { "BUS", SIGBUS },
		{ "CHLD", SIGCHLD }, { "CONT", SIGCONT }, { "FPE", SIGFPE },
		{ "HUP", SIGHUP }, { "ILL", SIGILL }, { "INT", SIGINT },
		{ "KILL", SIGKILL }, { "PIPE", SIGPIPE }, { "POLL", SIGPOLL },
		{ "QUIT", SIGQUIT }, { "SEGV", SIGSEGV }, { "STOP", SIGSTOP },
		{ "SYS", SIGSYS }, { "TERM", SIGTERM }, { "TRAP", SIGTRAP },
		{ "TSTP", SIGTSTP }, { "TTIN", SIGTTIN }, { "TTOU", SIGTTOU },
		{ "URG", SIGURG }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
		{ "VTALRM", SIGVTALRM }, { "WINCH", SIGWINCH },
		{ "XCPU", SIGXCPU }, { "XFSZ", SIGXFSZ },
	};

	if (!strncasecmp(name, "SIG", 3))
		name += 3;
	else if (name[0] == 's' || name[0] == 'S')
		return -1;	/* bpftrace takes "S..." as a full name */
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		if (!strcasecmp(name, sigs[i].name))
			return sigs[i].num;
	return -1;
}

/* signal("KILL" or n): the number in iargs[0] when a literal. */
static struct type *ty_signal(struct sema_ctx *x, struct ast_node *call,
			      struct sema_map *m)
{
	struct ast_node *a = call->call.args;
	const char *name;
	int64_t v;

	(void)m;
	if (a->kind == AST_STRING && sema_str_literal(x, a, &name)) {
		int sig = signal_num(name);

		if (sig < 1) {
			sema_error(x, &call->loc, "%s is not a valid signal",
				   name);
			return NULL;
		}
		sema_node(x, call)->iargs[0] = sig;
	} else if (!is_integer(a->type)) {
		sema_error(x, &call->loc,
			   "signal only accepts string literals or integers");
		return NULL;
	} else if (sema_int_literal(x, a, &v) && (v < 1 || v > 64)) {
		sema_error(x, &call->loc,
			   "%lld is not a valid signal, allowed range: [1,64]",
			   (long long)v);
		return NULL;
	}
	return type_new(x->a, TY_VOID, 0);
}

/* signal() only where the probe runs in a task of the traced program
 * (not BEGIN/END: ubt itself, nor timers and perf events). */
static int ck_signal(struct sema_ctx *x, struct ast_node *call)
{
	switch (x->provider) {
	case PROV_UPROBE:
	case PROV_URETPROBE:
	case PROV_USDT:
	case PROV_TRACEPOINT:
	case PROV_PROFILE:
	case PROV_KPROBE:
	case PROV_KRETPROBE:
	case PROV_KFUNC:
	case PROV_KRETFUNC:
		return 0;
	default:
		sema_error(x, &call->loc,
			   "signal can not be used with \"%s\" probes",
			   sema_provider_name(x->provider));
		return -EINVAL;
	}
}

static struct type *ty_override(struct sema_ctx *x, struct ast_node *call,
				struct sema_map *m)
{
	(void)m;
	if (want_int(x, call, call->call.args))
		return NULL;
	return type_new(x->a, TY_VOID, 0);
}

const struct sema_func_ops sema_funcs_str[] = {
	{ .name = "str", .id = FN_STR, .min_args = 1, .max_args = 2,
	  .type = ty_str },
	{ .name = "buf", .id = FN_BUF, .min_args = 1, .max_args = 2,
	  .type = ty_buf },
	{ .name = "strncmp", .id = FN_STRNCMP, .min_args = 3, .max_args = 3,
	  .type = ty_strncmp },
	{ .name = "strcontains", .id = FN_STRCONTAINS, .min_args = 2,
	  .max_args = 2, .type = ty_strcontains },
	{ .name = "ksym", .id = FN_KSYM, .min_args = 1, .max_args = 1,
	  .type = ty_ksym },
	{ .name = "usym", .id = FN_USYM, .min_args = 1, .max_args = 1,
	  .type = ty_usym },
	{ .name = "ntop", .id = FN_NTOP, .min_args = 1, .max_args = 2,
	  .type = ty_ntop },
	{ .name = "kstack", .id = FN_KSTACK, .min_args = 0, .max_args = 2,
	  .flags = FN_F_IDENT_ARGS, .type = ty_kstack },
	{ .name = "ustack", .id = FN_USTACK, .min_args = 0, .max_args = 2,
	  .flags = FN_F_IDENT_ARGS, .type = ty_ustack },
	{ .name = "uptr", .id = FN_UPTR, .min_args = 1, .max_args = 1,
	  .type = ty_uptr },
	{ .name = "kptr", .id = FN_KPTR, .min_args = 1, .max_args = 1,
	  .type = ty_kptr },
	{ .name = "signal", .id = FN_SIGNAL, .min_args = 1, .max_args = 1,
	  .flags = FN_F_VOID | FN_F_UNSAFE, .type = ty_signal,
	  .check = ck_signal },
	{ .name = "override", .id = FN_OVERRIDE, .min_args = 1, .max_args = 1,
	  .flags = FN_F_VOID | FN_F_UNSAFE, .type = ty_override },
	{ 0 },
};
