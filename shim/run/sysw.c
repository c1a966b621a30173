/*
 * System-wide user mode (sysw.h): first-hit reports from the kernel, each
 * process reported taken as -p takes one (user_attach_pid(), the sites of
 * run_user.c), the fleet of processes the run loop reads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "guard.h"
#include "owner.h"
#include "run_int.h"
#include "sysw.h"
#include "sysw_bpf.h"
#include "sysw_int.h"
#include "user.h"
#include "util.h"

/* processes reported at once (one per process ever: a hash of tgids) */
#define SYSW_MAX_PIDS 65536
#define SYSW_RING_SIZE (64 * 1024)
/*
 * Processes taken at most: each keeps its memfd (a descriptor and a
 * mapping) until the end of the run, for its data; past that the kernel.
 */
#define SYSW_MAX_TAKEN 256
/* attaches tried per process (one per report) before it stays in the
 * kernel */
#define SYSW_ATTEMPTS 4

/*
 * r->u's sites in a new image it exec'd placed (err: their result, kept),
 * every thread stopped: in the stop that writes their jumps, the
 * kernel's int3s beside them out and the process in the taken table, as
 * in a new process (r->exec_installed).
 */
static int sysw_installed(struct run *r, int err);

/*
 * The report: the first hit of each process (tgid) not taken puts it in
 * the seen table and sends its tgid to ubt (sysw_bpf.c).  Its next hits
 * find it there and return.
 */
static int sysw_load(struct sysw *s)
{
	s->seen_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "ubt_sysw_seen", 4, 4,
				    SYSW_MAX_PIDS, NULL);
	if (s->seen_fd < 0)
		return -errno;
	s->ring_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "ubt_sysw_ring", 0,
				    0, SYSW_RING_SIZE, NULL);
	if (s->ring_fd < 0)
		return -errno;
	s->prog_fd = sysw_bpf_report(s->seen_fd, s->ring_fd, s->taken_fd);
	return s->prog_fd < 0 ? s->prog_fd : 0;
}

static int sysw_uprobe_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	int t = -1;

	if (!f)
		return -errno;
	if (fscanf(f, "%d", &t) != 1)
		t = -EIO;
	fclose(f);
	return t;
}

/*
 * prog on one site: a uprobe in every process (pid -1).  0, or -errno.
 */
