/*
 * Placement: where each probe runs, and why (--mode auto|kernel|user).
 * place_body.c says what a probe's body needs; this file finds the
 * probe's sites and decides. The run loop (run.c) follows the decision.
 *
 * A probe runs in user mode when (--mode auto or user):
 *   - all its attach points are uprobes/uretprobes on a binary mapped in
 *     the -p process, or the -c command or a library it starts with;
 *   - user_site_check() accepts every site;
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
 *   - no kernel uprobe shares one of its functions (its breakpoint would
 *     land on our jump), no kernel probe uses one of its ordinary maps
 *     or the aggregations it reads (one side could not see the other's
 *     writes; a kernel probe's clear(), zero() and delete() of an
 *     aggregation also reach the user side: run_map_hook());
 *     ordinary maps only ever used as @m[tid] stay in per-thread tables
 *     (no atomics), the others (among them every map iterated: a thread's
 *     table lacks the other threads' entries) go to the shared one.
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

/* ---- where the probe's sites are ----------------------------------- */

/* Is path (resolved) mapped in /proc/pid/maps? */
static bool place_mapped_in(int pid, const char *path)
{
	char buf[64], line[PATH_MAX + 128], rp[PATH_MAX];
	bool found = false;
	FILE *f;

	if (!realpath(path, rp))
		snprintf(rp, sizeof(rp), "%s", path);
	snprintf(buf, sizeof(buf), "/proc/%d/maps", pid);
	f = fopen(buf, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		size_t n;

		if (!p)
			continue;
		n = strlen(p);
		if (n && p[n - 1] == '\n')
			p[n - 1] = 0;
		found = !strcmp(p, rp);
	}
	fclose(f);
	return found;
}

/* The -c command's executable, resolved through PATH. */
static bool place_cmd_exe(const char *cmd, char *out, size_t len)
{
	char word[PATH_MAX], cand[2 * PATH_MAX + 2];
	const char *path = getenv("PATH");
	size_t n = strcspn(cmd, " \t");

	if (n >= sizeof(word))
		return false;
	memcpy(word, cmd, n);
	word[n] = 0;
	if (strchr(word, '/'))
		return realpath(word, out) != NULL;
	(void)len;
	while (path && *path) {
		size_t m = strcspn(path, ":");

		snprintf(cand, sizeof(cand), "%.*s/%s", (int)m, path, word);
		if (!access(cand, X_OK))
			return realpath(cand, out) != NULL;
		path += m + (path[m] == ':');
	}
	return false;
}

/*
 * Is lib (resolved) one the dynamic loader maps for exe at start-up
 * (ld.so --list)? Libraries loaded later with dlopen are not known here.
 */
static bool place_loaded_at_start(const char *exe, const char *lib)
{
	static const char *const loaders[] = {
		"/lib64/ld-linux-x86-64.so.2",
		"/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
	};
	char cmd[3 * PATH_MAX], line[2 * PATH_MAX], rp[PATH_MAX];
	bool found = false;
	const char *ld = NULL;
	FILE *f;

	for (size_t i = 0; i < sizeof(loaders) / sizeof(loaders[0]); i++)
		if (!access(loaders[i], X_OK)) {
			ld = loaders[i];
			break;
		}
	if (!ld || strchr(exe, '\''))
		return false;
	snprintf(cmd, sizeof(cmd), "%s --list '%s' 2>/dev/null", ld, exe);
	f = popen(cmd, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "=> ");

		p = p ? p + 3 : line + strspn(line, " \t");
		p[strcspn(p, " \t\n")] = 0;
		if (*p == '/' && realpath(p, rp) && !strcmp(rp, lib))
			found = true;
	}
	pclose(f);
	return found;
}

static bool place_in_target(const struct run_opts *o, const char *bin)
{
	char exe[PATH_MAX], rp[PATH_MAX];

	if (o->pid > 0)
		return place_mapped_in(o->pid, bin);
	if (!o->cmd || !place_cmd_exe(o->cmd, exe, sizeof(exe)) ||
	    !realpath(bin, rp))
		return false;
	return !strcmp(exe, rp) || place_loaded_at_start(exe, rp);
}

/* Expand an attach point without reporting (cg_build reports later). */
static int place_expand(struct compile *c, struct ast_node *p,
		      struct ast_node *ap, struct probes_match **m, int *n)
{
	struct diag_list saved = c->diag;
	int err;

	diag_init(&c->diag, &c->arena, saved.filename, saved.source);
	err = probes_expand(c, p, ap, m, n);
	if (!err && diag_has_errors(&c->diag))
		err = -EINVAL;
	c->diag = saved;
	return err;
}

static int place_find_sarg(struct ast_node *n, void *ctx)
{
	(void)ctx;
	if (n->kind == AST_BUILTIN && n->sema && n->sema->builtin == BI_SARG)
		return 1;
	return ast_visit_children(n, place_find_sarg, NULL);
}

