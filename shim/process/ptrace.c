/* ptrace plumbing for user mode (see ptrace.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "errbuf.h"
#include "procstat.h"
#include "ptrace.h"
#include "util.h"
#include "ptrace_int.h"

/*
 * TRACESYSGOOD: a system call stop (remote calls run from one to the next)
 * reports SIGTRAP | 0x80, which a thread whose tracer dies (and another
 * seizes it at once: the guard) cannot be sent, as it would be SIGTRAP.
 */
#define PT_SEIZE_OPTS (PTRACE_O_TRACECLONE | PTRACE_O_TRACESYSGOOD)

int pt_fail(struct pt *p, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = errbuf_vset(p->err, sizeof(p->err), err, fmt, ap);
	va_end(ap);
	return err;
}

void pt_init(struct pt *p)
{
	memset(p, 0, sizeof(*p));
	p->memfd = -1;
	p->ctl = -1;
}

void pt_release(struct pt *p)
{
	if (p->memfd >= 0)
		close(p->memfd);
	free(p->th);
	p->th = NULL;
	p->nth = p->cap = 0;
	p->memfd = -1;
}

static struct pt_thread *find(struct pt *p, pid_t tid)
{
	int i;

	for (i = 0; i < p->nth; i++)
		if (p->th[i].tid == tid)
			return &p->th[i];
	return NULL;
}

static struct pt_thread *add(struct pt *p, pid_t tid)
{
	if (p->nth == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->th = xrealloc(p->th, p->cap * sizeof(*p->th));
	}
	p->th[p->nth] = (struct pt_thread){ .tid = tid };
	return &p->th[p->nth++];
}

void pt_drop_thread(struct pt *p, pid_t tid)
{
	struct pt_thread *t = find(p, tid);

	if (!t)
		return;
	if (p->ctl == p->nth - 1)
		p->ctl = (int)(t - p->th);
	*t = p->th[--p->nth];
}

/*
 * Wait until thread t is in a ptrace stop (nohang: 1 if it is not yet).
 * Follows clones (new threads are added, and waited for by the caller's
 * loop).  -ESRCH if it died.
 */
static int wait_stop(struct pt *p, struct pt_thread *t, bool nohang)
{
	pid_t tid = t->tid;
	int st;

	for (;;) {
		pid_t w = waitpid(tid, &st, __WALL | (nohang ? WNOHANG : 0));

		if (!w)
			return 1;
		if (w < 0) {
			if (errno == EINTR)
				continue;
			pt_drop_thread(p, tid);
			return -ESRCH;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (tid == p->pid) {
				p->exited = true;
				p->exit_status = st;
			}
			pt_drop_thread(p, tid);
			return -ESRCH;
		}
		if (!WIFSTOPPED(st))
			continue;
		t = find(p, tid);
		if (!t)
			return -ESRCH;
		switch (st >> 16) {
		case PTRACE_EVENT_CLONE: {
			unsigned long msg = 0;

			ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg);
			if (msg && !find(p, (pid_t)msg))
				add(p, (pid_t)msg);
			/*
			 * Still inside clone(): registers read here and
			 * written back, or a remote call run from here,
			 * would make pthread_create() see a failed clone
			 * of a thread that runs (two threads on one stack,
			 * a thread count off by one: the process ends
			 * early).  Let it return, and stop it there.
			 */
			if (ptrace(PTRACE_CONT, tid, 0, 0) == 0)
				ptrace(PTRACE_INTERRUPT, tid, 0, 0);
			continue;
		}
		case PTRACE_EVENT_STOP:
			/* a group stop (SIGSTOP): hold() never lets it go */
			if (WSTOPSIG(st) != SIGTRAP)
				t->group_stop = true;
			break;
		case PTRACE_EVENT_EXEC:
			break;
		case 0:
			/* a signal arrived first: keep it for detach */
			t->pending_sig = WSTOPSIG(st);
			break;
		default:
			break;
		}
		t = find(p, tid);
		t->stopped = true;
		t->released = false;
		t->stop_ns = mono_ns();
		if (!p->stop_start_ns)
			p->stop_start_ns = t->stop_ns;
		return 0;
	}
}

