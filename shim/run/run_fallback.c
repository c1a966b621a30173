/*
 * -p/-c, the default mode (--mode auto): the user-mode probes of the
 * target move to the kernel when user mode cannot serve it after all,
 * as placement would have put them there had it known ("when unsure,
 * fall back to the kernel and say why", DESIGN.md).
 *
 * Every user-mode probe's BPF program is built standby beside its native
 * code (cg_opts.standby, as run_xmap.c's): loaded, not attached.  When
 * the attach's final stop gives up (a thread of the target that will not
 * stop within the bound, user_resume(): -EAGAIN, nothing written), the
 * user side is detached (its memory taken out of the process), the
 * standby programs take the place of the native ones, and the run goes
 * on with kernel uprobes on the target's pid (kernel_opts.pid), attached
 * by kernel_attach() as every kernel probe is.  Nothing had run in user
 * mode yet: no count to carry over.
 *
 * A child made with clone(CLONE_VM) without CLONE_VFORK after the attach
 * (user_vmwatch.c) runs on the per-thread block of the thread that made
 * it: user mode cannot count it apart.  The run loop sees it (10 ms at
 * most after its birth) and hands the process over: user_detach() stops
 * every thread and the child, writes the file's bytes back, and inside
 * that stop (user_on_restore()) the standby programs are attached, kernel
 * uprobes on the target's pid, as --mode kernel attaches them; then the
 * threads run on.  (Which tasks those count depends on the kernel: a
 * uprobe_multi link with a pid (6.6 and later; 6.18 here) runs only for
 * the pid's thread group, so not for the child, while perf-event
 * uprobes, as bpftrace 0.17 attaches them, count every task of the
 * memory, the child too: with a raw clone(CLONE_VM) child making 1M
 * calls beside its parent's 1M, --mode kernel counts 1M here, bpftrace
 * 0.17 2M.)  Every hit
 * before the stop was counted in user mode (its blocks stay readable in
 * ubt: the maps merge both sides), every one after in the kernel: none
 * lost, none counted twice.  A call in flight in a wrapped return probe
 * returns through its trampoline (kept mapped) and counts in user mode,
 * where it entered.  Not exact: the child's own hits in the few
 * milliseconds before the stop, on its parent thread's block (said).
 * Exact when libc's clone() makes the child: the thread announces it
 * and waits (runtime/rt_vfork.c, user_vm_asked(); child 0 here), the
 * hand-over comes before the child exists.
 *
 * A hand-over only when every map the user-mode probes use is an
 * aggregation (run_fallback_state()): the values of both sides merge
 * as they always do; an entry time left in user mode's table would not
 * be found by the kernel's return probe.
 *
 * Only when every user-mode probe runs there whole (no probe with sites
 * on both sides: its kernel program holds only its kernel sites); with
 * --mode user the error stays.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg.h"
#include "kernel.h"
#include "place.h"
#include "sema.h"
#include "user.h"
#include "util.h"
#include "run_int.h"

bool *run_fallback_standby(struct compile *c, const struct run_opts *o,
			   const struct run_decision *d)
{
	struct sema_program *sp = c->sema;
	bool *sb, any = false;

	if ((!o->pid && !o->cmd) || o->mode != MODE_AUTO)
		return NULL;
	for (int j = 0; j < sp->nprobes; j++) {
		if (d[j].where == RUN_BOTH)
			return NULL;
		any |= d[j].where == RUN_USER;
	}
	if (!any)
		return NULL;
	sb = arena_alloc(&c->arena, (sp->nprobes + 1) * sizeof(*sb));
	for (int j = 0; j < sp->nprobes; j++)
		sb[j] = d[j].where == RUN_USER;
	return sb;
}

/*
 * A map other than an aggregation that a user-mode probe uses (NULL:
 * none): what user mode wrote there (an entry time keyed by tid) would
 * not be where the kernel's programs look after a hand-over.
 * Aggregations carry over: both sides' values merge.
 */
const char *run_fallback_state(const struct run *r)
{
	struct sema_program *sp = r->c->sema;

	for (int i = 0; r->kstandby && i < sp->nmaps; i++) {
		const struct sema_map *sm = sp->maps[i];

		if (place_agg_map(sm))
			continue;
		for (int j = 0; j < sp->nprobes; j++)
			if (r->kstandby[j] &&
			    (j >= 64 || (sm->probes & (1ull << j))))
				return sm->name;
	}
	return NULL;
}

const char *run_fallback_why_not(const struct run *r)
{
	const char *m = run_fallback_state(r);

	if (r->o->mode == MODE_USER)
		return "--mode user";
	if (!r->kstandby)
		return "a probe has sites on both sides";
	if (!kernel_standby_loaded(r->k))
		return "their kernel programs did not load";
	if (m)
		return arena_printf(&r->c->arena, "map %s would not keep what "
				    "user mode wrote in it", m);
	return "the user side is gone";
}

bool run_fallback_ready(const struct run *r)
{
	return r->kstandby && r->u && !r->sysw && !r->kfell &&
	       kernel_standby_loaded(r->k);
}

