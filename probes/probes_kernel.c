/*
 * Kernel attach points: kprobe, kretprobe, kfunc, kretfunc and
 * rawtracepoint expanded (wildcards) and checked against what the
 * running kernel offers, and listed for -l/-lv:
 *
 *   kprobes   the functions of tracefs's available_filter_functions
 *             ("name" or "name [module]")
 *   kfuncs    the functions of the kernel's and the modules' BTF that
 *             are also in available_filter_functions (those fentry can
 *             attach to), as bpftrace lists them
 *   raw tracepoints   the btf_trace_NAME typedefs of that BTF
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arena.h"
#include "ast.h"
#include "attach.h"
#include "diag.h"
#include "kprov.h"
#include "compat.h"
#include "probes.h"
#include "tracepoint.h"
#include "types.h"
#include "types_btf.h"
#include "util.h"
#include "probes_int.h"

/* available_filter_functions, read once: sorted by name */
struct kfunc_ent {
	char *name;
	char *module;		/* NULL: vmlinux */
};
static struct kfunc_ent *kf_ents;
static size_t kf_n;
static int kf_err = 1;		/* 1: not read yet */

static int kf_cmp(const void *x, const void *y)
{
	const struct kfunc_ent *a = x, *b = y;

	return strcmp(a->name, b->name);
}

/* The traceable functions; 0 or -errno (no tracefs file). */
static int kf_load(void)
{
	const char *root = tp_tracefs();
	char path[4096], *line = NULL;
	size_t cap = 0, sz = 0;
	FILE *f;

	if (kf_err != 1)
		return kf_err;
	snprintf(path, sizeof(path), "%s/available_filter_functions",
		 root ? root : "/sys/kernel/tracing");
	f = fopen(path, "r");
	if (!f)
		return kf_err = -errno;
	while (getline(&line, &sz, f) > 0) {
		char *sp, *mod = NULL, *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		sp = strchr(line, ' ');
		if (sp) {
			*sp = '\0';
			mod = strchr(sp + 1, '[');
			if (mod) {
				char *e = strchr(++mod, ']');

				if (e)
					*e = '\0';
			}
		}
		/* ftrace's placeholders for functions it lost */
		if (!*line || !strncmp(line, "__ftrace_invalid_address__", 26))
			continue;
		if (kf_n == cap) {
			cap = cap ? 2 * cap : 65536;
			kf_ents = xrealloc(kf_ents, cap * sizeof(*kf_ents));
		}
		kf_ents[kf_n].name = xstrdup(line);
		kf_ents[kf_n++].module = mod ? xstrdup(mod) : NULL;
	}
	free(line);
	fclose(f);
	if (kf_n > 1)
		qsort(kf_ents, kf_n, sizeof(*kf_ents), kf_cmp);
	return kf_err = 0;
}

/* Is name traceable (in module, when module is not NULL)? */
static bool kf_traceable(const char *module, const char *name)
{
	struct kfunc_ent key = { .name = (char *)name }, *e;

	if (kf_load())
		return true;	/* no list to ask: the attach will say */
	e = bsearch(&key, kf_ents, kf_n, sizeof(*kf_ents), kf_cmp);
	if (!e)
		return false;
	if (!module)
		return true;
	/* equal names sit together: find one in module */
	while (e > kf_ents && !strcmp(e[-1].name, name))
		e--;
	for (; e < kf_ents + kf_n && !strcmp(e->name, name); e++)
		if (e->module && !strcmp(e->module, module))
			return true;
	return false;
}

/*
 * A kfunc bpftrace 0.17 knows: traceable, and of at most 6 arguments
 * (the registers that carry them on x86-64; its arch::max_arg() + 1),
 * as it lists them and matches wildcards against them.
 */
#define KP_KFUNC_MAX_PARAMS 6

static bool kp_kfunc_listed(const struct types_btf_func *f)
{
	return f->nparams <= KP_KFUNC_MAX_PARAMS &&
	       kf_traceable(f->module, f->name);
}

bool probes_is_kernel(const char *provider)
{
	const char *p = ap_canonical_provider(provider);

	return p && (!strcmp(p, "kprobe") || !strcmp(p, "kretprobe") ||
		     !strcmp(p, "kfunc") || !strcmp(p, "kretfunc") ||
		     !strcmp(p, "rawtracepoint"));
}

static int kp_uses_probe(struct ast_node *n, void *ctx)
{
	(void)ctx;
	if (n->kind == AST_BUILTIN && n->ident.name &&
	    !strcmp(n->ident.name, "probe"))
		return 1;
	return ast_visit_children(n, kp_uses_probe, NULL);
}

/*
 * bpftrace 0.17 builds a program per match for a probe that uses the
 * probe builtin, matching even a plain kprobe:F against the traceable
 * functions; a probe that matched nothing has no program and is left
 * out: the rest of the program runs, or "No probes to attach"
 * (v0.17.0's regression.async_id_invalid_probe_expansion).  With
 * several attach points 0.17 stops at the one with no program; here it
 * is tried, and skipped with a warning when the kernel refuses it.
 */
