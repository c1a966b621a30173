/*
 * ubt-wait [N]: for -p tests. Prints "ready" once its SIGUSR1 handler is
 * installed, then waits (up to 30 s) for SIGUSR1; on it, calls
 * ubt_wait_work(i) for i in 1..N (default 3, returns 100 + i), writes
 * N times to /dev/null, and exits 0. Without a signal it exits 1 after the
 * timeout, so a failed test never leaves it behind.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "target.h"

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	go = 1;
}

UBT_PROBE long ubt_wait_work(long i)
{
	UBT_FRAME();
	return 100 + i;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 3);
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t block, old;
	int fd, bad = 0;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGUSR1, &sa, NULL);
	printf("ready\n");
	fflush(stdout);
	alarm(30);
	while (!go)
		sigsuspend(&old);
	alarm(0);
	fd = open("/dev/null", O_WRONLY);
	for (long i = 1; i <= n; i++) {
		bad |= ubt_wait_work(i) != 100 + i;
		if (write(fd, "x", 1) != 1)
			bad = 1;
	}
	close(fd);
	return target_result("ubt-wait", bad);
}