static int sysw_attach_prog(struct sysw *s, const char *bin,
			    uint64_t file_off, uint64_t sem_off, int prog)
{
	struct perf_event_attr a = { .type = (uint32_t)s->uprobe_type,
				     .size = sizeof(a), .sample_period = 1,
				     .wakeup_events = 1 };
	int fd;

	a.config1 = (uint64_t)(uintptr_t)bin;	/* uprobe_path */
	a.config2 = file_off;			/* probe_offset */
	/* a USDT semaphore: as the kernel's probe there has it (one
	 * reference counter per site, else EINVAL) */
	a.config = sem_off << 32;	/* PERF_UPROBE_REF_CTR_OFFSET_SHIFT */
	fd = syscall(SYS_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0 && (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog) ||
			ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		return -errno;
	s->pfds = xrealloc(s->pfds, (s->npfds + 1) * sizeof(*s->pfds));
	s->pfds[s->npfds++] = fd;
	return 0;
}

/*
 * The report on each site; on a return probe's, the marks too (the calls
 * the kernel sees enter in a process taken, sysw_bpf_mark()).
 */
static void sysw_attach_site(const char *bin, uint64_t file_off,
			     uint64_t sem_off, bool ret, void *ctx)
{
	struct sysw *s = ctx;
	int e = sysw_attach_prog(s, bin, file_off, sem_off, s->prog_fd);

	if (e && !s->failed++)
		s->why = -e;
	e = ret && s->mark_fd >= 0 ?
		    sysw_attach_prog(s, bin, file_off, sem_off, s->mark_fd) :
		    0;
	if (e && !s->unmarked++)
		s->unmarked_why = -e;
}

static int sysw_reported(void *ctx, void *data, size_t len)
{
	struct sysw *s = ctx;
	uint32_t pid;

	if (len < sizeof(pid))
		return 0;
	memcpy(&pid, data, sizeof(pid));
	if (!pid || pid > INT32_MAX)
		return 0;
	s->todo = xrealloc(s->todo, (s->ntodo + 1) * sizeof(*s->todo));
	s->todo[s->ntodo++] = (pid_t)pid;
	return 0;
}

int sysw_start(struct run *r)
{
	struct sysw *s = xcalloc(1, sizeof(*s));
	int err;

	s->seen_fd = s->ring_fd = s->prog_fd = -1;
	s->marks_fd = s->mark_fd = s->lost_fd = s->patched_fd = -1;
	for (int i = 0; i < SYSW_BPF_FOLLOWERS; i++)
		s->follow[i] = -1;
	s->taken_fd = kernel_own_map_fd(r->k, CG_MAP_TAKEN);
	s->share.pre = r->unseen;
	r->sw = s;
	/* the worker's parent: the ubt the user started (guard.c) */
	s->ubt_pid = getppid();
	s->ubt_start = owner_start_time(s->ubt_pid);
	if (!r->o->all_processes)
		sysw_execd_note(s);
	s->uprobe_type = sysw_uprobe_type();
	err = s->uprobe_type < 0 ? s->uprobe_type : sysw_load(s);
	if (!err) {
		s->rb = ring_buffer__new(s->ring_fd, sysw_reported, s, NULL);
		if (!s->rb)
			err = -errno ?: -ENOMEM;
	}
	if (err) {
		fprintf(stderr, "ubt: system-wide user mode: cannot load the "
			"first-hit report: %s; the probes run in the kernel\n",
			strerror(-err));
		return err;
	}
	/* before any process is taken */
	sysw_taken_load(r, s);
	run_user_sites(r, sysw_attach_site, s);
	r->exec_installed = sysw_installed;
	if (s->failed)
		fprintf(stderr, "ubt: system-wide user mode: %d site(s) "
			"report no process (perf_event_open: %s): they run in "
			"the kernel\n", s->failed, strerror(s->why));
	if (s->unmarked)
		fprintf(stderr, "ubt: system-wide user mode: %d uretprobe "
			"site(s) without return marks (perf_event_open: %s): "
			"another tracer's uprobe there may count their returns "
			"twice\n", s->unmarked, strerror(s->unmarked_why));
	if (r->o->verbose)
		fprintf(stderr, "ubt: system-wide user mode: processes are "
			"taken at their first hit%s\n",
			r->o->all_processes ? ", those already running too "
					      "(--all-processes)" :
					      " if they started after ubt");
	return 0;
}

/* A site's kernel int3 beside the jump (after an endbr64): out. */
static void sysw_unbreak_site(const char *bin, uint64_t file_off,
			      uint64_t sem_off, bool ret, void *ctx)
{
	struct sysw_unbreak *ub = ctx;
	uint64_t at;
	uint8_t orig;
	int fd, e;

	(void)sem_off;
	if (ub->err || run_target_addr(user_pid(ub->r->u), bin, file_off, &at))
		return;
	fd = open(bin, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || pread(fd, &orig, 1, (off_t)file_off) != 1) {
		ub->err = -EIO;
		snprintf(ub->why, sizeof(ub->why), "cannot read %s", bin);
	} else {
		const char *who = sysw_share_user(&ub->r->sw->share, bin,
						  file_off);

		/* a return probe's site: not kept (sysw_shared_ret()) */
		e = user_unbreak(ub->r->u, at, orig, who && !ret);
		if (e < 0)
			ub->err = e;
		if (e == 1 && who && ret && !ub->lost_why[0])
			snprintf(ub->lost_why, sizeof(ub->lost_why),
				 "%s+%#llx: %s", bin,
				 (unsigned long long)file_off, who);
		if (e == 2 && ub->kept++ < 3) {
			size_t n = strlen(ub->kept_why);

			snprintf(ub->kept_why + n, sizeof(ub->kept_why) - n,
				 "%s%s+%#llx: shared with %s", n ? "; " : "",
				 bin, (unsigned long long)file_off, who);
		}
	}
	if (fd >= 0)
		close(fd);
}

/* -v: the sites of a process taken whose int3 stays, and why. */
static void sysw_say_kept(pid_t pid, const char *comm,
			  const struct sysw_unbreak *ub)
{
	fprintf(stderr, "ubt: pid %d%s%s%s: %d site(s) keep the kernel's "
		"int3 (its hits there trap into the kernel, and count in user "
		"mode): %s%s\n", (int)pid, *comm ? " (" : "", comm,
		*comm ? ")" : "", ub->kept, ub->kept_why,
		ub->kept > 3 ? "; ..." : "");
}

/*
 * The commit hook of a process being taken, or of a new image it exec'd
 * (user_on_commit(), once; r->u is u): every thread stopped, the jumps
 * written: the kernel's int3s out, and the process in the taken table
 * even if one stays (its uprobes' kernel programs then skip its patched
 * sites: counted once, in user mode).  Failures are noted in the
 * sysw_unbreak (said here for an exec), not returned: the jumps are in
 * place.
 */
static int sysw_commit(struct ubt_user *u, void *ctx)
{
	struct sysw_unbreak *ub = ctx;

	user_on_commit(u, NULL, NULL);
	run_user_sites(ub->r, sysw_unbreak_site, ub);
	ub->taken_err = sysw_taken_in(ub->r, &ub->patched, ub->taken_why,
				     sizeof(ub->taken_why));
	if (ub->exec && ub->err)
		fprintf(stderr, "ubt: pid %d: %s: a kernel uprobe's int3 "
			"stays beside a jump\n", (int)user_pid(u), ub->why);
	if (ub->exec && ub->kept && ub->r->o->verbose)
		sysw_say_kept(user_pid(u), "", ub);
	if (ub->exec && ub->lost_why[0])
		fprintf(stderr, "ubt: pid %d: its new image's return probe "
			"site %s shares its int3 with another tracer, taken out "
			"(a return probe in user mode does not run safely "
			"beside it yet): that tracer misses its hits there\n",
			(int)user_pid(u), ub->lost_why);
	if (ub->exec && ub->taken_err)
		fprintf(stderr, "ubt: pid %d: %s: if another tracer puts a "
			"uprobe on its sites, their hits may count twice\n",
			(int)user_pid(u), ub->taken_why);
	return 0;
}

/*
 * The exec took it out of the taken table (sysw_bpf.c): back in with the
 * new image's sites, in the stop that writes their jumps (sysw_commit());
 * none patched (not mapped there, refused): it stays out, and the kernel
 * counts them.
 */
static int sysw_installed(struct run *r, int err)
{
	struct sysw *s = r->sw;

	s->exec_ub = (struct sysw_unbreak){ .r = r, .exec = true };
	/* who else uses its uprobes now */
	sysw_share_scan(&s->share, getpid());
	user_on_commit(r->u, sysw_commit, &s->exec_ub);
	return err;
}

struct sysw_ret_shared {
	struct sysw *s;
	char why[PATH_MAX + 200];
};

static void sysw_ret_site(const char *bin, uint64_t file_off,
			  uint64_t sem_off, bool ret, void *ctx)
{
	struct sysw_ret_shared *c = ctx;
	const char *who;

	(void)sem_off;
	if (!ret || c->why[0])
		return;
	who = sysw_share_user(&c->s->share, bin, file_off);
	if (who)
		snprintf(c->why, sizeof(c->why), "the return probe's site "
			 "%s+%#llx is shared with %s (user mode does not run "
			 "a return probe safely beside another tracer's int3 "
			 "yet)", bin, (unsigned long long)file_off, who);
}

/*
 * Why pid cannot be taken: a return probe's site whose int3 another
 * tracer uses (it would stay: the kernel's return probe of this ubt
 * there and the wrapped call in user mode have been seen to crash a
 * process together), or NULL.
 */
static const char *sysw_shared_ret(struct run *r, pid_t pid,
				   struct sysw_ret_shared *c)
{
	(void)pid;
	c->s = r->sw;
	c->why[0] = 0;
	run_user_sites(r, sysw_ret_site, c);
	return c->why[0] ? c->why : NULL;
}

/* Reports of pid so far (this one too). */
static int sysw_attempts(const struct sysw *s, pid_t pid)
{
	int n = 0;

	for (int i = 0; i < s->nknown; i++)
		n += s->known[i] == pid;
	return n;
}

/*
 * Was pid running before ubt started?  Start times count clock ticks (10
 * ms): within the tick of ubt's own start, pids taken later are higher
 * (until they wrap around).
 */
static bool sysw_before(const struct sysw *s, pid_t pid, uint64_t start)
{
	bool before = start != s->ubt_start ? start < s->ubt_start :
					      pid < s->ubt_pid;

	/* forked before ubt, exec'd after: new to ubt (sysw_execd.c) */
	return before && !sysw_execd_since(s, pid, start);
}

/*
 * The kernel's breakpoints in a process before it was taken, by file and
 * offset (the file's byte there): put back when ubt leaves the process
 * (sysw_rebreak()), since another tracer's uprobe on the same instruction
 * shares that int3.
 */
struct sysw_break {
	char *bin;
	uint64_t file_off;
	uint8_t orig;
};

struct sysw_breaks {
	pid_t pid;
	int execs;		/* user_execs() at the take: its image */
	bool vm_back;		/* given back to the kernel (sysw_vm_back()) */
	struct sysw_break *b;
	int n;
};

static void sysw_break_site(const char *bin, uint64_t file_off,
			    uint64_t sem_off, bool ret, void *ctx)
{
	struct sysw_breaks *b = ctx;
	char path[64];
	uint64_t at;
	uint8_t c = 0, orig;
	int fd, ffd;

	(void)sem_off;
	(void)ret;
	if (run_target_addr(b->pid, bin, file_off, &at))
		return;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)b->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ffd = open(bin, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && ffd >= 0 && pread(fd, &c, 1, (off_t)at) == 1 &&
	    c == 0xcc && pread(ffd, &orig, 1, (off_t)file_off) == 1 &&
	    orig != 0xcc) {
		b->b = xrealloc(b->b, (b->n + 1) * sizeof(*b->b));
		b->b[b->n++] = (struct sysw_break){ .bin = xstrdup(bin),
						    .file_off = file_off,
						    .orig = orig };
	}
	if (fd >= 0)
		close(fd);
	if (ffd >= 0)
		close(ffd);
}

