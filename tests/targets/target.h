/*
 * Shared by the bundled target programs that the runtime corpus traces.
 * Every traced function is UBT_PROBE: not inlined, not cloned or
 * specialised by interprocedural optimisation (a .constprop clone would
 * never hit a uprobe on the original symbol), and kept even if unused.
 */
#ifndef UBT_TARGET_H
#define UBT_TARGET_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#define UBT_PROBE __attribute__((noinline, used, optnone))
#else
#define UBT_PROBE __attribute__((noinline, used, noipa))
#endif

/*
 * A standard frame at every traced entry (push %rbp; mov %rsp,%rbp), even
 * in leaf functions that gcc would otherwise build without one, so each
 * function is long enough to patch and starts as ordinary code does.
 */
#define UBT_FRAME() __asm__ volatile("" : : "r"(__builtin_frame_address(0)))

/* Parse a non-negative count argument, or exit(2). */
static inline long target_count(int argc, char **argv, int i, long def)
{
	char *end;
	long n;

	if (argc <= i)
		return def;
	n = strtol(argv[i], &end, 0);
	if (*argv[i] == '\0' || *end != '\0' || n < 0)
		exit(2);
	return n;
}

/*
 * The exit status of main: a target that computed a wrong result (a
 * broken patch or probe changed its behaviour) says so on stderr, which
 * a tracer running it with -c passes through, and exits 1.
 */
static inline int target_result(const char *name, long bad)
{
	if (bad)
		fprintf(stderr, "%s: wrong result\n", name);
	return bad ? 1 : 0;
}

/* The flag SIGUSR1 sets (a function: no unused variable where unused). */
static inline volatile sig_atomic_t *target_usr1(void)
{
	static volatile sig_atomic_t seen;

	return &seen;
}

static inline void target_on_usr1(int sig)
{
	(void)sig;
	*target_usr1() = 1;
}

/*
 * For -p tests: print "ready" once the SIGUSR1 handler is installed, then
 * wait (up to 30 s: a failed test never leaves a target behind) for it.
 */
static inline void target_wait_usr1(void)
{
	struct sigaction sa;
	sigset_t block, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = target_on_usr1;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGUSR1, &sa, NULL);
	printf("ready\n");
	fflush(stdout);
	alarm(30);
	while (!*target_usr1())
		sigsuspend(&old);
	alarm(0);
}

#endif
