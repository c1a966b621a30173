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
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptrace.h"
#include "util.h"

#define PT_SEIZE_OPTS PTRACE_O_TRACECLONE

static int fail(struct pt *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct pt *p, int err, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
	n = strlen(p->err);
	if (err)
		snprintf(p->err + n, sizeof(p->err) - n, ": %s",
			 strerror(-err));
	return err ? err : -EINVAL;
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

static void drop(struct pt *p, pid_t tid)
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
			drop(p, tid);
			return -ESRCH;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (tid == p->pid) {
				p->exited = true;
				p->exit_status = st;
			}
			drop(p, tid);
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
			break;
		}
		case PTRACE_EVENT_STOP:
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
		if (!p->stop_start_ns)
			p->stop_start_ns = mono_ns();
		return 0;
	}
}

static int list_tasks(struct pt *p, pid_t pid, int *added)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	*added = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0 || find(p, tid))
			continue;
		if (ptrace(PTRACE_SEIZE, tid, 0, PT_SEIZE_OPTS) < 0) {
			int err = -errno;

			if (err == -ESRCH)
				continue;
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
 * Wait for every thread to stop, taking each stop as it comes (the time
 * of the first one is when the process stopped), sleeping until SIGCHLD.
 */
static int stop_all(struct pt *p)
{
	uint64_t t0 = mono_ns(), checked = t0;
	sigset_t chld, old;
	int i, left = 1;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	while (left) {
		int nth = p->nth, moved = 0;
		uint64_t now;

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
		if (now - checked > PT_STOP_CHECK_NS) {
			checked = now;
			for (i = 0; i < p->nth; i++)
				if (!p->th[i].stopped &&
				    thread_dead(p->pid, p->th[i].tid)) {
					drop(p, p->th[i].tid);
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
			     &(struct timespec){ .tv_nsec = 1000000 });
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
				return fail(p, -errno,
					    "ptrace(PTRACE_GETREGS)");
			drop(p, p->th[i--].tid);	/* it just exited */
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
		return fail(p, 0, "process exited during attach");
	p->ctl = 0;
	for (i = 0; i < p->nth; i++)
		if (p->th[i].tid == p->pid)
			p->ctl = i;
	err = open_mem(p);
	if (err)
		return fail(p, err, "open /proc/%d/mem", p->pid);
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
			fail(p, 0, "the process has exited");
			return -ESRCH;
		}
		return fail(p, err, "ptrace");
	}
	add(p, pid);
	ptrace(PTRACE_INTERRUPT, pid, 0, 0);
	do {
		err = list_tasks(p, pid, &added);
		if (err) {
			pt_detach(p);
			if (pt_gone(pid)) {
				fail(p, 0, "process exited during attach");
				return -ESRCH;
			}
			return fail(p, err, "ptrace");
		}
		err = stop_all(p);
		if (err == -ETIMEDOUT) {
			pt_detach(p);
			return fail(p, err, "a thread did not stop");
		}
		if (err) {
			pt_detach(p);
			fail(p, 0, "process exited during attach");
			return -ESRCH;
		}
	} while (added && ++rounds < 1000);
	/* the leader may have died while others ran on */
	if (!find(p, pid) && kill(pid, 0) < 0) {
		pt_detach(p);
		fail(p, 0, "process exited during attach");
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
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
		err = -errno;
		if (pt_gone(pid)) {
			fail(p, 0, "the process has exited");
			return -ESRCH;
		}
		return fail(p, err, "ptrace");
	}
	t = add(p, tid);
	ptrace(PTRACE_INTERRUPT, tid, 0, 0);
	if (wait_stop(p, t, false) || !(t = find(p, tid))) {
		pt_detach(p);
		fail(p, 0, "thread %d exited during attach", tid);
		return -ESRCH;
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &t->regs) < 0) {
		err = -errno;
		pt_detach(p);
		return fail(p, err, "ptrace(PTRACE_GETREGS)");
	}
	t->have_regs = true;
	p->ctl = (int)(t - p->th);
	p->one = true;
	err = open_mem(p);
	if (err) {
		pt_detach(p);
		return fail(p, err, "open /proc/%d/mem", pid);
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
		err = list_tasks(p, p->pid, &added);
		if (err)
			return fail(p, err, "ptrace");
		err = stop_all(p);
		if (err == -ETIMEDOUT)
			return fail(p, err, "a thread did not stop");
		if (err) {
			fail(p, 0, "process exited during attach");
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
	struct pt_thread keep;
	int i;

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
		   PTRACE_O_TRACECLONE | (p->child ? PTRACE_O_EXITKILL : 0)) <
		    0 ||
	    ptrace(PTRACE_CONT, pid, 0, 0) < 0)
		return -EIO;
	for (;;) {
		if (waitpid(pid, &st, __WALL) < 0 || !WIFSTOPPED(st))
			return fail(p, -ESRCH, "%s exited before its entry "
					       "point", what);
		if (WSTOPSIG(st) == SIGTRAP && !(st >> 16))
			break;
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
	if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACEEXEC) < 0) {
		go(arg);
		return fail(p, -errno, "ptrace(PTRACE_SEIZE, %d)", tid);
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
				return fail(p, -ETIMEDOUT, "no execve() in "
						"pid %d", pid);
			}
			usleep(200);
			continue;
		}
		if (w < 0)
			return fail(p, -errno, "waitpid");
		if (!WIFSTOPPED(st))
			return fail(p, -ESRCH, "pid %d exited in execve()",
				    pid);
		if ((st >> 8) == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)))
			break;
		/* a signal for it meanwhile: deliver it */
		if (ptrace(PTRACE_CONT, w, 0,
			   (st >> 16) ? 0 : WSTOPSIG(st)) < 0)
			return fail(p, -errno, "ptrace(PTRACE_CONT)");
	}
	/* the new image: one thread, the leader's id, stopped */
	add(p, pid)->stopped = true;
	if (run_to_entry(p, pid, "the new image"))
		return fail(p, -EIO, "cannot stop pid %d at its new entry "
				     "point", pid);
	return 0;
}