static void sysw_breaks_release(struct sysw_breaks *b)
{
	for (int i = 0; i < b->n; i++)
		free(b->b[i].bin);
	free(b->b);
	b->b = NULL;
	b->n = 0;
}

/*
 * ubt left a process (its jumps restored: the file's bytes): the kernel's
 * int3s back where they were.  The kernel's probes, ubt's until its links
 * close and any other tracer's, are still registered and find their site
 * by file and offset; when the last one goes, the kernel puts the file's
 * byte back itself.  Only where the file still maps at the same place
 * with the file's byte there; one byte, the first of an instruction, as
 * the kernel writes it.
 */
static void sysw_rebreak(const struct sysw_breaks *b)
{
	char path[64];
	uint8_t cc = 0xcc, c;
	uint64_t at;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)b->pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	for (int i = 0; fd >= 0 && i < b->n; i++)
		if (!run_target_addr(b->pid, b->b[i].bin, b->b[i].file_off,
				     &at) &&
		    pread(fd, &c, 1, (off_t)at) == 1 && c == b->b[i].orig &&
		    pwrite(fd, &cc, 1, (off_t)at) != 1)
			break;
	if (fd >= 0)
		close(fd);
}

/*
 * Forget the last process of the fleet (no user-mode probe ran in it
 * yet), its kernel breakpoints as they were: it counts in the kernel.
 */
