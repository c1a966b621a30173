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

		if (tid <= 0 || pt_find_thread(p, tid) || procstat_io_worker(tid))
			continue;
		err = seize_task(pid, tid);
		if (err > 0)
			continue;	/* it exits: nothing to stop */
		if (err < 0) {
			closedir(d);
			return err;
		}
		pt_add_thread(p, tid);
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

/* /proc/PID/mem, opened anew at each seize: after an exec an earlier
 * handle reads the old image's memory, which is gone */
static int open_mem(struct pt *p)
{
	char path[64];

	if (p->memfd >= 0)
		close(p->memfd);
	snprintf(path, sizeof(path), "/proc/%d/mem", p->pid);
	p->memfd = open(path, O_RDWR | O_CLOEXEC);
	return p->memfd < 0 ? -errno : 0;
}

int pt_mem_open(struct pt *p, pid_t pid)
{
	if (p->memfd >= 0)
		return 0;
	p->pid = pid;
	return open_mem(p);
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
	pt_add_thread(p, pid);
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
		if (err == -EAGAIN) {	/* p->err says which */
			pt_detach(p);
			return err;
		}
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
	if (!pt_find_thread(p, pid) && kill(pid, 0) < 0) {
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
	t = pt_add_thread(p, tid);
	ptrace(PTRACE_INTERRUPT, tid, 0, 0);
	if (pt_wait_stop(p, t, false) || !(t = pt_find_thread(p, tid))) {
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
		if (err == -EAGAIN)	/* p->err says which */
			return err;
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

void pt_detach_others(struct pt *p)
{
	if (p->ctl < 0 || p->ctl >= p->nth)
		return;
	pt_let_go(p, p->ctl);
	p->one = true;
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

	entry = procstat_auxv(pid, AT_ENTRY);
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
	pt_add_thread(p, pid)->stopped = true;
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
	pt_add_thread(p, pid)->stopped = true;
	if (!run_to_entry(p, pid, argv[0]))
		return 0;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	p->nth = 0;
	return pt_fail(p, -EIO, "cannot stop %s at its entry point", argv[0]);
}

int pt_detach(struct pt *p)
{
	int ret = pt_let_go(p, -1);

	p->nth = 0;
	p->stub = 0;	/* found again by the next seize's first call */
	p->stub_boot = 0;
	if (p->memfd >= 0)
		close(p->memfd);
	p->memfd = -1;
	return ret;
}