/* Standby programs of the user-mode probes: on (to be attached); how many. */
static int run_fallback_on(struct run *r, bool *on)
{
	int n = 0;

	for (int i = 0; i < r->kobj->nprogs; i++) {
		struct cg_prog *p = &r->kobj->progs[i];

		if (p->standby && p->probe &&
		    r->kstandby[p->probe->probe.index]) {
			p->standby = false;
			if (on)
				on[i] = true;
			n++;
		}
	}
	return n;
}

static void run_fallback_names(struct run *r)
{
	for (struct ast_node *p = r->c->program->program.probes; p;
	     p = p->next)
		if (r->kstandby[p->probe.index])
			fprintf(stderr, " %s", place_probe_name(r->c, p));
	fputc('\n', stderr);
}

struct run_handover {
	struct run *r;
	const bool *on;
	int err, prog;
};

/* Inside the detach's stop: the code is the file's, nothing runs. */
static void run_fallback_attach(struct ubt_user *u, void *ctx)
{
	struct run_handover *h = ctx;

	(void)u;
	for (int i = 0; i < h->r->kobj->nprogs && !h->err; i++)
		if (h->on[i]) {
			h->err = kernel_attach_late(h->r->k, i);
			h->prog = i;
		}
}

int run_fallback_child(struct run *r, pid_t child, unsigned nchildren)
{
	bool *on = xcalloc(r->kobj->nprogs + 1, sizeof(*on));
	struct run_handover h = { .r = r, .on = on };
	pid_t pid = user_pid(r->u);
	uint64_t t0 = mono_ns();
	int n, err;

	if (!run_fallback_ready(r) || run_fallback_state(r)) {
		free(on);
		return -EINVAL;
	}
	n = run_fallback_on(r, on);
	user_on_restore(r->u, run_fallback_attach, &h);
	err = user_detach(r->u);
	user_on_restore(r->u, NULL, NULL);
	free(on);
	r->kfell = true;	/* never again: the user side is gone */
	if (err) {
		fprintf(stderr, "ubt: detach: %s\n", user_error(r->u));
		return err;
	}
	if (h.err) {
		fprintf(stderr, "ubt: pid %d made a child with clone(CLONE_VM) "
			"(pid %d): its user-mode probes were taken out, but "
			"program %s did not attach in the kernel: %s\n",
			(int)pid, (int)child, r->kobj->progs[h.prog].name,
			strerror(-h.err));
		return h.err;
	}
	if (!child)
		fprintf(stderr, "WARNING: pid %d is making a child with "
			"clone(CLONE_VM) without CLONE_VFORK after ubt "
			"attached: its user-mode probes run in the kernel from "
			"now on, before the child starts (every hit counts "
			"under its own pid)\n", (int)pid);
	else
		fprintf(stderr, "WARNING: pid %d made %u child(ren) with "
			"clone(CLONE_VM) without CLONE_VFORK (the first: pid "
			"%d) after ubt attached: its user-mode probes run in "
			"the kernel from now on (its and the child's hits "
			"before that counted in user mode, under either one's "
			"pid)\n", (int)pid, nchildren, (int)child);
	if (r->o->verbose) {
		fprintf(stderr, "ubt: pid %d: user-mode probes handed over to "
			"kernel uprobes on pid %d in one stop (%.3f ms; %d "
			"program(s)):", (int)pid, (int)pid,
			(mono_ns() - t0) / 1e6, n);
		run_fallback_names(r);
	}
	return 0;
}

int run_fallback(struct run *r, const char *what)
{
	char why[512];
	pid_t pid = user_pid(r->u);
	int n = 0;

	if (!run_fallback_ready(r))
		return -EINVAL;
	snprintf(why, sizeof(why), "%s", user_error(r->u));
	/* nothing written: the runtime's memory taken out, let go */
	if (user_detach(r->u)) {
		fprintf(stderr, "ubt: cannot resume the target: %s\n", why);
		fprintf(stderr, "ubt: detach: %s\n", user_error(r->u));
		return -EIO;
	}
	if (r->o->verbose && user_unmapped(r->u))
		fprintf(stderr, "ubt: pid %d: %d mapping(s) of ubt's memory "
			"taken out of the process\n", (int)pid,
			user_unmapped(r->u));
	if (r->nfleet && r->fleet[r->nfleet - 1] == r->u)
		r->nfleet--;
	user_free(r->u);
	r->u = NULL;
	n = run_fallback_on(r, NULL);
	r->kfell = true;
	fprintf(stderr, "WARNING: pid %d: %s (%s): its user-mode probes run "
		"in the kernel instead\n", (int)pid, what, why);
	if (!r->o->verbose)
		return 0;
	fprintf(stderr, "ubt: pid %d: %s, nothing written: kernel uprobes "
		"on pid %d instead (%d program(s)):", (int)pid, what,
		(int)pid, n);
	run_fallback_names(r);
	return 0;
}