static void sysw_drop_last(struct run *r, struct sysw_breaks *b)
{
	struct ubt_user *u = r->fleet[--r->nfleet];

	user_detach(u);
	user_free(u);
	sysw_rebreak(b);
	sysw_breaks_release(b);
}

/*
 * Take pid: attach as -p, place the tables and the sites, let it run.
 * Whatever fails, the process runs on with its probes in the kernel.
 */
static void sysw_take(struct run *r, pid_t pid)
{
	struct sysw *s = r->sw;
	struct sysw_breaks b = { .pid = pid };
	struct sysw_unbreak ub = { .r = r };
	struct sysw_ret_shared rs;
	struct user_opts uo;
	char err[512], comm[32];
	const char *why;
	uint64_t start = owner_start_time(pid), t0 = mono_ns();
	struct ubt_user *u;
	int n = 0, e;

	sysw_comm(pid, comm, sizeof(comm));
	r->sw->known = xrealloc(r->sw->known,
				(r->sw->nknown + 1) * sizeof(*r->sw->known));
	r->sw->kstart = xrealloc(r->sw->kstart, (r->sw->nknown + 1) *
							sizeof(*r->sw->kstart));
	r->sw->known[r->sw->nknown] = pid;
	r->sw->kstart[r->sw->nknown++] = start;
	if (!start || pid == getpid() || pid == getppid())
		return;
	if (sysw_before(r->sw, pid, start) && !r->o->all_processes) {
		if (r->o->verbose)
			fprintf(stderr, "ubt: pid %d (%s) was running before "
				"ubt: its probes stay in the kernel "
				"(--all-processes takes it)\n", (int)pid, comm);
		return;
	}
	if (r->nfleet >= SYSW_MAX_TAKEN) {
		if (r->o->verbose)
			fprintf(stderr, "ubt: pid %d (%s): its probes stay in "
				"the kernel: %d processes taken already\n",
				(int)pid, comm, SYSW_MAX_TAKEN);
		return;
	}
	why = place_pidns_syswide(r->c, r->d, pid);
	why = why ?: place_mntns_why(r->c, r->o, pid);
	why = why ?: place_static_pid(r->c, pid);	/* no ptrace, no retry */
	why = why ?: sysw_shared_ret(r, pid, &rs);
	if (why || user_process_check(pid, err, sizeof(err))) {
		if (r->o->verbose)
			fprintf(stderr, "ubt: pid %d (%s): its probes stay in "
				"the kernel: %s\n", (int)pid, comm,
				why ? why : err);
		return;
	}
	run_user_opts(r, &uo);
	uo.children = true;
	u = user_attach_pid(pid, &uo, err, sizeof(err));
	if (!u) {
		/* no thread at a safe point (busy in a library): its next
		 * hit reports it again, a few times */
		bool again = sysw_attempts(s, pid) < SYSW_ATTEMPTS &&
			     !bpf_map_delete_elem(s->seen_fd, &(uint32_t){
								(uint32_t)pid });

		if (r->o->verbose)
			fprintf(stderr, "ubt: pid %d (%s): its probes stay in "
				"the kernel%s: %s\n", (int)pid, comm,
				again ? " until its next hit" : "", err);
		return;
	}
	/* the guard restores it if this process dies */
	guard_target(pid);
	run_fleet_add(r, u);
	r->u = u;
	r->ubase = (uint32_t)(r->nfleet - 1) * run_fleet_stride(r);
	run_user_sites(r, sysw_break_site, &b);
	e = run_user_prepare(r);
	e = e ?: run_user_install(r, &n, true);
	why = e ? user_error(u) : NULL;
	if (!e && !n) {
		e = -ENOENT;
		why = "no site to patch";
	}
	if (e) {
		if (r->o->verbose)
			fprintf(stderr, "ubt: pid %d (%s): its probes stay in "
				"the kernel: %s\n", (int)pid, comm, why);
		sysw_drop_last(r, &b);
		return;
	}
	/* by fleet index, for the detach */
	s->breaks = xrealloc(s->breaks, r->nfleet * sizeof(*s->breaks));
	b.execs = user_execs(u);
	s->breaks[r->nfleet - 1] = b;
	if (user_install_exec_hook(u) && r->o->verbose)
		fprintf(stderr, "ubt: pid %d: execve() is not followed: %s\n",
			(int)pid, user_error(u));
	/* the int3s out and the process taken in the stop that writes the
	 * jumps (user_resume()): no hit between without either */
	user_on_commit(u, sysw_commit, &ub);
	user_clock_tick(u);
	e = user_resume(u);
	user_on_commit(u, NULL, NULL);
	if (ub.err)
		fprintf(stderr, "ubt: pid %d (%s): %s: a kernel uprobe's int3 "
			"stays beside a jump\n", (int)pid, comm, ub.why);
	if (ub.taken_err)
		fprintf(stderr, "ubt: pid %d (%s): %s: if another tracer puts "
			"a uprobe on its sites, their hits may count twice\n",
			(int)pid, comm, ub.taken_why);
	if (ub.kept && r->o->verbose)
		sysw_say_kept(pid, comm, &ub);
	if (e) {
		fprintf(stderr, "ubt: pid %d (%s): cannot resume: %s\n",
			(int)pid, comm, user_error(u));
		return;
	}
	if (r->o->verbose)
		fprintf(stderr, "ubt: pid %d (%s) taken: %d probe(s) in user "
			"mode (%.3f ms, stopped %.3f ms), %d site(s) its "
			"kernel programs skip\n", (int)pid, comm, n,
			(mono_ns() - t0) / 1e6, user_stop_ns(u) / 1e6,
			ub.patched);
}