/*
 * Why ptrace(SEIZE) of thread tid of pid failed with EPERM: 1 if the
 * thread is exiting (a zombie or dead, or gone by now: it runs no code of
 * the process any more), 0 if another tracer holds it, 2 if this process
 * does already, -1 if neither shows (yet): the caller tries again.
 */
int pt_thread_exiting(pid_t pid, pid_t tid)
{
	char path[64], line[128];
	char state = 0;
	int tracer = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 1;	/* gone */
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "State:", 6))
			sscanf(line + 6, " %c", &state);
		else if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	}
	fclose(f);
	if (!state || state == 'Z' || state == 'X')
		return 1;
	if (tracer > 0) {
		/* ours already: seized earlier, its stop never waited for
		 * (a detach of a running thread fails) */
		snprintf(path, sizeof(path), "/proc/self/task/%d", tracer);
		return access(path, F_OK) ? 0 : 2;
	}
	return -1;
}

/* ptrace(SEIZE) of thread tid: 0, 1 if it is exiting (skip it), -errno */
static int seize_task(pid_t pid, pid_t tid)
{
	for (int tries = 0;; tries++) {
		int why;

		if (ptrace(PTRACE_SEIZE, tid, 0, PT_SEIZE_OPTS) == 0)
			return 0;
		if (errno == ESRCH)
			return 1;
		if (errno != EPERM)
			return -errno;
		why = pt_thread_exiting(pid, tid);
		if (why == 2)
			return 0;	/* ours (a detach that failed) */
		if (why >= 0 || tries == 50)
			return why > 0 ? 1 : -EPERM;
		usleep(1000);
	}
}

int pt_list_tasks(struct pt *p, pid_t pid, int *added)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int err;

	*added = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0 || find(p, tid) || procstat_io_worker(tid))
			continue;
		err = seize_task(pid, tid);
		if (err > 0)
			continue;	/* it exits: nothing to stop */
		if (err < 0) {
			closedir(d);
			return err;
		}
		add(p, tid);
		ptrace(PTRACE_INTERRUPT, tid, 0, 0);
		(*added)++;
	}
	closedir(d);
	return 0;
}

