/*
 * Hardware watchpoints (kernel side): watchpoint:ADDR:LEN:MODE is a perf
 * breakpoint event in the -p/-c process (every CPU without one) with the
 * probe's program attached; watchpoint:FUNC+argN:LEN:MODE is placed when
 * the uprobe at FUNC reports the address (codegen/cg_watch.c): in the
 * reporting process, once per address, after which a process the uprobe
 * stopped (not for asyncwatchpoint) gets SIGCONT. unwatch(addr) removes
 * the watchpoints at addr.  The CPU has four debug registers: past them
 * bpftrace's message is printed and the process goes on.
 */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "kernel_int.h"
#include "kfeat.h"
#include "procstat.h"
#include "util.h"

static uint32_t kernel_watch_type(const char *mode)
{
	uint32_t t = 0;

	if (strchr(mode, 'r'))
		t |= HW_BREAKPOINT_R;
	if (strchr(mode, 'w'))
		t |= HW_BREAKPOINT_W;
	if (strchr(mode, 'x'))
		t |= HW_BREAKPOINT_X;
	return t;
}

/* The breakpoint's perf event in pid (-1: every thread on cpu). */
static int kernel_watch_open(const struct ast_attach_point *ap,
			     uint64_t addr, int pid, int cpu)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_BREAKPOINT,
		.size = sizeof(a),
		.sample_period = 1,
		.wakeup_events = 1,
		.precise_ip = 2,
		.bp_type = kernel_watch_type(ap->mode),
		.bp_addr = addr,
		.bp_len = ap->len,
	};

	return syscall(__NR_perf_event_open, &a, pid, cpu, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

static void kernel_watch_fail(struct kernel *k, const char *name, int err)
{
	/* on the output, as bpftrace prints it */
	if (err == ENOSPC)
		out_message(&k->out, "lost_events",
			    "Failed to attach watchpoint probe. You are "
			    "out of watchpoint registers.");
	else
		fprintf(stderr, "ubt: cannot attach %s: perf_event_open: "
			"%s\n", name, strerror(err));
}

/* Attach program prog to a watchpoint at addr; 0 or -errno. */
static int kernel_watch_place(struct kernel *k, int prog, uint64_t addr,
			      int pid)
{
	const struct cg_prog *p = &k->obj->progs[prog];
	struct kernel_watch *w;
	int ncpu = pid > 0 ? 1 : k->ncpus;

	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = kernel_watch_open(&p->ap->ap, addr,
					   pid > 0 ? pid : -1,
					   pid > 0 ? -1 : cpu);
		struct bpf_link *l;

		if (fd < 0) {
			int err = errno;

			if (err == ENODEV && ncpu > 1)
				continue;	/* offline CPU */
			kernel_watch_fail(k, p->probe_name, err);
			return -err;
		}
		l = kernel_attach_pfd(k, k->progs[prog], fd);
		if (!l) {
			int err = errno;

			fprintf(stderr, "ubt: cannot attach %s: %s\n",
				p->probe_name, strerror(err));
			return -err;
		}
		kernel_add_link(k, l);
		if (k->nwatches == k->capwatches) {
			k->capwatches = k->capwatches ? 2 * k->capwatches : 8;
			k->watches = xrealloc(k->watches, k->capwatches *
							  sizeof(*k->watches));
		}
		w = &k->watches[k->nwatches++];
		w->prog = prog;
		w->addr = addr;
		w->pid = pid;
		w->link = k->nlinks - 1;
	}
	return 0;
}

int kernel_watch_attach(struct kernel *k, int prog)
{
	const struct cg_prog *p = &k->obj->progs[prog];
	int pid = k->cpid ? k->cpid : k->opts->pid;

	if (!kfeat_has(KFEAT_HW_BREAKPOINT)) {
		fprintf(stderr, "ubt: cannot attach %s: this machine delivers "
			"no hardware breakpoints (a watched write was not "
			"seen: a virtual machine without debug registers)\n",
			p->probe_name);
		return -EOPNOTSUPP;
	}
	if (p->watch_later)
		return 0;	/* when its function reports the address */
	return kernel_watch_place(k, prog, p->ap->ap.address, pid);
}

/*
 * Was a watchpoint of prog placed at addr in pid? One that unwatch()
 * removed counts too: the function reporting that address again does not
 * bring it back (as in bpftrace).
 */
static bool kernel_watch_has(struct kernel *k, int prog, uint64_t addr,
			     int pid)
{
	for (int i = 0; i < k->nwatches; i++)
		if (k->watches[i].prog == prog && k->watches[i].addr == addr &&
		    k->watches[i].pid == pid)
			return true;
	return false;
}

void kernel_watch_event(struct kernel *k, const struct cg_event *e,
			const void *args, size_t size)
{
	uint64_t v[2];

	if (size < (e->kind == CG_EV_WATCH ? 16 : 8))
		return;
	memcpy(v, args, e->kind == CG_EV_WATCH ? 16 : 8);
	if (e->kind == CG_EV_UNWATCH) {
		for (int i = 0; i < k->nwatches; i++) {
			struct kernel_watch *w = &k->watches[i];

			if (w->addr != v[0] || w->link < 0)
				continue;
			bpf_link__destroy(k->links[w->link]);
			k->links[w->link] = NULL;
			w->link = -1;
		}
		return;
	}
	if (e->prog < 0 || e->prog >= k->obj->nprogs)
		return;
	int pid = (int)(v[1] >> 32);

	if (!k->exiting && !kernel_watch_has(k, e->prog, v[0], pid))
		kernel_watch_place(k, e->prog, v[0], pid);
	/* the uprobe stopped the process until the watchpoint is set */
	if (e->sync)
		kill(pid, SIGCONT);
}

/*
 * Once the probes are stopped and their events taken: a process that a
 * probe stopped (a watchpoint's uprobe until the watchpoint is placed, a
 * stack note until its mappings are read) and whose event never came
 * (the ring buffer was full) must not stay stopped when ubt ends.  Only
 * with such a probe, and only a process that is stopped.
 */
void kernel_watch_resume(struct kernel *k)
{
	int pid = k->cpid ? k->cpid : k->opts ? k->opts->pid : 0;
	bool sync = false;

	if (!k->obj)
		return;
	for (int i = 0; i < k->obj->nevents; i++)
		if ((k->obj->events[i].kind == CG_EV_WATCH &&
		     k->obj->events[i].sync) ||
		    k->obj->events[i].kind == CG_EV_STACK_NOTE)
			sync = true;
	if (sync && pid > 0 && procstat_state(pid) == 'T')
		kill(pid, SIGCONT);
}
