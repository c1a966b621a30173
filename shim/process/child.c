/* The end of the -c command (see child.h). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "util.h"

/* After SIGKILL: a process in an uninterruptible sleep may take a while. */
#define CHILD_KILL_MS 2000
/* Without a pidfd, waitpid(WNOHANG) this often. */
#define CHILD_POLL_MS 2

char **child_split_cmd(const char *cmd)
{
	size_t len = strlen(cmd), n = 0, i;
	char **argv, *copy, *p;

	/* at most one word per two bytes, plus the NULL */
	argv = xmalloc((len / 2 + 2) * sizeof(*argv) + len + 1);
	copy = (char *)(argv + len / 2 + 2);
	memcpy(copy, cmd, len + 1);
	for (p = copy, i = 0; i <= len; i++) {
		if (copy[i] != ' ' && copy[i])
			continue;
		copy[i] = 0;
		if (*p)
			argv[n++] = p;
		p = copy + i + 1;
	}
	argv[n] = NULL;
	if (!n) {
		free(argv);
		return NULL;
	}
	return argv;
}

static int64_t child_now_ms(void)
{
	return (int64_t)(mono_ns() / 1000000);
}

bool child_gone(pid_t pid, int pidfd, int *status)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	bool exited = false;
	pid_t w;
	int st;

	if (pid <= 0)
		return true;
	/* readable once the whole process has exited */
	if (pidfd >= 0) {
		int n = poll(&pfd, 1, 0);

		if (n == 0)
			return false;
		/* POLLNVAL (not a pidfd any more): waitpid() decides */
		exited = n > 0 && (pfd.revents & (POLLIN | POLLHUP));
	}
	do
		w = waitpid(pid, &st, WNOHANG);
	while (w < 0 && errno == EINTR);
	if (w == pid && (WIFEXITED(st) || WIFSIGNALED(st))) {
		if (status)
			*status = st;
		return true;
	}
	if (w < 0 || exited) {
		/*
		 * Reaped already (by the kernel when SIGCHLD is ignored), not
		 * ours, or exited but not reapable yet (another tracer sees
		 * it first): gone all the same.
		 */
		if (status)
			*status = -1;
		return true;
	}
	return false;	/* running, or a stop (a traced child) */
}

bool child_wait(pid_t pid, int pidfd, int ms, int *status)
{
	int64_t end = child_now_ms() + ms;

	for (;;) {
		int64_t left;

		if (child_gone(pid, pidfd, status))
			return true;
		left = end - child_now_ms();
		if (left <= 0)
			return false;
		if (pidfd >= 0) {
			struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

			poll(&pfd, 1, (int)left);
		} else {
			struct timespec ts = { .tv_nsec = CHILD_POLL_MS *
							  1000000L };

			nanosleep(&ts, NULL);
		}
	}
}

static void child_signal(pid_t pid, int pidfd, int sig)
{
	/* through the pidfd the signal cannot reach a reused pid */
	if (pidfd >= 0)
		syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
	else
		kill(pid, sig);
}

bool child_stop(pid_t pid, int pidfd)
{
	if (child_gone(pid, pidfd, NULL))
		return true;
	child_signal(pid, pidfd, SIGTERM);
	if (child_wait(pid, pidfd, CHILD_GRACE_MS, NULL))
		return true;
	child_signal(pid, pidfd, SIGKILL);
	return child_wait(pid, pidfd, CHILD_KILL_MS, NULL);
}

bool child_kill(pid_t pid, int pidfd)
{
	if (child_gone(pid, pidfd, NULL))
		return true;
	child_signal(pid, pidfd, SIGKILL);
	return child_wait(pid, pidfd, CHILD_KILL_MS, NULL);
}

/* "the command (pid N)" for -c, "pid N" for -p */
static void report(FILE *f, bool cmd, pid_t pid, int status, bool verbose)
{
	char who[48];
	int sig;

	snprintf(who, sizeof(who), cmd ? "the command (pid %d)" : "pid %d",
		 (int)pid);
	if (status == -1) {
		if (verbose)
			fprintf(f, "ubt: %s exited\n", who);
		return;
	}
	if (WIFEXITED(status)) {
		if (verbose)
			fprintf(f, "ubt: %s exited with status %d\n", who,
				WEXITSTATUS(status));
		return;
	}
	if (!WIFSIGNALED(status))
		return;
	sig = WTERMSIG(status);
	if (verbose || sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
	    sig == SIGFPE || sig == SIGTRAP || sig == SIGABRT ||
	    sig == SIGSYS || (!cmd && sig != SIGINT && sig != SIGTERM))
		fprintf(f, "ubt: %s was killed by signal %d (%s)\n", who, sig,
			strsignal(sig));
}

void child_report(FILE *f, pid_t pid, int status, bool verbose)
{
	report(f, true, pid, status, verbose);
}

void child_report_pid(FILE *f, pid_t pid, int status, bool verbose)
{
	report(f, false, pid, status, verbose);
}

void child_init(void)
{
	struct sigaction sa;

	if (!sigaction(SIGCHLD, NULL, &sa) && sa.sa_handler == SIG_IGN)
		signal(SIGCHLD, SIG_DFL);
}
