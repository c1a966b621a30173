/*
 * Builtin variables: their types (sema_types) and where they may be used
 * (sema_context), with bpftrace 0.17's types and messages.
 */
#include <errno.h>
#include <fnmatch.h>
#include <string.h>

#include "sema.h"
#include "sema_int.h"
#include "stack.h"
#include "tracepoint.h"
#include "util.h"

/* x86-64 passes six arguments in registers */
#define ARCH_MAX_ARGS 6

static struct type *ty_u64(struct sema_ctx *x, struct ast_node *n)
{
	(void)n;
	return sema_uint64(x);
}

static struct type *ty_comm(struct sema_ctx *x, struct ast_node *n)
{
	(void)n;
	return type_string(x->a, 16);
}

static struct type *ty_arg(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t = sema_uint64(x);

	(void)n;
	t->addrspace = x->probe->provider == PROV_UPROBE ||
				       x->probe->provider == PROV_URETPROBE ||
				       x->probe->provider == PROV_USDT ?
			       AS_USER :
			       AS_KERNEL;
	return t;
}

/* retval: in kretfunc the function's return type (BTF) */
static struct type *ty_retval(struct sema_ctx *x, struct ast_node *n)
{
	if (x->probe->provider == PROV_KRETFUNC)
		return sema_kernel_retval(x, n);
	return ty_arg(x, n);
}

static bool user_provider(enum sema_provider p)
{
	return p == PROV_UPROBE || p == PROV_URETPROBE || p == PROV_USDT;
}

static struct type *ty_func(struct sema_ctx *x, struct ast_node *n)
{
	(void)n;
	if (user_provider(x->probe->provider))
		return type_new(x->a, TY_USYM, 16);
	return type_new(x->a, TY_KSYM, 8);
}

static struct type *ty_probe(struct sema_ctx *x, struct ast_node *n)
{
	(void)n;
	return type_new(x->a, TY_PROBE, 8);
}

static struct type *ty_username(struct sema_ctx *x, struct ast_node *n)
{
	(void)n;
	return type_new(x->a, TY_USERNAME, 8);
}

static struct type *ty_kstack(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t = type_new(x->a, TY_KSTACK, 8);

	(void)n;
	stack_type_set(t, STACK_DEFAULT_LIMIT, x->prog->stack_mode);
	return t;
}

static struct type *ty_ustack(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t = type_new(x->a, TY_USTACK, 16);

	(void)n;
	stack_type_set(t, STACK_DEFAULT_LIMIT, x->prog->stack_mode);
	return t;
}

static struct type *ty_curtask(struct sema_ctx *x, struct ast_node *n)
{
	struct type *rec = type_new(x->a, TY_NAMED, 0);
	struct type *t;

	(void)n;
	rec->name = "struct task_struct";
	t = type_pointer(x->a, rec);
	t->addrspace = AS_KERNEL;
	return t;
}

static struct type *ty_ctx(struct sema_ctx *x, struct ast_node *n)
{
	struct type *t;

	/* iter's: a pointer to the kernel's struct bpf_iter__task(_file) */
	if (x->probe && x->probe->provider == PROV_ITER) {
		struct ast_node *ap = x->probe->node->probe.aps;
		struct type *rec = type_new(x->a, TY_NAMED, 0);

		rec->name = arena_printf(x->a, "struct bpf_iter__%s",
					 ap->ap.func ? ap->ap.func : "");
		t = type_pointer(x->a, rec);
		t->addrspace = AS_KERNEL;
		return t;
	}
	t = type_pointer(x->a, type_new(x->a, TY_VOID, 0));

	(void)n;
	t->is_ctx = true;
	t->addrspace = AS_KERNEL;
	return t;
}

static struct type *ty_u8(struct sema_ctx *x, struct ast_node *n)
{
	(void)n;
	return type_int(x->a, 1, false);
}

/* Field i of a with the same name, offset and type in b? */
static bool field_in(const struct type *a, int i, const struct type *b,
		     bool *moved)
{
	const struct type_field *f = &a->fields[i];

	for (int j = 0; j < b->nfields; j++) {
		const struct type_field *g = &b->fields[j];

		if (!g->name || !f->name || strcmp(g->name, f->name))
			continue;
		if (!type_equal(g->type, f->type) ||
		    tp_field_is_data_loc(a, i) != tp_field_is_data_loc(b, j))
			return false;
		*moved |= g->offset != f->offset;
		return true;
	}
	return false;
}

/*
 * The args record of one tracepoint attach point. A wildcard matches
 * several tracepoints: its record has the fields every match has with the
 * same type.  One program serves them all when each such field lies at
 * the same offset in every match; else (*split) each match gets its own
 * program, with its own layout (sys_enter_exec*: argv).
 */
static int tp_ap_args(struct sema_ctx *x, struct ast_node *ap,
		      struct type **out, bool *split)
{
	const char *cat = ap->ap.target, *ev = ap->ap.func;
	const char *pat, **names;
	struct type **recs, *m;
	int n, nrecs = 0, err;

