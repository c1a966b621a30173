/*
 * Probe-context checks: which builtins and functions each attach point's
 * provider allows (retval only in return probes, args only where typed,
 * cpid only with -c, ...), attach point sanity (interval units, BEGIN/END
 * targets), and, after type checking, the probes this kernel can not run.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "sema.h"
#include "kprov.h"
#include "types_btf.h"
#include "sema_int.h"
#include "tracepoint.h"
#include "util.h"

static int check(struct ast_node *n, void *ctx);

static int check_child(struct ast_node *n, void *ctx)
{
	check(n, ctx);
	return 0;
}

static int check(struct ast_node *n, void *ctx)
{
	struct sema_ctx *x = ctx;

	if (!n)
		return 0;
	if (n->kind == AST_BUILTIN && n->sema) {
		const struct sema_builtin_ops *b;

		b = sema_builtin_ops(n->sema->builtin);
		if (b && b->check)
			b->check(x, n);
	} else if (n->kind == AST_CALL && n->sema) {
		const struct sema_func_ops *f = sema_func_ops(n->sema->func);

		if (f && f->check)
			f->check(x, n);
	}
	ast_visit_children(n, check_child, x);
	return 0;
}

/* A bare count (interval:100, profile:99) is in nanoseconds (v0.25). */
static bool time_unit(const char *u)
{
	static const char *const units[] = { "s", "ms", "us", "ns", "hz" };

	if (!u)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(u, units[i]))
			return true;
	return false;
}

/*
 * Does tracepoint CAT:EVENT exist (wildcards: does anything match)?
 * Without tracefs, say yes: attaching will tell.
 */
static bool tp_exists(const char *cat, const char *ev)
{
	const char *root = tp_tracefs();
	char path[PATH_MAX];
	glob_t g;
	bool found;

	if (!root)
		return true;
	snprintf(path, sizeof(path), "%s/events/%s/%s/format", root, cat, ev);
	if (!strpbrk(path, "*?["))
		return access(path, F_OK) == 0;
	found = glob(path, GLOB_NOSORT, NULL, &g) == 0 && g.gl_pathc > 0;
	globfree(&g);
	return found;
}

static void check_ap(struct sema_ctx *x, struct ast_node *ap)
{
	const struct ast_attach_point *a = &ap->ap;
	enum sema_provider p = ap->sema->ap->provider;
	const char *name = sema_provider_name(p);

	switch (p) {
	case PROV_BEGIN:
	case PROV_END:
		if (a->target || a->func)
			sema_error(x, &ap->loc,
				   "BEGIN/END probes should not have a target");
		break;
	case PROV_INTERVAL:
	case PROV_PROFILE:
		if (!a->unit) {
			sema_error(x, &ap->loc, "%s probe must have unit of time",
				   name);
		} else if (!time_unit(a->unit)) {
			sema_error(x, &ap->loc,
				   "%s is not an accepted unit of time",
				   a->unit);
		} else if (!a->freq) {
			sema_error(x, &ap->loc,
				   "%s frequency should be a positive integer",
				   name);
		}
		break;
	case PROV_UPROBE:
	case PROV_URETPROBE:
		if (!a->target || !*a->target)
			sema_error(x, &ap->loc, "%s should have a target", name);
		else if (!a->func && !a->address && !a->src_file)
			sema_error(x, &ap->loc,
				   "%s should be attached to a function and/or address",
				   name);
		else if (p == PROV_URETPROBE && a->func_offset)
			sema_error(x, &ap->loc,
				   "uretprobes can not be attached to a function offset");
		break;
	case PROV_WATCHPOINT:
	case PROV_ASYNCWATCHPOINT:
		/* a function's argument: watched in the -p/-c process */
		if (a->func && !x->c->pid && !x->c->has_cmd)
			sema_error(x, &ap->loc,
				   "-p PID or -c CMD required for watchpoint");
		break;
	case PROV_ITER:
		/* bpftrace's words; a pin file (iter:task:PIN) ubt lacks */
		if (!a->func || !sema_iter_exists(a->func))
			sema_error(x, &ap->loc,
				   "iter %s not available for your kernel version.",
				   a->func ? a->func : "");
		else if (a->target)
			sema_error(x, &ap->loc,
				   "iter probes pinned to a file are not supported");
		break;
	case PROV_TRACEPOINT:
		if (!a->target || !a->func)
			sema_error(x, &ap->loc,
				   "tracepoint probe must have a target");
		else if (!tp_exists(a->target, a->func) &&
			 !compat_has(COMPAT_MISSING_PROBES))
			sema_error(x, &ap->loc, "tracepoint not found: %s:%s",
				   a->target, a->func);
		break;
	default:
		break;
	}
}

/*
 * An iterator the kernel has: its context, struct bpf_iter__NAME, in its
 * BTF (task and task_file, the ones bpftrace 0.17 knows, without BTF).
 */
