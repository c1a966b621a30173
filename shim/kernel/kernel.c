/*
 * The kernel side of the shim: libbpf load and attach, BEGIN/END through
 * BPF_PROG_TEST_RUN, interval/profile through perf events, the ring
 * buffer, map read-out with per-CPU values merged, and the run loop
 * (exit(), Ctrl-C, the -c child, the -p process).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include "cg.h"
#include "child.h"
#include "compile.h"
#include "format.h"
#include "exitwatch.h"
#include "kernel.h"
#include "metrics.h"
#include "output.h"
#include "probes.h"
#include "sema.h"
#include "signals.h"
#include "tracepoint.h"
#include "util.h"
#include "compat.h"
#include "kernel_int.h"

/* ---- run ----------------------------------------------------------- */

static int kernel_loop(struct kernel *k, struct kernel_child *ch,
		       int pidfd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	int rbfd = ring_buffer__epoll_fd(k->rb);
	struct metrics *mx = k->opts ? k->opts->metrics : NULL;
	int mfd = metrics_fd(mx);

	if (ep < 0)
		return -errno;
	/* --metrics: a scrape is answered here, between the ring's reads */
	if (mfd >= 0) {
		ev.data.fd = mfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, mfd, &ev);
	}
	if (ch && ch->pidfd >= 0) {
		ev.data.fd = ch->pidfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, ch->pidfd, &ev);
	}
	if (pidfd >= 0) {
		ev.data.fd = pidfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, pidfd, &ev);
	}
	ev.data.fd = rbfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, rbfd, &ev);
	while (!signals_stopping() && !k->exiting) {
		struct epoll_event evs[4];
		bool done = false;
		int n;

		/* SIGUSR1 (it interrupts the wait): the maps, and on */
		if (signals_take_usr1()) {
			kernel_consume(k);
			kernel_print_all_maps(k, false);
			fflush(k->out.f);
		}
		/* SIGHUP under --metrics: every map starts again */
		if (signals_take_hup()) {
			kernel_consume(k);
			kernel_clear_all_maps(k);
		}
		n = epoll_wait(ep, evs, 4, mx ? 100 : 1000);
		if (n < 0 && errno != EINTR) {
			close(ep);
			return -errno;
		}
		kernel_consume(k);
		metrics_poll(mx);
		for (int i = 0; i < n; i++)
			if (evs[i].data.fd == pidfd && pidfd >= 0)
				done = true;
		/* the pidfd woke us, or (without one) each second */
		if (ch && ch->pid > 0 &&
		    child_gone(ch->pid, ch->pidfd, &ch->status)) {
			ch->exited = true;
			done = true;
		}
		if (done) {
			kernel_consume(k);
			break;
		}
	}
	close(ep);
	return 0;
}

/* Count the attach points: "Attaching N probes..." */
/* Print the diagnostics added since `from` (the driver printed those
 * before). */
static void kernel_print_new_diags(struct compile *c, struct diag *from)
{
	struct diag_list d = c->diag;

	d.head = from ? from->next : c->diag.head;
	diag_print(&d, stderr);
}

static struct diag *kernel_last_diag(struct compile *c)
{
	struct diag *g = c->diag.head;

	while (g && g->next)
		g = g->next;
	return g;
}