	if (!cat || !ev)
		return -ENOENT;
	if (!ap->ap.need_expansion && !strpbrk(cat, "*?[") &&
	    !strpbrk(ev, "*?["))
		return tp_args(x->a, cat, ev, out);
	pat = arena_printf(x->a, "%s:%s", cat, ev);
	err = tp_list(x->a, &names, &n);
	if (err)
		return err;
	recs = arena_alloc(x->a, sizeof(*recs) * (n ? n : 1));
	for (int i = 0; i < n; i++) {
		const char *colon = strchr(names[i], ':');

		if (!colon || fnmatch(pat, names[i], 0))
			continue;
		err = tp_args(x->a,
			      arena_strndup(x->a, names[i], colon - names[i]),
			      colon + 1, &recs[nrecs]);
		if (err)
			return err;
		nrecs++;
	}
	if (!nrecs)
		return -ENOENT;
	m = type_new(x->a, TY_RECORD, recs[0]->size);
	*m = *recs[0];
	m->name = arena_printf(x->a, "struct _tracepoint_%s_%s", cat, ev);
	m->fields = arena_alloc(x->a, sizeof(*m->fields) *
					      (recs[0]->nfields ?: 1));
	m->nfields = 0;
	for (int i = 0; i < recs[0]->nfields; i++) {
		bool all = true, moved = false;

		for (int r = 1; r < nrecs && all; r++)
			all = field_in(recs[0], i, recs[r], &moved);
		if (all)
			m->fields[m->nfields++] = recs[0]->fields[i];
		*split |= all && moved;
	}
	*out = m;
	return 0;
}

static struct type *ty_args(struct sema_ctx *x, struct ast_node *n)
{
	struct sema_probe *sp = x->probe;
	struct type *rec = sp->args_type, *t;

	switch (sp->provider) {
	case PROV_TRACEPOINT:
	case PROV_UPROBE:
		break;
	case PROV_KFUNC:
	case PROV_KRETFUNC:
	case PROV_RAWTRACEPOINT:
		break;
	default:
		/* sema_context reported it */
		sema_error(x, &n->loc,
			   "The args builtin can only be used with tracepoint/kfunc/uprobe probes (%s used here)",
			   sema_provider_name(sp->provider));
		return NULL;
	}
	if (!rec) {
		for (struct ast_node *ap = sp->node->probe.aps; ap;
		     ap = ap->next) {
			struct sema_ap *sa = ap->sema->ap;
			int err = 0;

			if (sa->args_failed)
				return NULL;
			/* report each attach point's problem once */
			sa->args_failed = x->final;
			if (sa->provider != sp->provider) {
				sema_error(x, &ap->loc,
					   "Probe has attach points with mixed arguments");
				return NULL;
			}
			if (!sa->args_type && sa->provider == PROV_UPROBE) {
				if (sema_uprobe_args(x, ap, &sa->args_type))
					return NULL;
			} else if (!sa->args_type &&
				   (sa->provider == PROV_KFUNC ||
				    sa->provider == PROV_KRETFUNC ||
				    sa->provider == PROV_RAWTRACEPOINT)) {
				if (sema_kernel_args(x, ap, &sa->args_type))
					return NULL;
			} else if (!sa->args_type) {
				err = tp_ap_args(x, ap, &sa->args_type,
						 &sa->args_split);
			}
			if (err) {
				sema_error(x, &ap->loc,
					   "tracepoint not found: %s:%s",
					   ap->ap.target ?: "", ap->ap.func ?: "");
				return NULL;
			}
			sa->args_failed = false;
			/* attach points may differ: sema_types checks every
			 * field used against each one's record */
			if (!rec)
				rec = sa->args_type;
		}
		sp->args_type = rec;
	}
	if (!rec)
		return NULL;
	t = type_pointer(x->a, rec);
	t->is_ctx = true;
	t->addrspace = AS_KERNEL;
	return t;
}

/* Context checks: x->provider is the attach point's provider. */

/* bpftrace 0.17's name of a probe type: BEGIN and END are "special". */
static const char *prov(struct sema_ctx *x)
{
	if (x->provider == PROV_BEGIN || x->provider == PROV_END)
		return "special";
	return sema_provider_name(x->provider);
}

static int ck_arg(struct sema_ctx *x, struct ast_node *n)
{
	enum sema_provider p = x->provider;
	int err = 0;

	if (p != PROV_KPROBE && p != PROV_UPROBE && p != PROV_USDT &&
	    p != PROV_RAWTRACEPOINT) {
		sema_error(x, &n->loc,
			   "The %s builtin can only be used with 'kprobes', 'uprobes' and 'usdt' probes",
			   n->ident.name);
		err = -EINVAL;
	}
	if (p != PROV_USDT && n->sema->arg >= ARCH_MAX_ARGS) {
		sema_error(x, &n->loc, "x86_64 doesn't support %s",
			   n->ident.name);
		err = -EINVAL;
	}
	return err;
}