/* Does the stat file at path say zombie or dead (or is it gone)? */
static bool stat_dead(const char *path)
{
	char buf[512], *rp;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* Is thread tid of pid a zombie (or gone)?  It never stops then. */
static bool thread_dead(pid_t pid, pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	return stat_dead(path);
}

/*
 * A thread that has not stopped after this long is looked at: a zombie
 * (a thread-group leader that exited before the other threads: waitpid()
 * reports it only once they are gone) is dropped; after PT_STOP_MAX_NS
 * the stop fails instead of waiting forever.
 */
#define PT_STOP_CHECK_NS (100 * 1000000ULL)
#define PT_STOP_MAX_NS (5000 * 1000000ULL)

/*
 * Holding threads (p->hold_ns): after every PT_HOLD_ROUNDS rounds that let
 * a thread go, the time a stopped thread waits for the late ones doubles,
 * up to PT_HOLD_CAP_NS (a thread that needs its CPU back gets it sooner
 * than a whole scheduling period); the attempt is made again until
 * PT_HOLD_MAX_NS, only then is every thread waited for with the others
 * held (a machine so loaded that three threads are never on their CPUs
 * within PT_HOLD_CAP_NS of each other).
 */
#define PT_HOLD_ROUNDS 16
#define PT_HOLD_CAP_NS (4 * 1000000ULL)
#define PT_HOLD_MAX_NS (2000 * 1000000ULL)

/*
 * p->hold_ns: the threads stopped longer than that while others are not
 * stopped yet run again (their registers were not read yet: nothing to
 * restore; a thread in a group stop, SIGSTOP, stays).  Then, when only
 * such threads are left, they are interrupted again: having run
 * meanwhile, they are on a CPU and stop at once.  A
 * thread waiting for a CPU on a busy machine takes milliseconds to reach
 * its stop, and the others would wait for it all that time.
 */
static void hold(struct pt *p, uint64_t now, uint64_t hold_ns,
		 uint64_t *wake)
{
	int i, pending = 0;

	for (i = 0; i < p->nth; i++) {
		struct pt_thread *t = &p->th[i];

		if (!t->stopped && !t->released)
			pending++;
	}
	for (i = 0; i < p->nth && pending; i++) {
		struct pt_thread *t = &p->th[i];

		if (!t->stopped || t->have_regs || t->group_stop)
			continue;
		if (now - t->stop_ns < hold_ns) {
			if (t->stop_ns + hold_ns < *wake)
				*wake = t->stop_ns + hold_ns;
			continue;
		}
		if (ptrace(PTRACE_CONT, t->tid, 0, t->pending_sig) < 0)
			continue;	/* it died: waitpid() says so */
		if (now - t->stop_ns > p->held_ns)
			p->held_ns = now - t->stop_ns;
		p->holds++;
		t->pending_sig = 0;
		t->stopped = false;
		t->released = true;
	}
	if (pending)
		return;
	for (i = 0; i < p->nth; i++)
		if (p->th[i].released) {
			ptrace(PTRACE_INTERRUPT, p->th[i].tid, 0, 0);
			p->th[i].released = false;
		}
}

/*
 * Wait for every thread to stop, taking each stop as it comes (the time
 * of the first one is when the process stopped), sleeping until SIGCHLD;
 * with p->hold_ns, no thread stays stopped long while others are late
 * (hold()).
 */
int pt_stop_threads(struct pt *p)
{
	uint64_t t0 = mono_ns(), checked = t0;
	sigset_t chld, old;
	int i, left = 1, rounds = 0;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	while (left) {
		int nth = p->nth, moved = 0;
		uint64_t now, wake;

		left = 0;
		for (i = 0; i < p->nth; i++) {
			if (p->th[i].stopped)
				continue;
			if (wait_stop(p, &p->th[i], true) != 1) {
				moved = 1;	/* the array may have changed */
				break;
			}
			left = 1;
		}
		if (moved || p->nth != nth) {
			left = 1;
			continue;
		}
		if (!left)
			break;
		now = mono_ns();
		wake = now + 1000000;
		if (p->hold_ns && now - t0 < PT_HOLD_MAX_NS) {
			int before = p->holds, sh = rounds / PT_HOLD_ROUNDS;
			uint64_t h = p->hold_ns << (sh < 8 ? sh : 8);

			hold(p, now, h < PT_HOLD_CAP_NS ? h : PT_HOLD_CAP_NS,
			     &wake);
			if (p->holds != before)
				rounds++;
		} else {
			/* no more holding: the released ones stop too */
			for (i = 0; i < p->nth; i++)
				if (p->th[i].released) {
					ptrace(PTRACE_INTERRUPT, p->th[i].tid,
					       0, 0);
					p->th[i].released = false;
				}
		}
		if (now - checked > PT_STOP_CHECK_NS) {
			checked = now;
			for (i = 0; i < p->nth; i++)
				if (!p->th[i].stopped &&
				    thread_dead(p->pid, p->th[i].tid)) {
					pt_drop_thread(p, p->th[i].tid);
					moved = 1;
					break;
				}
			if (moved)
				continue;
		}
		if (now - t0 > PT_STOP_MAX_NS) {
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			return -ETIMEDOUT;
		}
		sigtimedwait(&chld, NULL,
			     &(struct timespec){ .tv_nsec = (long)(wake > now ?
						 wake - now : 1000) });
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return p->nth ? 0 : -ESRCH;
}

static int open_mem(struct pt *p)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", p->pid);
	p->memfd = open(path, O_RDWR | O_CLOEXEC);
	return p->memfd < 0 ? -errno : 0;
}

/* The registers of every stopped thread that has none yet; a thread that
 * exited meanwhile is dropped. */
static int fetch_regs(struct pt *p)
{
	for (int i = 0; i < p->nth; i++) {
		if (p->th[i].have_regs)
			continue;
		if (ptrace(PTRACE_GETREGS, p->th[i].tid, 0,
			   &p->th[i].regs) < 0) {
			if (errno != ESRCH)
				return pt_fail(p, -errno,
					    "ptrace(PTRACE_GETREGS)");
			pt_drop_thread(p, p->th[i--].tid);	/* it just exited */
			continue;
		}
		p->th[i].have_regs = true;
	}
	return 0;
}

static int setup_stopped(struct pt *p)
{
	int i, err;

	err = fetch_regs(p);
	if (err)
		return err;
	if (!p->nth)
		return pt_fail(p, 0, "process exited during attach");
	p->ctl = 0;
	for (i = 0; i < p->nth; i++)
		if (p->th[i].tid == p->pid)
			p->ctl = i;
	err = open_mem(p);
	if (err)
		return pt_fail(p, err, "open /proc/%d/mem", p->pid);
	return 0;
}

bool pt_gone(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	return stat_dead(path);
}

int pt_seize(struct pt *p, pid_t pid)
{
	int err, added, rounds = 0;

	p->pid = pid;
	if (ptrace(PTRACE_SEIZE, pid, 0, PT_SEIZE_OPTS) < 0) {
		err = -errno;
		if (err == -EPERM && pt_gone(pid)) {
			pt_fail(p, 0, "the process has exited");
			return -ESRCH;
		}
		return pt_fail(p, err, "ptrace");
	}
	add(p, pid);
	ptrace(PTRACE_INTERRUPT, pid, 0, 0);
	do {
		err = pt_list_tasks(p, pid, &added);
		if (err) {
			pt_detach(p);
			if (pt_gone(pid)) {
				pt_fail(p, 0, "process exited during attach");
				return -ESRCH;
			}
			return pt_fail(p, err, "ptrace");
		}
		err = pt_stop_threads(p);
		if (err == -ETIMEDOUT) {
			pt_detach(p);
			return pt_fail(p, err, "a thread did not stop");
		}
		if (err) {
			pt_detach(p);
			pt_fail(p, 0, "process exited during attach");
			return -ESRCH;
		}
	} while (added && ++rounds < 1000);
	/* the leader may have died while others ran on */
	if (!find(p, pid) && kill(pid, 0) < 0) {
		pt_detach(p);
		pt_fail(p, 0, "process exited during attach");
		return -ESRCH;
	}
	err = setup_stopped(p);
	if (err)
		pt_detach(p);
	return err;
}

int pt_seize_thread(struct pt *p, pid_t pid, pid_t tid)
{
	struct pt_thread *t;
	int err;

	p->pid = pid;
	/* no clone events: pt_stop_all() finds new threads in /proc */
	if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD) < 0) {
		err = -errno;
		if (pt_gone(pid)) {
			pt_fail(p, 0, "the process has exited");
			return -ESRCH;
		}
		return pt_fail(p, err, "ptrace");
	}
	t = add(p, tid);
	ptrace(PTRACE_INTERRUPT, tid, 0, 0);
	if (wait_stop(p, t, false) || !(t = find(p, tid))) {
		pt_detach(p);
		pt_fail(p, 0, "thread %d exited during attach", tid);
		return -ESRCH;
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &t->regs) < 0) {
		err = -errno;
		pt_detach(p);
		return pt_fail(p, err, "ptrace(PTRACE_GETREGS)");
	}
	t->have_regs = true;
	p->ctl = (int)(t - p->th);
	p->one = true;
	err = open_mem(p);
	if (err) {
		pt_detach(p);
		return pt_fail(p, err, "open /proc/%d/mem", pid);
	}
	return 0;
}

