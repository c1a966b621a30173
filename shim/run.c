/*
 * The run loop for kernel and user-mode probes together: the per-probe
 * decision (--mode auto|kernel|user), then one loop over the kernel ring
 * buffer and the user rings, maps merged from both sides.
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
 *     str(), the builtins of run_builtin_ok(); for and len() over a keyed
 *     aggregation (not hist/lhist): the kernel visits every key of the
 *     per-CPU map with the current CPU's value, user mode every key of
 *     every thread's table (each once) with the calling thread's value
 *     (RT_FN_HTAB_NEXT_ALL), as long as no kernel probe uses the map
 *     otherwise than through clear(), zero(), delete() and print() (its
 *     keys would be on the other side: run_side_use());
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

/* ---- what a probe body needs --------------------------------------- */

/*
 * Maps that something other than an aggregation statement or print()
 * touches: a user-mode probe must not aggregate into them, since those
 * reads and writes would see one side only.
 */
struct run_scan {
	struct compile *c;
	bool *plain;		/* by sema map id */
	bool *shared;		/* by sema map id: an ordinary map user mode
				 * holds (run_scan_shared()) */
	bool *aggread;		/* by sema map id: an aggregation read
				 * as a value somewhere */
	bool *aggiter;		/* by sema map id: an aggregation
				 * iterated (for, len()) somewhere */
	const char *why;	/* the first thing user mode lacks */
};

static bool run_is_agg(enum sema_func f)
{
	return f >= FN_COUNT && f <= FN_LHIST;
}

static bool run_agg_map(const struct sema_map *sm)
{
	return sm->agg != FN_NONE || type_is_aggregation(sm->value);
}

/*
 * Maps that are not aggregations, used only by reads, assignments,
 * delete(), has_key(), clear(), zero(), print(), for and len(): user-mode
 * probes keep them in one table shared by all threads, which native code
 * iterates slot by slot (RT_FN_SHTAB_NEXT).
 */
static int run_scan_shared(struct ast_node *n, void *ctx)
{
	struct run_scan *s = ctx;
	struct sema_map *sm = n->sema ? n->sema->map : NULL;

	if (n->kind == AST_CALL && sm && n->sema->func != FN_DELETE &&
	    n->sema->func != FN_PRINT && n->sema->func != FN_HAS_KEY &&
	    n->sema->func != FN_CLEAR && n->sema->func != FN_ZERO &&
	    n->sema->func != FN_LEN)
		s->shared[sm->id] = false;
	return ast_visit_children(n, run_scan_shared, ctx);
}

/*
 * fn on the arguments of call, but of a map argument (delete(@m[k]),
 * clear(@m)) only on its keys: the map itself is not read.
 */
static void run_visit_keys(struct ast_node *call,
			   int (*fn)(struct ast_node *, void *), void *ctx)
{
	for (struct ast_node *a = call->call.args; a; a = a->next) {
		if (a->kind != AST_MAP) {
			fn(a, ctx);
			continue;
		}
		for (struct ast_node *k = a->map.keys; k; k = k->next)
			fn(k, ctx);
	}
}

static int run_scan_plain(struct ast_node *n, void *ctx)
{
	struct run_scan *s = ctx;
	struct sema_map *im = NULL;

	/* for and len() over an aggregation: the map is iterated, not read
	 * (run_side_use() says which probes must share its side) */
	if (n->kind == AST_FOR_MAP && n->for_.map && n->for_.map->sema)
		im = n->for_.map->sema->map;
	else if (n->kind == AST_CALL && n->sema &&
		 n->sema->func == FN_LEN)
		im = n->sema->map;
	if (im && run_agg_map(im)) {
		s->aggiter[im->id] = true;
		return n->kind == AST_FOR_MAP && n->for_.body ?
			       run_scan_plain(n->for_.body, ctx) : 0;
	}

	if (n->kind == AST_ASSIGN && n->assign.lhs &&
	    n->assign.lhs->kind == AST_MAP && n->assign.rhs &&
	    n->assign.rhs->kind == AST_CALL && n->assign.rhs->sema &&
	    run_is_agg(n->assign.rhs->sema->func)) {
		/* the aggregation's map itself is fine: only its keys and
		 * arguments are scanned */
		for (struct ast_node *k = n->assign.lhs->map.keys; k;
		     k = k->next)
			run_scan_plain(k, ctx);
		return run_scan_plain(n->assign.rhs, ctx);
	}
	if (n->kind == AST_CALL && n->sema && n->sema->func == FN_PRINT &&
	    n->call.args && n->call.args->kind == AST_MAP &&
	    !n->call.args->map.keys)
		return 0;
	if (n->kind == AST_MAP && n->sema && n->sema->map) {
		/* a read: an aggregation's value stays one per thread */
		if (run_agg_map(n->sema->map))
			s->aggread[n->sema->map->id] = true;
		else
			s->plain[n->sema->map->id] = true;
	}
	if (n->kind == AST_CALL && n->sema && n->sema->map &&
	    (n->sema->func == FN_CLEAR || n->sema->func == FN_ZERO) &&
	    run_agg_map(n->sema->map)) {
		/* ubt clears or zeroes every thread's values too */
		return 0;
	} else if (n->kind == AST_CALL && n->sema && n->sema->map &&
		   n->sema->func == FN_DELETE && run_agg_map(n->sema->map)) {
		/* a delete() on either side tells ubt (CG_EV_DELETE) */
		run_visit_keys(n, run_scan_plain, ctx);
		return 0;
	} else if (n->kind == AST_CALL && n->sema && n->sema->map &&
		 !run_is_agg(n->sema->func) && n->sema->func != FN_PRINT)
		s->plain[n->sema->map->id] = true;
	return ast_visit_children(n, run_scan_plain, ctx);
}

static const char *run_builtin_ok(enum sema_builtin b)
{
	switch (b) {
	case BI_PID:
	case BI_TID:
	case BI_UID:
	case BI_GID:
	case BI_COMM:
	case BI_NSECS:
	case BI_ELAPSED:
	case BI_CPU:
	case BI_NUMAID:		/* getcpu(2)'s node */
	case BI_CPID:
	case BI_ARG:
	case BI_SARG:
	case BI_RETVAL:
	case BI_RAND:
	case BI_USERNAME:
	case BI_FUNC:
	case BI_PROBE:
	case BI_ARGS:		/* registers in the probe's pt_regs */
		return NULL;
	case BI_NONE:
		return "an unknown builtin";
	default:
		/* the kernel's own state: curtask, cgroup, jiffies, ctx (the
		 * kernel's pt_regs), the stacks */
		return sema_builtin_name(b);
	}
}

static const char *run_func_ok(struct compile *c, enum sema_func f)
{
	switch (f) {
	case FN_COUNT:
	case FN_SUM:
	case FN_AVG:
	case FN_MIN:
	case FN_MAX:
	case FN_STATS:
	case FN_HIST:
	case FN_LHIST:
	case FN_PRINTF:
	case FN_PRINT:
	case FN_TIME:
	case FN_EXIT:
	case FN_STR:
	case FN_SYSTEM:
	case FN_CAT:
	case FN_STRNCMP:
	case FN_STRCONTAINS:
	case FN_USYM:		/* an address and the pid, resolved by ubt */
	case FN_UPTR:
		return NULL;
	case FN_NONE:
		return "an unknown function";
	default:
		/* clear(), zero(), delete(), len() are accepted by
		 * run_scan_body() where user mode has them; kptr()
		 * reads kernel memory */
		return arena_printf(&c->arena, "%s()",
				    sema_func_name(f));
	}
}

static bool run_is_tid(const struct ast_node *k)
{
	return k && !k->next && k->kind == AST_BUILTIN && k->sema &&
	       k->sema->builtin == BI_TID;
}

/*
 * Ordinary maps only ever used as @m[tid] (read, assigned, deleted,
 * printed): a thread only reaches its own entry, so per-thread tables
 * (no atomics) hold exactly what the shared one would: the latency idiom
 * @start[tid]. By sema map id, false for anything else.
 */
static int run_scan_thread(struct ast_node *n, void *ctx)
{
	bool *thr = ctx;
	struct sema_map *sm = n->sema ? n->sema->map : NULL;

	if (n->kind == AST_MAP && sm && !run_is_tid(n->map.keys))
		thr[sm->id] = false;
	if (n->kind == AST_CALL && sm && n->sema->func != FN_DELETE &&
	    n->sema->func != FN_PRINT)
		thr[sm->id] = false;
	if (n->kind == AST_FOR_MAP && n->for_.map && n->for_.map->sema &&
	    n->for_.map->sema->map)
		thr[n->for_.map->sema->map->id] = false;
	return ast_visit_children(n, run_scan_thread, ctx);
}

static bool *run_thread_maps(struct compile *c)
{
	struct sema_program *sp = c->sema;
	bool *thr = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(bool));

	for (int i = 0; i < sp->nmaps; i++)
		thr[i] = !run_agg_map(sp->maps[i]);
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		ast_visit_children(p, run_scan_thread, thr);
	return thr;
}

