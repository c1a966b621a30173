/*
 * Unit tests of shim/process/child.c: the end of a -c command is seen and
 * brought about within a bound, whatever the command does (exits at once,
 * ignores SIGTERM, is stopped, is reaped by the kernel because SIGCHLD is
 * ignored), with a pidfd and without one; the command's words.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
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

static int ntest, nfail;

static void check(const char *name, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check(const char *name, bool ok, const char *fmt, ...)
{
	va_list ap;

	ntest++;
	printf("%sok %d - %s\n", ok ? "" : "not ", ntest, name);
	if (ok)
		return;
	nfail++;
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

enum kind {
	EXIT_AT_ONCE,	/* _exit(3) */
	IGNORE_TERM,	/* SIGTERM ignored, sleeps */
	SLEEP,		/* default SIGTERM, sleeps */
	STOPPED,	/* stops itself (SIGSTOP), SIGTERM ignored */
};

/*
 * The child waits for the parent's pidfd before it does anything: a child
 * that exits at once while SIGCHLD is ignored is reaped by the kernel, and
 * pidfd_open() of its pid would fail (or find another process).  One that
 * keeps running says when its SIGTERM disposition is set, so that no
 * SIGTERM comes before it, however slow the machine.
 */
static pid_t start(enum kind k, int *pidfd, bool with_pidfd)
{
	int go[2], ready[2];
	pid_t pid;
	char c;

	fflush(stdout);
	if (pipe(go) || pipe(ready)) {
		perror("pipe");
		exit(99);
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(99);
	}
	if (!pid) {
		close(go[1]);
		close(ready[0]);
		/* EOF: the parent has its pidfd */
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		close(go[0]);
		if (k == EXIT_AT_ONCE)
			_exit(3);
		if (k == IGNORE_TERM || k == STOPPED)
			signal(SIGTERM, SIG_IGN);
		if (write(ready[1], "r", 1) != 1)
			_exit(99);
		close(ready[1]);
		if (k == STOPPED)
			raise(SIGSTOP);
		sleep(30);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	*pidfd = with_pidfd ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	if (with_pidfd && *pidfd < 0) {
		perror("pidfd_open");
		exit(99);
	}
	close(go[1]);
	if (k != EXIT_AT_ONCE) {
		ssize_t n;

		while ((n = read(ready[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (n != 1) {
			printf("Bail out! the child did not start\n");
			exit(99);
		}
	}
	close(ready[0]);
	return pid;
}

static void test_kind(const char *what, enum kind k, bool with_pidfd)
{
	static const char *const exited[] = {
		"child_wait() sees the exit and its status",
		"reaped, still gone",
		"child_stop() signals nothing",
	};
	static const char *const running[] = {
		"not gone while it runs",
		"child_stop() ends and reaps it",
		"within the bound",
	};
	char name[3][160];
	int pidfd, st = 0;
	pid_t pid = start(k, &pidfd, with_pidfd);
	int64_t t0;
	bool ok;

	for (int i = 0; i < 3; i++)
		snprintf(name[i], sizeof(name[i]), "%s (%s): %s", what,
			 with_pidfd ? "pidfd" : "no pidfd",
			 k == EXIT_AT_ONCE ? exited[i] : running[i]);
	if (k == EXIT_AT_ONCE) {
		ok = child_wait(pid, pidfd, 5000, &st);
		check(name[0], ok && st >= 0 && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 3, "ok %d status %#x", ok, st);
		ok = child_gone(pid, pidfd, NULL);
		check(name[1], ok && waitpid(pid, NULL, WNOHANG) < 0 &&
		      errno == ECHILD, "ok %d", ok);
		check(name[2], child_stop(pid, pidfd), "false");
	} else {
		if (k == STOPPED)	/* until it has stopped */
			waitpid(pid, &st, WUNTRACED);
		check(name[0], !child_gone(pid, pidfd, NULL), "gone");
		t0 = (int64_t)(mono_ns() / 1000000);
		ok = child_stop(pid, pidfd);
		t0 = (int64_t)(mono_ns() / 1000000) - t0;
		check(name[1], ok && waitpid(pid, NULL, WNOHANG) < 0,
		      "ok %d", ok);
		/*
		 * SIGTERM ignored: SIGKILL after the grace period, not
		 * before; the upper bound only tells a bounded wait from
		 * one for the child's 30 s sleep, whatever the load
		 */
		check(name[2], t0 < CHILD_GRACE_MS + 10000 &&
		      (k == SLEEP || t0 >= CHILD_GRACE_MS - 50),
		      "%lld ms", (long long)t0);
	}
	if (pidfd >= 0)
		close(pidfd);
}

/* SIGCHLD ignored: the kernel reaps the child, waitpid() never sees it. */
static void test_sigchld_ignored(void)
{
	int pidfd;
	pid_t pid;
	bool ok;

	signal(SIGCHLD, SIG_IGN);
	pid = start(EXIT_AT_ONCE, &pidfd, true);
	ok = child_wait(pid, pidfd, 5000, NULL);
	check("SIGCHLD ignored: the exit is seen through the pidfd", ok,
	      "not seen in 5 s");
	close(pidfd);
	pid = start(EXIT_AT_ONCE, &pidfd, false);
	ok = child_wait(pid, -1, 5000, NULL);
	check("SIGCHLD ignored: without a pidfd too", ok, "not seen in 5 s");
	child_init();
	check("child_init() puts SIGCHLD's default back",
	      signal(SIGCHLD, SIG_DFL) == SIG_DFL, "still ignored");
}

/* child_split_cmd(): words joined by '|', or "(null)" */
static void test_split_one(const char *cmd, const char *want)
{
	char **argv = child_split_cmd(cmd), got[256] = "";
	char name[300];

	if (!argv) {
		strcpy(got, "(null)");
	} else {
		for (int i = 0; argv[i]; i++) {
			if (i)
				strcat(got, "|");
			strcat(got, argv[i]);
		}
	}
	free(argv);
	snprintf(name, sizeof(name), "split [%s]", cmd);
	check(name, !strcmp(got, want), "got [%s], want [%s]", got, want);
}

/* As bpftrace splits the -c command: at spaces, nothing else. */
static void test_split(void)
{
	test_split_one("/bin/echo a", "/bin/echo|a");
	test_split_one("/bin/echo 'A' \"b c\"", "/bin/echo|'A'|\"b|c\"");
	test_split_one("prog $HOME * ~ a\\ b", "prog|$HOME|*|~|a\\|b");
	test_split_one("  prog   a  ", "prog|a");
	test_split_one("prog\ta", "prog\ta");
	test_split_one("x", "x");
	test_split_one("", "(null)");
	test_split_one("   ", "(null)");
	test_split_one("a b c d e f g h", "a|b|c|d|e|f|g|h");
}

int main(void)
{
	test_split();
	for (int p = 0; p < 2; p++) {
		test_kind("exits at once", EXIT_AT_ONCE, p);
		test_kind("default SIGTERM", SLEEP, p);
		test_kind("SIGTERM ignored", IGNORE_TERM, p);
		test_kind("stopped, SIGTERM ignored", STOPPED, p);
	}
	test_sigchld_ignored();
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}