int pt_stop_all(struct pt *p)
{
	int err, added, rounds = 0;

	if (!p->one)
		return 0;
	ptrace(PTRACE_SETOPTIONS, p->th[p->ctl].tid, 0, PT_SEIZE_OPTS);
	do {
		err = pt_list_tasks(p, p->pid, &added);
		if (err)
			return pt_fail(p, err, "ptrace");
		err = pt_stop_threads(p);
		if (err == -ETIMEDOUT)
			return pt_fail(p, err, "a thread did not stop");
		if (err) {
			pt_fail(p, 0, "process exited during attach");
			return -ESRCH;
		}
	} while (added && ++rounds < 1000);
	err = fetch_regs(p);
	if (err)
		return err;
	p->one = false;
	return 0;
}

/*
 * Before a detach: a thread seized (or let go by hold()) but not in a
 * ptrace stop yet cannot be detached (PTRACE_DETACH fails: it would stay
 * ubt's tracee, stopped for the rest of the session).  Stop each first.
 */
static void stop_unstopped(struct pt *p)
{
	bool any = false;

	for (int i = 0; i < p->nth; i++)
		if (!p->th[i].stopped) {
			ptrace(PTRACE_INTERRUPT, p->th[i].tid, 0, 0);
			p->th[i].released = false;
			any = true;
		}
	if (any) {
		uint64_t hold = p->hold_ns;

		p->hold_ns = 0;
		pt_stop_threads(p);
		p->hold_ns = hold;
	}
}