/* Why an assignment to map lhs needs the kernel. */
static const char *run_assign_why(struct run_scan *s, struct ast_node *lhs)
{
	const struct sema_map *sm = lhs->sema ? lhs->sema->map : NULL;

	if (sm && run_agg_map(sm))
		return arena_printf(&s->c->arena,
				    "assigning to aggregation map %s",
				    lhs->map.name);
	return arena_printf(&s->c->arena,
			    "assigning map %s (not a hash map, or more than "
			    "64 probes)",
			    lhs->map.name);
}

/*
 * Why iterating sm ("for over" or "len() of" it) needs the kernel, NULL
 * when the shared table holds it, or when it is a keyed aggregation
 * (count, sum, min, max, avg, stats): every thread's keys with the
 * calling thread's values (RT_FN_HTAB_NEXT_ALL), as long as no kernel
 * probe writes or reads it (run_side_use()).
 */
static const char *run_iter_why(struct run_scan *s,
				const struct sema_map *sm, const char *what)
{
	if (!sm)
		return "a map iteration without a map";
	if (s->shared[sm->id])
		return NULL;
	if (run_agg_map(sm) && sm->key && s->c->sema->nprobes <= 64 &&
	    sm->value && sm->value->kind != TY_HIST &&
	    sm->value->kind != TY_LHIST)
		return NULL;
	if (run_agg_map(sm))
		return arena_printf(&s->c->arena, "%s %saggregation map %s%s",
				    what, sm->key ? "" : "keyless ",
				    sm->name,
				    s->c->sema->nprobes > 64 ?
					    " (more than 64 probes)" : "");
	return arena_printf(&s->c->arena,
			    "%s map %s (not a hash map, or more than 64 "
			    "probes)",
			    what, sm->name);
}

static int run_scan_body(struct ast_node *n, void *ctx)
{
	struct run_scan *s = ctx;
	const char *why = NULL;

	switch (n->kind) {
	case AST_BUILTIN:
		why = run_builtin_ok(n->sema ? n->sema->builtin : BI_NONE);
		break;
	case AST_CALL:
		why = run_func_ok(s->c, n->sema ? n->sema->func : FN_NONE);
		if (why && n->sema->func == FN_LEN)
			why = run_iter_why(s, n->sema->map, "len() of");
		if (why && (n->sema->func == FN_DELETE ||
			    n->sema->func == FN_HAS_KEY ||
			    n->sema->func == FN_CLEAR ||
			    n->sema->func == FN_ZERO) &&
		    n->sema->map && s->shared[n->sema->map->id])
			why = NULL;
		if (why && (n->sema->func == FN_CLEAR ||
			    n->sema->func == FN_ZERO ||
			    n->sema->func == FN_DELETE) && n->sema->map &&
		    run_agg_map(n->sema->map) && !s->plain[n->sema->map->id])
			why = NULL;
		if (!why && n->sema && run_is_agg(n->sema->func) &&
		    n->sema->map && s->plain[n->sema->map->id])
			why = arena_printf(&s->c->arena,
					   "map %s (also used outside "
					   "aggregations)",
					   n->sema->map->name);
		break;
	case AST_FOR_MAP:
		why = run_iter_why(s, n->for_.map && n->for_.map->sema ?
					      n->for_.map->sema->map : NULL,
				   "for over");
		break;
	case AST_ASSIGN:
		if (n->assign.lhs && n->assign.lhs->kind == AST_MAP &&
		    !(n->assign.rhs && n->assign.rhs->kind == AST_CALL &&
		      n->assign.rhs->sema &&
		      run_is_agg(n->assign.rhs->sema->func)) &&
		    !(n->assign.lhs->sema && n->assign.lhs->sema->map &&
		      s->shared[n->assign.lhs->sema->map->id]))
			why = run_assign_why(s, n->assign.lhs);
		break;
	case AST_MAP:
		/* outside aggregations and print(@m): a read */
		break;
	default:
		break;
	}
	if (why) {
		s->why = why;
		return 1;
	}
	if (n->kind == AST_ASSIGN && n->assign.lhs &&
	    n->assign.lhs->kind == AST_MAP) {
		for (struct ast_node *k = n->assign.lhs->map.keys; k;
		     k = k->next)
			if (run_scan_body(k, ctx))
				return 1;
		return run_scan_body(n->assign.rhs, ctx);
	}
	if (n->kind == AST_CALL && n->sema && n->sema->func == FN_PRINT &&
	    n->call.args && n->call.args->kind == AST_MAP &&
	    !n->call.args->map.keys)
		return 0;
	if (n->kind == AST_MAP &&
	    !(n->sema && n->sema->map &&
	      (s->shared[n->sema->map->id] || run_agg_map(n->sema->map)))) {
		s->why = arena_printf(&s->c->arena, "reading map %s",
				      n->map.name);
		return 1;
	}
	return ast_visit_children(n, run_scan_body, ctx);
}

/*
 * Probes that use a map otherwise than through clear(), zero(), delete()
 * and print() (which reach every side: run_map_hook()): those of an
 * iterated aggregation must run on one side, since the user side's
 * iteration does not see the kernel's keys, nor the kernel's the user
 * side's.
 */
struct run_use {
	uint64_t *use;		/* by sema map id: probe bits */
	uint64_t bit;
};

static int run_scan_use(struct ast_node *n, void *ctx)
{
	struct run_use *u = ctx;
	enum sema_func f = n->kind == AST_CALL && n->sema ? n->sema->func :
							    FN_NONE;

	if (f == FN_CLEAR || f == FN_ZERO || f == FN_PRINT ||
	    f == FN_DELETE) {
		run_visit_keys(n, run_scan_use, ctx);
		return 0;
	}
	if (n->kind == AST_MAP && n->sema && n->sema->map)
		u->use[n->sema->map->id] |= u->bit;
	return ast_visit_children(n, run_scan_use, ctx);
}

static uint64_t *run_side_use(struct compile *c)
{
	struct sema_program *sp = c->sema;
	struct run_use u;

	u.use = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(*u.use));
	memset(u.use, 0, (sp->nmaps + 1) * sizeof(*u.use));
	for (struct ast_node *p = c->program->program.probes; p;
	     p = p->next) {
		if (p->probe.index >= 64)
			continue;
		u.bit = 1ull << p->probe.index;
		ast_visit_children(p, run_scan_use, &u);
	}
	return u.use;
}

/* ---- where the probe's sites are ----------------------------------- */

/* Is path (resolved) mapped in /proc/pid/maps? */
static bool run_mapped_in(int pid, const char *path)
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
static bool run_cmd_exe(const char *cmd, char *out, size_t len)
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
static bool run_loaded_at_start(const char *exe, const char *lib)
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

static bool run_in_target(const struct run_opts *o, const char *bin)
{
	char exe[PATH_MAX], rp[PATH_MAX];

	if (o->pid > 0)
		return run_mapped_in(o->pid, bin);
	if (!o->cmd || !run_cmd_exe(o->cmd, exe, sizeof(exe)) ||
	    !realpath(bin, rp))
		return false;
	return !strcmp(exe, rp) || run_loaded_at_start(exe, rp);
}

