/*
 * The -c command of the kernel-only run: started stopped, released once
 * the probes are attached, stopped when ubt ends first (child.h).
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
#include "tracepoint.h"
#include "util.h"
#include "kernel_int.h"

/* Can argv0 be executed (as execvp() would find it)? */
static bool kernel_can_exec(const char *argv0)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(argv0, '/'))
		return !access(argv0, X_OK);
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n,
			 n ? path : ".", argv0);
		if (!access(buf, X_OK))
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

int kernel_child_start(const char *cmd, struct kernel_child *ch)
{
	char **argv;
	int p[2], err;
	pid_t pid;

	memset(ch, 0, sizeof(*ch));
	ch->go = ch->pidfd = -1;
	argv = child_split_cmd(cmd);
	if (!argv) {
		fprintf(stderr, "ubt: cannot parse the command: %s\n", cmd);
		return -EINVAL;
	}
	if (!kernel_can_exec(argv[0])) {
		err = -errno;
		fprintf(stderr, "ubt: cannot run %s: %s\n", argv[0],
			strerror(errno ? errno : ENOENT));
		free(argv);
		return err ? err : -ENOENT;
	}
	if (pipe2(p, O_CLOEXEC)) {
		err = -errno;
		free(argv);
		return err;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(p[0]);
		close(p[1]);
		free(argv);
		return err;
	}
	if (!pid) {
		char c;

		/* ubt's handlers are not the command's (exec resets them,
		 * but it may never come to that) */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		close(p[1]);
		/* wait until the probes are attached; EOF without the
		 * byte: ubt gave up, do not run the command */
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "ubt: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(p[0]);
	free(argv);
	ch->pid = pid;
	ch->go = p[1];
	ch->pidfd = syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

void kernel_child_go(struct kernel_child *ch)
{
	sigset_t pipe, old;

	if (ch->go < 0)
		return;
	/*
	 * Killed while it waited, the command has closed its end: EPIPE,
	 * and a SIGPIPE that must not kill ubt (the loop sees the exit).
	 */
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, &old);
	if (write(ch->go, "g", 1) != 1) {
		if (errno == EPIPE)
			sigtimedwait(&pipe, NULL, &(struct timespec){ 0 });
		else
			fprintf(stderr, "ubt: cannot start the command: %s\n",
				strerror(errno));
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(ch->go);
	ch->go = -1;
}

void kernel_child_kill(struct kernel_child *ch)
{
	if (ch->go >= 0) {
		/* never started: it exits on EOF */
		close(ch->go);
		ch->go = -1;
	}
	if (ch->pid > 0 && !ch->exited) {
		/* SIGTERM, then SIGKILL: a command that ignores SIGTERM
		 * cannot keep ubt waiting */
		child_stop(ch->pid, ch->pidfd);
	}
	ch->pid = 0;
	if (ch->pidfd >= 0)
		close(ch->pidfd);
	ch->pidfd = -1;
}
