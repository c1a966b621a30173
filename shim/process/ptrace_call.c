/*
 * Remote syscalls and function calls in a stopped process, run on one
 * thread while the others stay stopped or are briefly let go.
 */
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
#include "ptrace_int.h"

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
		err = pt_stop_threads(p);
		if (err)
			return err;
		err = pt_list_tasks(p, p->pid, &added);
		if (err)
			return err;
	} while (added && ++rounds < 1000);
	err = pt_stop_threads(p);
	if (err)
		return err;
	for (i = 0; i < p->nth; i++) {
		if (keep >= 0 && i == p->ctl)	/* pt_drop_thread() may move it */
			continue;
		if (ptrace(PTRACE_GETREGS, p->th[i].tid, 0,
			   &p->th[i].regs) < 0) {
			if (errno != ESRCH)
				return -errno;
			pt_drop_thread(p, p->th[i--].tid);
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

/*
 * A system call stop of the control thread during pt_call_near(): at the
 * entry of the mmap to place (%rax -ENOSYS), its address set to the hint
 * (once).
 */
static void near_stop(struct pt *p, pid_t tid)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return;
	if (r.orig_rax != SYS_mmap || r.rax != (uint64_t)-ENOSYS || r.rdi ||
	    r.rsi != p->near_len || (int)r.r8 < 0 || r.r9)
		return;
	r.rdi = p->near_at;
	ptrace(PTRACE_SETREGS, tid, 0, &r);
	p->near_len = 0;	/* done: on to the call's end */
}

/* A stop the thread's own code made (a fault), not a signal sent to it. */
static bool fault_stop(pid_t tid, int sig)
{
	siginfo_t si;

	if (sig != SIGSEGV && sig != SIGBUS && sig != SIGILL && sig != SIGFPE)
		return false;
	return ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0 && si.si_code > 0;
}

/*
 * For tests (tests/README.md): UBT_TEST_DIE_IN_DONE=N kills the worker
 * when the Nth call through the helper of this worker says done.
 */
static void test_die_in_done(void)
{
	static int seen;
	const char *v = getenv("UBT_TEST_DIE_IN_DONE");

	if (v && ++seen == atoi(v))
		kill(getpid(), SIGKILL);
}

/*
 * The helper said done (ptrace_done.c): the thread stopped, the result
 * into *ret.  1: its own registers go back as after any call; else it put
 * itself back already (a late ubt): it is as it is, nothing to settle.
 */
static int done_end(struct pt *p, struct user_regs_struct *r, uint64_t *ret)
{
	int in = pt_done_stop(p, r);

	if (in < 0)
		return in;
	*ret = pt_done_result(p);
	return in ? 0 : 1;
}

/*
 * Run the control thread (from r, when set) through the stub to its end
 * (pt_stub_done(): the result into *ret), stopping at each system call;
 * then its own registers go back (pt_settle()).  A fault in the call
 * ends it too (-EFAULT, *r where).
 */
static int run_ctl(struct pt *p, struct user_regs_struct *r, bool set,
		   uint64_t *ret, int timeout_ms)
{
	pid_t tid = p->th[p->ctl].tid;
	struct timespec t0, t;
	sigset_t chld, old;
	bool done_stopped = false;
	int st, err = 0;

	/* the code it runs may map and unmap */
	pt_maps_forget();
	if (set && ptrace(PTRACE_SETREGS, tid, 0, r) < 0)
		return -errno;
	/* a ptrace stop sends SIGCHLD: sleep until one comes, no polling */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w;

		/* a call through the helper: no system call stops, once the
		 * loader's mmap is placed */
		if (ptrace(p->done_call && !p->near_len ? PTRACE_CONT :
			   PTRACE_SYSCALL, tid, 0, 0) < 0) {
			err = -errno;
			break;
		}
		for (;;) {
			long long us;

			w = waitpid(tid, &st, __WALL | WNOHANG);
			if (w)
				break;
			if (p->done_call && pt_done_seen(p)) {
				/* for tests (tests/README.md): the thread
				 * waits in the helper, no ubt to stop it */
				test_die_in_done();
				err = done_end(p, r, ret);
				done_stopped = !err;
				break;
			}
			clock_gettime(CLOCK_MONOTONIC, &t);
			us = (t.tv_sec - t0.tv_sec) * 1000000LL +
			     (t.tv_nsec - t0.tv_nsec) / 1000;
			/* waiting for a lock a stopped thread holds? */
			if (!p->others_running && !p->one && us > 1000)
				release_others(p, p->ctl);
			if (us > timeout_ms * 1000LL) {
				/*
				 * Stopped where it is: the stub brings it
				 * back should ubt die.  Not seized (a -c
				 * command): SIGSTOP stops it, and is dropped
				 * when it goes on.
				 */
				if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
					syscall(SYS_tgkill, p->pid, tid,
						SIGSTOP);
				waitpid(tid, &st, __WALL);
				if (p->others_running)
					restop_others(p, p->ctl);
				err = -ETIMEDOUT;
				break;
			}
			if (p->done_call)	/* the helper wakes it */
				pt_done_sleep(p, 200000);
			else
				sigtimedwait(&chld, NULL,
					     &(struct timespec){ .tv_nsec =
								 200000 });
		}
		if (err || (p->done_call && pt_done_seen(p) && !w))
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
		p->call_stops++;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {	/* TRACESYSGOOD */
			if (ptrace(PTRACE_GETREGS, tid, 0, r) < 0) {
				err = -errno;
				break;
			}
			if (pt_stub_done(p, r)) {
				*ret = r->rdi;
				break;
			}
			/* the helper's futex calls, seen before the loader's
			 * mmap was (or never placed) */
			if (p->done_call && pt_done_seen(p)) {
				*ret = pt_done_result(p);
				break;
			}
			if (p->near_len)
				near_stop(p, tid);
			continue;	/* a system call of the call's */
		}
		if (fault_stop(tid, WSTOPSIG(st))) {
			ptrace(PTRACE_GETREGS, tid, 0, r);
			err = -EFAULT;
			break;
		}
		/* someone else's signal: keep it for later */
		p->th[p->ctl].pending_sig = WSTOPSIG(st);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t);
	p->calls++;
	if ((uint64_t)((t.tv_sec - t0.tv_sec) * 1000000000LL +
		       (t.tv_nsec - t0.tv_nsec)) > p->call_max_ns) {
		p->call_max_ns = (uint64_t)((t.tv_sec - t0.tv_sec) *
					    1000000000LL +
					    (t.tv_nsec - t0.tv_nsec));
		p->call_max_at = p->calls;
		p->call_max_done = p->done_call;
	}
	if (err == -ETIMEDOUT || err == -ESRCH)
		return err;
	if (err == 1)	/* it put itself back (done_end()) */
		err = 0;
	/*
	 * Stopped in the helper by an interrupt (done_end()): its own
	 * registers back as they are, as pt_settle() would after its own
	 * interrupt stop (a system call it was in restarted on the way
	 * out), without that stop.
	 */
	else if (done_stopped) {
		if (ptrace(PTRACE_SETREGS, tid, 0, &p->th[p->ctl].regs) < 0)
			err = -ESRCH;
	}
	/* done, or faulted: the thread's own registers back */
	else if (pt_settle(p, err == -EFAULT) && !err)
		err = -ESRCH;
	if (p->others_running) {
		int e = restop_others(p, p->ctl);

		err = err ?: e;
	}
	return err;
}