void pt_detach_others(struct pt *p)
{
	struct pt_thread keep;
	int i;

	if (p->ctl < 0 || p->ctl >= p->nth)
		return;
	stop_unstopped(p);
	if (p->ctl < 0 || p->ctl >= p->nth)
		return;
	keep = p->th[p->ctl];
	for (i = 0; i < p->nth; i++) {
		struct pt_thread *t = &p->th[i];

		if (i == p->ctl)
			continue;
		if (t->have_regs)
			ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs);
		ptrace(PTRACE_DETACH, t->tid, 0, t->pending_sig);
	}
	p->th[0] = keep;
	p->nth = 1;
	p->ctl = 0;
	p->one = true;
}

static uint64_t auxv_entry(pid_t pid)
{
	char path[64];
	Elf64_auxv_t a;
	uint64_t entry = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, &a, sizeof(a)) == sizeof(a) && a.a_type != AT_NULL)
		if (a.a_type == AT_ENTRY)
			entry = a.a_un.a_val;
	close(fd);
	return entry;
}

/*
 * A process stopped right after its execve() (one thread, ours): run the
 * dynamic loader up to the ELF entry point, where libc is loaded and set
 * up, and stop there.  0, or -errno (the process may be left stopped).
 */
static int run_to_entry(struct pt *p, pid_t pid, const char *what)
{
	uint64_t entry, word, trap;
	struct user_regs_struct r;
	int st, err;

	entry = auxv_entry(pid);
	err = open_mem(p);
	if (!entry || err || pt_read(p, entry, &word, 8))
		return -EIO;
	trap = (word & ~0xffULL) | 0xcc;
	/* EXITKILL: if ubt dies before it lets the command run, the
	 * command (half set up) dies too */
	if (pt_write(p, entry, &trap, 8) ||
	    ptrace(PTRACE_SETOPTIONS, pid, 0,
		   PT_SEIZE_OPTS | (p->child ? PTRACE_O_EXITKILL : 0)) <
		    0 ||
	    ptrace(PTRACE_CONT, pid, 0, 0) < 0)
		return -EIO;
	for (;;) {
		if (waitpid(pid, &st, __WALL) < 0 || !WIFSTOPPED(st))
			return pt_fail(p, -ESRCH, "%s exited before its entry "
					       "point", what);
		if (WSTOPSIG(st) == SIGTRAP && !(st >> 16)) {
			/* it waits from here */
			p->stop_start_ns = mono_ns();
			break;
		}
		if (ptrace(PTRACE_CONT, pid, 0,
			   (st >> 16) ? 0 : WSTOPSIG(st)) < 0)
			return -EIO;
	}
	if (pt_write(p, entry, &word, 8) ||
	    ptrace(PTRACE_GETREGS, pid, 0, &r) < 0 || r.rip != entry + 1)
		return -EIO;
	r.rip = entry;
	if (ptrace(PTRACE_SETREGS, pid, 0, &r) < 0)
		return -EIO;
	close(p->memfd);
	p->memfd = -1;
	return setup_stopped(p);
}

