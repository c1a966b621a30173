/*
 * Placement, first half: what a probe body needs. Scans a probe's
 * statements for the builtins, functions and map uses the native target
 * lacks, and which maps a kernel probe touches (place.c decides).
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

static bool place_is_agg(enum sema_func f)
{
	return f >= FN_COUNT && f <= FN_TSERIES;
}

bool place_agg_map(const struct sema_map *sm)
{
	return sm->agg != FN_NONE || type_is_aggregation(sm->value);
}

/*
 * Maps that are not aggregations, used only by reads, assignments,
 * delete(), has_key(), clear(), zero(), print(), for and len(): user-mode
 * probes keep them in one table shared by all threads, which native code
 * iterates slot by slot (RT_FN_SHTAB_NEXT).
 */
int place_scan_shared(struct ast_node *n, void *ctx)
{
	struct place_scan *s = ctx;
	struct sema_map *sm = n->sema ? n->sema->map : NULL;

	if (n->kind == AST_CALL && sm && n->sema->func != FN_DELETE &&
	    n->sema->func != FN_PRINT && n->sema->func != FN_HAS_KEY &&
	    n->sema->func != FN_CLEAR && n->sema->func != FN_ZERO &&
	    n->sema->func != FN_LEN)
		s->shared[sm->id] = false;
	return ast_visit_children(n, place_scan_shared, ctx);
}

/*
 * fn on the arguments of call, but of a map argument (delete(@m[k]),
 * clear(@m)) only on its keys: the map itself is not read.
 */
static void place_visit_keys(struct ast_node *call,
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

int place_scan_plain(struct ast_node *n, void *ctx)
{
	struct place_scan *s = ctx;
	struct sema_map *im = NULL;

	/* for and len() over an aggregation: the map is iterated, not read
	 * (place_side_use() says which probes must share its side) */
	if (n->kind == AST_FOR_MAP && n->for_.map && n->for_.map->sema)
		im = n->for_.map->sema->map;
	else if (n->kind == AST_CALL && n->sema &&
		 n->sema->func == FN_LEN)
		im = n->sema->map;
	if (im && place_agg_map(im)) {
		s->aggiter[im->id] = true;
		return n->kind == AST_FOR_MAP && n->for_.body ?
			       place_scan_plain(n->for_.body, ctx) : 0;
	}

	if (n->kind == AST_ASSIGN && n->assign.lhs &&
	    n->assign.lhs->kind == AST_MAP && n->assign.rhs &&
	    n->assign.rhs->kind == AST_CALL && n->assign.rhs->sema &&
	    place_is_agg(n->assign.rhs->sema->func)) {
		/* the aggregation's map itself is fine: only its keys and
		 * arguments are scanned */
		for (struct ast_node *k = n->assign.lhs->map.keys; k;
		     k = k->next)
			place_scan_plain(k, ctx);
		return place_scan_plain(n->assign.rhs, ctx);
	}
	if (n->kind == AST_CALL && n->sema && n->sema->func == FN_PRINT &&
	    n->call.args && n->call.args->kind == AST_MAP &&
	    !n->call.args->map.keys)
		return 0;
	if (n->kind == AST_MAP && n->sema && n->sema->map) {
		/* a read: an aggregation's value stays one per thread */
		if (place_agg_map(n->sema->map))
			s->aggread[n->sema->map->id] = true;
		else
			s->plain[n->sema->map->id] = true;
	}
	if (n->kind == AST_CALL && n->sema && n->sema->map &&
	    (n->sema->func == FN_CLEAR || n->sema->func == FN_ZERO) &&
	    place_agg_map(n->sema->map)) {
		/* ubt clears or zeroes every thread's values too */
		return 0;
	} else if (n->kind == AST_CALL && n->sema && n->sema->map &&
		   n->sema->func == FN_DELETE && place_agg_map(n->sema->map)) {
		/* a delete() on either side tells ubt (CG_EV_DELETE) */
		place_visit_keys(n, place_scan_plain, ctx);
		return 0;
	} else if (n->kind == AST_CALL && n->sema && n->sema->map &&
		 !place_is_agg(n->sema->func) && n->sema->func != FN_PRINT)
		s->plain[n->sema->map->id] = true;
	return ast_visit_children(n, place_scan_plain, ctx);
}

static const char *place_builtin_ok(enum sema_builtin b)
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
	case BI_PPID:		/* getppid() */
	case BI_NCPUS:		/* a constant */
	case BI_USERMODE:	/* 1: the traced process runs in user mode */
		return NULL;
	case BI_NONE:
		return "an unknown builtin";
	default:
		/* the kernel's own state: curtask, cgroup, jiffies, ctx (the
		 * kernel's pt_regs), the stacks */
		return sema_builtin_name(b);
	}
}

