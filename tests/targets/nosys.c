/*
 * ubt-nosys MODE [N]: the builtins of user-mode probes (pid, tid, comm,
 * uid, gid, cpu, rand, nsecs, elapsed, ...), each read without a system
 * call and right after what changes it.  Every call is
 *
 *	ubt_nosys(pid, tid, phase)	returns phase
 *
 * with the caller's own getpid() and gettid(), so that a probe can compare
 * its pid and tid with them.  MODE (N defaults to 100):
 *
 *	seccomp	the main thread and one more thread each make N calls of
 *		phase 1; then a seccomp filter (every thread) traps the
 *		system calls a builtin could make (clock_gettime,
 *		gettimeofday, time, getcpu, getpid, gettid, getppid, getuid,
 *		getgid, geteuid, getegid, prctl, getrandom: SIGSYS), and
 *		each thread makes N calls of phase 2.  A trapped call
 *		prints "ubt-nosys: wrong result: system call NR" (a probe
 *		made it: the target itself makes none of them then).
 *	fork	N calls of phase 1; a forked child renames itself
 *		"nosys-child" and makes N calls of phase 2 with its own pid
 *		and tid and exits; the parent waits, then makes N calls of
 *		phase 3.
 *	setuid	(as root) N calls of phase 1, and a thread's N of phase 2;
 *		then setgid(65534) and setuid(65534) (glibc changes every
 *		thread); N calls of phase 3, the thread's N of phase 4.
 *	comm	named "nosys-a": N calls of phase 1; renamed "nosys-b" by
 *		prctl(PR_SET_NAME): N calls of phase 2; then a thread
 *		(named "nosys-t") makes N calls of phase 3, is renamed
 *		"nosys-u" by the main thread (pthread_setname_np: a write
 *		to /proc/self/task/TID/comm) and makes N calls of phase 4.
 *
 * Exits 0, or 1 after a wrong result.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target.h"

static long rounds;
static volatile sig_atomic_t trapped;
static pthread_barrier_t bar;

UBT_PROBE long ubt_nosys(long pid, long tid, long phase)
{
	UBT_FRAME();
	(void)pid;
	(void)tid;
	return phase;
}

/* the thread's ids, read before the filter goes on (and after a fork) */
static __thread long my_pid, my_tid;

static void ids(void)
{
	my_pid = getpid();
	my_tid = syscall(SYS_gettid);
}

static long calls(long phase)
{
	long pid, tid, bad = 0;

	if (!my_pid)
		ids();
	pid = my_pid;
	tid = my_tid;
	for (long i = 0; i < rounds; i++)
		bad += ubt_nosys(pid, tid, phase) != phase;
	return bad;
}

/* a system call made while the filter is on: which one */
static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	trapped = si->si_syscall ? si->si_syscall : -1;
}

static int trap_builtin_syscalls(void)
{
	static const int nr[] = {
		SYS_clock_gettime, SYS_gettimeofday, SYS_time, SYS_getcpu,
		SYS_getpid, SYS_gettid, SYS_getppid, SYS_getuid, SYS_getgid,
		SYS_geteuid, SYS_getegid, SYS_prctl, SYS_getrandom,
	};
	enum { N = sizeof(nr) / sizeof(nr[0]) };
	struct sock_filter f[4 + N + 2];
	struct sock_fprog prog = { .len = 4 + N + 2, .filter = f };
	struct sigaction sa = { .sa_sigaction = on_sigsys,
				.sa_flags = SA_SIGINFO };
	int i = 0;

	f[i++] = (struct sock_filter)BPF_STMT(
		BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      AUDIT_ARCH_X86_64, 1, 0);
	f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_ALLOW);
	f[i++] = (struct sock_filter)BPF_STMT(
		BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (int k = 0; k < N; k++)
		f[i++] = (struct sock_filter)BPF_JUMP(
			BPF_JMP | BPF_JEQ | BPF_K, nr[k], N - k, 0);
	f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_ALLOW);
	f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_TRAP);
	if (sigaction(SIGSYS, &sa, NULL) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		       SECCOMP_FILTER_FLAG_TSYNC, &prog) ? -1 : 0;
}