static const char *place_probe_sites(struct compile *c,
				   const struct run_opts *o,
				   struct ast_node *p)
{
	char reason[256];
	bool sarg = (p->probe.pred && place_find_sarg(p->probe.pred, NULL)) ||
		    (p->probe.body && place_find_sarg(p->probe.body, NULL));

	for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next) {
		struct probes_match *m = NULL;
		int n = 0, err;
		const char *prov = ap->ap.provider ? ap->ap.provider : "";

		if (strcmp(prov, "uprobe") && strcmp(prov, "uretprobe"))
			return arena_printf(&c->arena,
					    "%s probes run in the kernel",
					    *prov ? prov : "these");
		if (!o->pid && !o->cmd)
			return "no -p or -c process to run in";
		err = place_expand(c, p, ap, &m, &n);
		if (err || !n)
			return "its attach point does not resolve";
		for (int i = 0; i < n; i++) {
			if (!m[i].target || !m[i].func)
				return "an address without a function";
			if (!place_in_target(o, m[i].target))
				return arena_printf(
					&c->arena, "%s is not %s", m[i].target,
					o->pid ? "mapped in the -p process" :
						 "the -c command or a "
						 "library it starts with");
			if (!strcmp(prov, "uretprobe") && m[i].func_offset)
				return "a return probe needs a function";
			/* the trampoline's stack inside a function */
			if (sarg && m[i].func_offset)
				return "sarg inside a function";
			err = user_site_check_at(m[i].target, m[i].func,
						 m[i].func_offset, reason,
						 sizeof(reason));
			/* what is in the -p process now: others' probes */
			if (!err && o->pid)
				err = user_site_check_live(
					o->pid, m[i].target, m[i].func,
					m[i].func_offset, reason,
					sizeof(reason));
			if (err == -EBUSY)
				return arena_printf(&c->arena, "%s:%s: %s",
						    m[i].target, m[i].func,
						    reason);
			if (err == -EINVAL)
				return arena_printf(&c->arena, "%s:%s: %s",
						    m[i].target, m[i].func,
						    reason);
			if (err == -ENOENT)
				return arena_printf(&c->arena,
						    "%s:%s: no symbol with a "
						    "size to patch",
						    m[i].target, m[i].func);
			if (err)
				return arena_printf(&c->arena,
						    "%s:%s cannot be read: %s",
						    m[i].target, m[i].func,
						    strerror(-err));
		}
	}
	return NULL;
}

const char *place_probe_name(struct compile *c, struct ast_node *p)
{
	struct sema_probe *sp = c->sema->probes[p->probe.index];

	if (p->probe.aps && p->probe.aps->ap.raw)
		return p->probe.aps->ap.raw;
	return sp && sp->name ? sp->name : "probe";
}

/* The functions a uprobe probe's attach points resolve to. */
struct place_sites {
	char **bins;		/* resolved paths */
	const char **funcs;
	int n;
	bool sarg;		/* the probe reads stack arguments */
};

static void place_collect_sites(struct compile *c, struct ast_node *p,
			      struct place_sites *rs)
{
	char rp[PATH_MAX];
	int cap = 0;

	memset(rs, 0, sizeof(*rs));
	rs->sarg = (p->probe.pred && place_find_sarg(p->probe.pred, NULL)) ||
		   (p->probe.body && place_find_sarg(p->probe.body, NULL));
	for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next) {
		struct probes_match *m = NULL;
		int n = 0;
		const char *prov = ap->ap.provider ? ap->ap.provider : "";

		if ((strcmp(prov, "uprobe") && strcmp(prov, "uretprobe")) ||
		    place_expand(c, p, ap, &m, &n))
			continue;
		for (int i = 0; i < n; i++) {
			if (!m[i].target || !m[i].func)
				continue;
			if (rs->n == cap) {
				char **nb;
				const char **nf;

				cap = cap ? 2 * cap : 8;
				nb = arena_alloc(&c->arena, cap * sizeof(*nb));
				nf = arena_alloc(&c->arena, cap * sizeof(*nf));
				if (rs->n) {
					memcpy(nb, rs->bins,
					       rs->n * sizeof(*nb));
					memcpy(nf, rs->funcs,
					       rs->n * sizeof(*nf));
				}
				rs->bins = nb;
				rs->funcs = nf;
			}
			rs->bins[rs->n] = arena_strdup(
				&c->arena,
				realpath(m[i].target, rp) ? rp : m[i].target);
			rs->funcs[rs->n++] = m[i].func;
		}
	}
}

/* A function both probes attach to, or NULL. */
static const char *place_shared_site(struct compile *c,
				   const struct place_sites *a,
				   const struct place_sites *b)
{
	for (int i = 0; i < a->n; i++)
		for (int j = 0; j < b->n; j++)
			if (!strcmp(a->bins[i], b->bins[j]) &&
			    !strcmp(a->funcs[i], b->funcs[j]))
				return arena_printf(&c->arena, "%s:%s",
						    a->bins[i], a->funcs[i]);
	return NULL;
}

