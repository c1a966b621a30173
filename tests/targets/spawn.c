/*
 * ubt-spawn N USEC [MODE]: a process that makes children, for system-wide
 * probes (tests/runtime/syswide.test).  It calls ubt_tick(i) for i in
 * 0..N-1, sleeping USEC microseconds after each call, then by MODE:
 *	(none)	exits 0 (N calls)
 *	fork	forks: the child makes the N calls again and exits 0, the
 *		parent waits for it (2N calls, two processes)
 *	exec	forks: the child execs this program with "N USEC" (the N
 *		calls again, in a new image), the parent waits (2N calls)
 *	reexec	execs this program with "N USEC" itself: the N calls again
 *		in a new image of the same process (2N calls)
 * ubt_tick(i) returns i + 1.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target.h"

UBT_PROBE long ubt_tick(long i)
{
	UBT_FRAME();
	return i + 1;
}

static long ticks(long n, long usec)
{
	long bad = 0;

	for (long i = 0; i < n; i++) {
		bad |= ubt_tick(i) != i + 1;
		if (usec)
			usleep((useconds_t)usec);
	}
	return bad;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 10);
	long usec = target_count(argc, argv, 2, 0);
	const char *mode = argc > 3 ? argv[3] : "";
	long bad = ticks(n, usec);
	int st = 0;
	pid_t c;

	if (!*mode)
		return target_result("ubt-spawn", bad);
	if (!strcmp(mode, "reexec") && !bad) {
		execl("/proc/self/exe", argv[0], argv[1], argv[2],
		      (char *)NULL);
		return target_result("ubt-spawn", 1);
	}
	c = fork();
	if (c < 0)
		return target_result("ubt-spawn", 1);
	if (!c) {
		if (!strcmp(mode, "exec")) {
			execl("/proc/self/exe", argv[0], argv[1], argv[2],
			      (char *)NULL);
			_exit(target_result("ubt-spawn", 1));
		}
		_exit(target_result("ubt-spawn", ticks(n, usec)));
	}
	bad |= waitpid(c, &st, 0) != c || !WIFEXITED(st) ||
	       WEXITSTATUS(st) != 0;
	return target_result("ubt-spawn", bad);
}