bool probes_kernel_drops(const struct ast_node *probe,
			 const struct ast_node *ap)
{
	const struct ast_attach_point *p = &ap->ap;
	const char *prov = ap_canonical_provider(p->provider ? p->provider :
							       "");

	if (!prov || (strcmp(prov, "kprobe") && strcmp(prov, "kretprobe")) ||
	    !probe || probe->kind != AST_PROBE || probe->probe.aps != ap ||
	    ap->next || !p->func || p->address ||
	    probes_has_wildcard(p->func) ||
	    kf_traceable(p->target && *p->target ? p->target : NULL, p->func))
		return false;
	return (probe->probe.pred &&
		kp_uses_probe(probe->probe.pred, NULL)) ||
	       (probe->probe.body && kp_uses_probe(probe->probe.body, NULL));
}

static void kp_add(struct arena *a, struct probes_vec *v, const char *prov,
		   const char *module, const char *func, uint64_t off,
		   bool name_module)
{
	struct probes_match *m = probes_vec_push(v);

	memset(m, 0, sizeof(*m));
	m->provider = prov;
	m->target = module ? arena_strdup(a, module) : NULL;
	m->func = arena_strdup(a, func);
	m->func_offset = off;
	if (name_module)
		m->name = arena_printf(a, "%s:%s:%s", prov,
				       module ? module : "vmlinux", func);
	else
		m->name = arena_printf(a, "%s:%s", prov, func);
	if (off)
		m->name = arena_printf(a, "%s+%llu", m->name,
				       (unsigned long long)off);
}

static int kp_report(struct diag_list *d, const struct ast_loc *loc,
		     bool warn, const char *msg)
{
	if (!d)
		return warn ? 0 : -ENOENT;
	if (warn)
		diag_warning(d, loc, "%s", msg);
	else
		diag_error(d, loc, "%s", msg);
	return warn ? 0 : -ENOENT;
}

int probes_expand_kernel(struct arena *a, struct diag_list *d,
			 const struct ast_loc *loc, const char *provider,
			 const char *module, const char *func,
			 uint64_t func_offset, bool warn_only,
			 struct probes_vec *v)
{
	const char *prov = ap_canonical_provider(provider);
	bool wild = probes_has_wildcard(func) ||
		    (module && probes_has_wildcard(module));
	bool kprobe = !strcmp(prov, "kprobe") || !strcmp(prov, "kretprobe");
	bool rawtp = !strcmp(prov, "rawtracepoint");
	size_t before = v->len;

	if (module && !*module)
		module = NULL;
	if (kprobe) {
		if (!wild) {
			/* bpftrace 0.17 warns, then tries (and fails) */
			if (!kf_traceable(module, func))
				kp_report(d, loc, true,
					  arena_printf(a,
						       "%s is not traceable (either non-existing, inlined, or marked as \"notrace\"); attaching to it will likely fail",
						       func));
			kp_add(a, v, prov, module, func, func_offset,
			       module != NULL);
			return 0;
		}
		if (kf_load())
			return kp_report(d, loc, false,
					 arena_printf(a,
						      "cannot expand %s wildcards: no available_filter_functions in tracefs",
						      prov));
		for (size_t i = 0; i < kf_n; i++) {
			const struct kfunc_ent *e = &kf_ents[i];

			if (i && !strcmp(e->name, kf_ents[i - 1].name))
				continue;
			if (!probes_match_wildcard(func, e->name))
				continue;
			if (module && (!e->module ||
				       !probes_match_wildcard(module,
							      e->module)))
				continue;
			kp_add(a, v, prov, module ? e->module : NULL, e->name,
			       0, module != NULL);
		}
	} else {
		struct types_btf_func *fs;
		int n, err = types_btf_funcs(a, rawtp, &fs, &n);

		if (err)
			return kp_report(d, loc, false,
					 arena_printf(a,
						      "%s probes need kernel BTF, which is not available on this kernel",
						      prov));
		for (int i = 0; i < n; i++) {
			const char *mod = fs[i].module;

			if (!probes_match_wildcard(func, fs[i].name))
				continue;
			/* the kernel's own functions are in "vmlinux"
			 * (kfunc:vmlinu*:vfs_read, kfunc:*:vfs_read) */
			if (module && !probes_match_wildcard(module,
							     mod ? mod : "vmlinux"))
				continue;
			/* a kfunc named without a wildcard is tried as
			 * BTF has it: the kernel says at attach (bpftrace
			 * 0.17's "Error attaching probe") */
			if (!rawtp && wild && !kp_kfunc_listed(&fs[i]))
				continue;
			/* bpftrace 0.17 names a kfunc with the module it
			 * finds it in among the traceable functions
			 * (kfunc:vmlinux:vfs_read), without one when it
			 * finds none (kfunc:notify_die) */
			kp_add(a, v, prov, mod, fs[i].name, 0,
			       module != NULL ||
				       (!rawtp && kf_traceable(mod, fs[i].name)));
			if (!wild)
				break;
		}
	}
	/* bpftrace 0.17 says it at attach: "No BTF found for F", an
	 * error, or a warning and the rest runs when the probe has other
	 * attach points (kernel_kprobe.c); not for a listing (no d) */
	if (v->len == before && d && !wild && !rawtp) {
		kp_add(a, v, prov, module, func, 0, false);
		((struct probes_match *)v->data)[v->len - 1].no_btf = true;
		return 0;
	}
	if (v->len == before)
		return kp_report(d, loc, warn_only && (kprobe || !wild),
				 wild ? arena_printf(a,
						     "No %s probes matched %s%s%s",
						     prov, module ? module : "",
						     module ? ":" : "", func) :
				 /* compat missing-probes: v0.26's words */
				 rawtp && compat_has(COMPAT_MISSING_PROBES) ?
				 (module ? arena_printf(a,
							"No matches for rawtracepoint %s:%s.",
							module, func) :
					   "Probe has no valid attach points.") :
				 rawtp ? arena_printf(a,
						      "No BTF found for raw tracepoint %s%s%s",
						      module ? module : "",
						      module ? ":" : "", func) :
				 /* bpftrace 0.17's words */
				 arena_printf(a, "No BTF found for %s", func));
	return 0;
}

