/*
 * Attaching the kernel probes: uprobes (single and uprobe_multi), USDT
 * with ref_ctr_offset, tracepoints, perf events for interval,
 * profile, software and hardware probes (kprobes, kfuncs and raw
 * tracepoints: kernel_kprobe.c); detaching them fast.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
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
#include "output.h"
#include "probes.h"
#include "sema.h"
#include "signals.h"
#include "tracepoint.h"
#include "util.h"
#include "kernel_int.h"

/* ---- attach -------------------------------------------------------- */

/*
 * Destroying a uprobe link waits for an RCU grace period (~0.1-0.2 s on
 * this kernel): destroy many links from several threads so that the
 * waits overlap.
 */
#define KERNEL_DETACH_THREADS 32

struct kernel_detach_job {
	struct bpf_link **links;
	int n, step;
};

static void *kernel_detach_thread(void *arg)
{
	struct kernel_detach_job *j = arg;

	for (int i = 0; i < j->n; i += j->step)
		bpf_link__destroy(j->links[i]);
	return NULL;
}

static void kernel_destroy_links(struct bpf_link **links, int n, int threads)
{
	struct kernel_detach_job jobs[KERNEL_DETACH_THREADS];
	pthread_t tids[KERNEL_DETACH_THREADS];
	bool started[KERNEL_DETACH_THREADS] = { false };
	int nt = n < threads ? n : threads;

	if (n <= 2 || threads <= 1) {
		for (int i = 0; i < n; i++)
			bpf_link__destroy(links[i]);
		return;
	}
	for (int t = 0; t < nt; t++) {
		jobs[t] = (struct kernel_detach_job){
			.links = links + t, .n = n - t, .step = nt,
		};
		started[t] = !pthread_create(&tids[t], NULL,
					     kernel_detach_thread, &jobs[t]);
		if (!started[t])
			kernel_detach_thread(&jobs[t]);
	}
	for (int t = 0; t < nt; t++)
		if (started[t])
			pthread_join(tids[t], NULL);
}

static void kernel_detach_threads(struct kernel *k, int threads)
{
	kernel_destroy_links(k->links, k->nlinks, threads);
	k->nlinks = 0;
	for (int i = 0; i < k->npfds; i++)
		close(k->pfds[i]);
	k->npfds = 0;
}

void kernel_detach(struct kernel *k)
{
	kernel_detach_threads(k, KERNEL_DETACH_THREADS);
}

/*
 * Detaching N tracepoints takes N RCU waits, serialised in the kernel
 * (~35 ms each here: 12 s for syscalls:sys_enter_*). With many probes,
 * once the output is complete and the probes are stopped, a child
 * process that holds no output detaches them while ubt exits.
 */
#define KERNEL_DETACH_CHILD_MIN 8	/* links (each owns its perf fd) */

void kernel_detach_fast(struct kernel *k)
{
	int gone[2];
	pid_t pid;

	if (k->nlinks + k->npfds < KERNEL_DETACH_CHILD_MIN ||
	    pipe2(gone, O_CLOEXEC)) {
		kernel_detach(k);
		return;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		char c;

		setsid();
		/* the output must see EOF when ubt exits */
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (k->out.f && fileno(k->out.f) > 2)
			close(fileno(k->out.f));
		close(gone[1]);
		/* wait for ubt to exit: then these are the last references
		 * and the detaching happens here, not in ubt's exit */
		while (read(gone[0], &c, 1) < 0 && errno == EINTR)
			;
		/*
		 * One link at a time: a tracepoint or perf uprobe detach
		 * holds the kernel's event_mutex across an RCU wait, and
		 * with many threads queued on it every other tracer's
		 * attach or detach waits behind all of them (seconds with
		 * 361 tracepoints: a corpus case on the same machine timed
		 * out in perf_event_open()).  Nobody waits for this one.
		 */
		kernel_detach_threads(k, 1);
		_exit(0);
	}
	close(gone[0]);
	if (pid < 0) {
		close(gone[1]);
		kernel_detach(k);
		return;
	}
	/*
	 * Keep everything open until exit, when only references are
	 * dropped (gone[1] closing tells the child to start).
	 */
	for (int i = 0; i < k->nlinks; i++)
		bpf_link__disconnect(k->links[i]);
	for (int i = 0; i < k->nlinks; i++)
		bpf_link__destroy(k->links[i]);
	k->nlinks = 0;
	k->npfds = 0;
}

