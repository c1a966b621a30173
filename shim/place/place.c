/*
 * Placement: where each probe runs, and why (--mode auto|kernel|user).
 * place_body.c says what a probe's body needs, place_site.c where its
 * sites are and which can be patched; this file decides. The run loop (run.c) follows the decision.
 *
 * A probe runs in user mode when (--mode auto or user):
 *   - all its attach points are uprobes/uretprobes on a binary mapped in
 *     the -p process, or the -c command or a library it starts with;
 *   - user_site_check() accepts the site (a probe of several sites runs
 *     in user mode at those it accepts and in the kernel at the rest:
 *     RUN_BOTH, one probe in the output, its aggregations merged);
 *   - its body needs nothing the native target lacks: aggregations into
 *     maps that nothing but clear(), zero() and delete() changes otherwise
 *     (ubt clears, zeroes or deletes every thread's values when it reads
 *     the event, whichever side sent it: run_map_hook()), ordinary maps
 *     (read, assigned, deleted, has_key(), clear(), zero(), iterated with
 *     for and len(): one lock-free table shared by all threads,
 *     runtime/rt_abi.h struct rt_shtab, which ubt empties or zeroes when
 *     it reads a clear()/zero() event), printf/time/exit/print/system/cat,
 *     str(), the builtins of place_builtin_ok(); for and len() over a keyed
 *     aggregation (not hist/lhist): the kernel visits every key of the
 *     per-CPU map with the current CPU's value, user mode every key of
 *     every thread's table (each once) with the calling thread's value
 *     (RT_FN_HTAB_NEXT_ALL), as long as no kernel probe uses the map
 *     otherwise than through clear(), zero(), delete() and print() (its
 *     keys would be on the other side: place_side_use());
 *   - no kernel uprobe shares the site's function (its breakpoint would
 *     land on our jump), no kernel probe (nor the probe's own kernel
 *     sites) uses one of its ordinary maps or the aggregations it reads
 *     (one side could not see the other's
 *     writes; a kernel probe's clear(), zero() and delete() of an
 *     aggregation also reach the user side: run_map_hook());
 *     ordinary maps only ever used as @m[tid] stay in per-thread tables
 *     (no atomics), the others (among them every map iterated: a thread's
 *     table lacks the other threads' entries) go to the shared one.
 *     An ordinary map place_xmap.c accepts is exempt: user-mode and kernel
 *     probes share it in a table both sides map (codegen/cg_xmap.h).
 * Everything else runs in the kernel; --mode user makes a uprobe that
 * cannot run in user mode an error. -v and --dry-run print each probe's
 * decision and why.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>
#include "ast.h"
#include "cg.h"
#include "child.h"
#include "exitwatch.h"
#include "format.h"
#include "guard.h"
#include "kernel.h"
#include "merge.h"
#include "native.h"
#include "output.h"
#include "probes.h"
#include "run.h"
#include "sema.h"
#include "user.h"
#include "util.h"
#include "run_int.h"
#include "place.h"
#include "place_int.h"

const char *place_probe_name(struct compile *c, struct ast_node *p)
{
	struct sema_probe *sp = c->sema->probes[p->probe.index];

	if (p->probe.aps && p->probe.aps->ap.raw)
		return p->probe.aps->ap.raw;
	return sp && sp->name ? sp->name : "probe";
}

/*
 * An ordinary map, or an aggregation read as a value or iterated, lives
 * on one side only: the probes in one_side[m] (bits by probe index) run
 * all in user mode or all in the kernel; a probe with sites on both sides
 * uses it from both. Such probes go to the kernel, until nothing changes
 * (place_site_conflicts() moves sites that share a function likewise).
 */
