/*
 * The guard: ubt killed at any instant must not hurt the process it traces.
 *
 * Before ubt touches a target in user mode it forks.  The process the user
 * started (and may kill) becomes the guard: it waits for the other one,
 * the worker, which does everything else (attach, remote calls, patching,
 * the run, detach) and whose exit status the guard passes on.  Signals
 * sent to the guard by another process (kill -INT, -TERM, -HUP, -USR1)
 * go on to the worker; those the terminal sends reach both already.
 * SIGINT and SIGTERM go on numbered (sigqueue()), so that the worker
 * takes a process-group kill, which reaches it twice, for one request.
 * Signals that come while the guard forks wait until it forwards them.
 * A worker that exits 128 + SIGPIPE (the output's reader gone, the
 * target detached) makes the guard die of SIGPIPE, as bpftrace would.
 *   - The guard dies (SIGKILL): the worker gets SIGRTMIN+2 (parent death
 *     signal) and ends the run the ordinary way, silently: the target is
 *     resumed if it was not yet, its code restored, a -c command left
 *     running.  So the target never sees a tracer vanish in the middle of
 *     a remote call.
 *   - The worker dies: the guard stops the target, writes back the
 *     original bytes of the worker's jumps (shim/patch/owner.c), idles its
 *     runtime and exits 1 with a message.  A remote call the worker was
 *     making finishes and puts its thread back by itself
 *     (shim/process/ptrace_stub.c).
 *   - Both killed at once (a process-group kill: timeout -s KILL, kill -9
 *     of the shell's job): with -p the worker runs in a process group of
 *     its own, which such a kill does not reach; it sees the guard die
 *     and restores the target as above.  The guard then passes on the
 *     signals the terminal sends its group (Ctrl-C) too.  A -c command
 *     keeps ubt's group (it reads the terminal as the foreground job).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guard.h"
#include "signals.h"
#include "user.h"

static pid_t guard_worker;
static pid_t guard_parent;
static bool guard_own_group;	/* the worker's own process group */
static int guard_fd = -1;	/* worker -> guard: the target's pid */
static volatile sig_atomic_t guard_orphan;
static void (*guard_on_orphan)(void);

static void guard_forward(int sig, siginfo_t *si, void *ctx)
{
	static volatile sig_atomic_t relayed;

	(void)ctx;
	/* from the terminal (SI_KERNEL), the worker has it already,
	 * unless it is in a process group of its own */
	if (guard_worker <= 0 || !si ||
	    (!guard_own_group && si->si_code != SI_USER &&
	     si->si_code != SI_QUEUE) ||
	    ((si->si_code == SI_USER || si->si_code == SI_QUEUE) &&
	     si->si_pid == guard_worker))
		return;
	/*
	 * Numbered: a kill of the process group reached the worker too,
	 * and the two copies are one request (shim/base/signals.c).
	 */
	if (sig == SIGINT || sig == SIGTERM)
		sigqueue(guard_worker, sig,
			 (union sigval){ .sival_int = ++relayed });
	else
		kill(guard_worker, sig);
}

static void guard_orphaned_sig(int sig)
{
	(void)sig;
	guard_orphan = 1;
	if (guard_on_orphan)
		guard_on_orphan();
}

bool guard_orphaned(void)
{
	return guard_orphan;
}

/* The guard's life: wait for the worker, clean up after a violent end.
 * Those signals are blocked until it forwards them. */