/* A perf event on every process of one CPU (-1 with errno on failure). */
static int kernel_perf_fd(struct perf_event_attr *a, int cpu)
{
	return syscall(__NR_perf_event_open, a, -1, cpu, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

/* Say why perf_event_open() failed for probe m (bpftrace 0.17's libbcc
 * line, then its own); returns -errno. */
static int kernel_perf_fail(struct kernel *k, const struct cg_prog *p,
			    const struct probes_match *m)
{
	int err = -errno;

	fprintf(stderr, "perf_event_open failed: %s\n", strerror(-err));
	kernel_attach_error(k, p, m);
	return err;
}

static int kernel_perf_open(int cpu, uint32_t type, uint64_t config,
			    uint64_t period)
{
	struct perf_event_attr a = {
		.type = type,
		.size = sizeof(a),
		.config = config,
		.sample_period = period,
	};

	return kernel_perf_fd(&a, cpu);
}

/* software:EVENT:COUNT and hardware:EVENT:COUNT, bpftrace's names and
 * default counts. */
static const struct kernel_perf_event {
	const char *name, *alias;
	uint32_t type;
	uint64_t config, count;
} kernel_perf_events[] = {
	{ "alignment-faults", NULL, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_ALIGNMENT_FAULTS, 1 },
	{ "bpf-output", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT, 1 },
	{ "context-switches", "cs", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CONTEXT_SWITCHES, 1000 },
	{ "cpu-clock", "cpu", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
	  1000000 },
	{ "cpu-migrations", NULL, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CPU_MIGRATIONS, 1 },
	{ "dummy", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 1 },
	{ "emulation-faults", NULL, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_EMULATION_FAULTS, 1 },
	{ "major-faults", NULL, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1 },
	{ "minor-faults", NULL, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS_MIN, 100 },
	{ "page-faults", "faults", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS, 100 },
	{ "task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK,
	  1000000 },
	{ "backend-stalls", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_BACKEND, 1000000 },
	{ "branch-instructions", "branches", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 100000 },
	{ "branch-misses", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_MISSES, 100000 },
	{ "bus-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES,
	  100000 },
	{ "cache-misses", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CACHE_MISSES, 1000000 },
	{ "cache-references", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CACHE_REFERENCES, 1000000 },
	{ "cpu-cycles", "cycles", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CPU_CYCLES, 1000000 },
	{ "frontend-stalls", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, 1000000 },
	{ "instructions", NULL, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_INSTRUCTIONS, 1000000 },
	{ "ref-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES,
	  1000000 },
};

static const struct kernel_perf_event *kernel_perf_event(const char *name,
							 uint32_t type)
{
	for (size_t i = 0; i < ARRAY_SIZE(kernel_perf_events); i++) {
		const struct kernel_perf_event *e = &kernel_perf_events[i];

		if (e->type == type &&
		    (!strcmp(e->name, name) ||
		     (e->alias && !strcmp(e->alias, name))))
			return e;
	}
	return NULL;
}

/* Period in ns of interval:UNIT:N / profile:UNIT:N (a bare count is in
 * ns), 0 when invalid. */
static uint64_t kernel_period(const struct ast_attach_point *ap)
{
	const char *u = ap->unit ? ap->unit : "hz";
	uint64_t n = ap->freq;

	if (!n)
		return 0;
	if (!strcmp(u, "s"))
		return n * 1000000000ull;
	if (!strcmp(u, "ms"))
		return n * 1000000ull;
	if (!strcmp(u, "us"))
		return n * 1000ull;
	if (!strcmp(u, "ns"))
		return n;
	if (!strcmp(u, "hz"))
		return 1000000000ull / n;
	return 0;
}

static int kernel_attach_one(struct kernel *k, struct kernel_target *t)
{
	const struct cg_prog *p = &k->obj->progs[t->prog];
	struct bpf_program *prog = k->progs[t->prog];
	struct probes_match *m = &t->m;
	struct bpf_link *l = NULL;
	int err;

	switch (p->provider) {
	case PROV_BEGIN:
	case PROV_END:
		return 0;
	case PROV_UPROBE:
	case PROV_URETPROBE:
		l = bpf_program__attach_uprobe(
			prog, p->provider == PROV_URETPROBE,
			m->pid > 0 ? m->pid : -1, m->target, m->offset);
		break;
	case PROV_USDT: {
		LIBBPF_OPTS(bpf_uprobe_opts, uo,
			    .ref_ctr_offset = m->semaphore_offset);

		l = bpf_program__attach_uprobe_opts(prog,
						    m->pid > 0 ? m->pid : -1,
						    m->target, m->offset, &uo);
		break;
	}
	case PROV_TRACEPOINT: {
		/* through tracefs as tp_tracefs() finds (and mounts) it */
		const char *root = tp_tracefs();
		struct perf_event_attr a = {
			.type = PERF_TYPE_TRACEPOINT,
			.size = sizeof(a),
			.sample_period = 1,
			.wakeup_events = 1,
		};
		char path[PATH_MAX];
		unsigned long long id;
		FILE *f;
		int fd;

		snprintf(path, sizeof(path), "%s/events/%s/%s/id",
			 root ? root : "/sys/kernel/tracing", m->target,
			 m->func);
		f = fopen(path, "r");
		if (!f || fscanf(f, "%llu", &id) != 1) {
			err = f ? -EINVAL : -errno;
			if (f)
				fclose(f);
			fprintf(stderr, "ubt: cannot attach %s: %s: %s\n",
				m->name, path, strerror(-err));
			kernel_attach_error(k, p, m);
			return err;
		}
		fclose(f);
		a.config = id;
		fd = kernel_perf_fd(&a, 0);
		if (fd < 0)
			return kernel_perf_fail(k, p, m);
		l = kernel_attach_pfd(k, prog, fd);
		break;
	}
	case PROV_INTERVAL:
	case PROV_PROFILE:
	case PROV_SOFTWARE:
	case PROV_HARDWARE: {
		uint32_t type = PERF_TYPE_SOFTWARE;
		uint64_t config = PERF_COUNT_SW_CPU_CLOCK, period;
		int ncpu = p->provider == PROV_INTERVAL ? 1 : k->ncpus;

		if (p->provider == PROV_SOFTWARE ||
		    p->provider == PROV_HARDWARE) {
			const struct kernel_perf_event *pe;

			type = p->provider == PROV_SOFTWARE ?
				       PERF_TYPE_SOFTWARE :
				       PERF_TYPE_HARDWARE;
			pe = kernel_perf_event(p->ap->ap.target ?
						       p->ap->ap.target : "",
					       type);
			if (!pe) {
				fprintf(stderr, "ubt: cannot attach %s: "
					"unknown event %s\n", m->name,
					p->ap->ap.target);
				return -EINVAL;
			}
			config = pe->config;
			period = p->ap->ap.freq ? p->ap->ap.freq : pe->count;
		} else {
			period = kernel_period(&p->ap->ap);
		}
		if (!period) {
			fprintf(stderr, "ubt: invalid period for %s\n",
				m->name);
			return -EINVAL;
		}
		for (int cpu = 0; cpu < ncpu; cpu++) {
			int fd = kernel_perf_open(cpu, type, config, period);

			if (fd < 0) {
				if (errno == ENODEV && ncpu > 1)
					continue;	/* offline CPU */
				return kernel_perf_fail(k, p, m);
			}
			l = kernel_attach_pfd(k, prog, fd);
			if (!l)
				break;
			if (cpu + 1 < ncpu) {
				kernel_add_link(k, l);
				l = NULL;
			}
		}
		break;
	}
	case PROV_WATCHPOINT:
	case PROV_ASYNCWATCHPOINT:
		return kernel_watch_attach(k, t->prog);
	case PROV_ITER:
		/* the iterator runs when read: kernel_run_iter() */
		l = bpf_program__attach_iter(prog, NULL);
		k->iter = l;
		break;
	default:
		fprintf(stderr, "ubt: cannot attach %s: not supported\n",
			m->name);
		return -ENOTSUP;
	}
	if (!l) {
		err = -errno;
		fprintf(stderr, "ubt: cannot attach %s: %s\n", m->name,
			strerror(-err));
		kernel_attach_error(k, p, m);
		return err;
	}
	kernel_add_link(k, l);
	return 0;
}

/* The link_create part of union bpf_attr, as kernels >= 6.6 lay it out. */
struct kernel_uprobe_multi_attr {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t pad;
};

static int kernel_attach_multi(struct kernel *k, int prog)
{
	const struct cg_prog *p = &k->obj->progs[prog];
	int n = p->nmatches, err = 0;
	uint64_t *offs = xcalloc(n, sizeof(*offs));
	uint64_t *refs = xcalloc(n, sizeof(*refs));
	bool *done = xcalloc(n, sizeof(*done));

	/* one link per (binary, pid) */
	for (int i = 0; i < n && !err; i++) {
		const struct probes_match *m = &p->matches[i];
		struct kernel_uprobe_multi_attr a = { 0 };
		int cnt = 0, fd;

		if (done[i])
			continue;
		for (int j = i; j < n; j++) {
			const struct probes_match *o = &p->matches[j];

			if (done[j] || strcmp(o->target, m->target) ||
			    o->pid != m->pid)
				continue;
			done[j] = true;
			offs[cnt] = o->offset;
			refs[cnt] = o->semaphore_offset;
			cnt++;
		}
		a.prog_fd = bpf_program__fd(k->progs[prog]);
		a.attach_type = KERNEL_BPF_TRACE_UPROBE_MULTI;
		a.path = (uintptr_t)m->target;
		a.offsets = (uintptr_t)offs;
		a.ref_ctr_offsets = (uintptr_t)refs;
		a.cnt = cnt;
		a.multi_flags = p->provider == PROV_URETPROBE ?
					KERNEL_BPF_F_UPROBE_MULTI_RETURN :
					0;
		a.pid = m->pid > 0 ? m->pid : 0;
		fd = syscall(__NR_bpf, KERNEL_BPF_LINK_CREATE, &a, sizeof(a));
		if (fd < 0) {
			err = -errno;
			fprintf(stderr, "ubt: cannot attach %s: %s\n", m->name,
				strerror(-err));
			kernel_attach_error(k, p, m);
			break;
		}
		kernel_add_pfd(k, fd);
	}
	free(offs);
	free(refs);
	free(done);
	return err;
}

/*
 * The kernel runs the programs of one event in the reverse order of their
 * attaching for these (a new uprobe consumer, a new software event, a new
 * kprobe on an address already probed, a new fentry or fexit program of a
 * trampoline: each goes to the head of its list), in the order of
 * attaching for the others: attach these last to first so that they run
 * in program order.  (A kretprobe's entry handlers run reversed and its
 * return handlers reversed again: in the order of attaching.)
 */
static bool kernel_attach_reversed(const struct cg_prog *p)
{
	switch (p->provider) {
	case PROV_UPROBE:
	case PROV_URETPROBE:
	case PROV_USDT:
	case PROV_SOFTWARE:
	case PROV_KPROBE:
	case PROV_KFUNC:
	case PROV_KRETFUNC:
		return true;
	default:
		return false;
	}
}

/* interval and profile start counting when attached: after BEGIN */
static bool kernel_is_timer(const struct cg_prog *p)
{
	return p->provider == PROV_INTERVAL || p->provider == PROV_PROFILE;
}

/* Attach program i (all its targets); 0 or -errno. */
/*
 * The kernel refuses a uprobe on a lock-prefixed instruction (ENOTSUPP),
 * and for a file not mapped yet only when it maps it: the probe would
 * count nothing, silently.  Said before anything is attached instead.
 */
static int kernel_check_locked(struct kernel *k, int i)
{
	const struct cg_prog *p = &k->obj->progs[i];

	if (p->provider != PROV_UPROBE && p->provider != PROV_URETPROBE)
		return 0;
	for (int j = 0; j < p->nmatches; j++) {
		const struct probes_match *m = &p->matches[j];

		if (m->target && probes_insn_locked(m->target, m->offset) == 1) {
			fprintf(stderr, "ubt: cannot attach %s: the kernel "
				"places no uprobe on a lock-prefixed "
				"instruction%s\n", m->name,
				p->provider == PROV_UPROBE ?
					" (user mode can: -p or -c)" : "");
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

static int kernel_attach_prog(struct kernel *k, int i)
{
	int err = kernel_check_locked(k, i);

	if (err)
		return err;
	if (k->multi[i])
		return kernel_attach_multi(k, i);
	if (kernel_kprobe_is(&k->obj->progs[i]))
		return kernel_kprobe_attach_prog(k, i);
	for (int j = 0; j < k->ntargets; j++) {
		int err;

		if (k->targets[j].prog != i)
			continue;
		err = kernel_attach_one(k, &k->targets[j]);
		if (err)
			return err;
	}
	return 0;
}

int kernel_attach(struct kernel *k, int *nprobes)
{
	int n = k->obj->nprogs, err = 0;

	for (int i = 0; i < n && !err; i++) {
		const struct cg_prog *p = &k->obj->progs[i];

		/* (a standby program: cg.h) */
		if (!p->standby && !kernel_attach_reversed(p) &&
		    !kernel_is_timer(p))
			err = kernel_attach_prog(k, i);
	}
	for (int i = n - 1; i >= 0 && !err; i--)
		if (!k->obj->progs[i].standby &&
		    kernel_attach_reversed(&k->obj->progs[i]))
			err = kernel_attach_prog(k, i);
	if (err) {
		kernel_detach(k);
		return err;
	}
	if (nprobes)
		*nprobes = cg_object_probes(k->obj);
	return 0;
}

int kernel_attach_late(struct kernel *k, int prog)
{
	if (prog < 0 || prog >= k->obj->nprogs || k->obj->progs[prog].standby)
		return -EINVAL;
	return kernel_attach_prog(k, prog);
}

int kernel_attach_timers(struct kernel *k)
{
	int err = 0;

	for (int i = 0; i < k->obj->nprogs && !err; i++)
		if (kernel_is_timer(&k->obj->progs[i]))
			err = kernel_attach_prog(k, i);
	if (err)
		kernel_detach(k);
	return err;
}

bool kernel_run_iter(struct kernel *k)
{
	char buf[4096];
	ssize_t n;
	int fd;

	if (!k->iter)
		return false;
	fd = bpf_iter_create(bpf_link__fd(k->iter));
	if (fd < 0) {
		fprintf(stderr, "ubt: cannot run the iter probe: %s\n",
			strerror(errno));
		k->err = -errno;
		return true;
	}
	/*
	 * Each read() runs the program on the next objects (all of them,
	 * as ubt's programs write nothing into the file itself); their
	 * events are taken after each.
	 */
	k->in_iter = true;
	while ((n = read(fd, buf, sizeof(buf))) > 0 ||
	       (n < 0 && errno == EINTR && !signals_stopping()))
		kernel_consume(k);
	if (n < 0) {
		fprintf(stderr, "ubt: the iter probe stopped: %s\n",
			strerror(errno));
		k->err = -errno;
	}
	close(fd);
	kernel_consume(k);
	k->in_iter = false;
	k->exiting = true;
	return true;
}