static void *seccomp_thread(void *arg)
{
	long bad = calls(1);

	(void)arg;
	pthread_barrier_wait(&bar);	/* the filter goes on */
	pthread_barrier_wait(&bar);
	bad += calls(2);
	return (void *)bad;
}

static long mode_seccomp(void)
{
	pthread_t th;
	void *tbad;
	long bad;

	pthread_barrier_init(&bar, NULL, 2);
	if (pthread_create(&th, NULL, seccomp_thread, NULL))
		return 1;
	bad = calls(1);
	pthread_barrier_wait(&bar);
	if (trap_builtin_syscalls()) {
		fprintf(stderr, "ubt-nosys: seccomp: %s\n", strerror(errno));
		exit(99);
	}
	pthread_barrier_wait(&bar);
	bad += calls(2);
	pthread_join(th, &tbad);
	bad += (long)tbad;
	if (trapped) {
		fprintf(stderr, "ubt-nosys: wrong result: system call %d\n",
			(int)trapped);
		bad++;
	}
	return bad;
}

static long mode_fork(void)
{
	long bad = calls(1);
	int st = 0;
	pid_t c;

	fflush(NULL);
	c = fork();
	if (c < 0)
		return 1;
	if (!c) {
		ids();
		prctl(PR_SET_NAME, "nosys-child");
		_exit(calls(2) ? 1 : 0);
	}
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
		bad++;
	return bad + calls(3);
}

static void *setuid_thread(void *arg)
{
	long bad = calls(2);

	(void)arg;
	pthread_barrier_wait(&bar);	/* the main thread changes uid */
	pthread_barrier_wait(&bar);
	return (void *)(bad + calls(4));
}

static long mode_setuid(void)
{
	pthread_t th;
	void *tbad;
	long bad;

	pthread_barrier_init(&bar, NULL, 2);
	if (pthread_create(&th, NULL, setuid_thread, NULL))
		return 1;
	bad = calls(1);
	pthread_barrier_wait(&bar);
	if (setgid(65534) || setuid(65534)) {
		fprintf(stderr, "ubt-nosys: setuid: %s\n", strerror(errno));
		bad++;
	}
	pthread_barrier_wait(&bar);
	bad += calls(3);
	pthread_join(th, &tbad);
	return bad + (long)tbad;
}

static void *comm_thread(void *arg)
{
	long bad;

	(void)arg;
	prctl(PR_SET_NAME, "nosys-t");
	bad = calls(3);
	pthread_barrier_wait(&bar);	/* the main thread renames us */
	pthread_barrier_wait(&bar);
	bad += calls(4);
	return (void *)bad;
}

static long mode_comm(void)
{
	pthread_t th;
	void *tbad;
	long bad;

	prctl(PR_SET_NAME, "nosys-a");
	bad = calls(1);
	prctl(PR_SET_NAME, "nosys-b");
	bad += calls(2);
	pthread_barrier_init(&bar, NULL, 2);
	if (pthread_create(&th, NULL, comm_thread, NULL))
		return 1;
	pthread_barrier_wait(&bar);
	bad += pthread_setname_np(th, "nosys-u") != 0;
	pthread_barrier_wait(&bar);
	pthread_join(th, &tbad);
	return bad + (long)tbad;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long bad;

	rounds = target_count(argc, argv, 2, 100);
	if (!strcmp(mode, "seccomp"))
		bad = mode_seccomp();
	else if (!strcmp(mode, "fork"))
		bad = mode_fork();
	else if (!strcmp(mode, "comm"))
		bad = mode_comm();
	else if (!strcmp(mode, "setuid"))
		bad = mode_setuid();
	else
		return 2;
	return target_result("ubt-nosys", bad);
}