/*
 * The stub's page there, mapped (the first time in the process) through
 * the stub's copy in the vdso's spare bytes (pt_stub_place()): a killed
 * worker leaves the thread to put itself back, as after any call.
 */
static int stub_ready(struct pt *p)
{
	struct user_regs_struct r;
	uint64_t a[6], v = 0;
	int err, st;

	if (p->stub && !p->stub_boot)
		return 0;
	err = pt_stub_place(p, a);
	if (err || !p->stub_boot)
		return err;
	err = pt_stub_enter(p, false, SYS_mmap, a, &r);
	if (!err && getenv("UBT_TEST_DIE_IN_MMAP")) {
		/* to the mmap's entry stop, inside the copy, and die */
		pid_t tid = p->th[p->ctl].tid;

		if (!ptrace(PTRACE_SETREGS, tid, 0, &r) &&
		    !ptrace(PTRACE_SYSCALL, tid, 0, 0) &&
		    waitpid(tid, &st, __WALL) == tid)
			pt_test_die_in_mmap();
	}
	err = err ?: run_ctl(p, &r, true, &v, 2000);
	if (err == -ETIMEDOUT || err == -ESRCH) {
		/* the thread may be in the copy still: it stays */
		p->stub = p->stub_boot = 0;
		return pt_fail(p, err, "remote system call %d", SYS_mmap);
	}
	return pt_stub_boot_end(p, err ? 0 : v);
}

