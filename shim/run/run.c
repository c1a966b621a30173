/*
 * The combined run loop (DESIGN.md "shim/"): builds the kernel object and
 * the native code of the probes placed by place.c, attaches both sides
 * (run_user.c for user mode), then one loop over the kernel ring buffer and
 * the user rings (run_events.c) until exit()/Ctrl-C/the target's end,
 * maps of both sides merged (run_maps.c), and detach.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
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
#include "metrics.h"
#include "native.h"
#include "output.h"
#include "probes.h"
#include "run.h"
#include "sema.h"
#include "signals.h"
#include "user.h"
#include "util.h"
#include "compat.h"
#include "run_int.h"
/* idle user rings are read this often (the kernel ring wakes ubt at once) */
#define RUN_POLL_MS 10
/* a drain that took this many events goes on at once, fewer wait 1 ms */
#define RUN_BUSY_EVENTS 256

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
		.metrics = o->metrics,
	};
}

/* The ubt the user started died: end the run, quietly (shim/user/guard.c). */
static void run_on_orphan(void)
{
	signals_stop();
}

static bool run_want_kernel(void *ctx, const struct ast_node *probe)
{
	const struct run *r = ctx;

	/* system-wide: the processes not taken run every probe there */
	return r->sysw || r->d[probe->probe.index].where != RUN_USER;
}

static bool run_want_user(void *ctx, const struct ast_node *probe)
{
	const struct run *r = ctx;

	return r->d[probe->probe.index].where != RUN_KERNEL;
}

/*
 * System-wide, a probe with sites in user mode in a process taken: its
 * kernel program skips those processes at the sites patched there
 * (cg_opts.skip_taken; the others, RUN_BOTH's kernel sites, count on).
 * A uretprobe's skips only the returns of calls the kernel saw enter
 * at a site patched since the take (another tracer's int3, back after
 * the take; the mark program, sysw_bpf_mark(), on every return site,
 * marks only those): a call that entered before returns to the kernel's
 * trampoline, and only its program counts it.  So a RUN_BOTH uretprobe
 * skips too: without it, a patched site's return counted twice once
 * another tracer's int3 came back there.  A patched function's tail
 * call into a kernel site does not share the mark's stack pointer: its
 * wrapped call runs lower on the stack when the kernel took its return
 * address (RT_FN_WRAP_LOW).
 */
static bool run_skip_taken(void *ctx, const struct ast_node *probe)
{
	const struct run *r = ctx;
	enum run_where w = r->d[probe->probe.index].where;

	return r->sysw && w != RUN_KERNEL;
}

/* A user-mode probe whose BPF program waits in case the target cannot
 * map a table it shares with kernel probes (run_xmap.c), or user mode
 * cannot serve the target after all (run_fallback.c). */
static bool run_standby(void *ctx, const struct ast_node *probe)
{
	const struct run *r = ctx;
	int i = probe->probe.index;

	return (r->xstandby && r->xstandby[i]) ||
	       (r->kstandby && r->kstandby[i]);
}

/* A probe with sites on both sides: each side builds its own sites. */
static bool run_want_kernel_site(void *ctx, const struct ast_node *probe,
				 const struct probes_match *m)
{
	const struct run *r = ctx;
	const struct run_decision *d = &r->d[probe->probe.index];

	return r->sysw || d->where != RUN_BOTH ||
	       run_site_where(d, m) == RUN_KERNEL;
}

static bool run_want_user_site(void *ctx, const struct ast_node *probe,
			       const struct probes_match *m)
{
	const struct run *r = ctx;
	const struct run_decision *d = &r->d[probe->probe.index];

	return d->where != RUN_BOTH || run_site_where(d, m) == RUN_USER;
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
		if (!place_agg_map(sp->maps[i]))
			continue;
		for (int j = 0; j < sp->nprobes; j++)
			if (d[j].where != RUN_KERNEL &&
			    (j >= 64 || (sp->maps[i]->probes & (1ull << j))))
				by_map[i] = true;
	}
	return by_map;
}

/* Its programs but BEGIN and END. */
static int run_count_progs(const struct cg_object *obj)
{
	int n = 0;

	for (int i = 0; i < obj->nprogs; i++)
		n += obj->progs[i].provider != PROV_BEGIN &&
		     obj->progs[i].provider != PROV_END &&
		     !obj->progs[i].standby;
	return n;
}

static void run_attached(const struct run_opts *o, int nprobes)
{
	struct out out;

	out_init(&out, o->out ? o->out : stdout,
		 o->json ? OUT_JSON : OUT_TEXT);
	out_attached(&out, nprobes);
}