static int ck_sarg(struct sema_ctx *x, struct ast_node *n)
{
	if (x->provider != PROV_KPROBE && x->provider != PROV_UPROBE) {
		sema_error(x, &n->loc,
			   "The %s builtin can only be used with 'kprobes' and 'uprobes' probes",
			   n->ident.name);
		return -EINVAL;
	}
	return 0;
}

static int ck_retval(struct sema_ctx *x, struct ast_node *n)
{
	enum sema_provider p = x->provider;

	if (p != PROV_KRETPROBE && p != PROV_URETPROBE && p != PROV_KRETFUNC) {
		sema_error(x, &n->loc,
			   "The retval builtin can only be used with 'kretprobe' and 'uretprobe' and 'kfunc' probes%s",
			   p == PROV_TRACEPOINT ?
				   " (try to use args->ret instead)" : "");
		return -EINVAL;
	}
	return 0;
}

static int ck_func(struct sema_ctx *x, struct ast_node *n)
{
	switch (x->provider) {
	case PROV_UPROBE:
	case PROV_URETPROBE:
	case PROV_USDT:
	case PROV_KPROBE:
	case PROV_KRETPROBE:
	case PROV_KFUNC:
	case PROV_KRETFUNC:
		return 0;
	default:
		sema_error(x, &n->loc,
			   "The func builtin can not be used with '%s' probes",
			   prov(x));
		return -EINVAL;
	}
}

static int ck_args(struct sema_ctx *x, struct ast_node *n)
{
	switch (x->provider) {
	case PROV_TRACEPOINT:
	case PROV_UPROBE:
	case PROV_KFUNC:
	case PROV_KRETFUNC:
	case PROV_RAWTRACEPOINT:
		return 0;
	default:
		sema_error(x, &n->loc,
			   "The args builtin can only be used with tracepoint/kfunc/uprobe probes (%s used here)",
			   prov(x));
		return -EINVAL;
	}
}

static int ck_cpid(struct sema_ctx *x, struct ast_node *n)
{
	if (!x->c->has_cmd) {
		sema_error(x, &n->loc, "cpid cannot be used without child command");
		return -EINVAL;
	}
	return 0;
}

const struct sema_builtin_ops sema_builtins[] = {
	{ .name = "pid", .id = BI_PID, .type = ty_u64 },
	{ .name = "tid", .id = BI_TID, .type = ty_u64 },
	{ .name = "uid", .id = BI_UID, .type = ty_u64 },
	{ .name = "gid", .id = BI_GID, .type = ty_u64 },
	{ .name = "comm", .id = BI_COMM, .type = ty_comm },
	{ .name = "nsecs", .id = BI_NSECS, .type = ty_u64 },
	{ .name = "elapsed", .id = BI_ELAPSED, .type = ty_u64 },
	{ .name = "cpu", .id = BI_CPU, .type = ty_u64 },
	{ .name = "cpid", .id = BI_CPID, .type = ty_u64, .check = ck_cpid },
	{ .name = "__builtin_cpid", .id = BI_CPID, .type = ty_u64,
	  .check = ck_cpid },
	{ .name = "sarg", .id = BI_SARG, .type = ty_arg, .check = ck_sarg },
	{ .name = "arg", .id = BI_ARG, .type = ty_arg, .check = ck_arg },
	{ .name = "retval", .id = BI_RETVAL, .type = ty_retval,
	  .check = ck_retval },
	{ .name = "func", .id = BI_FUNC, .type = ty_func, .check = ck_func },
	{ .name = "probe", .id = BI_PROBE, .type = ty_probe },
	{ .name = "rand", .id = BI_RAND, .type = ty_u64 },
	{ .name = "args", .id = BI_ARGS, .type = ty_args, .check = ck_args },
	{ .name = "username", .id = BI_USERNAME, .type = ty_username },
	{ .name = "curtask", .id = BI_CURTASK, .type = ty_curtask },
	{ .name = "cgroup", .id = BI_CGROUP, .type = ty_u64 },
	{ .name = "kstack", .id = BI_KSTACK, .type = ty_kstack },
	{ .name = "ustack", .id = BI_USTACK, .type = ty_ustack },
	{ .name = "ctx", .id = BI_CTX, .type = ty_ctx },
	{ .name = "jiffies", .id = BI_JIFFIES, .type = ty_u64 },
	{ .name = "numaid", .id = BI_NUMAID, .type = ty_u64 },
	{ .name = "ncpus", .id = BI_NCPUS, .type = ty_u64 },
	{ .name = "usermode", .id = BI_USERMODE, .type = ty_u8 },
	{ .name = "__builtin_usermode", .id = BI_USERMODE, .type = ty_u8 },
	{ .name = "ppid", .id = BI_PPID, .type = ty_u64 },
	{ .name = "pcomm", .id = BI_PCOMM, .type = ty_comm },
	{ 0 },
};