static const char *place_func_ok(struct compile *c, enum sema_func f)
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
	case FN_ERRORF:
	case FN_WARNF:
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
	case FN_BUF:		/* codegen/cg_call_val.c: plain IR */
	case FN_NTOP:
	case FN_PTON:
	case FN_MACADDR:
	case FN_BSWAP:
	case FN_STRFTIME:
	case FN_CGROUP_PATH:
	case FN_STRERROR:
	case FN_SYSCALL_NAME:
	case FN_SIGNAL_NAME:
	case FN_STRLEN:
	case FN_SIGNAL:		/* tgkill() of the calling thread */
		return NULL;
	case FN_NONE:
		return "an unknown function";
	default:
		/* clear(), zero(), delete(), len() are accepted by
		 * place_scan_body() where user mode has them; kptr()
		 * reads kernel memory */
		return arena_printf(&c->arena, "%s()",
				    sema_func_name(f));
	}
}

static bool place_is_tid(const struct ast_node *k)
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
static int place_scan_thread(struct ast_node *n, void *ctx)
{
	bool *thr = ctx;
	struct sema_map *sm = n->sema ? n->sema->map : NULL;

	if (n->kind == AST_MAP && sm && !place_is_tid(n->map.keys))
		thr[sm->id] = false;
	if (n->kind == AST_CALL && sm && n->sema->func != FN_DELETE &&
	    n->sema->func != FN_PRINT)
		thr[sm->id] = false;
	if (n->kind == AST_FOR_MAP && n->for_.map && n->for_.map->sema &&
	    n->for_.map->sema->map)
		thr[n->for_.map->sema->map->id] = false;
	return ast_visit_children(n, place_scan_thread, ctx);
}

bool *place_thread_maps(struct compile *c)
{
	struct sema_program *sp = c->sema;
	bool *thr = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(bool));

	for (int i = 0; i < sp->nmaps; i++)
		thr[i] = !place_agg_map(sp->maps[i]);
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		ast_visit_children(p, place_scan_thread, thr);
	return thr;
}