bool sema_iter_exists(const char *name)
{
	const struct btf *btf = types_btf_vmlinux();
	char rec[128];

	if (!btf)
		return !strcmp(name, "task") || !strcmp(name, "task_file");
	snprintf(rec, sizeof(rec), "struct bpf_iter__%s", name);
	return types_btf_id(btf, rec) != 0;
}

/*
 * An iter probe runs once, then the run ends: it goes alone (BEGIN and
 * END aside), with one attach point (bpftrace's words).
 */
static void check_iter(struct sema_ctx *x, struct ast_node *probe)
{
	struct ast_node *it = NULL;
	int others = 0;

	for (struct ast_node *p = x->c->program->program.probes; p;
	     p = p->next)
		for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next) {
			enum sema_provider pv = ap->sema->ap->provider;

			if (pv == PROV_ITER && p == probe && !it)
				it = ap;
			else if (pv != PROV_BEGIN && pv != PROV_END)
				others++;
		}
	if (!it)
		return;
	if (probe->probe.aps->next)
		sema_error(x, &it->loc,
			   "Only single iter attach point is allowed.");
	else if (others)
		sema_error(x, &it->loc,
			   "an iter probe runs once and ends the run: only BEGIN and END can go with it");
}

/*
 * compat missing-probes: a tracepoint that does not exist, as v0.26
 * says it ("No matches for tracepoint CAT:EVENT."): an error, or with
 * config missing_probes = warn (ignore) dropped with a warning
 * (silently) when the probe has other attach points.
 */
static void missing_tracepoints(struct sema_ctx *x, struct ast_node *p)
{
	int mode = x->prog->missing_probes;

	for (struct ast_node **pp = &p->probe.aps; *pp;) {
		struct ast_node *ap = *pp;
		const struct ast_attach_point *a = &ap->ap;
		bool alone = ap == p->probe.aps && !ap->next;

		if (ap->sema->ap->provider != PROV_TRACEPOINT || !a->target ||
		    !a->func || tp_exists(a->target, a->func)) {
			pp = &ap->next;
			continue;
		}
		if (mode == MISSING_ERROR || alone) {
			sema_error(x, &ap->loc, "No matches for tracepoint %s:%s.",
				   a->target, a->func);
			pp = &ap->next;
			continue;
		}
		if (mode == MISSING_WARN)
			sema_warning(x, &ap->loc,
				     "No matches for tracepoint %s:%s. Skipping.",
				     a->target, a->func);
		*pp = ap->next;
	}
}

int sema_context(struct compile *c)
{
	struct sema_ctx x = {
		.c = c, .a = &c->arena, .d = &c->diag, .prog = c->sema,
		.final = true,
	};
	int nerr = c->diag.nerrors;

	for (struct ast_node *p = c->program->program.probes; p; p = p->next) {
		x.probe = p->sema->probe;
		if (compat_has(COMPAT_MISSING_PROBES))
			missing_tracepoints(&x, p);
		check_iter(&x, p);
		for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next) {
			int before = c->diag.nerrors;
			struct ast_node *q;

			check_ap(&x, ap);
			/* the body once per distinct provider */
			for (q = p->probe.aps; q != ap; q = q->next)
				if (q->sema->ap->provider ==
				    ap->sema->ap->provider)
					break;
			if (q != ap)
				continue;
			x.ap = ap;
			x.provider = ap->sema->ap->provider;
			check(p->probe.pred, &x);
			check(p->probe.body, &x);
			if (c->diag.nerrors > before)
				break;
		}
	}
	return c->diag.nerrors > nerr ? -EINVAL : 0;
}

/*
 * Kernel functions bpftrace refuses a kretprobe on, whatever the kernel:
 * the return trampoline takes the lock they take.
 */
static bool sema_kretprobe_banned(const char *func)
{
	static const char *const banned[] = {
		"_raw_spin_lock",
		"_raw_spin_lock_irqsave",
		"_raw_spin_unlock_irqrestore",
		"queued_spin_lock_slowpath",
	};

	for (size_t i = 0; func && i < ARRAY_SIZE(banned); i++)
		if (!strcmp(func, banned[i]))
			return true;
	return false;
}

int sema_available(struct compile *c)
{
	const char *hint;
	struct diag *g;
	int err = 0;

	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next) {
			struct sema_ap *sa = ap->sema->ap;

			if (sa->provider == PROV_KRETPROBE &&
			    sema_kretprobe_banned(ap->ap.func)) {
				/* bpftrace 0.17's words, "error: " included */
				diag_error(&c->diag, &ap->loc,
					   "error: kretprobe:%s can't be used as it might lock up your system.",
					   ap->ap.func);
				err = -EINVAL;
				continue;
			}
			if (sa->available)
				continue;
			g = diag_error(&c->diag, &ap->loc,
				       "%s probes are not available on this kernel",
				       sema_provider_name(sa->provider));
			hint = kprov_missing(sema_provider_name(sa->provider));
			if (hint)
				diag_hint(&c->diag, g, "%s", hint);
			err = -EINVAL;
		}
	return err;
}