/* Processes reported that are gone: out of the seen table. */
static void sysw_sweep(struct sysw *s)
{
	int n = 0;

	for (int i = 0; i < s->nknown; i++) {
		uint32_t key = (uint32_t)s->known[i];

		if (owner_start_time(s->known[i]) == s->kstart[i]) {
			s->known[n] = s->known[i];
			s->kstart[n++] = s->kstart[i];
		} else {
			bpf_map_delete_elem(s->seen_fd, &key);
		}
	}
	s->nknown = n;
	sysw_taken_sweep(s);
	s->swept = mono_ns();
}

/*
 * Process i of the fleet made a child with clone(CLONE_VM) without
 * CLONE_VFORK since it was taken (user_vmwatch.c): the child runs on the
 * per-thread block of the thread that made it.  The process goes back to
 * the kernel: its code restored (the child stopped meanwhile), the
 * kernel's int3s back, it and the child out of the taken table; the
 * kernel counts both from then on, each under its own pid.  What the
 * child hit before (up to one round of the run loop) counted as the
 * thread that made it: said.  A child libc's clone() makes is announced
 * first and waits for the detach (user_vm_asked()): none counted so.
 */
static void sysw_vm_back(struct run *r, int i)
{
	struct sysw *s = r->sw;
	struct sysw_breaks *b = &s->breaks[i];
	pid_t pid = user_pid(r->u), c, a = 0;
	unsigned n = 0;

	if (b->vm_back)
		return;
	c = user_vm_child(r->u, &n);
	if (!c && !(a = user_vm_asked(r->u)))
		return;
	b->vm_back = true;
	if (user_detach(r->u)) {
		fprintf(stderr, "ubt: detach from pid %d: %s\n", (int)pid,
			user_error(r->u));
		return;
	}
	if (b->execs == user_execs(r->u))
		sysw_rebreak(b);
	sysw_taken_out(s, pid);
	if (a) {
		fprintf(stderr, "ubt: warning: pid %d (thread %d) is making a "
			"child with clone(CLONE_VM) without CLONE_VFORK after "
			"it was taken: its probes run in the kernel from now "
			"on, before the child starts\n", (int)pid, (int)a);
		return;
	}
	sysw_taken_out(s, c);
	fprintf(stderr, "ubt: warning: pid %d made %u child(ren) with "
		"clone(CLONE_VM) without CLONE_VFORK (the first: pid %d) "
		"after it was taken: they run on the per-thread blocks of the "
		"threads that made them; its probes run in the kernel from "
		"now on, the child's hits until then (one round of ubt's "
		"loop) counted as its parent thread's\n", (int)pid, n,
		(int)c);
}