int pt_follow_exec(struct pt *p, pid_t pid, pid_t tid,
		   void (*go)(void *), void *arg, int timeout_ms)
{
	uint64_t t0 = mono_ns();
	int st;

	pt_init(p);
	p->pid = pid;
	if (ptrace(PTRACE_SEIZE, tid, 0,
		   PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD) < 0) {
		go(arg);
		return pt_fail(p, -errno, "ptrace(PTRACE_SEIZE, %d)", tid);
	}
	go(arg);	/* the thread goes on into execve() */
	for (;;) {
		/* after an exec from another thread, it reports as pid */
		pid_t w = waitpid(tid, &st, __WALL | WNOHANG);

		if (w <= 0 && tid != pid)
			w = waitpid(pid, &st, __WALL | WNOHANG);

		if (w == 0) {
			if (mono_ns() - t0 > (uint64_t)timeout_ms * 1000000) {
				/* no exec came (it failed): let go */
				ptrace(PTRACE_INTERRUPT, tid, 0, 0);
				waitpid(tid, &st, __WALL);
				ptrace(PTRACE_DETACH, tid, 0, 0);
				return pt_fail(p, -ETIMEDOUT, "no execve() in "
						"pid %d", pid);
			}
			usleep(200);
			continue;
		}
		if (w < 0)
			return pt_fail(p, -errno, "waitpid");
		if (!WIFSTOPPED(st))
			return pt_fail(p, -ESRCH, "pid %d exited in execve()",
				    pid);
		if ((st >> 8) == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)))
			break;
		/* a signal for it meanwhile: deliver it */
		if (ptrace(PTRACE_CONT, w, 0,
			   (st >> 16) ? 0 : WSTOPSIG(st)) < 0)
			return pt_fail(p, -errno, "ptrace(PTRACE_CONT)");
	}
	/* the new image: one thread, the leader's id, stopped */
	add(p, pid)->stopped = true;
	if (run_to_entry(p, pid, "the new image"))
		return pt_fail(p, -EIO, "cannot stop pid %d at its new entry "
				     "point", pid);
	return 0;
}

int pt_spawn(struct pt *p, char *const argv[])
{
	int pfd[2], st, cerr = 0;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return pt_fail(p, -errno, "pipe");
	pid = fork();
	if (pid < 0)
		return pt_fail(p, -errno, "fork");
	if (!pid) {
		close(pfd[0]);
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		if (p->renice)
			setpriority(PRIO_PROCESS, 0, p->nice);
		execvp(argv[0], argv);
		cerr = errno;
		if (write(pfd[1], &cerr, sizeof(cerr)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	if (read(pfd[0], &cerr, sizeof(cerr)) != sizeof(cerr))
		cerr = 0;
	close(pfd[0]);
	p->pid = pid;
	p->child = true;
	if (waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st)) {
		if (!cerr)
			cerr = ECHILD;
		return pt_fail(p, -cerr, "cannot run %s", argv[0]);
	}
	if (cerr) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return pt_fail(p, -cerr, "cannot run %s", argv[0]);
	}
	add(p, pid)->stopped = true;
	if (!run_to_entry(p, pid, argv[0]))
		return 0;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	p->nth = 0;
	return pt_fail(p, -EIO, "cannot stop %s at its entry point", argv[0]);
}

int pt_detach(struct pt *p)
{
	int i, ret = 0;

	stop_unstopped(p);

	for (i = 0; i < p->nth; i++) {
		struct pt_thread *t = &p->th[i];

		if (t->have_regs &&
		    ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) < 0)
			ret = -errno;
		ptrace(PTRACE_DETACH, t->tid, 0, t->pending_sig);
	}
	p->nth = 0;
	p->stub = 0;	/* found again by the next seize's first call */
	p->stub_boot = 0;
	if (p->memfd >= 0)
		close(p->memfd);
	p->memfd = -1;
	return ret;
}