struct kp_order {
	uint64_t key;
	size_t i;
};

static int kp_order_cmp(const void *x, const void *y)
{
	const struct kp_order *a = x, *b = y;

	return a->key < b->key ? -1 : a->key > b->key;
}

/*
 * -lv's lines for n kfuncs or raw tracepoints: their arguments from BTF,
 * made in BTF order (types_btf_func_order()), as bpftrace 0.17 does.
 */
static const char **kp_details(struct arena *a, const struct probes_match *m,
			       size_t n, bool rawtp)
{
	struct kp_order *o = xcalloc(n + 1, sizeof(*o));
	const char **d = xcalloc(n + 1, sizeof(*d));

	for (size_t i = 0; i < n; i++) {
		o[i].key = types_btf_func_order(m[i].target, m[i].func, rawtp);
		o[i].i = i;
	}
	qsort(o, n, sizeof(*o), kp_order_cmp);
	for (size_t i = 0; i < n; i++) {
		const struct probes_match *x = &m[o[i].i];

		d[o[i].i] = types_btf_func_decls(a, x->target, x->func, rawtp,
						 !rawtp);
	}
	free(o);
	return d;
}

void probes_list_kernel_all(struct arena *a, const char *pattern,
			    void (*emit)(void *ctx, const char *name,
					 const char *detail),
			    void *ctx)
{
	/* as bpftrace 0.17's whole list: kprobes where the kernel lists
	 * its traceable functions, kfuncs where it attaches them */
	if (!kf_load())
		for (size_t i = 0; i < kf_n; i++) {
			const char *nm;

			if (i && !strcmp(kf_ents[i].name, kf_ents[i - 1].name))
				continue;
			nm = arena_printf(a, "kprobe:%s", kf_ents[i].name);
			if (!pattern || probes_match_wildcard(pattern, nm))
				emit(ctx, nm, NULL);
		}
	if (kprov_fentry()) {
		struct types_btf_func *fs;
		int n;

		if (types_btf_funcs(a, false, &fs, &n))
			return;
		for (int i = 0; i < n; i++) {
			const char *nm;

			if (!kp_kfunc_listed(&fs[i]))
				continue;
			nm = arena_printf(a, "kfunc:%s:%s",
					  fs[i].module ? fs[i].module :
							 "vmlinux",
					  fs[i].name);
			if (!pattern || probes_match_wildcard(pattern, nm))
				emit(ctx, nm, NULL);
		}
	}
}

int probes_list_kernel(struct arena *a, const char *provider,
		       const char *module, const char *func, bool verbose,
		       void (*emit)(void *ctx, const char *name,
				    const char *detail),
		       void *ctx)
{
	const char *prov = ap_canonical_provider(provider);
	bool rawtp = !strcmp(prov, "rawtracepoint");
	struct probes_vec v = { .elem = sizeof(struct probes_match) };
	struct probes_match *m;
	const char **details = NULL;
	int err;

	err = probes_expand_kernel(a, NULL, NULL, prov, module,
				   func && *func ? func : "*", 0, false, &v);
	m = v.data;
	if (!err && verbose && strcmp(prov, "kprobe") &&
	    strcmp(prov, "kretprobe"))
		details = kp_details(a, m, v.len, rawtp);
	for (size_t i = 0; !err && i < v.len; i++) {
		const char *detail = NULL;

		const char *name = m[i].name;

		/* bpftrace 0.17 lists a kfunc with its module, vmlinux's
		 * too, and its return value with the arguments */
		if (!strcmp(prov, "kfunc") || !strcmp(prov, "kretfunc"))
			name = arena_printf(a, "%s:%s:%s", prov,
					    m[i].target ? m[i].target :
							  "vmlinux",
					    m[i].func);
		if (details)
			detail = details[i];
		emit(ctx, name, detail);
	}
	free(details);
	free(v.data);
	return err == -ENOENT ? 0 : err;
}