int pt_spawn(struct pt *p, char *const argv[])
{
	int pfd[2], st, cerr = 0;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return fail(p, -errno, "pipe");
	pid = fork();
	if (pid < 0)
		return fail(p, -errno, "fork");
	if (!pid) {
		close(pfd[0]);
		ptrace(PTRACE_TRACEME, 0, 0, 0);
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
		return fail(p, -cerr, "cannot run %s", argv[0]);
	}
	if (cerr) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return fail(p, -cerr, "cannot run %s", argv[0]);
	}
	add(p, pid)->stopped = true;
	if (!run_to_entry(p, pid, argv[0]))
		return 0;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	p->nth = 0;
	return fail(p, -EIO, "cannot stop %s at its entry point", argv[0]);
}

int pt_detach(struct pt *p)
{
	int i, ret = 0;

	for (i = 0; i < p->nth; i++) {
		struct pt_thread *t = &p->th[i];

		if (t->have_regs &&
		    ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) < 0)
			ret = -errno;
		ptrace(PTRACE_DETACH, t->tid, 0, t->pending_sig);
	}
	p->nth = 0;
	if (p->memfd >= 0)
		close(p->memfd);
	p->memfd = -1;
	return ret;
}

int pt_read(struct pt *p, uint64_t addr, void *buf, size_t n)
{
	ssize_t r = pread(p->memfd, buf, n, (off_t)addr);

	if (r == (ssize_t)n)
		return 0;
	return r < 0 ? -errno : -EIO;
}

int pt_write(struct pt *p, uint64_t addr, const void *buf, size_t n)
{
	ssize_t r = pwrite(p->memfd, buf, n, (off_t)addr);

	if (r == (ssize_t)n)
		return 0;
	return r < 0 ? -errno : -EIO;
}

int pt_regs(struct pt *p, int i, struct user_regs_struct *r)
{
	if (i < 0 || i >= p->nth || !p->th[i].have_regs)
		return -EINVAL;
	*r = p->th[i].regs;
	return 0;
}

int pt_set_regs(struct pt *p, int i, const struct user_regs_struct *r)
{
	if (i < 0 || i >= p->nth || !p->th[i].have_regs)
		return -EINVAL;
	p->th[i].regs = *r;
	return 0;
}