int pt_syscall(struct pt *p, long nr, const uint64_t args[6], int64_t *ret)
{
	struct user_regs_struct r;
	uint64_t v;
	int err;

	if (p->ctl < 0)
		return -EINVAL;
	p->done_call = false;	/* a call pt_call_more() gave up on */
	err = stub_ready(p);
	if (err)
		return err;
	/* once a page is shared: made by the helper, no system call stops */
	p->done_call = pt_done_usable(p);
	err = p->done_call ? pt_done_syscall(p, nr, args, &r) :
			     pt_stub_enter(p, false, (uint64_t)nr, args, &r);
	err = err ?: run_ctl(p, &r, true, &v, 2000);
	p->done_call = false;
	if (err == -EFAULT)
		return pt_fail(p, err, "remote system call %ld faulted at "
			       "%#llx", nr, (unsigned long long)r.rip);
	if (err)
		return pt_fail(p, err, "remote system call %ld", nr);
	*ret = (int64_t)v;
	return 0;
}

/* Run the control thread (from r, when set) to the call's end: *ret. */
static int pt_call_run(struct pt *p, struct user_regs_struct *r, bool set,
		       uint64_t *ret, int timeout_ms)
{
	int err = run_ctl(p, r, set, ret, timeout_ms);

	if (err == -EFAULT)
		return pt_fail(p, err, "remote call faulted at %#llx",
			       (unsigned long long)r->rip);
	if (err)
		return pt_fail(p, err, "remote call");
	return 0;
}

int pt_call(struct pt *p, uint64_t fn, const uint64_t args[6], uint64_t *ret,
	    int timeout_ms)
{
	struct user_regs_struct r;
	int err;

	if (p->ctl < 0)
		return -EINVAL;
	p->done_call = false;
	err = stub_ready(p);
	if (err)
		return err;
	p->done_call = pt_done_usable(p);
	err = p->done_call ? pt_done_enter(p, fn, args, &r) :
			     pt_stub_enter(p, true, fn, args, &r);
	err = err ?: pt_call_run(p, &r, true, ret, timeout_ms);
	/* pt_call_more() goes on with the same call */
	if (err != -ETIMEDOUT)
		p->done_call = false;
	return err;
}

int pt_call_more(struct pt *p, uint64_t *ret, int timeout_ms)
{
	struct user_regs_struct r;

	int err;

	if (p->ctl < 0)
		return -EINVAL;
	err = pt_call_run(p, &r, false, ret, timeout_ms);
	if (err != -ETIMEDOUT)
		p->done_call = false;
	return err;
}

int pt_call_near(struct pt *p, uint64_t fn, const uint64_t args[6],
		 uint64_t *ret, int timeout_ms, uint64_t len, uint64_t at)
{
	int err;

	p->near_len = len;
	p->near_at = at;
	err = pt_call(p, fn, args, ret, timeout_ms);
	p->near_len = 0;
	return err;
}
