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
 *	fork K	(K after MODE) forks K children at once, each makes
 *		the N calls again, the parent waits for them ((K + 1) N)
 *	vfork	vfork()s: the child makes the N calls again and _exit()s
 *		(2N calls, the second N in a child sharing the memory)
 *	split K	(K after MODE) K times: ubt_split() forks, the child
 *		returns from it and exits, the parent waits (K calls, 2K
 *		returns)
 *	dlopen LIB  dlopen()s LIB (libubt-target.so) and calls its
 *		ubt_lib_add(i, 1) for i in 0..N-1, USEC apart (2N calls)
 *	nest	instead of the N calls: ubt_nest(2, N, USEC), which calls
 *		ubt_nest(1, ...) N times, each calling ubt_nest(0, ...) N
 *		times, which sleeps USEC microseconds (1 + N + N * N calls;
 *		the first is in flight all along)
 * ubt_tick(i) returns i + 1; ubt_nest() returns the calls it made (itself
 * included).
 */
#include <dlfcn.h>
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

UBT_PROBE long ubt_nest(long d, long n, long usec)
{
	long calls = 1;

	UBT_FRAME();
	if (!d) {
		if (usec)
			usleep((useconds_t)usec);
		return 1;
	}
	for (long i = 0; i < n; i++)
		calls += ubt_nest(d - 1, n, usec);
	return calls;
}

/* fork(): the child's pid, 0 in the child */
UBT_PROBE long ubt_split(void)
{
	UBT_FRAME();
	return (long)fork();
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
	long k = 1;
	long bad;
	int st = 0;
	pid_t c;

	if (!strcmp(mode, "fork") || !strcmp(mode, "split"))
		k = target_count(argc, argv, 4, 1);
	if (!strcmp(mode, "nest"))
		return target_result("ubt-spawn",
				     ubt_nest(2, n, usec) != 1 + n + n * n);
	bad = ticks(n, usec);
	if (!*mode)
		return target_result("ubt-spawn", bad);
	if (!strcmp(mode, "vfork")) {
		c = vfork();
		if (!c)
			_exit(ticks(n, usec) ? 1 : 0);
		bad |= c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) ||
		       WEXITSTATUS(st) != 0;
		return target_result("ubt-spawn", bad);
	}
	if (!strcmp(mode, "dlopen") && argc > 4) {
		void *h = dlopen(argv[4], RTLD_NOW);
		int (*add)(int, int) = h ? (int (*)(int, int))dlsym(
						   h, "ubt_lib_add") :
					   NULL;

		if (!add)
			return target_result("ubt-spawn", 1);
		for (long i = 0; i < n; i++) {
			bad |= add((int)i, 1) != (int)i + 1;
			if (usec)
				usleep((useconds_t)usec);
		}
		return target_result("ubt-spawn", bad);
	}
	if (!strcmp(mode, "split")) {
		for (long i = 0; i < k && !bad; i++) {
			c = (pid_t)ubt_split();
			if (!c)
				_exit(0);
			bad |= c < 0 || waitpid(c, &st, 0) != c ||
			       !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		}
		return target_result("ubt-spawn", bad);
	}
	if (!strcmp(mode, "fork") && k > 1) {
		for (long i = 0; i < k; i++) {
			c = fork();
			if (!c)
				_exit(target_result("ubt-spawn",
						    ticks(n, usec)));
			bad |= c < 0;
		}
		for (long i = 0; i < k; i++)
			bad |= wait(&st) < 0 || !WIFEXITED(st) ||
			       WEXITSTATUS(st) != 0;
		return target_result("ubt-spawn", bad);
	}
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
