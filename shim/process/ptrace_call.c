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
 * A SIGTRAP stop of the control thread during pt_call_near(): a system
 * call stop (true: si_code SIGTRAP, without PTRACE_O_TRACESYSGOOD, which
 * the seize did not set), and at the entry of the mmap to place (%rax
 * -ENOSYS), its address set to the hint (once).
 */
static bool near_stop(struct pt *p, pid_t tid)
{
	struct user_regs_struct r;
	siginfo_t si;

	if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) < 0 ||
	    si.si_code != SIGTRAP)
		return false;
	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return true;
	if (r.orig_rax != SYS_mmap || r.rax != (uint64_t)-ENOSYS || r.rdi ||
	    r.rsi != p->near_len || (int)r.r8 < 0 || r.r9)
		return true;
	r.rdi = p->near_at;
	ptrace(PTRACE_SETREGS, tid, 0, &r);
	p->near_len = 0;	/* done: on to the call's end */
	return true;
}

/* Resume the control thread with r and wait for its next stop. */
static int run_ctl(struct pt *p, struct user_regs_struct *r, bool step,
		   int timeout_ms)
{
	pid_t tid = p->th[p->ctl].tid;
	struct timespec t0, t;
	sigset_t chld, old;
	int st, err = 0;

	/* the code it runs may map and unmap */
	pt_maps_forget();
	if (ptrace(PTRACE_SETREGS, tid, 0, r) < 0)
		return -errno;
	/* a ptrace stop sends SIGCHLD: sleep until one comes, no polling */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w;

		if (ptrace(step ? PTRACE_SINGLESTEP :
			   p->near_len ? PTRACE_SYSCALL : PTRACE_CONT,
			   tid, 0, 0) < 0) {
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
		if (!step && p->near_len && WSTOPSIG(st) == SIGTRAP &&
		    near_stop(p, tid))
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
			return pt_fail(p, err, "no syscall instruction found");
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
		return pt_fail(p, err, "remote system call %ld", nr);
	if (r.rip != p->syscall_insn + 2)
		return pt_fail(p, -EFAULT, "remote system call %ld", nr);
	*ret = (int64_t)r.rax;
	return 0;
}

/* Run the control thread from r to the call's return (rip 0): *ret. */
static int pt_call_run(struct pt *p, struct user_regs_struct *r,
		       uint64_t *ret, int timeout_ms)
{
	int err = run_ctl(p, r, false, timeout_ms);

	if (err)
		return pt_fail(p, err, "remote call");
	if (r->rip != 0)
		return pt_fail(p, -EFAULT, "remote call faulted at %#llx",
			       (unsigned long long)r->rip);
	*ret = r->rax;
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
		return pt_fail(p, err, "remote call: write stack");
	r.rip = fn;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1;
	r.rdi = args[0];
	r.rsi = args[1];
	r.rdx = args[2];
	r.rcx = args[3];
	r.r8 = args[4];
	r.r9 = args[5];
	return pt_call_run(p, &r, ret, timeout_ms);
}

int pt_call_more(struct pt *p, uint64_t *ret, int timeout_ms)
{
	struct user_regs_struct r;

	if (p->ctl < 0)
		return -EINVAL;
	if (ptrace(PTRACE_GETREGS, p->th[p->ctl].tid, 0, &r) < 0)
		return pt_fail(p, -errno, "remote call");
	return pt_call_run(p, &r, ret, timeout_ms);
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