/* Why an assignment to map lhs needs the kernel. */
static const char *place_assign_why(struct place_scan *s, struct ast_node *lhs)
{
	const struct sema_map *sm = lhs->sema ? lhs->sema->map : NULL;

	if (sm && place_agg_map(sm))
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
 * probe writes or reads it (place_side_use()).
 */
static const char *place_iter_why(struct place_scan *s,
				const struct sema_map *sm, const char *what)
{
	if (!sm)
		return "a map iteration without a map";
	if (s->shared[sm->id])
		return NULL;
	if (place_agg_map(sm) && sm->key && s->c->sema->nprobes <= 64 &&
	    sm->value && sm->value->kind != TY_HIST &&
	    sm->value->kind != TY_LHIST)
		return NULL;
	if (place_agg_map(sm))
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

/*
 * Stacks and registers user mode has (codegen/cg_stack_native.c): ustack
 * at a function's entry (frame pointers walked in the thread), kstack
 * (empty in a uprobe), the
 * argument registers, %rsp, %rip and %rbp there, %rax in return probes;
 * ksym() and kaddr() are values. n is one of those calls: NULL when
 * user mode has it, else why not.
 */
static const char *place_stack_why(struct place_scan *s, struct ast_node *n)
{
	enum sema_func f = n->kind == AST_CALL && n->sema ? n->sema->func :
							      FN_NONE;
	enum sema_builtin b = n->kind == AST_BUILTIN && n->sema ?
				      n->sema->builtin : BI_NONE;
	int64_t off;

	if (b == BI_USTACK || f == FN_USTACK)
		return s->entry ? NULL : "ustack (not at a function's entry)";
	/* a uprobe has no kernel stack: empty, in the kernel too */
	if (b == BI_KSTACK || f == FN_KSTACK)
		return s->entry || s->ret ? NULL : "kstack";
	if (f == FN_KSYM || f == FN_KADDR || f == FN_UADDR)
		return NULL;
	off = n->sema->iargs[0];
	if (s->ret && off == 80)		/* ax: the return value */
		return NULL;
	if (s->entry && (off == 112 || off == 104 || off == 96 ||
			 off == 88 || off == 72 || off == 64 ||
			 off == 152 || off == 128 || off == 32))
		return NULL;
	return "reg() of this register";
}

int place_scan_body(struct ast_node *n, void *ctx)
{
	struct place_scan *s = ctx;
	const char *why = NULL;

	switch (n->kind) {
	case AST_BUILTIN:
		if (n->sema && (n->sema->builtin == BI_USTACK ||
				n->sema->builtin == BI_KSTACK))
			why = place_stack_why(s, n);
		else
			why = place_builtin_ok(n->sema ? n->sema->builtin :
							 BI_NONE);
		if (!why && n->sema)
			why = place_pidns_builtin(s, n->sema->builtin);
		break;
	case AST_CALL:
		why = place_func_ok(s->c, n->sema ? n->sema->func : FN_NONE);
		if (why && n->sema && (n->sema->func == FN_USTACK ||
				       n->sema->func == FN_KSTACK ||
				       n->sema->func == FN_REG ||
				       n->sema->func == FN_KSYM ||
				       n->sema->func == FN_KADDR ||
				       n->sema->func == FN_UADDR))
			why = place_stack_why(s, n);
		if (why && n->sema->func == FN_LEN)
			why = place_iter_why(s, n->sema->map, "len() of");
		if (why && (n->sema->func == FN_DELETE ||
			    n->sema->func == FN_HAS_KEY ||
			    n->sema->func == FN_CLEAR ||
			    n->sema->func == FN_ZERO) &&
		    n->sema->map && s->shared[n->sema->map->id])
			why = NULL;
		if (why && (n->sema->func == FN_CLEAR ||
			    n->sema->func == FN_ZERO ||
			    n->sema->func == FN_DELETE) && n->sema->map &&
		    place_agg_map(n->sema->map) && !s->plain[n->sema->map->id])
			why = NULL;
		if (!why && n->sema && place_is_agg(n->sema->func) &&
		    n->sema->map && s->plain[n->sema->map->id])
			why = arena_printf(&s->c->arena,
					   "map %s (also used outside "
					   "aggregations)",
					   n->sema->map->name);
		break;
	case AST_FOR_MAP:
		why = place_iter_why(s, n->for_.map && n->for_.map->sema ?
					      n->for_.map->sema->map : NULL,
				   "for over");
		break;
	case AST_ASSIGN:
		if (n->assign.lhs && n->assign.lhs->kind == AST_MAP &&
		    !(n->assign.rhs && n->assign.rhs->kind == AST_CALL &&
		      n->assign.rhs->sema &&
		      place_is_agg(n->assign.rhs->sema->func)) &&
		    !(n->assign.lhs->sema && n->assign.lhs->sema->map &&
		      s->shared[n->assign.lhs->sema->map->id]))
			why = place_assign_why(s, n->assign.lhs);
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
			if (place_scan_body(k, ctx))
				return 1;
		return place_scan_body(n->assign.rhs, ctx);
	}
	if (n->kind == AST_CALL && n->sema && n->sema->func == FN_PRINT &&
	    n->call.args && n->call.args->kind == AST_MAP &&
	    !n->call.args->map.keys)
		return 0;
	if (n->kind == AST_MAP &&
	    !(n->sema && n->sema->map &&
	      (s->shared[n->sema->map->id] || place_agg_map(n->sema->map)))) {
		s->why = arena_printf(&s->c->arena, "reading map %s",
				      n->map.name);
		return 1;
	}
	return ast_visit_children(n, place_scan_body, ctx);
}

/*
 * Probes that use a map otherwise than through clear(), zero(), delete()
 * and print() (which reach every side: place_map_hook()): those of an
 * iterated aggregation must run on one side, since the user side's
 * iteration does not see the kernel's keys, nor the kernel's the user
 * side's.
 */
struct place_use {
	uint64_t *use;		/* by sema map id: probe bits */
	uint64_t bit;
};

static int place_scan_use(struct ast_node *n, void *ctx)
{
	struct place_use *u = ctx;
	enum sema_func f = n->kind == AST_CALL && n->sema ? n->sema->func :
							    FN_NONE;

	if (f == FN_CLEAR || f == FN_ZERO || f == FN_PRINT ||
	    f == FN_DELETE) {
		place_visit_keys(n, place_scan_use, ctx);
		return 0;
	}
	if (n->kind == AST_MAP && n->sema && n->sema->map)
		u->use[n->sema->map->id] |= u->bit;
	return ast_visit_children(n, place_scan_use, ctx);
}

uint64_t *place_side_use(struct compile *c)
{
	struct sema_program *sp = c->sema;
	struct place_use u;

	u.use = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(*u.use));
	memset(u.use, 0, (sp->nmaps + 1) * sizeof(*u.use));
	for (struct ast_node *p = c->program->program.probes; p;
	     p = p->next) {
		if (p->probe.index >= 64)
			continue;
		u.bit = 1ull << p->probe.index;
		ast_visit_children(p, place_scan_use, &u);
	}
	return u.use;
}