int pt_maps(pid_t pid, struct pt_map **out, int *n)
{
	char path[64], line[512];
	struct pt_map *m = NULL;
	int cnt = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct pt_map e = { 0 };
		unsigned long long s, en, off;
		int pos = 0;

		if (sscanf(line, "%llx-%llx %4s %llx %*s %*s %n", &s, &en,
			   e.perms, &off, &pos) < 4)
			continue;
		e.start = s;
		e.end = en;
		e.off = off;
		if (pos > 0) {
			snprintf(e.path, sizeof(e.path), "%s", line + pos);
			e.path[strcspn(e.path, "\n")] = 0;
		}
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			m = xrealloc(m, cap * sizeof(*m));
		}
		m[cnt++] = e;
	}
	fclose(f);
	*out = m;
	*n = cnt;
	return 0;
}

/* Find the bytes 0f 05 in an executable mapping: vdso first, then libc. */
static int find_syscall_insn(struct pt *p)
{
	struct pt_map *m;
	int n, i, pass, err;

	err = pt_maps(p->pid, &m, &n);
	if (err)
		return err;
	for (pass = 0; pass < 2 && !p->syscall_insn; pass++) {
		for (i = 0; i < n && !p->syscall_insn; i++) {
			uint8_t buf[65536];
			uint64_t a, len;
			size_t k;

			if (m[i].perms[2] != 'x')
				continue;
			if (pass == 0 && strcmp(m[i].path, "[vdso]"))
				continue;
			if (pass == 1 && !strstr(m[i].path, "libc"))
				continue;
			for (a = m[i].start; a < m[i].end && !p->syscall_insn;
			     a += len) {
				len = m[i].end - a;
				if (len > sizeof(buf))
					len = sizeof(buf);
				if (pt_read(p, a, buf, len))
					break;
				for (k = 0; k + 1 < len; k++) {
					if (buf[k] == 0x0f &&
					    buf[k + 1] == 0x05) {
						p->syscall_insn = a + k;
						break;
					}
				}
			}
		}
	}
	free(m);
	return p->syscall_insn ? 0 : -ENOENT;
}

/*
 * A remote call that does not return at once may wait for a lock held by a
 * stopped thread (dlopen, malloc): let the other threads run until it
 * returns, then stop them again.
 */
static void release_others(struct pt *p, int keep)
{
	int i;

	for (i = 0; i < p->nth; i++) {
		struct pt_thread *t = &p->th[i];

		if (i == keep || !t->stopped)
			continue;
		if (t->have_regs)
			ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs);
		ptrace(PTRACE_CONT, t->tid, 0, t->pending_sig);
		t->pending_sig = 0;
		t->stopped = false;
	}
	p->others_running = true;
	clock_gettime(CLOCK_MONOTONIC, &p->released_at);
}

static int restop_others(struct pt *p, int keep)
{
	int i, err, added, rounds = 0;
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	p->released_ns += (uint64_t)((t.tv_sec - p->released_at.tv_sec) *
					     1000000000LL +
				     (t.tv_nsec - p->released_at.tv_nsec));
	p->others_running = false;
	for (i = 0; i < p->nth; i++)
		if (!p->th[i].stopped)
			ptrace(PTRACE_INTERRUPT, p->th[i].tid, 0, 0);
	do {
		err = stop_all(p);
		if (err)
			return err;
		err = list_tasks(p, p->pid, &added);
		if (err)
			return err;
	} while (added && ++rounds < 1000);
	err = stop_all(p);
	if (err)
		return err;
	for (i = 0; i < p->nth; i++) {
		if (keep >= 0 && i == p->ctl)	/* drop() may move it */
			continue;
		if (ptrace(PTRACE_GETREGS, p->th[i].tid, 0,
			   &p->th[i].regs) < 0) {
			if (errno != ESRCH)
				return -errno;
			drop(p, p->th[i--].tid);
			continue;
		}
		p->th[i].have_regs = true;
	}
	return 0;
}

int pt_run_briefly(struct pt *p, unsigned int usec)
{
	int err;

	release_others(p, -1);
	usleep(usec);
	err = restop_others(p, -1);
	if (!err && !p->nth)
		err = -ESRCH;
	return err;
}