static const char *place_map_conflict(struct compile *c,
				      const struct run_decision *d, int i,
				      const uint64_t *one_side,
				      const bool *iterated,
				      const char *const *xwhy)
{
	struct sema_program *sp = c->sema;

	for (int m = 0; m < sp->nmaps; m++) {
		uint64_t bits = one_side[m];

		if (i >= 64 || !(bits & (1ull << i)))
			continue;
		for (int j = 0; j < sp->nprobes && j < 64; j++)
			if ((bits & (1ull << j)) && d[j].where != RUN_USER)
				return arena_printf(
					&c->arena, "map %s is also %s by %s%s%s%s",
					sp->maps[m]->name,
					iterated[m] ? "iterated and used" :
						      "used",
					j == i ? "its kernel sites" :
						 "a kernel probe",
					place_xmap_note(xwhy, m) ?
						"; not shared at user speed: " :
						"",
					place_xmap_note(xwhy, m) ?: "", "");
	}
	return NULL;
}

static void place_conflicts(struct compile *c, struct run_decision *d,
			    const uint64_t *one_side, const bool *iterated,
			    const char *const *xwhy, bool syswide)
{
	int n = c->sema->nprobes;
	bool changed = true;

	while (changed) {
		changed = place_site_conflicts(c, d, n, syswide);
		for (int i = 0; i < n; i++) {
			const char *why;

			if (d[i].where == RUN_KERNEL)
				continue;
			why = place_map_conflict(c, d, i, one_side, iterated,
						 xwhy);
			if (why) {
				place_all_kernel(&d[i], why);
				changed = true;
			}
		}
	}
}

/*
 * System-wide (no -p/-c): a user-mode probe runs in the kernel too, for
 * the processes not taken (shim/run/sysw.c), so a map that must stay on one
 * side keeps every probe that uses it in the kernel.
 */
static void place_sysw_conflicts(struct compile *c, struct run_decision *d,
				 const uint64_t *one_side)
{
	struct sema_program *sp = c->sema;

	for (int i = 0; i < sp->nprobes; i++)
		for (int m = 0; m < sp->nmaps && d[i].where != RUN_KERNEL; m++)
			if (one_side[m] &&
			    (i >= 64 || (one_side[m] & (1ull << i))))
				place_all_kernel(
					&d[i],
					arena_printf(&c->arena,
						     "map %s is also used by "
						     "its kernel side (the "
						     "processes not taken)",
						     sp->maps[m]->name));
}

/* Does the probe attach to uprobes or uretprobes (only)? */
static bool place_is_uprobe(struct ast_node *p)
{
	for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next)
		if (!ap->ap.provider || (strcmp(ap->ap.provider, "uprobe") &&
					 strcmp(ap->ap.provider, "uretprobe") &&
					 strcmp(ap->ap.provider, "usdt")))
			return false;
	return p->probe.aps != NULL;
}

/* Is every attach point of p a uprobe at a function's entry (*entry),
 * or a uretprobe (*ret)? */
static void place_probe_kind(struct ast_node *p, bool *entry, bool *ret)
{
	*entry = *ret = p->probe.aps != NULL;
	for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next) {
		const char *pr = ap->ap.provider;

		if (!pr || strcmp(pr, "uprobe") || ap->ap.func_offset ||
		    ap->ap.address)
			*entry = false;
		if (!pr || strcmp(pr, "uretprobe"))
			*ret = false;
	}
}

int run_decide(struct compile *c, const struct run_opts *o,
	       struct run_decision **out)
{
	struct sema_program *sp = c->sema;
	struct run_decision *d;
	struct place_scan s = { .c = c };
	uint64_t *one_side, *use;
	const char *proc_why = NULL;
	const char **xwhy = place_xmap_scan(c, !o->pid && !o->cmd);
	int err = 0;