/*
 * A function patched for a user-mode probe cannot also carry a kernel
 * uprobe (the kernel would put its breakpoint over the jump), and probes
 * sharing a patched function run one after the other from one trampoline
 * call, where sarg would read the wrong stack: such probes go to the
 * kernel, until nothing changes.
 */
static void place_conflicts(struct compile *c, struct run_decision *d,
			  struct place_sites *sites, const uint64_t *one_side,
			  const bool *iterated)
{
	struct sema_program *sp = c->sema;
	int n = sp->nprobes;
	bool changed = true;

	while (changed) {
		changed = false;
		for (int i = 0; i < n; i++) {
			const char *at = NULL, *why = NULL;

			if (d[i].where != RUN_USER)
				continue;
			/* an ordinary map, or an aggregation read as a
			 * value or iterated, lives on one side only: the
			 * probes in one_side[m] */
			for (int m = 0; m < sp->nmaps && !why; m++) {
				uint64_t bits = one_side[m];

				if (i >= 64 || !(bits & (1ull << i)))
					continue;
				for (int j = 0; j < n && j < 64; j++)
					if ((bits & (1ull << j)) &&
					    d[j].where == RUN_KERNEL) {
						why = arena_printf(
							&c->arena,
							"map %s is also %s "
							"by a kernel probe",
							sp->maps[m]->name,
							iterated[m] ?
							"iterated and used" :
							"used");
						break;
					}
			}
			if (why) {
				d[i].where = RUN_KERNEL;
				d[i].why = why;
				changed = true;
				continue;
			}
			for (int j = 0; j < n && !why; j++) {
				if (j == i || !sites[j].n)
					continue;
				at = place_shared_site(c, &sites[i], &sites[j]);
				if (!at)
					continue;
				if (d[j].where == RUN_KERNEL)
					why = "a kernel uprobe on the same "
					      "function";
				else if (sites[i].sarg || sites[j].sarg)
					why = "sarg with another probe on the "
					      "same function";
			}
			if (why) {
				d[i].where = RUN_KERNEL;
				d[i].why = arena_printf(&c->arena, "%s (%s)",
							why, at);
				changed = true;
			}
		}
	}
}

/* Does the probe attach to uprobes or uretprobes (only)? */
static bool place_is_uprobe(struct ast_node *p)
{
	for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next)
		if (!ap->ap.provider || (strcmp(ap->ap.provider, "uprobe") &&
					 strcmp(ap->ap.provider, "uretprobe")))
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
	struct place_sites *sites;
	struct place_scan s = { .c = c };
	uint64_t *one_side, *use;
	const char *proc_why = NULL;
	int err = 0;

	d = arena_alloc(&c->arena, (sp->nprobes + 1) * sizeof(*d));
	sites = arena_alloc(&c->arena, (sp->nprobes + 1) * sizeof(*sites));
	memset(sites, 0, (sp->nprobes + 1) * sizeof(*sites));
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

		if (user_process_check(o->pid, reason, sizeof(reason)))
			proc_why = arena_strdup(&c->arena, reason);
	}
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
		if (o->pid || o->cmd)
			place_collect_sites(c, p, &sites[p->probe.index]);
		r->why = place_probe_sites(c, o, p);
		if (!r->why) {
			s.why = NULL;
			place_probe_kind(p, &s.entry, &s.ret);
			if (p->probe.pred)
				place_scan_body(p->probe.pred, &s);
			if (!s.why && p->probe.body)
				place_scan_body(p->probe.body, &s);
			if (s.why)
				r->why = arena_printf(&c->arena,
						      "%s needs the kernel",
						      s.why);
		}
		if (!r->why) {
			r->where = RUN_USER;
			r->why = "every site can be patched";
		}
	}
	/* maps whose probes (these bits) must all run on one side */
	one_side = arena_alloc(&c->arena,
			       (sp->nmaps + 1) * sizeof(*one_side));
	use = place_side_use(c);
	for (int i = 0; i < sp->nmaps; i++) {
		one_side[i] = 0;
		if ((s.aggread[i] && sp->nprobes <= 64) || s.shared[i])
			one_side[i] = sp->maps[i]->probes;
		else if (s.aggiter[i] && sp->nprobes <= 64)
			one_side[i] = use[i];
	}
	if (o->mode != MODE_KERNEL)
		place_conflicts(c, d, sites, one_side, s.aggiter);
	for (struct ast_node *p = c->program->program.probes;
	     p && o->mode == MODE_USER; p = p->next) {
		const char *prov = p->probe.aps && p->probe.aps->ap.provider ?
					   p->probe.aps->ap.provider : "";

		if (d[p->probe.index].where == RUN_USER ||
		    (strcmp(prov, "uprobe") && strcmp(prov, "uretprobe")))
			continue;
		fprintf(stderr, "ubt: cannot run %s in user mode: %s\n",
			place_probe_name(c, p), d[p->probe.index].why);
		err = -EINVAL;
	}
	*out = d;
	return err;
}