/* Resume the control thread with r and wait for its next stop. */
static int run_ctl(struct pt *p, struct user_regs_struct *r, bool step,
		   int timeout_ms)
{
	pid_t tid = p->th[p->ctl].tid;
	struct timespec t0, t;
	sigset_t chld, old;
	int st, err = 0;


	if (ptrace(PTRACE_SETREGS, tid, 0, r) < 0)
		return -errno;
	/* a ptrace stop sends SIGCHLD: sleep until one comes, no polling */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w;

		if (ptrace(step ? PTRACE_SINGLESTEP : PTRACE_CONT, tid, 0, 0) <
		    0) {
			err = -errno;
			break;
		}
		for (;;) {
			long long us;

			w = waitpid(tid, &st, __WALL | WNOHANG);
			if (w)
				break;
			clock_gettime(CLOCK_MONOTONIC, &t);
			us = (t.tv_sec - t0.tv_sec) * 1000000LL +
			     (t.tv_nsec - t0.tv_nsec) / 1000;
			/* waiting for a lock a stopped thread holds? */
			if (!step && !p->others_running && !p->one &&
			    us > 1000)
				release_others(p, p->ctl);
			if (us > timeout_ms * 1000LL) {
				/* not seized (a -c command): SIGSTOP stops
				 * it, and is dropped when it goes on */
				if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
					syscall(SYS_tgkill, p->pid, tid,
						SIGSTOP);
				waitpid(tid, &st, __WALL);
				if (p->others_running)
					restop_others(p, p->ctl);
				err = -ETIMEDOUT;
				break;
			}
			sigtimedwait(&chld, NULL,
				     &(struct timespec){ .tv_nsec = 200000 });
		}
		if (err)
			break;
		if (w < 0) {
			err = -errno;
			break;
		}
		if (!WIFSTOPPED(st)) {
			err = -ESRCH;
			break;
		}
		if (st >> 16)	/* event stops: keep going */
			continue;
		if (WSTOPSIG(st) == (step ? SIGTRAP : SIGSEGV))
			break;
		/* someone else's signal: keep it for later */
		p->th[p->ctl].pending_sig = WSTOPSIG(st);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return err;
	if (ptrace(PTRACE_GETREGS, tid, 0, r) < 0)
		return -errno;
	if (p->others_running)
		return restop_others(p, p->ctl);
	return 0;
}

int pt_syscall(struct pt *p, long nr, const uint64_t args[6], int64_t *ret)
{
	struct user_regs_struct r;
	int err;

	if (p->ctl < 0)
		return -EINVAL;
	if (!p->syscall_insn) {
		err = find_syscall_insn(p);
		if (err)
			return fail(p, err, "no syscall instruction found");
	}
	r = p->th[p->ctl].regs;
	r.rax = (uint64_t)nr;
	r.orig_rax = (uint64_t)-1;
	r.rdi = args[0];
	r.rsi = args[1];
	r.rdx = args[2];
	r.r10 = args[3];
	r.r8 = args[4];
	r.r9 = args[5];
	r.rip = p->syscall_insn;
	err = run_ctl(p, &r, true, 2000);
	if (err)
		return fail(p, err, "remote system call %ld", nr);
	if (r.rip != p->syscall_insn + 2)
		return fail(p, -EFAULT, "remote system call %ld", nr);
	*ret = (int64_t)r.rax;
	return 0;
}

int pt_call(struct pt *p, uint64_t fn, const uint64_t args[6], uint64_t *ret,
	    int timeout_ms)
{
	struct user_regs_struct r;
	uint64_t zero = 0;
	int err;

	if (p->ctl < 0)
		return -EINVAL;
	r = p->th[p->ctl].regs;
	/* below the red zone, aligned, returning to address 0 */
	r.rsp = ((r.rsp - 1024) & ~15ULL) - 8;
	err = pt_write(p, r.rsp, &zero, 8);
	if (err)
		return fail(p, err, "remote call: write stack");
	r.rip = fn;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1;
	r.rdi = args[0];
	r.rsi = args[1];
	r.rdx = args[2];
	r.rcx = args[3];
	r.r8 = args[4];
	r.r9 = args[5];
	err = run_ctl(p, &r, false, timeout_ms);
	if (err)
		return fail(p, err, "remote call");
	if (r.rip != 0)
		return fail(p, -EFAULT, "remote call faulted at %#llx",
			    (unsigned long long)r.rip);
	*ret = r.rax;
	return 0;
}
