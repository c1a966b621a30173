/*
 * BPFTRACE_MAX_PROBES and BPFTRACE_MAX_BPF_PROGS, checked before any code
 * is generated (env.h): a script whose attach points expand to more than
 * the limit (512 each unless set, as bpftrace 0.17) is refused at once,
 * not after building tens of thousands of programs (`k:*`).
 *
 * Counted as bpftrace 0.17 counts them, so that the same script is
 * refused or run as there:
 * - probes: every match of every attach point, BEGIN and END included,
 *   wherever it runs (a user-mode site is one too); a kprobe or
 *   kretprobe wildcard lowered as one program is one probe where the
 *   kernel has kprobe_multi links (one link);
 * - programs: the matches of the probes bpftrace builds a program per
 *   match for (those that use `probe`, tracepoints' `args`, USDT),
 *   summed attach point by attach point until the limit is passed
 *   (bpftrace's figure in the message).
 * Within the limits, the descriptors the attach needs (newer bpftrace's
 * figure: 3 per probe, one per map, 50 more) are made allowed when the
 * soft RLIMIT_NOFILE is lower (1024 on Debian: BPFTRACE_MAX_PROBES=1000
 * would fail with "Too many open files").
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "ast.h"
#include "env.h"
#include "kprov.h"
#include "probes.h"
#include "sema.h"
#include "run_int.h"

struct limits_scan {
	bool probe;	/* `probe` used */
	bool args;	/* `args` used */
};

static int limits_scan_fn(struct ast_node *n, void *ctx)
{
	struct limits_scan *s = ctx;

	if (n->kind == AST_BUILTIN && n->sema) {
		s->probe |= n->sema->builtin == BI_PROBE;
		s->args |= n->sema->builtin == BI_ARGS;
	}
	return ast_visit_children(n, limits_scan_fn, ctx);
}

/* Does bpftrace build a program per match of probe ("need expansion")? */
static bool limits_expands(struct ast_node *probe)
{
	struct limits_scan s = { 0 };
	struct ast_node *ap = probe->probe.aps;

	if (probe->probe.pred)
		limits_scan_fn(probe->probe.pred, &s);
	limits_scan_fn(probe->probe.body, &s);
	if (s.probe || (ap && ap->sema->ap->provider == PROV_USDT))
		return true;
	for (; s.args && ap; ap = ap->next)
		if (ap->sema->ap->provider == PROV_TRACEPOINT)
			return true;
	return false;
}

/* One kprobe_multi link for all n matches of ap: one probe to bpftrace. */
static bool limits_one_link(struct ast_node *ap, bool expands, int n)
{
	enum sema_provider prov = ap->sema->ap->provider;

	return n > 1 && !expands &&
	       (prov == PROV_KPROBE || prov == PROV_KRETPROBE) &&
	       ap->ap.func && probes_has_wildcard(ap->ap.func) &&
	       kprov_kprobe_multi();
}

static void limits_nofile(int nprobes, int nmaps)
{
	rlim_t need = (rlim_t)nprobes * 3 + nmaps + 50;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need)
		return;
	rl.rlim_cur = need;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		rl.rlim_max = need;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		fprintf(stderr, "WARNING: %s: couldn't set RLIMIT_NOFILE for "
			"ubt. If your program is not loading, you can try "
			"increasing \"ulimit -n\" to fix the problem\n",
			strerror(errno));
}

int run_check_limits(struct compile *c)
{
	uint64_t max_progs = env_get()->max_bpf_progs;
	int nprobes = 0, nprogs = 0;
	bool over = false;

	for (struct ast_node *p = c->program->program.probes; p;
	     p = p->next) {
		bool expands = limits_expands(p);

		for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next) {
			struct probes_match *m;
			const char *why;
			int n;

			/* cg_build() reports an attach point in error */
			if (probes_expand_quiet(c, p, ap, &m, &n, &why))
				continue;
			nprobes += limits_one_link(ap, expands, n) ? 1 : n;
			if (expands && !over) {
				nprogs += n;
				over = (uint64_t)nprogs > max_progs;
			}
		}
	}
	if (env_check_limits(nprobes, over ? nprogs : 0))
		return -E2BIG;
	limits_nofile(nprobes, c->sema->nmaps);
	return 0;
}
