/*
 * Events of the combined run: the user rings drained, printf records of
 * plain arguments formatted straight into the output, and, when both sides
 * print at run time, records of both put in time order (merge.h).
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

/* The events of both objects in one table: native ids follow the kernel's. */
void run_merge_events(struct run *r)
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
	r->ev_block = r->queued_block >= 0 ?
			      r->queued_block :
			      r->ubase + (int64_t)user_event_block(r->u);
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

		/* the fast path prints printf() only: errorf() and
		 * warnf() go through kernel_handle_event() */
		if (e->kind == CG_EV_PRINTF && e->fmt &&
		    (!e->call || !e->call->sema ||
		     e->call->sema->func == FN_PRINTF) &&
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

int run_user_drain(struct run *r)
{
	uint64_t lost;
	int total = 0, n;

	if (!r->nfleet)
		return 0;
	if (!r->ufmts)
		run_fast_init(r);
	/* merged: one pass reads everything written before the round began */
	lost = 0;
	run_for_each_user(r, i) {
		for (int pass = 0; pass < (r->etime ? 1 : RUN_DRAIN_PASSES);
		     pass++) {
			n = user_read_events(r->u, r->etime ? run_user_take :
							      run_user_event,
					     r);
			if (n <= 0)
				break;
			total += n;
		}
		lost += user_lost_events(r->u);
	}
	fflush(r->uout.f);
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
	case FN_ERRORF:
	case FN_WARNF:
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
	case FN_UNWATCH:	/* kernel only (CG_EV_UNWATCH) */
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

/*
 * Time stamps whenever a user-mode probe sends events: each thread has
 * its ring, and the events of several threads print in the order they
 * happened only by their time (so also with kernel probes' events); the
 * user side reads the time-stamp counter when it is a clock, else (or
 * with UBT_NO_TSC set, for tests) the clock_gettime syscall.
 */
enum cg_event_time run_event_time(const struct run *r)
{
	bool user = false;

	for (struct ast_node *p = r->c->program->program.probes; p;
	     p = p->next) {
		if (!ast_visit_children(p, run_find_event, NULL))
			continue;
		if (r->d[p->probe.index].where != RUN_KERNEL)
			user = true;
	}
	if (!user)
		return CG_TIME_NONE;
	return merge_tsc_usable() && !getenv("UBT_NO_TSC") ? CG_TIME_TSC :
							     CG_TIME_NS;
}

/* Every event comes from a call run_event_call() knows. */
void run_check_events(const struct cg_object *obj)
{
	for (int i = 0; i < obj->nevents; i++) {
		const struct ast_node *n = obj->events[i].call;

		/* the symbolizer's own records (shim/kernel/stack_sym.h), a
		 * watchpoint's function reporting its address, -k's
		 * helper errors (of a helper, not a call) */
		if (obj->events[i].kind == CG_EV_STACK_NOTE ||
		    obj->events[i].kind == CG_EV_USTACK ||
		    obj->events[i].kind == CG_EV_WATCH ||
		    obj->events[i].kind == CG_EV_HELPER_ERROR)
			continue;
		if (!n || n->kind != AST_CALL || !n->sema ||
		    !run_event_call(n->sema->func))
			BUG("event %d of a call run_event_call() misses", i);
	}
}

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
	merge_push(&r->q, ts,
		   RUN_SRC_USER + (int)(r->ubase + user_event_block(r->u)),
		   data, len - 8);
	return 0;
}

/* A record of the kernel's ring, into the queue. */
int run_kernel_take(void *ctx, const void *data, size_t size)
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
int run_merge_round(struct run *r, bool all)
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
void run_set_global(struct run *r, uint64_t off, uint64_t v)
{
	struct run_user_cursor keep = run_user_keep(r);

	run_for_each_user(r, i)
		run_set_global_one(r, off, v);
	run_user_back(r, keep);
}

void run_set_global_one(struct run *r, uint64_t off, uint64_t v)
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