/* Expand an attach point without reporting (cg_build reports later). */
static int run_expand(struct compile *c, struct ast_node *p,
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

static int run_find_sarg(struct ast_node *n, void *ctx)
{
	(void)ctx;
	if (n->kind == AST_BUILTIN && n->sema && n->sema->builtin == BI_SARG)
		return 1;
	return ast_visit_children(n, run_find_sarg, NULL);
}

static const char *run_probe_sites(struct compile *c,
				   const struct run_opts *o,
				   struct ast_node *p)
{
	char reason[256];
	bool sarg = (p->probe.pred && run_find_sarg(p->probe.pred, NULL)) ||
		    (p->probe.body && run_find_sarg(p->probe.body, NULL));

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
		err = run_expand(c, p, ap, &m, &n);
		if (err || !n)
			return "its attach point does not resolve";
		for (int i = 0; i < n; i++) {
			if (!m[i].target || !m[i].func)
				return "an address without a function";
			if (!run_in_target(o, m[i].target))
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

static const char *run_probe_name(struct compile *c, struct ast_node *p)
{
	struct sema_probe *sp = c->sema->probes[p->probe.index];

	if (p->probe.aps && p->probe.aps->ap.raw)
		return p->probe.aps->ap.raw;
	return sp && sp->name ? sp->name : "probe";
}

/* The functions a uprobe probe's attach points resolve to. */
struct run_sites {
	char **bins;		/* resolved paths */
	const char **funcs;
	int n;
	bool sarg;		/* the probe reads stack arguments */
};


static void run_collect_sites(struct compile *c, struct ast_node *p,
			      struct run_sites *rs)
{
	char rp[PATH_MAX];
	int cap = 0;

	memset(rs, 0, sizeof(*rs));
	rs->sarg = (p->probe.pred && run_find_sarg(p->probe.pred, NULL)) ||
		   (p->probe.body && run_find_sarg(p->probe.body, NULL));
	for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next) {
		struct probes_match *m = NULL;
		int n = 0;
		const char *prov = ap->ap.provider ? ap->ap.provider : "";

		if ((strcmp(prov, "uprobe") && strcmp(prov, "uretprobe")) ||
		    run_expand(c, p, ap, &m, &n))
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
static const char *run_shared_site(struct compile *c,
				   const struct run_sites *a,
				   const struct run_sites *b)
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
static void run_conflicts(struct compile *c, struct run_decision *d,
			  struct run_sites *sites, const uint64_t *one_side,
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
				at = run_shared_site(c, &sites[i], &sites[j]);
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
static bool run_is_uprobe(struct ast_node *p)
{
	for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next)
		if (!ap->ap.provider || (strcmp(ap->ap.provider, "uprobe") &&
					 strcmp(ap->ap.provider, "uretprobe")))
			return false;
	return p->probe.aps != NULL;
}

int run_decide(struct compile *c, const struct run_opts *o,
	       struct run_decision **out)
{
	struct sema_program *sp = c->sema;
	struct run_decision *d;
	struct run_sites *sites;
	struct run_scan s = { .c = c };
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
		s.shared[i] = !run_agg_map(sp->maps[i]) && sp->nprobes <= 64 &&
			   (!sp->maps[i]->bpf_type ||
			    !strcmp(sp->maps[i]->bpf_type, "hash"));
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		ast_visit_children(p, run_scan_plain, &s);
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		ast_visit_children(p, run_scan_shared, &s);
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
		if (proc_why && run_is_uprobe(p)) {
			r->why = proc_why;
			continue;
		}
		if (o->pid || o->cmd)
			run_collect_sites(c, p, &sites[p->probe.index]);
		r->why = run_probe_sites(c, o, p);
		if (!r->why) {
			s.why = NULL;
			if (p->probe.pred)
				run_scan_body(p->probe.pred, &s);
			if (!s.why && p->probe.body)
				run_scan_body(p->probe.body, &s);
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
	use = run_side_use(c);
	for (int i = 0; i < sp->nmaps; i++) {
		one_side[i] = 0;
		if ((s.aggread[i] && sp->nprobes <= 64) || s.shared[i])
			one_side[i] = sp->maps[i]->probes;
		else if (s.aggiter[i] && sp->nprobes <= 64)
			one_side[i] = use[i];
	}
	if (o->mode != MODE_KERNEL)
		run_conflicts(c, d, sites, one_side, s.aggiter);
	for (struct ast_node *p = c->program->program.probes;
	     p && o->mode == MODE_USER; p = p->next) {
		const char *prov = p->probe.aps && p->probe.aps->ap.provider ?
					   p->probe.aps->ap.provider : "";

		if (d[p->probe.index].where == RUN_USER ||
		    (strcmp(prov, "uprobe") && strcmp(prov, "uretprobe")))
			continue;
		fprintf(stderr, "ubt: cannot run %s in user mode: %s\n",
			run_probe_name(c, p), d[p->probe.index].why);
		err = -EINVAL;
	}
	*out = d;
	return err;
}


static void run_kernel_opts(const struct run_opts *o, struct kernel_opts *ko)
{
	*ko = (struct kernel_opts){
		.sz = sizeof(*ko),
		.pid = o->pid,
		.cmd = o->cmd,
		.dry_run = o->dry_run,
		.dump_ir = o->dump_ir,
		.dump_bpf = o->dump_bpf,
		.verbose = o->verbose,
		.quiet = o->quiet,
		.out = o->out,
		.json = o->json,
	};
}

/* ---- kernel and user mode together -------------------------------- */

/*
 * Per thread, a power of two: with printf events 1 MiB (32768 records of
 * two integers, RUN_POLL_MS at 3M events/s per thread; pages are touched
 * only as far as the ring is used), else 64 KiB.
 */
#define RUN_RING_SIZE (64 * 1024)
#define RUN_RING_SIZE_EVENTS (1024 * 1024)
/* idle user rings are read this often (the kernel ring wakes ubt at once) */
#define RUN_POLL_MS 10
/* a drain that took this many events goes on at once, fewer wait 1 ms */
#define RUN_BUSY_EVENTS 256

static volatile sig_atomic_t run_sigint;

/*
 * The first SIGINT/SIGTERM ends the run the ordinary way; a second one
 * (whatever ubt waits for meanwhile) ends ubt at once.
 */
static void run_on_signal(int sig)
{
	if (run_sigint) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	run_sigint = 1;
}

/* The ubt the user started died: end the run, quietly (shim/guard.c). */
static void run_on_orphan(void)
{
	run_sigint = 1;
}

/*
 * What ubt keeps for a keyless aggregation of user-mode probes (FIXED and
 * ARRAY native maps). The owning thread increments its values with plain
 * read-modify-writes (incq %fs:...), so ubt never stores over an additive
 * value: a store between the owner's load and store would be undone.
 * clear() and zero() take a baseline instead (base := current, per block)
 * and the value read is current - base. Only min/max values (and a sum's
 * presence word) are reset by stores, which a racing update may undo.
 */
struct run_agg {
	uint64_t *base;		/* nwords per block, nblocks blocks */
	uint32_t nblocks, nwords;
	bool zeroed;		/* FIXED: zero() kept the value: present */
	bool *present;		/* ARRAY: buckets zero() kept */
};

struct run {
	struct compile *c;
	const struct run_opts *o;
	const struct run_decision *d;
	struct cg_object *kobj, *nobj;
	struct cg_object merged;	/* kernel object + native events */
	struct kernel *k;
	struct ubt_user *u;
	pid_t cpid;		/* -c child */
	bool reaped;		/* it exited and was reaped: */
	int status;		/* its wait status, -1 if not known */
	int pidfd;		/* -p, -c: readable once the process exits */
	uint64_t lost;		/* user-ring losses reported */
	/*
	 * printf events of the user rings whose arguments print as they are
	 * (integers, strings): formatted here straight into the output, one
	 * flush per drained batch (by native event id; NULL .text: through
	 * kernel_handle_event(), which flushes per event)
	 */
	struct fmt_string *ufmts;
	struct out uout;
	struct run_agg *agg;	/* by kernel map index */
	int64_t ev_block;	/* the block of the user event being handled,
				 * -1 for the kernel's */
	int64_t queued_block;	/* the block a queued user event came from
				 * (merged events), -1: the one just read */
	/*
	 * Kernel and user-mode probes both print at run time: every record
	 * ends in a time stamp (cg.h enum cg_event_time) and the records of
	 * both sides go through a queue, printed in time order (merge.h);
	 * CG_TIME_NONE: each side prints as it is read
	 */
	enum cg_event_time etime;
	struct merge_clock clock;	/* CG_TIME_TSC: user-side stamps */
	struct merge_queue q;
	bool stopped;		/* an exit() was read: probes stopped */
	uint64_t ustart;	/* mono_ns() before the user probes ran */
};

static bool run_want_kernel(void *ctx, const struct ast_node *probe)
{
	const struct run *r = ctx;

	return r->d[probe->probe.index].where == RUN_KERNEL;
}

static bool run_want_user(void *ctx, const struct ast_node *probe)
{
	const struct run *r = ctx;

	return r->d[probe->probe.index].where == RUN_USER;
}

/* The events of both objects in one table: native ids follow the kernel's. */
static void run_merge_events(struct run *r)
{
	int nk = r->kobj->nevents, nn = r->nobj->nevents;
	struct cg_event *ev = arena_alloc(&r->c->arena,
					  (nk + nn + 1) * sizeof(*ev));

	if (nk)
		memcpy(ev, r->kobj->events, nk * sizeof(*ev));
	if (nn)
		memcpy(ev + nk, r->nobj->events, nn * sizeof(*ev));
	r->merged = *r->kobj;
	r->merged.events = ev;
	r->merged.nevents = nk + nn;
}

static const struct native_map *run_native_map(const struct run *r, int map)
{
	const char *name = r->kobj->maps[map].bpf_name;

	for (int i = 0; i < r->nobj->nnative_maps; i++)
		if (!strcmp(r->nobj->native_maps[i].name, name))
			return &r->nobj->native_maps[i];
	return NULL;
}

/* ubt's own description of a shared table (never the memfd's header) */
#define run_shtab_of(nm)                                                    \
	((struct memfd_shtab){ .off = (nm)->off,                            \
			       .nslots = (nm)->nslots,                      \
			       .key_size = (nm)->key_size,                  \
			       .val_size = (nm)->val_size,                  \
			       .max_probe = (nm)->max_probe,                \
			       .max_keys = (nm)->max_keys })

/* One map's entries from both sides, merged like per-CPU values. */
struct run_entries {
	const struct cg_map *m;
	size_t ksz, vsz;
	unsigned char *keys, *vals;
	size_t n, cap;
	size_t *hash;		/* open addressing over entries + 1 */
	size_t nhash;
};

static uint64_t run_hash(const void *key, size_t n)
{
	const unsigned char *p = key;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static void run_entries_rehash(struct run_entries *e)
{
	free(e->hash);
	e->nhash = e->nhash ? 2 * e->nhash : 256;
	e->hash = xcalloc(e->nhash, sizeof(*e->hash));
	for (size_t i = 0; i < e->n; i++) {
		size_t h = run_hash(e->keys + i * e->ksz, e->ksz) &
			   (e->nhash - 1);

		while (e->hash[h])
			h = (h + 1) & (e->nhash - 1);
		e->hash[h] = i + 1;
	}
}

static int run_entries_add(const void *key, const void *value, void *ctx)
{
	struct run_entries *e = ctx;
	size_t h;

	if (2 * (e->n + 1) > e->nhash)
		run_entries_rehash(e);
	h = run_hash(key, e->ksz) & (e->nhash - 1);
	while (e->hash[h]) {
		size_t i = e->hash[h] - 1;

		if (!memcmp(e->keys + i * e->ksz, key, e->ksz)) {
			kernel_merge_value(e->m, e->vals + i * e->vsz, value);
			return 0;
		}
		h = (h + 1) & (e->nhash - 1);
	}
	if (e->n == e->cap) {
		e->cap = e->cap ? 2 * e->cap : 64;
		e->keys = xrealloc(e->keys, e->cap * e->ksz);
		e->vals = xrealloc(e->vals, e->cap * e->vsz);
	}
	memcpy(e->keys + e->n * e->ksz, key, e->ksz);
	memset(e->vals + e->n * e->vsz, 0, e->vsz);
	memcpy(e->vals + e->n * e->vsz, value, e->m->value_size);
	e->hash[h] = ++e->n;
	return 0;
}

static bool run_nonzero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return true;
	return false;
}

/* Word w of a FIXED value of m: added to (by the probe) or stored? */
static bool run_additive(const struct cg_map *m, uint32_t w)
{
	switch (m->value_type ? m->value_type->kind : TY_INT) {
	case TY_COUNT:
	case TY_SUM:		/* word 1: the presence word, stored */
		return w == 0;
	case TY_AVG:
	case TY_STATS:
		return w < 2;
	default:		/* min/max: { value, set } */
		return false;
	}
}

struct run_block_read {
	struct run_entries *e;
	const struct native_map *nm;
	struct run_agg *a;
};

/* Block i's words of a FIXED/ARRAY value, less the baseline. */
static void run_unbase(const struct run_agg *a, const struct cg_map *m,
		       bool array, uint32_t block, uint64_t *v, uint32_t n)
{
	if (!a || block >= a->nblocks)
		return;
	for (uint32_t w = 0; w < n && w < a->nwords; w++)
		if (array || run_additive(m, w))
			v[w] -= a->base[(uint64_t)block * a->nwords + w];
}

static int run_block_fixed(const void *data, uint32_t block, void *arg)
{
	struct run_block_read *b = arg;
	const struct cg_map *m = b->e->m;
	uint64_t key[8] = { 0 }, v[64];
	bool sum = m->value_type && m->value_type->kind == TY_SUM;

	if (b->e->ksz > sizeof(key) || b->nm->bytes > sizeof(v) ||
	    m->value_size > b->nm->bytes || (sum && b->nm->bytes < 16))
		return -EINVAL;
	memcpy(v, data, b->nm->bytes);
	run_unbase(b->a, m, false, block, v, b->nm->bytes / 8);
	/* sum(0) leaves the value 0: its presence word says it ran */
	if (run_nonzero(v, m->value_size) || (sum && v[1]))
		run_entries_add(key, v, b->e);
	return 0;
}

static int run_block_array(const void *data, uint32_t block, void *arg)
{
	struct run_block_read *b = arg;
	const uint64_t *d = data;

	if (b->e->ksz != 8)
		return -EINVAL;
	for (uint64_t i = 0; i < b->nm->nslots; i++) {
		uint64_t v = d[i];

		if (b->a && block < b->a->nblocks && i < b->a->nwords)
			v -= b->a->base[(uint64_t)block * b->a->nwords + i];
		if (v)
			run_entries_add(&i, &v, b->e);
	}
	return 0;
}

static int run_block_htab(const void *key, const void *val, uint32_t block,
			  void *arg)
{
	(void)block;
	return run_entries_add(key, val, arg);
}

/* kernel_map_read() through the run: the kernel's values and the user's. */
static int run_map_source(void *ctx, int map, kernel_entry_fn fn, void *fctx)
{
	struct run *r = ctx;
	const struct cg_map *m = &r->kobj->maps[map];
	const struct native_map *nm = r->u ? run_native_map(r, map) : NULL;
	struct run_entries e = { .m = m, .ksz = m->key_size,
				 .vsz = rt_align8(m->value_size) };
	struct run_block_read b = { .e = &e, .nm = nm,
				    .a = r->agg ? &r->agg[map] : NULL };
	uint64_t zero[64] = { 0 };
	int err;

	run_entries_rehash(&e);
	err = kernel_map_read_kernel(r->k, map, run_entries_add, &e);
	if (!err && nm) {
		struct memfd_htab t = { .off = nm->off, .nslots = nm->nslots,
					.key_size = nm->key_size,
					.val_size = nm->val_size };

		switch (nm->kind) {
		case NATIVE_MAP_FIXED:
			err = user_read_maps(r->u, nm->off, nm->bytes,
					     run_block_fixed, &b);
			/* zero() kept the key: present with a zero value */
			if (!err && b.a && b.a->zeroed &&
			    m->value_size <= sizeof(zero))
				run_entries_add(zero, zero, &e);
			break;
		case NATIVE_MAP_ARRAY:
			err = user_read_maps(r->u, nm->off, nm->bytes,
					     run_block_array, &b);
			for (uint64_t i = 0; !err && b.a && b.a->present &&
					     i < nm->nslots;
			     i++)
				if (b.a->present[i])
					run_entries_add(&i, zero, &e);
			break;
		case NATIVE_MAP_HTAB:
			err = memfd_htab_foreach(user_memfd(r->u), &t,
						 run_block_htab, &e);
			break;
		case NATIVE_MAP_SHARED:
			err = memfd_shtab_foreach(user_memfd(r->u),
						  &run_shtab_of(nm),
						  run_entries_add, &e);
			break;
		}
	}
	for (size_t i = 0; !err && i < e.n; i++)
		err = fn(e.keys + i * e.ksz, e.vals + i * e.vsz, fctx);
	free(e.keys);
	free(e.vals);
	free(e.hash);
	return err;
}

/*
 * A keyless aggregation's clear() or zero() on the user side: the
 * baselines of additive words move to the current values (run_agg),
 * min/max values and sum's presence word are stored over (a racing
 * update may survive). zero() keeps what was present.
 */
static void run_agg_reset(struct run *r, int map, const struct native_map *nm,
			  bool zero)
{
	struct memfd *mf = user_memfd(r->u);
	const struct cg_map *m = &r->kobj->maps[map];
	struct run_agg *a = &r->agg[map];
	bool array = nm->kind == NATIVE_MAP_ARRAY;
	uint32_t n = memfd_nblocks_used(mf), nw = nm->bytes / 8;
	uint64_t v[64];

	if (array ? nw != nm->nslots : nw > 64)
		return;
	if (array && !a->present)
		a->present = xcalloc(nm->nslots, sizeof(bool));
	if (n > a->nblocks) {
		a->base = xrealloc(a->base, (uint64_t)n * nw * 8);
		memset(a->base + (uint64_t)a->nblocks * nw, 0,
		       (uint64_t)(n - a->nblocks) * nw * 8);
		a->nblocks = n;
		a->nwords = nw;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t *base = a->base + (uint64_t)i * nw;

		for (uint32_t w = 0; w < nw; w++) {
			uint64_t cur, d;

			if (memfd_map_read(mf, i, nm->off + 8 * w, &cur, 8))
				return;
			d = cur - base[w];
			if (!array)
				v[w] = d;
			else if (zero && d)
				a->present[w] = true;
			if (array || run_additive(m, w))
				base[w] = cur;
		}
		if (!array && zero &&
		    (run_nonzero(v, m->value_size) ||
		     (m->value_type && m->value_type->kind == TY_SUM && v[1])))
			a->zeroed = true;
	}
	if (!zero) {
		a->zeroed = false;
		if (array)
			memset(a->present, 0, nm->nslots * sizeof(bool));
	}
	/* the words that are stored, not added to */
	for (uint32_t w = 0; !array && w < nw; w++)
		if (!run_additive(m, w))
			memfd_map_zero(mf, nm->off + 8 * w, 8);
}

/*
 * clear(), zero() and a user-mode probe's delete() of a map user-mode
 * probes write, from events of either side (kernel_set_map_hook(); the
 * kernel's map was done by then): ubt empties or zeroes the map's shared
 * table, or every thread's values, itself, in the order of the events
 * of the probe's side, as bpftrace does it asynchronously. A delete()
 * already removed the key from its own thread's table (which the thread
 * may have filled again since): the others only, asynchronously.
 */
static void run_map_hook(void *ctx, int kind, int map, const void *key)
{
	struct run *r = ctx;
	struct memfd *m = user_memfd(r->u);
	const struct native_map *nm;
	struct memfd_htab t;

	if (map < 0 || map >= r->kobj->nmaps)
		return;
	nm = run_native_map(r, map);
	if (!nm)
		return;
	t = (struct memfd_htab){ .off = nm->off, .nslots = nm->nslots,
				 .key_size = nm->key_size,
				 .val_size = nm->val_size };
	switch (nm->kind) {
	case NATIVE_MAP_SHARED:
		if (kind == CG_EV_CLEAR)
			memfd_shtab_clear(m, &run_shtab_of(nm));
		else if (kind == CG_EV_ZERO)
			memfd_shtab_zero(m, &run_shtab_of(nm));
		break;
	case NATIVE_MAP_FIXED:
	case NATIVE_MAP_ARRAY:
		if (kind == CG_EV_CLEAR || kind == CG_EV_ZERO)
			run_agg_reset(r, map, nm, kind == CG_EV_ZERO);
		break;
	case NATIVE_MAP_HTAB:
		if (kind == CG_EV_CLEAR)
			memfd_htab_clear(m, &t);
		else if (kind == CG_EV_ZERO)
			memfd_htab_zero(m, &t);
		else if (kind == CG_EV_DELETE && key) {
			if (r->ev_block >= 0)
				t.skip = (uint32_t)r->ev_block + 1;
			memfd_htab_delete(m, &t, key);
		}
		break;
	}
}

/* A record from a user ring: a native event id, checked, then printed. */
static int run_user_event(uint32_t type, const void *data, uint32_t len,
			  void *arg)
{
	struct run *r = arg;
	unsigned char *copy;
	uint64_t id;

	if (type != NATIVE_REC_EVENT || len < sizeof(id))
		return 0;
	memcpy(&id, data, sizeof(id));
	if (id >= (uint64_t)r->nobj->nevents)
		return 0;
	if (r->ufmts && r->ufmts[id].text && !kernel_exiting(r->k)) {
		const struct type *t = r->nobj->events[id].args_type;

		if (len - sizeof(id) >= t->size)
			out_printf(&r->uout, &r->ufmts[id], t,
				   (const char *)data + sizeof(id),
				   len - sizeof(id));
		return 0;
	}
	copy = xmalloc(len);
	memcpy(copy, data, len);
	id += r->kobj->nevents;
	memcpy(copy, &id, sizeof(id));
	r->ev_block = r->queued_block >= 0 ? r->queued_block :
					      user_event_block(r->u);
	kernel_handle_event(r->k, copy, len);
	r->ev_block = -1;
	free(copy);
	return 0;
}

/* Arguments that print as their bytes: no producer context needed. */
static bool run_plain_args(const struct type *t)
{
	if (!t || t->kind != TY_TUPLE)
		return false;
	for (int i = 0; i < t->nfields; i++)
		switch (t->fields[i].type->kind) {
		case TY_INT:
		case TY_BOOL:
		case TY_POINTER:
		case TY_STRING:
			break;
		default:
			return false;
		}
	return true;
}

static void run_fast_init(struct run *r)
{
	r->ufmts = arena_alloc(&r->c->arena, (r->nobj->nevents + 1) *
						     sizeof(*r->ufmts));
	memset(r->ufmts, 0, (r->nobj->nevents + 1) * sizeof(*r->ufmts));
	for (int i = 0; i < r->nobj->nevents; i++) {
		const struct cg_event *e = &r->nobj->events[i];

		if (e->kind == CG_EV_PRINTF && e->fmt &&
		    run_plain_args(e->args_type))
			fmt_parse(&r->c->arena, e->fmt, strlen(e->fmt),
				  &r->ufmts[i]);
	}
	out_init(&r->uout, r->o->out ? r->o->out : stdout,
		 r->o->json ? OUT_JSON : OUT_TEXT);
}

/*
 * Empty the user rings, again while they had data (a busy producer keeps
 * them filling), at most RUN_DRAIN_PASSES times (then the kernel ring,
 * signals and exit() get their turn); one flush at the end.  Returns the
 * number of events taken.
 */
#define RUN_DRAIN_PASSES 4

static int run_user_take(uint32_t type, const void *data, uint32_t len,
			 void *arg);

static int run_user_drain(struct run *r)
{
	uint64_t lost;
	int total = 0, n;

	if (!r->u)
		return 0;
	if (!r->ufmts)
		run_fast_init(r);
	/* merged: one pass reads everything written before the round began */
	for (int pass = 0; pass < (r->etime ? 1 : RUN_DRAIN_PASSES); pass++) {
		n = user_read_events(r->u, r->etime ? run_user_take :
						      run_user_event, r);
		if (n <= 0)
			break;
		total += n;
	}
	fflush(r->uout.f);
	lost = user_lost_events(r->u);
	if (lost > r->lost) {
		struct out out;

		out_init(&out, r->o->out ? r->o->out : stdout,
			 r->o->json ? OUT_JSON : OUT_TEXT);
		out_lost_events(&out, lost - r->lost);
		fflush(out.f);
		r->lost = lost;
	}
	return total;
}

/* ---- kernel and user-mode events in time order (merge.h) ----------- */

/* a user event's source is RUN_SRC_USER + the block it came from */
enum { RUN_SRC_KERNEL, RUN_SRC_USER };

/* The calls that send an event record (codegen/cg_call.c). */
static bool run_event_call(enum sema_func f)
{
	switch (f) {
	case FN_PRINTF:
	case FN_TIME:
	case FN_SYSTEM:
	case FN_CAT:
	case FN_EXIT:
	case FN_PRINT:
	case FN_CLEAR:
	case FN_ZERO:
	case FN_DELETE:		/* a user-mode delete() of an aggregation's
				 * key (CG_EV_DELETE); a kernel probe's
				 * counts too: merging costs time, not order */
		return true;
	default:
		return false;
	}
}

static int run_find_event(struct ast_node *n, void *ctx)
{
	(void)ctx;
	if (n->kind == AST_CALL && n->sema && run_event_call(n->sema->func))
		return 1;
	return ast_visit_children(n, run_find_event, NULL);
}

/* BEGIN and END run before and after everything else: no merging. */
static bool run_begin_end(const struct ast_node *p)
{
	for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next)
		if (!ap->ap.provider || (strcmp(ap->ap.provider, "BEGIN") &&
					 strcmp(ap->ap.provider, "END")))
			return false;
	return true;
}

/*
 * Time stamps when a kernel probe other than BEGIN/END and a user-mode
 * probe both send events; the user side reads the time-stamp counter
 * when it is a clock, else (or with UBT_NO_TSC set, for tests) the
 * clock_gettime syscall.
 */
static enum cg_event_time run_event_time(const struct run *r)
{
	bool kern = false, user = false;

	for (struct ast_node *p = r->c->program->program.probes; p;
	     p = p->next) {
		if (!ast_visit_children(p, run_find_event, NULL))
			continue;
		if (r->d[p->probe.index].where == RUN_USER)
			user = true;
		else if (!run_begin_end(p))
			kern = true;
	}
	if (!kern || !user)
		return CG_TIME_NONE;
	return merge_tsc_usable() && !getenv("UBT_NO_TSC") ? CG_TIME_TSC :
							     CG_TIME_NS;
}

/* Every event comes from a call run_event_call() knows. */
static void run_check_events(const struct cg_object *obj)
{
	for (int i = 0; i < obj->nevents; i++) {
		const struct ast_node *n = obj->events[i].call;

		if (!n || n->kind != AST_CALL || !n->sema ||
		    !run_event_call(n->sema->func))
			BUG("event %d of a call run_event_call() misses", i);
	}
}

static void run_set_global(struct run *r, uint64_t off, uint64_t v);

/*
 * An exit() read from either side, while it waits in the queue: the
 * probes of both sides stop at once (what they sent before still prints,
 * what comes after the exit() does not).
 */
static void run_take_exit(struct run *r, const struct cg_object *obj,
			  const void *data)
{
	struct cg_event_hdr h;

	memcpy(&h, data, sizeof(h));
	if (r->stopped || h.id >= (uint64_t)obj->nevents ||
	    obj->events[h.id].kind != CG_EV_EXIT)
		return;
	r->stopped = true;
	run_set_global(r, NATIVE_GLOBALS_EXIT, 1);
	kernel_stop_probes(r->k);
}

/* A record of a user ring, into the queue: its time stamp ends it. */
static int run_user_take(uint32_t type, const void *data, uint32_t len,
			 void *arg)
{
	struct run *r = arg;
	uint64_t ts;

	if (type != NATIVE_REC_EVENT || len < sizeof(struct cg_event_hdr) + 8)
		return 0;
	run_take_exit(r, r->nobj, data);
	memcpy(&ts, (const char *)data + len - 8, 8);
	if (r->etime == CG_TIME_TSC)
		ts = merge_clock_ns(&r->clock, ts);
	/* the ring's block, for a delete() event (run_map_hook()) */
	merge_push(&r->q, ts, RUN_SRC_USER + (int)user_event_block(r->u),
		   data, len - 8);
	return 0;
}

/* A record of the kernel's ring, into the queue. */
static int run_kernel_take(void *ctx, const void *data, size_t size)
{
	struct run *r = ctx;
	uint64_t ts;

	if (size < sizeof(struct cg_event_hdr) + 8 || size > UINT32_MAX)
		return 0;
	run_take_exit(r, r->kobj, data);
	memcpy(&ts, (const char *)data + size - 8, 8);
	merge_push(&r->q, ts, RUN_SRC_KERNEL, data, size - 8);
	return 0;
}

/*
 * One round: the time, then every source read, then everything older
 * than the time less the slack printed in order (all: everything).
 * Returns the number of records read.
 */
static int run_merge_round(struct run *r, bool all)
{
	uint64_t t = r->etime == CG_TIME_TSC ? merge_clock_sample(&r->clock) :
					       mono_ns();
	int n = kernel_drain(r->k), u = run_user_drain(r);
	struct merge_ev *e;

	n = (n > 0 ? n : 0) + (u > 0 ? u : 0);
	if (!all && t < MERGE_SLACK_NS)
		return n;
	while ((e = merge_pop(&r->q, all ? UINT64_MAX : t - MERGE_SLACK_NS))) {
		if (e->src == RUN_SRC_KERNEL)
			kernel_handle_event(r->k, e->data, e->len);
		else {
			r->queued_block = e->src - RUN_SRC_USER;
			run_user_event(NATIVE_REC_EVENT, e->data, e->len, r);
			r->queued_block = -1;
		}
		free(e);
	}
	fflush(r->uout.f);
	return n;
}

/* Write one u64 of the globals into the template and every block. */
static void run_set_global(struct run *r, uint64_t off, uint64_t v)
{
	struct memfd *m = user_memfd(r->u);
	uint32_t n = memfd_nblocks_used(m);

	if (m->tmpl_off + off + 8 <= m->size)
		memcpy(m->base + m->tmpl_off + off, &v, 8);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t at = m->block_off + i * m->block_size + RT_BLK_MAP +
			      off;

		if (at + 8 <= m->size)
			__atomic_store_n((uint64_t *)(m->base + at), v,
					 __ATOMIC_RELAXED);
	}
}

static int run_split_cmd(const char *cmd, wordexp_t *we)
{
	if (wordexp(cmd, we, WRDE_NOCMD) || !we->we_wordc) {
		fprintf(stderr, "ubt: cannot parse the command: %s\n", cmd);
		return -EINVAL;
	}
	return 0;
}

static int run_user_attach(struct run *r)
{
	struct user_opts uo = { .sz = sizeof(uo),
				.runtime_path = r->o->runtime_path,
				.fault_safe_reads = true };
	char err[512];

	memfd_layout_default(&uo.layout);
	/* printf-heavy probes: rings are touched only as far as used */
	if (uo.layout.ring_size < RUN_RING_SIZE)
		uo.layout.ring_size = RUN_RING_SIZE;
	if (r->nobj->nevents && uo.layout.ring_size < RUN_RING_SIZE_EVENTS)
		uo.layout.ring_size = RUN_RING_SIZE_EVENTS;
	if (uo.layout.map_size < r->nobj->native_area)
		uo.layout.map_size = (r->nobj->native_area + 4095) & ~4095ull;
	uo.layout.shared_size = native_shared_size(r->nobj->native_maps,
						   r->nobj->nnative_maps);
	if (r->o->pid > 0) {
		r->u = user_attach_pid(r->o->pid, &uo, err, sizeof(err));
	} else {
		wordexp_t we;

		if (run_split_cmd(r->o->cmd, &we))
			return -EINVAL;
		r->u = user_attach_cmd(we.we_wordv, &uo, err, sizeof(err));
		wordfree(&we);
		if (r->u)
			r->cpid = user_pid(r->u);
	}
	if (!r->u) {
		fprintf(stderr, "ubt: %s\n", err);
		return -EINVAL;
	}
	for (int i = 0; i < r->nobj->nnative_maps; i++) {
		const struct native_map *nm = &r->nobj->native_maps[i];
		struct memfd_htab t = { .off = nm->off, .nslots = nm->nslots,
					.key_size = nm->key_size,
					.val_size = nm->val_size,
					.max_keys = nm->max_keys };
		int e;

		if (nm->kind == NATIVE_MAP_SHARED)
			e = memfd_shtab_add(user_memfd(r->u),
					    &run_shtab_of(nm));
		else if (nm->kind == NATIVE_MAP_HTAB)
			e = memfd_htab_add(user_memfd(r->u), &t);
		else
			continue;
		if (e) {
			fprintf(stderr, "ubt: cannot place map %s: %s\n",
				nm->name, strerror(-e));
			return e;
		}
	}
	/* every new block starts with the globals */
	if (user_memfd(r->u)->ctl->tmpl_len < NATIVE_MAPS_OFF)
		user_memfd(r->u)->ctl->tmpl_len = NATIVE_MAPS_OFF;
	r->ustart = mono_ns();
	run_set_global(r, NATIVE_GLOBALS_START, r->ustart);
	run_set_global(r, NATIVE_GLOBALS_CPID, r->cpid);
	run_set_global(r, NATIVE_GLOBALS_PID, user_pid(r->u));
	return 0;
}

/* One patched function: the probes that run there, in program order. */
struct run_site {
	char bin[PATH_MAX];
	const char *func;
	uint64_t offset;
	uint64_t file_off;	/* where the probe is in the file */
	enum user_probe_kind kind;
	const char *name;	/* for messages */
	const struct cg_prog **progs;
	int nprogs;
};

/*
 * The code for a site: one program's code, or for several a chain that
 * calls each in turn (calls relative to the chain, keeping the stack
 * aligned as the trampoline left it), followed by their code.
 */
static void *run_site_code(const struct run_site *st, size_t *len)
{
	size_t head = 4 + 5 * st->nprogs + 4 + 1, at, *offs;
	uint8_t *code;

	if (st->nprogs == 1) {
		*len = st->progs[0]->code_len;
		code = xmalloc(*len);
		memcpy(code, st->progs[0]->code, *len);
		return code;
	}
	offs = xcalloc(st->nprogs, sizeof(*offs));
	at = (head + 15) & ~(size_t)15;
	for (int i = 0; i < st->nprogs; i++) {
		offs[i] = at;
		at = (at + st->progs[i]->code_len + 15) & ~(size_t)15;
	}
	code = xmalloc(at);
	memset(code, 0xcc, at);
	memcpy(code, "\x48\x83\xec\x08", 4);	/* sub $8,%rsp */
	for (int i = 0; i < st->nprogs; i++) {
		size_t call = 4 + 5 * i;
		int32_t rel = (int32_t)(offs[i] - (call + 5));

		code[call] = 0xe8;			/* call rel32 */
		memcpy(code + call + 1, &rel, 4);
		memcpy(code + offs[i], st->progs[i]->code,
		       st->progs[i]->code_len);
	}
	memcpy(code + 4 + 5 * st->nprogs, "\x48\x83\xc4\x08\xc3", 5);
	free(offs);
	*len = at;
	return code;
}

static struct run_site *run_sites_of(struct run *r, int *nsites)
{
	struct run_site *sites = NULL;
	int n = 0, cap = 0;

	for (int i = 0; i < r->nobj->nprogs; i++) {
		const struct cg_prog *p = &r->nobj->progs[i];
		enum user_probe_kind kind = p->provider == PROV_URETPROBE ?
						    USER_PROBE_RETURN :
						    USER_PROBE_ENTRY;

		for (int j = 0; j < p->nmatches; j++) {
			const struct probes_match *m = &p->matches[j];
			char rp[PATH_MAX];
			struct run_site *st = NULL;

			if (!realpath(m->target, rp))
				snprintf(rp, sizeof(rp), "%s", m->target);
			for (int k = 0; k < n && !st; k++)
				if (!strcmp(sites[k].bin, rp) &&
				    !strcmp(sites[k].func, m->func) &&
				    sites[k].offset == m->func_offset &&
				    sites[k].kind == kind)
					st = &sites[k];
			if (!st) {
				if (n == cap) {
					cap = cap ? 2 * cap : 16;
					sites = xrealloc(sites,
							 cap * sizeof(*sites));
				}
				st = &sites[n++];
				memset(st, 0, sizeof(*st));
				snprintf(st->bin, sizeof(st->bin), "%s", rp);
				st->func = m->func;
				st->offset = m->func_offset;
				st->file_off = m->offset;
				st->kind = kind;
				st->name = m->name ? m->name : m->func;
			}
			st->progs = xrealloc(st->progs, (st->nprogs + 1) *
							sizeof(*st->progs));
			st->progs[st->nprogs++] = p;
		}
	}
	*nsites = n;
	return sites;
}

/* The address in the target of file offset off of bin (resolved path). */
static int run_target_addr(pid_t pid, const char *bin, uint64_t off,
			   uint64_t *addr)
{
	char path[64], line[PATH_MAX + 128], file[PATH_MAX];
	unsigned long lo, hi, moff;
	int err = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (err && fgets(line, sizeof(line), f)) {
		file[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &lo, &hi,
			   &moff, file) == 4 &&
		    !strcmp(file, bin) && off >= moff && off - moff < hi - lo) {
			*addr = lo + (off - moff);
			err = 0;
		}
	}
	fclose(f);
	return err;
}

/* Install every user-mode program at each of its matches. */
/*
 * Install every user-mode probe; again: in a new image the target exec'd,
 * where a probe whose binary is not there has no site (as in the kernel):
 * said with -v, not an error.
 */
static int run_user_install(struct run *r, int *nprobes, bool again)
{
	int nsites, err = 0;
	struct run_site *sites = run_sites_of(r, &nsites);

	for (int i = 0; i < nsites && !err; i++) {
		struct run_site *st = &sites[i];
		size_t len;
		void *code = run_site_code(st, &len);
		uint64_t at = 0;

		/* -ENOENT: code that never reaches its block, or has no
		 * func */
		err = native_patch_tls(code, len, user_tls_offset(r->u));
		if (err == -ENOENT)
			err = 0;
		if (!err && !run_target_addr(user_pid(r->u), st->bin,
					     st->file_off, &at))
			err = native_patch_func(code, len, at);
		if (err == -ENOENT)
			err = 0;
		if (err)
			fprintf(stderr, "ubt: %s: cannot place the native "
				"code: %s\n", st->name, strerror(-err));
		if (!err) {
			err = user_install(r->u, &(struct user_probe){
				.sz = sizeof(struct user_probe),
				.binary = st->bin,
				.symbol = st->func,
				.kind = st->kind,
				.code = code,
				.code_len = len,
				.offset = st->offset,
			});
			if (err && again) {
				if (r->o->verbose)
					fprintf(stderr, "ubt: %s: no site in "
						"the new image: %s\n",
						st->name, user_error(r->u));
				err = 0;
			} else if (err) {
				fprintf(stderr,
					"ubt: cannot attach %s in user mode: "
					"%s\n", st->name, user_error(r->u));
			}
		}
		free(code);
		if (!err)
			*nprobes += st->nprogs;
	}
	for (int i = 0; i < nsites; i++)
		free(sites[i].progs);
	free(sites);
	return err ? err : 0;
}

/*
 * The target announced an execve() (runtime/rt_abi.h RT_FN_EXEC_HOOK):
 * follow it, place the probes again in the new image before it runs.
 */
static void run_follow_exec(struct run *r)
{
	uint64_t t0 = mono_ns();
	int n = 0, err = user_follow_exec(r->u);

	if (err == 0)
		return;
	if (err > 0) {
		err = run_user_install(r, &n, true);
		if (user_install_exec_hook(r->u) && r->o->verbose)
			fprintf(stderr, "ubt: execve() is not followed: %s\n",
				user_error(r->u));
		err = user_resume(r->u) ?: err;
	}
	if (err < 0)
		fprintf(stderr, "ubt: pid %d ran execve(): its user-mode probes "
			"do not run in the new image: %s\n",
			(int)user_pid(r->u), user_error(r->u));
	else if (r->o->verbose)
		fprintf(stderr, "ubt: pid %d ran execve(): user-mode probes "
			"placed again in the new image (%d probe(s), %.3f ms)\n",
			(int)user_pid(r->u), n, (mono_ns() - t0) / 1e6);
}

static bool run_target_gone(struct run *r)
{
	struct pollfd pfd = { .fd = r->pidfd, .events = POLLIN };
	int st;

	if (r->cpid > 0) {
		if (r->reaped)
			return true;
		/* reaped by the ptrace code? */
		if (user_exit_status(r->u, &st)) {
			r->status = st;
			return r->reaped = true;
		}
		/* through the pidfd: even if SIGCHLD was ignored */
		r->reaped = child_gone(r->cpid, r->pidfd, &r->status);
		return r->reaped;
	}
	if (r->pidfd >= 0) {
		int n = poll(&pfd, 1, 0);

		if (n == 0)
			return false;
		if (n == 1 && !(pfd.revents & POLLNVAL))
			return true;
	}
	return kill(user_pid(r->u), 0) && errno == ESRCH;
}

/*
 * After a failed ptrace operation: has the target exited?  A killed
 * process fails them before it is a zombie: give it up to 100 ms.
 */
static bool run_target_exited(struct run *r)
{
	for (int i = 0; i < 100; i++) {
		if (run_target_gone(r))
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * Updates of map `map` the target's tables refused (full), all threads.
 * The counters are the target's to write: a thread cannot have tried
 * more than one update per nanosecond since the probes were placed, so a
 * count above that is not believed, and said so.
 */
static uint64_t run_user_map_full(struct run *r, int map)
{
	const struct native_map *nm = run_native_map(r, map);
	struct memfd *mf = user_memfd(r->u);
	uint64_t ns = mono_ns() - r->ustart, n = 0;
	uint32_t bad = 0, blocks = memfd_nblocks_used(mf);

	if (nm && nm->kind == NATIVE_MAP_HTAB) {
		struct memfd_htab t = { .off = nm->off, .nslots = nm->nslots,
					.key_size = nm->key_size,
					.val_size = nm->val_size };

		n = memfd_htab_dropped(mf, &t, ns, &bad);
	} else if (nm && nm->kind == NATIVE_MAP_SHARED) {
		/* one table, every thread's updates */
		n = memfd_shtab_dropped(mf, &run_shtab_of(nm));
		if (n && (!blocks || n / blocks > ns)) {
			bad = 1;
			n = 0;
		}
	}
	if (bad)
		fprintf(stderr, "WARNING: ignoring an implausible count of "
			"dropped updates of %s read back from the target\n",
			r->kobj->maps[map].name);
	return n;
}

/* What user mode could not record, said once at exit. */
static void run_user_warnings(struct run *r)
{
	uint64_t n = memfd_shadow_lost(user_memfd(r->u));

	/* "Map full" once per map, kernel and user-mode updates together */
	for (int i = 0; i < r->kobj->nmaps; i++) {
		uint64_t full = kernel_map_full(r->k, i) +
				run_user_map_full(r, i);

		if (full)
			out_map_full(stderr, r->kobj->maps[i].name,
				     r->kobj->maps[i].max_entries, full);
	}

	if (n)
		fprintf(stderr, "WARNING: %llu return probe hits were not "
			"recorded (a thread's shadow stack was full)\n",
			(unsigned long long)n);
	n = user_unrecorded_threads(r->u);
	if (n)
		fprintf(stderr, "WARNING: %llu threads found no per-thread "
			"block: their hits were not recorded\n",
			(unsigned long long)n);
}

/* -d native: each user-mode program's code, as bytes. */
static void run_dump_native(const struct cg_object *obj, FILE *f)
{
	for (int i = 0; i < obj->nprogs; i++) {
		const struct cg_prog *p = &obj->progs[i];
		const uint8_t *b = p->code;

		fprintf(f, "%s (%s, %zu bytes of x86-64):", p->name,
			p->probe_name ? p->probe_name : "", p->code_len);
		for (size_t j = 0; j < p->code_len; j++)
			fprintf(f, "%s%02x", j % 16 ? " " : "\n  ", b[j]);
		fputc('\n', f);
	}
	fflush(f);
}

/*
 * Aggregations that user-mode probes write, by sema map id: a kernel
 * probe's delete() of one of their keys tells ubt (cg_opts.user_agg_maps).
 */
static bool *run_user_agg_maps(struct compile *c,
			       const struct run_decision *d)
{
	struct sema_program *sp = c->sema;
	bool *by_map = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(bool));

	for (int i = 0; i < sp->nmaps; i++) {
		by_map[i] = false;
		if (!run_agg_map(sp->maps[i]))
			continue;
		for (int j = 0; j < sp->nprobes; j++)
			if (d[j].where == RUN_USER &&
			    (j >= 64 || (sp->maps[i]->probes & (1ull << j))))
				by_map[i] = true;
	}
	return by_map;
}

static int run_combined(struct compile *c, const struct run_opts *o,
			const struct run_decision *d)
{
	struct run r = { .c = c, .o = o, .d = d, .pidfd = -1, .ev_block = -1,
			.queued_block = -1 };
	struct cg_opts ko_cg = { .sz = sizeof(ko_cg), .want = run_want_kernel,
				 .want_ctx = &r,
				 .user_agg_maps = run_user_agg_maps(c, d) };
	struct cg_opts no_cg = { .sz = sizeof(no_cg), .want = run_want_user,
				 .want_ctx = &r,
				 .native_thread_maps = run_thread_maps(c) };
	struct cg_prog *dprogs = NULL;
	struct exitwatch *xw = NULL;
	struct kernel_opts ko;
	struct sigaction sa = { .sa_handler = run_on_signal };
	struct diag *last = c->diag.head;
	int err, rc = 1, nprobes = 0, timeout = RUN_POLL_MS, st;
	bool resumed = false;	/* the target runs (user_resume()) */

	if (o->dump_ir)
		ko_cg.dump_ir = no_cg.dump_ir = stdout;
	r.etime = run_event_time(&r);
	ko_cg.event_time = no_cg.event_time = r.etime;
	merge_init(&r.q);
	if (r.etime == CG_TIME_TSC)
		merge_clock_init(&r.clock);
	if (r.etime && o->verbose)
		fprintf(stderr, "ubt: kernel and user-mode events merged in "
			"time order (user-side clock: %s)\n",
			r.etime == CG_TIME_TSC ? "time-stamp counter" :
						 "clock_gettime");
	kernel_set_verbose(o->verbose);
	while (last && last->next)
		last = last->next;
	err = cg_build(c, CG_TARGET_BPF, &ko_cg, &r.kobj);
	if (!err)
		no_cg.prog_base = r.kobj->nprogs;
	err = err ?: cg_build(c, CG_TARGET_NATIVE, &no_cg, &r.nobj);
	{
		/* the driver printed the frontend's diagnostics already */
		struct diag_list nd = c->diag;

		nd.head = last ? last->next : c->diag.head;
		diag_print(&nd, stderr);
	}
	if (err)
		goto out;
	run_check_events(r.kobj);
	run_check_events(r.nobj);
	if (o->dump_bpf)
		cg_dump_bpf(r.kobj, stdout);
	if (o->dump_native)
		run_dump_native(r.nobj, stdout);
	run_merge_events(&r);
	if (o->dry_run) {
		rc = 0;
		goto out;
	}
	run_kernel_opts(o, &ko);
	ko.cmd = NULL;		/* the user side starts the command */
	if (o->cmd)
		ko.pid = 0;
	/*
	 * From here on Ctrl-C (or SIGTERM) ends the run the ordinary way
	 * once the probes are in place: the target's code restored, END,
	 * the maps.  SA_RESTART: the ptrace waits of the attach resume.
	 */
	run_sigint = 0;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* from here on, killing ubt must leave the target whole */
	err = guard_start(o->pid, run_on_orphan);
	if (err) {
		fprintf(stderr, "ubt: fork: %s\n", strerror(-err));
		goto out;
	}
	err = run_user_attach(&r);
	if (!err)
		guard_target(user_pid(r.u));
	if (err)
		goto out;
	if (o->verbose && user_leftovers(r.u))
		fprintf(stderr, "ubt: removed %d jump(s) left in pid %d by a "
			"ubt that died\n", user_leftovers(r.u),
			(int)user_pid(r.u));
	if (r.cpid)
		ko.pid = r.cpid;
	if (o->pid > 0)
		xw = exitwatch_start(o->pid);
	/* (a -c command the ptrace code reaped has no pid any more) */
	if (!r.cpid || !user_exit_status(r.u, &st))
		r.pidfd = syscall(SYS_pidfd_open, r.cpid ? r.cpid : o->pid, 0);
	err = kernel_load(&r.merged, &ko, &r.k);
	if (err)
		goto out;
	kernel_set_compile(r.k, c);
	/* probe and func values index the kernel's programs, then ours */
	dprogs = xcalloc(r.kobj->nprogs + r.nobj->nprogs + 1, sizeof(*dprogs));
	if (r.kobj->nprogs)
		memcpy(dprogs, r.kobj->progs, r.kobj->nprogs * sizeof(*dprogs));
	if (r.nobj->nprogs)
		memcpy(dprogs + r.kobj->nprogs, r.nobj->progs,
		       r.nobj->nprogs * sizeof(*dprogs));
	kernel_set_display_progs(r.k, dprogs, r.kobj->nprogs + r.nobj->nprogs);
	kernel_set_source(r.k, run_map_source, &r);
	r.agg = xcalloc(r.kobj->nmaps + 1, sizeof(*r.agg));
	kernel_set_map_hook(r.k, run_map_hook, &r);
	kernel_set_globals(r.k, r.cpid);
	err = run_user_install(&r, &nprobes, false);
	if (err)
		goto out;
	if (user_install_exec_hook(r.u) && o->verbose)
		fprintf(stderr, "ubt: execve() is not followed: %s\n",
			user_error(r.u));
	for (int i = 0; i < r.kobj->nprogs; i++)
		nprobes += r.kobj->progs[i].nmatches;
	if (!o->quiet) {
		struct out out;

		out_init(&out, o->out ? o->out : stdout,
			 o->json ? OUT_JSON : OUT_TEXT);
		out_attached(&out, nprobes);
	}
	fflush(o->out ? o->out : stdout);
	err = kernel_attach(r.k, &nprobes);
	if (err)
		goto out;
	if (getenv("__BPFTRACE_NOTIFY_PROBES_ATTACHED")) {
		printf("__BPFTRACE_NOTIFY_PROBES_ATTACHED\n");
		fflush(stdout);
	}
	kernel_run_begin(r.k);
	/* BEGIN's output comes before anything the target prints */
	kernel_poll(r.k, 0);
	fflush(o->out ? o->out : stdout);
	if (r.etime)
		kernel_set_event_hook(r.k, run_kernel_take, &r);
	/* as bpftrace: after an exit() in BEGIN a -c command never runs */
	/* the target runs on even when ubt was killed meanwhile */
	if (!kernel_exiting(r.k) && (!run_sigint || guard_orphaned())) {
		resumed = true;
		err = user_resume(r.u);
		/* killed meanwhile: the run ends as for any exit */
		if (err && !run_target_exited(&r)) {
			fprintf(stderr, "ubt: cannot resume the target: %s\n",
				user_error(r.u));
			goto out;
		}
		if (o->verbose)
			fprintf(stderr, "ubt: target stopped for %.3f ms\n",
				user_stop_ns(r.u) / 1e6);
	}
	while (!run_sigint && !kernel_exiting(r.k)) {
		bool gone = run_target_gone(&r);
		int n;

		if (!gone && user_exec_pending(r.u))
			run_follow_exec(&r);

		kernel_poll(r.k, timeout);
		n = r.etime ? run_merge_round(&r, false) : run_user_drain(&r);
		/* keep draining while the rings fill; sleep when idle */
		timeout = n >= RUN_BUSY_EVENTS ? 0 : n > 0 ? 1 : RUN_POLL_MS;
		/* what waits in the queue prints once past the slack */
		if (r.q.n && timeout > (int)(MERGE_SLACK_NS / 1000000))
			timeout = MERGE_SLACK_NS / 1000000;
		if (gone)
			break;
	}
	/* probes stop; what is in the rings still prints */
	run_set_global(&r, NATIVE_GLOBALS_EXIT, 1);
	kernel_stop_probes(r.k);
	kernel_poll(r.k, 0);
	if (r.etime) {
		run_merge_round(&r, true);
		kernel_set_event_hook(r.k, NULL, NULL);
	} else {
		run_user_drain(&r);
	}
	if (!guard_orphaned()) {
		kernel_run_end(r.k);
		kernel_poll(r.k, 0);
		kernel_print_maps(r.k);
		fflush(o->out ? o->out : stdout);
		run_user_warnings(&r);
		if (r.reaped)
			child_report(stderr, r.cpid, r.status, o->verbose);
		if (exitwatch_status(xw, &st))
			child_report_pid(stderr, o->pid, st, o->verbose);
	}
	rc = 0;
out:
	if (r.u && r.cpid > 0 && !r.reaped && user_exit_status(r.u, &st))
		r.reaped = true;	/* by the ptrace code */
	if (r.u && r.cpid > 0 && !resumed && !r.reaped) {
		/* a -c command stopped since its first instruction: it ends
		 * before it ever runs, nothing to restore */
		r.reaped = child_kill(r.cpid, r.pidfd);
	} else if (r.u && user_detach(r.u)) {
		fprintf(stderr, "ubt: detach: %s\n", user_error(r.u));
	}
	if (r.u) {
		/* SIGTERM, then SIGKILL: a bounded wait whatever it does */
		if (r.cpid > 0 && !r.reaped && !user_exit_status(r.u, &st) &&
		    !guard_orphaned())
			child_stop(r.cpid, r.pidfd);
		user_free(r.u);
	}
	if (r.pidfd >= 0)
		close(r.pidfd);
	kernel_free(r.k);
	for (int i = 0; r.agg && i < r.kobj->nmaps; i++) {
		free(r.agg[i].base);
		free(r.agg[i].present);
	}
	free(r.agg);
	merge_release(&r.q);
	exitwatch_free(xw);
	free(dprogs);
	cg_object_free(r.kobj);
	cg_object_free(r.nobj);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return rc;
}

static void run_print_decisions(struct compile *c,
				const struct run_decision *d)
{
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		fprintf(stderr, "%s: %s (%s)\n", run_probe_name(c, p),
			d[p->probe.index].where == RUN_USER ? "user mode" :
							      "kernel",
			d[p->probe.index].why);
}

static bool run_has_uprobes(struct compile *c)
{
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next)
			if (ap->ap.provider &&
			    (!strcmp(ap->ap.provider, "uprobe") ||
			     !strcmp(ap->ap.provider, "uretprobe")))
				return true;
	return false;
}

int shim_run(struct compile *c, const struct run_opts *o)
{
	struct run_decision *d = NULL;
	struct kernel_opts ko;
	bool any_user = false;
	int err;

	if (!c->sema || !c->program)
		BUG("shim_run() before sema_run()");
	child_init();
	err = run_decide(c, o, &d);
	/* --dry-run shows the decisions when there is one to make */
	if (o->verbose || (o->dry_run && run_has_uprobes(c)))
		run_print_decisions(c, d);
	if (err)
		return 1;
	for (int i = 0; i < c->sema->nprobes; i++)
		any_user |= d[i].where == RUN_USER;
	run_kernel_opts(o, &ko);
	if (!any_user)
		return kernel_run(c, &ko);
	return run_combined(c, o, d);
}