static void __attribute__((noreturn)) guard_wait(int rfd,
						 const sigset_t *mask)
{
	struct sigaction sa = { .sa_sigaction = guard_forward,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1 };
	pid_t target = 0, *all = NULL;
	char err[256];
	int st, n, nall = 0;

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* what came since the fork goes on now */
	sigprocmask(SIG_SETMASK, mask, NULL);
	while (waitpid(guard_worker, &st, 0) < 0)
		if (errno != EINTR)
			_exit(1);
	/* every pid the worker named (a -c command, -p's, or each process
	 * taken system-wide) */
	while ((n = (int)read(rfd, &target, sizeof(target))) ==
	       (int)sizeof(target)) {
		all = realloc(all, (nall + 1) * sizeof(*all));
		if (!all)
			_exit(1);
		all[nall++] = target;
	}
	/* the output's reader went away: die of it, as bpftrace does,
	 * now that the worker detached (signals_end_by()) */
	if (WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGPIPE) {
		signal(SIGPIPE, SIG_DFL);
		raise(SIGPIPE);
	}
	if (WIFEXITED(st))
		_exit(WEXITSTATUS(st));
	for (int i = 0; i + 1 < nall; i++) {
		bool dup = false;

		for (int j = i + 1; j < nall && !dup; j++)
			dup = all[j] == all[i];
		if (dup || all[i] <= 0 || kill(all[i], 0))
			continue;
		n = user_restore_dead(all[i], (uint32_t)guard_worker, err,
				      sizeof(err));
		if (n < 0)
			fprintf(stderr, "ubt: restoring pid %d: %s\n",
				(int)all[i], err);
		else if (n > 0)
			fprintf(stderr, "ubt: pid %d runs on with its code "
				"restored (%d jump(s))\n", (int)all[i], n);
	}
	target = nall ? all[nall - 1] : 0;
	if (target > 0) {
		n = user_restore_dead(target, (uint32_t)guard_worker, err,
				      sizeof(err));
		if (n < 0)
			fprintf(stderr, "ubt: the tracing process (pid %d) was "
				"killed by signal %d; restoring pid %d: %s\n",
				(int)guard_worker, WTERMSIG(st), (int)target,
				err);
		else
			fprintf(stderr, "ubt: the tracing process (pid %d) was "
				"killed by signal %d; pid %d runs on with its "
				"code restored (%d jump(s))\n",
				(int)guard_worker, WTERMSIG(st), (int)target,
				n);
	} else {
		fprintf(stderr, "ubt: the tracing process (pid %d) was "
			"killed by signal %d\n", (int)guard_worker,
			WTERMSIG(st));
	}
	_exit(1);
}

int guard_start(pid_t target, void (*on_orphan)(void))
{
	struct sigaction sa = { .sa_handler = guard_orphaned_sig };
	sigset_t block, old;
	struct sigaction pipe;
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	fflush(NULL);	/* nothing buffered twice */
	guard_parent = getpid();
	guard_on_orphan = on_orphan;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(GUARD_ORPHAN_SIG, &sa, NULL);
	/*
	 * A signal to the guard between the fork and its forwarding
	 * handler would reach neither: held until the guard is ready.
	 */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		sigprocmask(SIG_SETMASK, &old, NULL);
		close(fds[0]);
		close(fds[1]);
		return err;
	}
	if (pid > 0) {
		close(fds[1]);
		guard_worker = pid;
		/* both sides: whichever runs first */
		guard_own_group = target > 0;
		if (guard_own_group)
			setpgid(pid, pid);
		guard_wait(fds[0], &old);
	}
	if (target > 0)
		setpgid(0, 0);
	signals_set_relay(guard_parent);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(fds[0]);
	guard_fd = fds[1];
	guard_target(target);
	/*
	 * A reader gone (ubt's stdout a pipe whose reader died with the
	 * guard) must not kill the worker in the middle of a change:
	 * writes fail instead (signals.c's handler, else ignored).
	 */
	if (!sigaction(SIGPIPE, NULL, &pipe) && pipe.sa_handler == SIG_DFL)
		signal(SIGPIPE, SIG_IGN);
	if (prctl(PR_SET_PDEATHSIG, GUARD_ORPHAN_SIG) ||
	    getppid() != guard_parent)
		guard_orphaned_sig(GUARD_ORPHAN_SIG);
	return 0;
}

void guard_target(pid_t pid)
{
	if (guard_fd >= 0 && pid > 0 &&
	    write(guard_fd, &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
		return;
}