int kernel_run(struct compile *c, const struct kernel_opts *o)
{
	struct cg_opts co = { .sz = sizeof(co) };
	struct cg_object *obj = NULL;
	struct kernel *k = NULL;
	struct kernel_child ch = { .pid = 0, .go = -1, .pidfd = -1 };
	struct diag *last = kernel_last_diag(c);
	int nprobes = 0, nprogs = 0, pidfd = -1, err, rc = 1, st;
	struct exitwatch *xw = NULL;

	kernel_set_verbose(o->verbose);
	if (o->dump_ir)
		co.dump_ir = stdout;
	err = cg_build(c, CG_TARGET_BPF, &co, &obj);
	kernel_print_new_diags(c, last);
	if (err)
		return 1;
	if (o->dump_bpf)
		cg_dump_bpf(obj, stdout);
	nprobes = cg_object_probes(obj);
	/* every attach point dropped (probes_expand()): bpftrace's words */
	if (!nprobes) {
		if (!o->quiet)
			printf("No probes to attach\n");
		goto out;
	}
	for (int i = 0; i < obj->nprogs; i++)
		nprogs += obj->progs[i].provider != PROV_BEGIN &&
			  obj->progs[i].provider != PROV_END;
	if (o->dry_run) {
		rc = 0;
		goto out;
	}
	/*
	 * From here on Ctrl-C (or SIGTERM) ends the run the ordinary way,
	 * once the probes are attached: END, the maps, nothing left
	 * attached, the command ended.  SA_RESTART: the waits before the
	 * loop resume; epoll_wait() returns at once all the same.
	 */
	signals_catch();
	if (o->cmd) {
		/* started now (waiting to exec) so that cpid is known */
		err = kernel_child_start(o->cmd, &ch);
		if (err)
			goto out;
	}
	err = kernel_load(obj, o, &k);
	if (err) {
		rc = err == -ENOEXEC ? KERNEL_REFUSED_STATUS : 1;
		goto out;
	}
	k->c = c;
	metrics_plan(o->metrics, c, NULL);
	if (o->pid > 0) {
		pidfd = syscall(SYS_pidfd_open, o->pid, 0);
		if (pidfd < 0) {
			fprintf(stderr, "ubt: cannot trace pid %d: %s\n",
				o->pid, strerror(errno));
			goto out;
		}
		xw = exitwatch_start(o->pid);
	}
	kernel_set_globals(k, ch.pid);
	kernel_metrics_serve(k, o->metrics);
	if (!o->quiet && !compat_has(COMPAT_ATTACHED_MSG))
		out_attached(&k->out, nprobes);
	fflush(k->out.f);
	/*
	 * BEGIN runs before the other probes are attached, as bpftrace
	 * runs it: what it stores (@n = 0) is there before any probe hit
	 * (its output is read after, below)
	 */
	err = kernel_run_begin(k);
	if (err)
		goto out;
	err = kernel_attach(k, &nprobes);
	if (err) {
		rc = kernel_attach_status(k);
		goto out;
	}
	/* the newest bpftrace's message: once attached, on stderr */
	if (!o->quiet && compat_has(COMPAT_ATTACHED_MSG))
		out_attached(&k->out, nprobes);
	/* test harnesses wait for this line on stderr, as bpftrace 0.17
	 * prints it (compat attached-message: on stdout, as v0.26) */
	if (getenv("__BPFTRACE_NOTIFY_PROBES_ATTACHED")) {
		fflush(stdout);
		fputs("__BPFTRACE_NOTIFY_PROBES_ATTACHED\n",
		      compat_has(COMPAT_ATTACHED_MSG) ? stdout : stderr);
		fflush(stdout);
	}
	kernel_consume(k);
	/* interval and profile periods start once BEGIN has run */
	if (!k->exiting && !signals_stopping())
		err = kernel_attach_timers(k);
	if (err)
		goto out;
	/* an iter probe runs its iterator once, then the run ends */
	if (!k->exiting && !signals_stopping() && kernel_run_iter(k) &&
	    k->err) {
		err = k->err;
		goto out;
	}
	/* as bpftrace: after an exit() in BEGIN the command never runs */
	if (o->cmd && !k->exiting && !signals_stopping())
		kernel_child_go(&ch);
	/* the newest bpftrace: BEGIN and END alone end after BEGIN */
	if (!k->exiting && !signals_stopping() &&
	    !(nprogs == 0 && compat_has(COMPAT_BEGIN_END_EXIT)))
		err = kernel_loop(k, o->cmd ? &ch : NULL, pidfd);
	if (err)
		goto out;
	/*
	 * Stop the probes (the exit flag every program checks first), take
	 * what they sent until then (dropped after an exit(), as bpftrace
	 * does), run END and print the maps; detach only then, as that can
	 * take a while (an RCU wait per tracepoint).
	 */
	kernel_stop_probes(k);
	kernel_consume(k);
	k->in_end = true;
	err = kernel_run_end(k);
	kernel_consume(k);
	if (!err && !(k->c->sema && k->c->sema->no_maps_on_exit))
		err = kernel_print_all_maps(k, true);
	fflush(k->out.f);
	kernel_map_full_warnings(k);
	if (ch.exited)
		child_report(stderr, ch.pid, ch.status, o->verbose);
	if (exitwatch_status(xw, &st))
		child_report_pid(stderr, o->pid, st, o->verbose);
	kernel_watch_resume(k);
	kernel_detach_fast(k);
	rc = err ? 1 : kernel_exit_code(k);
out:
	kernel_metrics_serve(NULL, o->metrics);
	signals_restore();
	kernel_child_kill(&ch);
	if (pidfd >= 0)
		close(pidfd);
	exitwatch_free(xw);
	kernel_free(k);
	cg_object_free(obj);
	return rc;
}