static int run_combined(struct compile *c, const struct run_opts *o,
			const struct run_decision *d)
{
	struct run r = { .c = c, .o = o, .d = d, .pidfd = -1, .ev_block = -1,
			.queued_block = -1, .sysw = !o->pid && !o->cmd };
	const bool *xmaps = place_xmap_maps(c, d, r.sysw);
	struct cg_opts ko_cg = { .sz = sizeof(ko_cg), .want = run_want_kernel,
				 .want_site = run_want_kernel_site,
				 .want_ctx = &r,
				 .user_agg_maps = run_user_agg_maps(c, d),
				 .xmap_maps = xmaps,
				 .skip_taken = run_skip_taken,
				 .standby = run_standby };
	struct cg_opts no_cg = { .sz = sizeof(no_cg), .want = run_want_user,
				 .want_site = run_want_user_site,
				 .want_ctx = &r,
				 .native_thread_maps = place_thread_maps(c),
				 .native_slot_maps = place_slot_maps(c, d,
								     r.sysw),
				 .xmap_maps = xmaps };
	struct cg_prog *dprogs = NULL;
	struct exitwatch *xw = NULL;
	struct kernel_opts ko;
	struct diag *last = c->diag.head;
	int err, rc = 1, nprobes = 0, timeout = RUN_POLL_MS, st;
	bool resumed = false;	/* the target runs (user_resume()) */
	bool vm_fail = false;	/* a CLONE_VM child since (run_user.c) */

	if (!r.sysw)
		r.xstandby = run_xmap_standby(c, d, xmaps, &r.xno_standby);
	if (!r.sysw)
		r.kstandby = run_fallback_standby(c, o, d);
	if (o->dump_ir)
		ko_cg.dump_ir = no_cg.dump_ir = stdout;
	r.etime = run_event_time(&r);
	ko_cg.event_time = no_cg.event_time = r.etime;
	merge_init(&r.q);
	if (r.etime == CG_TIME_TSC)
		merge_clock_init(&r.clock);
	if (r.etime && o->verbose)
		fprintf(stderr, "ubt: events merged in time order "
			"(user-side clock: %s)\n",
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
	if (o->verbose || o->dry_run) {
		run_xmap_note(r.kobj, stderr);
		run_slot_note(r.nobj, stderr);
	}
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
	signals_catch();
	/* from here on, killing ubt must leave the target whole */
	err = guard_start(o->pid, run_on_orphan);
	if (err) {
		fprintf(stderr, "ubt: fork: %s\n", strerror(-err));
		goto out;
	}
	/*
	 * BPF is loaded before the target is touched: a -c command waits at
	 * its entry point only for the runtime and the probes (the pid
	 * filters and the globals take its pid later).
	 */
	err = kernel_load(&r.merged, &ko, &r.k);
	if (err) {
		rc = err == -ENOEXEC ? KERNEL_REFUSED_STATUS : 1;
		goto out;
	}
	err = r.sysw ? 0 : run_user_attach(&r);
	if (!err && !r.sysw)
		guard_target(user_pid(r.u));
	if (err)
		goto out;
	if (o->verbose && !r.sysw && user_comm_note(r.u))
		fprintf(stderr, "ubt: comm in user-mode probes reads prctl() at "
			"every hit (cheaper than a kernel uprobe's trap), uid "
			"and gid stay as first read: %s\n",
			user_comm_note(r.u));
	if (o->verbose && !r.sysw && user_leftovers(r.u))
		fprintf(stderr, "ubt: removed %d jump(s) left in pid %d by a "
			"ubt that died\n", user_leftovers(r.u),
			(int)user_pid(r.u));
	if (o->verbose && !r.sysw && user_dead_unmapped(r.u))
		fprintf(stderr, "ubt: pid %d: %d mapping(s) of dead ubts' "
			"memory taken out of the process\n", (int)user_pid(r.u),
			user_dead_unmapped(r.u));
	if (o->verbose && !r.sysw && user_dead_why(r.u)[0])
		fprintf(stderr, "ubt: %s\n", user_dead_why(r.u));
	if (r.cpid)
		ko.pid = r.cpid;
	if (o->pid > 0)
		xw = exitwatch_start(o->pid);
	/* (a -c command the ptrace code reaped has no pid any more) */
	if (!r.sysw && (!r.cpid || !user_exit_status(r.u, &st)))
		r.pidfd = syscall(SYS_pidfd_open, r.cpid ? r.cpid : o->pid, 0);
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
	run_metrics_start(&r);
	err = r.sysw ? 0 : run_xmap_place(&r);
	/* BEGIN before any probe is in place (kernel.c): its output is
	 * read once the probes are attached (after the shared tables: it
	 * may write them) */
	if (!err)
		kernel_run_begin(r.k);
	/* -p: the probes go live before "Attaching", as kernel uprobes do */
	err = err ?: (r.sysw ? 0 : run_user_setup(&r, &nprobes));
	if (err)
		goto out;
	/* -p: it runs: its events from here on merge in time order */
	if (!r.cpid && !r.sysw && r.etime)
		kernel_set_event_hook(r.k, run_kernel_take, &r);
	nprobes += cg_object_probes(r.kobj);
	if (!o->quiet && !compat_has(COMPAT_ATTACHED_MSG))
		run_attached(o, nprobes);
	fflush(o->out ? o->out : stdout);
	/* nprobes counts the user-mode probes too: keep it */
	if (r.sysw)	/* before its own int3s: another's at a site */
		r.unseen = sysw_unseen_look(&r);
	err = kernel_attach(r.k, NULL);
	if (err) {
		rc = kernel_attach_status(r.k);
		goto out;
	}
	/* the newest bpftrace's message: once attached, on stderr */
	if (!o->quiet && compat_has(COMPAT_ATTACHED_MSG))
		run_attached(o, nprobes);
	/* after the kernel's: a process taken has their int3s under its
	 * jumps, never the other way round */
	if (r.sysw)
		sysw_start(&r);
	/* test harnesses wait for this line on stderr, as bpftrace 0.17
	 * prints it (compat attached-message: on stdout, as v0.26) */
	if (getenv("__BPFTRACE_NOTIFY_PROBES_ATTACHED")) {
		fflush(stdout);
		fputs("__BPFTRACE_NOTIFY_PROBES_ATTACHED\n",
		      compat_has(COMPAT_ATTACHED_MSG) ? stdout : stderr);
		fflush(stdout);
	}
	/* BEGIN's output comes before anything the target prints */
	kernel_poll(r.k, 0);
	fflush(o->out ? o->out : stdout);
	/* interval and profile periods start once BEGIN has run */
	if (!kernel_exiting(r.k) && !signals_stopping()) {
		err = kernel_attach_timers(r.k);
		if (err)
			goto out;
	}
	if (r.etime)
		kernel_set_event_hook(r.k, run_kernel_take, &r);
	/* as bpftrace: after an exit() in BEGIN a -c command never runs */
	/* the target runs on even when ubt was killed meanwhile */
	if (!r.sysw && r.u && !kernel_exiting(r.k) &&
	    (!signals_stopping() || guard_orphaned())) {
		resumed = true;
		err = run_user_go(&r);	/* -p: already running */
		if (err)
			goto out;
		if (o->verbose)
			fprintf(stderr, "ubt: nsecs in user-mode probes: %s\n",
				user_clock_tsc(r.u) ?
					"the time-stamp counter, scaled to "
					"the kernel's clock" :
					"clock_gettime() through the vDSO "
					"(UBT_NO_TSC, or the time-stamp "
					"counter is not the kernel's clock)");
	}
	/* the newest bpftrace: BEGIN and END alone end after BEGIN */
	while (!signals_stopping() && !kernel_exiting(r.k) &&
	       !(compat_has(COMPAT_BEGIN_END_EXIT) &&
		 !run_count_progs(r.kobj) && !run_count_progs(r.nobj))) {
		bool gone = !r.sysw && run_target_gone(&r);
		int n;

		if (r.sysw)
			sysw_poll(&r);
		else if (!gone && r.u && !r.kfell && user_exec_pending(r.u))
			run_follow_exec(&r);
		if (!r.sysw && r.u && !r.kfell)
			user_clock_tick(r.u);

		kernel_poll(r.k, timeout);
		n = r.etime ? run_merge_round(&r, false) : run_user_drain(&r);
		/* keep draining while the rings fill; sleep when idle */
		timeout = n >= RUN_BUSY_EVENTS ? 0 : n > 0 ? 1 : RUN_POLL_MS;
		/* what waits in the queue prints once past the slack */
		if (r.q.n && timeout > (int)(MERGE_SLACK_NS / 1000000))
			timeout = MERGE_SLACK_NS / 1000000;
		/* --metrics: a scrape is answered here, between reads */
		metrics_poll(o->metrics);
		if (signals_take_usr1()) {
			kernel_print_maps_now(r.k);
			fflush(o->out ? o->out : stdout);
		}
		/* SIGHUP under --metrics: every map of both sides starts
		 * again, as clear() of each would do it */
		if (signals_take_hup())
			kernel_clear_all_maps(r.k);
		if (gone)
			break;
		if (!r.sysw && !r.kfell && run_user_vm_child(&r)) {
			vm_fail = true;
			break;
		}
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
	if (!guard_orphaned() && !vm_fail) {
		kernel_run_end(r.k);
		kernel_poll(r.k, 0);
		if (!c->sema->no_maps_on_exit)
			kernel_print_maps(r.k);
		fflush(o->out ? o->out : stdout);
		run_user_warnings(&r);
		if (r.reaped)
			child_report(stderr, r.cpid, r.status, o->verbose);
		if (exitwatch_status(xw, &st))
			child_report_pid(stderr, o->pid, st, o->verbose);
	}
	rc = vm_fail ? 1 : kernel_exit_code(r.k);
out:
	run_metrics_stop(&r);
	if (r.sysw)
		sysw_stop(&r);
	if (r.u && r.cpid > 0 && !r.reaped && user_exit_status(r.u, &st))
		r.reaped = true;	/* by the ptrace code */
	if (r.u && r.cpid > 0 && !resumed && !r.reaped) {
		/* a -c command stopped since its first instruction: it ends
		 * before it ever runs, nothing to restore */
		r.reaped = child_kill(r.cpid, r.pidfd);
	} else if (r.u && user_detach(r.u)) {
		/* code left patched: never a silent success */
		fprintf(stderr, "ubt: detach: %s\n", user_error(r.u));
		rc = 1;
	}
	if (r.u && o->verbose && user_unmap_why(r.u)[0])
		fprintf(stderr, "ubt: %s\n", user_unmap_why(r.u));
	else if (r.u && o->verbose && user_unmapped(r.u))
		fprintf(stderr, "ubt: pid %d: %d mapping(s) of ubt's memory "
			"taken out of the process\n", (int)user_pid(r.u),
			user_unmapped(r.u));
	if (r.u && o->verbose && user_park_note(r.u)[0])
		fprintf(stderr, "ubt: %s\n", user_park_note(r.u));
	if (r.u && o->verbose && user_strays(r.u))
		fprintf(stderr, "ubt: pid %d: %d descriptor(s) of killed ubts' "
			"unmapped memory closed\n", (int)user_pid(r.u),
			user_strays(r.u));
	if (r.u) {
		/* SIGTERM, then SIGKILL: a bounded wait whatever it does */
		if (r.cpid > 0 && !r.reaped && !user_exit_status(r.u, &st) &&
		    !guard_orphaned())
			child_stop(r.cpid, r.pidfd);
		user_free(r.u);
	}
	free(r.fleet);
	free(r.mods);
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
	signals_restore();
	return rc;
}

static const char *run_where_name(enum run_where w)
{
	return w == RUN_USER ? "user mode" :
	       w == RUN_BOTH ? "user mode and kernel" : "kernel";
}

/*
 * Each probe: where it runs and why; under a probe of several sites
 * weighed one by one, each site (the kernel's with the reason).
 */
static void run_print_decisions(struct compile *c,
				const struct run_decision *d)
{
	for (struct ast_node *p = c->program->program.probes; p; p = p->next) {
		const struct run_decision *r = &d[p->probe.index];

		fprintf(stderr, "%s: %s (%s)\n", place_probe_name(c, p),
			run_where_name(r->where), r->why);
		for (int i = 0; r->weighed && r->nsites > 1 && i < r->nsites;
		     i++) {
			const struct run_site_decision *s = &r->sites[i];

			if (s->where == RUN_USER && s->reason)
				fprintf(stderr, "  %s: user mode (%s)\n",
					s->name, s->reason);
			else if (s->where == RUN_USER)
				fprintf(stderr, "  %s: user mode\n", s->name);
			else
				fprintf(stderr, "  %s: kernel (%s)\n",
					s->name, s->reason);
		}
	}
}

static bool run_has_uprobes(struct compile *c)
{
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next)
			if (ap->ap.provider &&
			    (!strcmp(ap->ap.provider, "uprobe") ||
			     !strcmp(ap->ap.provider, "uretprobe") ||
			     !strcmp(ap->ap.provider, "usdt")))
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
	/* before anything is built: a script over the limits ends here */
	if (run_check_limits(c))
		return 1;
	err = run_decide(c, o, &d);
	/* --dry-run shows the decisions when there is one to make */
	if (o->verbose || (o->dry_run && run_has_uprobes(c)))
		run_print_decisions(c, d);
	if (err)
		return 1;
	for (int i = 0; i < c->sema->nprobes; i++)
		any_user |= d[i].where != RUN_KERNEL;
	run_kernel_opts(o, &ko);
	if (!any_user)
		return kernel_run(c, &ko);
	return run_combined(c, o, d);
}