void sysw_poll(struct run *r)
{
	struct sysw *s = r->sw;

	if (!s)
		return;
	run_for_each_user(r, i) {
		if (user_exec_pending(r->u))
			run_follow_exec(r);
		user_clock_tick(r->u);
		sysw_vm_back(r, i);
	}
	if (!s->rb)
		return;
	if (mono_ns() - s->swept > 1000000000ull)
		sysw_sweep(s);
	ring_buffer__consume(s->rb);
	/* who else uses the uprobes, before any of them is stopped */
	if (s->ntodo) {
		uint64_t t0 = mono_ns();

		sysw_share_scan(&s->share, getpid());
		s->scan_ns += mono_ns() - t0;
		s->nscans++;
	}
	for (int i = 0; i < s->ntodo && !signals_stopping(); i++)
		sysw_take(r, s->todo[i]);
	s->ntodo = 0;
}

void sysw_stop(struct run *r)
{
	struct sysw *s = r->sw;

	if (s && r->o->verbose)
		sysw_taken_note(s);
	if (s && r->o->verbose && s->nscans)
		fprintf(stderr, "ubt: system-wide user mode: looked for other "
			"tracers of its sites %d time(s), %.3f ms each\n",
			s->nscans, s->scan_ns / 1e6 / s->nscans);

	/* the reports first: nothing is taken any more */
	for (int i = 0; s && i < s->npfds; i++)
		close(s->pfds[i]);
	for (int i = 0; s && i < SYSW_BPF_FOLLOWERS; i++)
		if (s->follow[i] >= 0)
			close(s->follow[i]);
	run_for_each_user(r, i) {
		struct sysw_breaks *b = s ? &s->breaks[i] : NULL;

		if (user_detach(r->u)) {
			fprintf(stderr, "ubt: detach from pid %d: %s\n",
				(int)user_pid(r->u), user_error(r->u));
			continue;
		}
		/* the same image: the int3s others may share, back; the
		 * kernel counts it again */
		if (b && b->execs == user_execs(r->u))
			sysw_rebreak(b);
		if (s)
			sysw_taken_out(s, user_pid(r->u));
		if (r->o->verbose && user_children(r->u))
			fprintf(stderr, "ubt: pid %d: %d child(ren) it forked "
				"recorded in user mode too\n",
				(int)user_pid(r->u), user_children(r->u));
	}
	for (int i = 0; i < r->nfleet; i++) {
		user_free(r->fleet[i]);
		if (s)
			sysw_breaks_release(&s->breaks[i]);
	}
	r->nfleet = 0;
	r->u = NULL;
	sysw_unseen_free(r->unseen);
	r->unseen = NULL;
	if (!s)
		return;
	sysw_taken_lost(s);
	ring_buffer__free(s->rb);
	if (s->prog_fd >= 0)
		close(s->prog_fd);
	if (s->mark_fd >= 0)
		close(s->mark_fd);
	if (s->lost_fd >= 0)
		close(s->lost_fd);
	if (s->own_patched)
		close(s->patched_fd);
	if (s->ring_fd >= 0)
		close(s->ring_fd);
	if (s->seen_fd >= 0)
		close(s->seen_fd);
	free(s->pfds);
	free(s->todo);
	free(s->known);
	sysw_execd_free(s);
	free(s->kstart);
	free(s->breaks);
	sysw_taken_free(s);
	sysw_share_free(&s->share);
	free(s);
	r->sw = NULL;
}