	d = arena_alloc(&c->arena, (sp->nprobes + 1) * sizeof(*d));
	memset(d, 0, (sp->nprobes + 1) * sizeof(*d));
	s.plain = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(bool));
	memset(s.plain, 0, (sp->nmaps + 1) * sizeof(bool));
	s.shared = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(bool));
	s.aggread = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(bool));
	memset(s.aggread, 0, (sp->nmaps + 1) * sizeof(bool));
	s.aggiter = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(bool));
	memset(s.aggiter, 0, (sp->nmaps + 1) * sizeof(bool));
	for (int i = 0; i < sp->nmaps; i++)
		s.shared[i] = !place_agg_map(sp->maps[i]) && sp->nprobes <= 64 &&
			   (!sp->maps[i]->bpf_type ||
			    !strcmp(sp->maps[i]->bpf_type, "hash"));
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		ast_visit_children(p, place_scan_plain, &s);
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		ast_visit_children(p, place_scan_shared, &s);
	if (o->pid > 0 && o->mode != MODE_KERNEL) {
		char reason[256];

		if (user_process_check(o->pid, reason, sizeof(reason)) ||
		    user_claim(o->pid, reason, sizeof(reason)))
			proc_why = arena_strdup(&c->arena, reason);
		s.pidns = place_pidns_why(c, o->pid);
	}
	if ((o->pid > 0 || o->cmd) && o->mode != MODE_KERNEL && !proc_why)
		proc_why = place_static_why(c, o);
	if (o->pid > 0 && o->mode != MODE_KERNEL && !proc_why)
		proc_why = place_mntns_why(c, o, o->pid);
	for (struct ast_node *p = c->program->program.probes; p;
	     p = p->next) {
		struct run_decision *r = &d[p->probe.index];

		r->where = RUN_KERNEL;
		if (o->mode == MODE_KERNEL) {
			r->why = "--mode kernel";
			continue;
		}
		if (proc_why && place_is_uprobe(p)) {
			r->why = proc_why;
			continue;
		}
		if (place_sites(c, o, p, r))
			continue;
		s.why = NULL;
		place_probe_kind(p, &s.entry, &s.ret);
		if (p->probe.pred)
			place_scan_body(p->probe.pred, &s);
		if (!s.why && p->probe.body)
			place_scan_body(p->probe.body, &s);
		if (s.why)
			place_all_kernel(r, arena_printf(&c->arena,
							 "%s needs the kernel",
							 s.why));
		else
			place_settle(c, r);
	}
	/* maps whose probes (these bits) must all run on one side */
	one_side = arena_alloc(&c->arena,
			       (sp->nmaps + 1) * sizeof(*one_side));
	use = place_side_use(c);
	for (int i = 0; i < sp->nmaps; i++) {
		one_side[i] = 0;
		if (s.shared[i] && !xwhy[i])
			continue;	/* both sides map its table */
		if ((s.aggread[i] && sp->nprobes <= 64) || s.shared[i])
			one_side[i] = sp->maps[i]->probes;
		else if (s.aggiter[i] && sp->nprobes <= 64)
			one_side[i] = use[i];
	}
	if (o->mode != MODE_KERNEL)
		place_conflicts(c, d, one_side, s.aggiter, xwhy,
				!o->pid && !o->cmd);
	if (!o->pid && !o->cmd && o->mode != MODE_KERNEL)
		place_sysw_conflicts(c, d, one_side);
	for (struct ast_node *p = c->program->program.probes;
	     p && o->mode == MODE_USER; p = p->next) {
		const char *prov = p->probe.aps && p->probe.aps->ap.provider ?
					   p->probe.aps->ap.provider : "";
		const struct run_decision *r = &d[p->probe.index];
		const char *why = r->why;

		if (r->where == RUN_USER ||
		    (strcmp(prov, "uprobe") && strcmp(prov, "uretprobe") &&
		     strcmp(prov, "usdt")))
			continue;
		/* the first site that cannot run there */
		for (int i = 0; r->where == RUN_BOTH && i < r->nsites; i++)
			if (r->sites[i].where == RUN_KERNEL) {
				why = r->sites[i].why;
				break;
			}
		fprintf(stderr, "ubt: cannot run %s in user mode: %s\n",
			place_probe_name(c, p), why);
		err = -EINVAL;
	}
	*out = d;
	return err;
}
