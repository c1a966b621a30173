/*
 * Functions whose text ubt makes from the system's state when it prints
 * them: strftime (the time of day), cgroup_path (the cgroup's path),
 * strerror (the C library's text of an errno value), syscall_name; and
 * path(), the kernel's (bpf_d_path), checked as bpftrace 0.17 checks it
 * and refused as not supported yet.
 */
#include <errno.h>
#include <string.h>

#include "kprov.h"
#include "sema.h"
#include "sema_int.h"
#include "util.h"

static bool is_integer(const struct type *t)
{
	return t->kind == TY_INT || t->kind == TY_BOOL || t->kind == TY_ENUM;
}

/*
 * strftime("fmt", ns): TY_TIMESTAMP, the value ns (CLOCK_BOOTTIME
 * nanoseconds, as nsecs) and the format in the type's name; %f is the
 * microseconds (bpftrace's extension). Formatted when printed.
 */
static struct type *ty_strftime(struct sema_ctx *x, struct ast_node *call,
				struct sema_map *m)
{
	struct ast_node *a = call->call.args, *ns = a->next;
	const char *fmt;
	struct type *t;

	(void)m;
	if (a->kind != AST_STRING || !sema_str_literal(x, a, &fmt)) {
		sema_error(x, &call->loc,
			   "strftime() expects a string literal (%s provided)",
			   type_class(a->type));
		return NULL;
	}
	if (!is_integer(ns->type)) {
		sema_error(x, &call->loc,
			   "strftime() only supports integer arguments (%s provided)",
			   type_class(ns->type));
		return NULL;
	}
	t = type_new(x->a, TY_TIMESTAMP, 8);
	t->name = fmt;
	return t;
}

/*
 * cgroup_path(id[, "filter"]): TY_CGROUP_PATH, the u64 cgroup id, the
 * filter (a glob on hierarchy names, default every one) in the type's
 * name. Printed as bpftrace 0.17 does: "unified:/a/b,cpu:/,...".
 */
static struct type *ty_cgroup_path(struct sema_ctx *x, struct ast_node *call,
				   struct sema_map *m)
{
	struct ast_node *a = call->call.args, *f = a->next;
	const char *filter = NULL;
	struct type *t;

	(void)m;
	if (!is_integer(a->type)) {
		sema_error(x, &call->loc,
			   "cgroup_path() only supports integer arguments (%s provided)",
			   type_class(a->type));
		return NULL;
	}
	if (f && !sema_str_literal(x, f, &filter)) {
		sema_error(x, &call->loc,
			   "cgroup_path() expects a string literal (%s provided)",
			   type_class(f->type));
		return NULL;
	}
	t = type_new(x->a, TY_CGROUP_PATH, 8);
	t->name = filter;
	return t;
}

/* strerror(errno): TY_STRERROR, the value; the text when printed. */
static struct type *ty_strerror(struct sema_ctx *x, struct ast_node *call,
				struct sema_map *m)
{
	struct ast_node *a = call->call.args;

	(void)m;
	if (!is_integer(a->type)) {
		sema_error(x, &call->loc,
			   "strerror() only supports integer arguments (%s provided)",
			   type_class(a->type));
		return NULL;
	}
	return type_new(x->a, TY_STRERROR, 8);
}

/* syscall_name(nr): TY_SYSCALL_NAME, the number; its name printed. */
static struct type *ty_syscall_name(struct sema_ctx *x, struct ast_node *call,
				    struct sema_map *m)
{
	struct ast_node *a = call->call.args;

	(void)m;
	if (!is_integer(a->type)) {
		sema_error(x, &call->loc,
			   "syscall_name() only supports integer arguments (%s provided)",
			   type_class(a->type));
		return NULL;
	}
	return type_new(x->a, TY_SYSCALL_NAME, 8);
}

/*
 * path(struct path * or struct path): bpftrace 0.17's checks, in its
 * order: the helper (bpf_d_path, kprov_d_path()), the probe types the
 * kernel lets call it, then (ty_path()) the argument.  In a kfunc or
 * kretfunc probe on a kernel without fentry the provider's own error
 * (sema_available()) says why instead.
 */
static int ck_path(struct sema_ctx *x, struct ast_node *call)
{
	enum sema_provider p = x->provider;
	int err = 0;

	if (!kprov_d_path() &&
	    !((p == PROV_KFUNC || p == PROV_KRETFUNC) && !kprov_fentry())) {
		sema_error(x, &call->loc,
			   "BPF_FUNC_d_path not available for your kernel version");
		err = -EINVAL;
	}
	if (p == PROV_KFUNC || p == PROV_KRETFUNC || p == PROV_ITER)
		return err;
	sema_error(x, &call->loc,
		   "The path function can only be used with 'kfunc', 'kretfunc', 'iter' probes");
	return -EINVAL;
}

/* after ck_path(): a string of BPFTRACE_STRLEN bytes, the path
 * bpf_d_path() writes (codegen/cg_path.c) */
static struct type *ty_path(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	const struct type *t = call->call.args->type;

	(void)m;
	if (t->kind != TY_RECORD && t->kind != TY_POINTER) {
		sema_error(x, &call->loc,
			   "path() only supports pointer or record argument (%s provided)",
			   type_class(t));
		return NULL;
	}
	return type_string(x->a, x->c->max_strlen);
}

const struct sema_func_ops sema_funcs_sys[] = {
	{ .name = "strftime", .id = FN_STRFTIME, .min_args = 2,
	  .max_args = 2, .type = ty_strftime },
	{ .name = "cgroup_path", .id = FN_CGROUP_PATH, .min_args = 1,
	  .max_args = 2, .type = ty_cgroup_path },
	{ .name = "strerror", .id = FN_STRERROR, .min_args = 1,
	  .max_args = 1, .type = ty_strerror },
	{ .name = "syscall_name", .id = FN_SYSCALL_NAME, .min_args = 1,
	  .max_args = 1, .type = ty_syscall_name },
	{ .name = "path", .id = FN_PATH, .min_args = 1, .max_args = 1,
	  .type = ty_path, .check = ck_path },
	{ 0 },
};
