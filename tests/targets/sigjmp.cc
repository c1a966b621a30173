/*
 * ubt-sigjmp MSEC MODE: signal handlers that do not return, while the
 * interrupted code is anywhere in or around wrapped calls (the return
 * probes' push and pop of a shadow entry included).  For MSEC
 * milliseconds main calls ubt_sj_f(i) (returns i + 2 through
 * ubt_sj_leaf(i) = i + 1) in a loop while a 20 us interval timer's
 * SIGALRM handler leaves:
 *
 *   jmp    siglongjmp() to main's loop (above the wrapped calls)
 *   call   calls ubt_sj_leaf(7) and ubt_sj_jump(), a wrapped function
 *          that siglongjmp()s to main's loop from inside itself
 *   alt    as call, on a sigaltstack (malloc'd: far from the stack)
 *   altnear as call, on a sigaltstack in main's own frame (above the
 *          frames of the calls it interrupts, on the same stack)
 *   altret as altnear, but the handler returns (no siglongjmp): the
 *          calls it interrupts go on under its own
 *   nest   (SA_NODEFER) calls ubt_sj_leaf() 50 times, so that signals
 *          come in the handler too, then every other time returns,
 *          else calls ubt_sj_jump(): handlers nested in handlers, cut
 *          short by an inner one or returning into an outer one
 *   inner  main calls ubt_sj_mid(i), which sigsetjmp()s and calls
 *          ubt_sj_f() 20 times; the handler siglongjmp()s back into
 *          ubt_sj_mid (below the outer wrapped call)
 *   throw  (C++) calls ubt_sj_throw(), a wrapped function that throws;
 *          main catches it around each call of ubt_sj_f (not when the
 *          signal came in main's own code, where nothing catches it)
 *
 * Counts, printed at the end as "f F leaf L mid M jumps J", the returns
 * each caller saw (F of ubt_sj_f, L of ubt_sj_leaf, the handler's calls
 * included, M of ubt_sj_mid) and
 * the handler's exits J.  A return probe of a call whose return the
 * caller saw must have fired, and one per exit at most fired for a call
 * the exit cut short after its return (in the return's own window):
 * F <= probe count <= F + J (tests/user/sigjmp.py).  Then "done"; a
 * wrong return value prints "ubt-sigjmp: wrong result" and exits 1.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#include "target.h"

static sigjmp_buf env;
static volatile sig_atomic_t armed, alt_mode;
static volatile long f_seen, leaf_seen, mid_seen, jumps, wrong;
static volatile long hleaf_seen;	/* the handler's: not main's counter */
static volatile long nest_calls;
static volatile sig_atomic_t nest_depth;
static const char *mode;
static void *loop_lo, *loop_hi;	/* main's loop code (mode throw) */

extern "C" UBT_PROBE long ubt_sj_leaf(long v)
{
	UBT_FRAME();
	return v + 1;
}

extern "C" UBT_PROBE long ubt_sj_f(long v)
{
	long r;

	UBT_FRAME();
	r = ubt_sj_leaf(v);
	leaf_seen++;
	return r + 1;
}

extern "C" UBT_PROBE void ubt_sj_jump(void)
{
	UBT_FRAME();
	__atomic_add_fetch(&jumps, 1, __ATOMIC_RELAXED);
	armed = 0;
	nest_depth = 0;
	siglongjmp(env, 1);
}

extern "C" UBT_PROBE long ubt_sj_throw(long v)
{
	UBT_FRAME();
	jumps++;
	throw v;
}

/* 20 calls of ubt_sj_f; a signal comes back here (below main's call) */
extern "C" UBT_PROBE long ubt_sj_mid(long v)
{
	volatile long i = 0;

	UBT_FRAME();
	if (sigsetjmp(env, 1))
		i = i + 1;	/* the call cut short counts as done */
	armed = 1;
	for (; i < 20; i++) {
		if (ubt_sj_f(i) != i + 2)
			wrong = 1;
		f_seen++;
	}
	armed = 0;
	return v + 1;
}

static void on_alrm_body(void *pc);

/*
 * nest: the timer is one-shot, armed again by each handler once it runs
 * (and by main's loop when it has stopped).  A 20 us interval timer with
 * SA_NODEFER could deliver the next signal before the handler ran its
 * first instruction, at every level, under load: the handlers then nested
 * until the stack overflowed (thousands of frames, no ubt code in them).
 */
static void nest_arm(void)
{
	struct itimerval it = {};

	it.it_value.tv_usec = 20;
	setitimer(ITIMER_REAL, &it, NULL);
}

static void nest_arm_if_idle(void)
{
	struct itimerval it;

	if (!getitimer(ITIMER_REAL, &it) && !it.it_value.tv_sec &&
	    !it.it_value.tv_usec)
		nest_arm();
}

static void on_alrm(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = (ucontext_t *)ctx;
	void *pc = (void *)uc->uc_mcontext.gregs[REG_RIP];

	(void)sig;
	(void)si;
	if (!armed)
		return;
	/* nest: a few levels (more would only test the stack's size) */
	if (nest_depth > 6)
		return;
	nest_depth++;
	if (!strcmp(mode, "nest"))
		nest_arm();
	on_alrm_body(pc);
	nest_depth--;
}

static void on_alrm_body(void *pc)
{
	if (!strcmp(mode, "jmp") || !strcmp(mode, "inner")) {
		jumps++;
		armed = 0;
		nest_depth = 0;
		siglongjmp(env, 1);
	}
	for (int k = 0; k < (!strcmp(mode, "nest") ? 50 : 1); k++) {
		if (ubt_sj_leaf(7) != 8)
			wrong = 1;
		/* one instruction: a nested handler may come in anywhere */
		__atomic_add_fetch(&hleaf_seen, 1, __ATOMIC_RELAXED);
	}
	if (!strcmp(mode, "nest") &&
	    __atomic_add_fetch(&nest_calls, 1, __ATOMIC_RELAXED) % 2)
		return;
	if (!strcmp(mode, "altret"))
		return;
	if (!strcmp(mode, "throw")) {
		/* the code that catches is the call: main's own does not */
		if (pc >= loop_lo && pc < loop_hi)
			return;
		armed = 0;
		ubt_sj_throw(3);
	}
	ubt_sj_jump();
}

/* SJ_DEBUG: where a fault came (debugging aid) */
static void on_fault(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = (ucontext_t *)ctx;
	greg_t *g = uc->uc_mcontext.gregs;
	char buf[4096];
	int fd;
	ssize_t n;

	fprintf(stderr, "sig %d addr %p rip %llx rsp %llx rbx %llx rax %llx "
		"r11 %llx rcx %llx rdx %llx\n", sig, si->si_addr,
		(unsigned long long)g[REG_RIP], (unsigned long long)g[REG_RSP],
		(unsigned long long)g[REG_RBX], (unsigned long long)g[REG_RAX],
		(unsigned long long)g[REG_R11], (unsigned long long)g[REG_RCX],
		(unsigned long long)g[REG_RDX]);
	fd = open("/proc/self/maps", O_RDONLY);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, n, stderr);
	if (getenv("SJ_DEBUG")[0] == 'w')
		sleep(30);
	_exit(3);
}

static void setup(void)
{
	struct sigaction sa = {};
	struct itimerval it = {};

	sa.sa_sigaction = on_alrm;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	if (!strcmp(mode, "alt") || !strcmp(mode, "altnear") ||
	    !strcmp(mode, "altret"))
		sa.sa_flags |= SA_ONSTACK;
	if (!strcmp(mode, "nest"))
		sa.sa_flags |= SA_NODEFER;
	sigaction(SIGALRM, &sa, NULL);
	if (getenv("SJ_DEBUG")) {
		struct sigaction fa = {};

		fa.sa_sigaction = on_fault;
		fa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &fa, NULL);
		sigaction(SIGILL, &fa, NULL);
		sigaction(SIGBUS, &fa, NULL);
	}
	it.it_value.tv_usec = 20;
	if (strcmp(mode, "nest"))
		it.it_interval.tv_usec = 20;
	setitimer(ITIMER_REAL, &it, NULL);
}

static long elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000 +
	       (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

/* main's loop for every mode but inner and throw */
static __attribute__((noinline)) void loop_jmp(long msec)
{
	struct timespec t0;
	volatile long i = 0;

	bool nest = !strcmp(mode, "nest");

	clock_gettime(CLOCK_MONOTONIC, &t0);
	sigsetjmp(env, 1);
	while (elapsed_ms(&t0) < msec) {
		armed = 1;
		if (nest)
			nest_arm_if_idle();
		for (; i % 1000 != 999; i++) {
			if (ubt_sj_f(i) != i + 2)
				wrong = 1;
			f_seen++;
		}
		i++;
	}
	armed = 0;
}

static __attribute__((noinline)) void loop_inner(long msec)
{
	struct timespec t0;
	long i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (elapsed_ms(&t0) < msec) {
		for (i = 0; i < 100; i++) {
			if (ubt_sj_mid(i) != i + 1)
				wrong = 1;
			mid_seen++;
		}
	}
}

static __attribute__((noinline)) void loop_throw(long msec)
{
	struct timespec t0;
	long i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (elapsed_ms(&t0) < msec) {
		for (i = 0; i < 1000; i++) {
			try {
				armed = 1;
				if (ubt_sj_f(i) != i + 2)
					wrong = 1;
				f_seen++;
			} catch (long e) {
				sigset_t s;

				if (e != 3)
					wrong = 1;
				nest_depth = 0;
				/* thrown from the handler: still blocked */
				sigemptyset(&s);
				sigaddset(&s, SIGALRM);
				sigprocmask(SIG_UNBLOCK, &s, NULL);
			}
		}
		armed = 0;
	}
}

/* the code of loop_throw: from its symbol, to the next one */
static __attribute__((noinline)) void loop_throw_end(void)
{
	__asm__ volatile("");
}

int main(int argc, char **argv)
{
	long msec = target_count(argc, argv, 1, 200);
	struct itimerval off = {};
	stack_t ss = {};
	char near_stack[65536];

	mode = argc > 2 ? argv[2] : "jmp";
	if (!strcmp(mode, "alt")) {
		ss.ss_sp = malloc(65536);
		ss.ss_size = 65536;
		sigaltstack(&ss, NULL);
	} else if (!strcmp(mode, "altnear") || !strcmp(mode, "altret")) {
		ss.ss_sp = near_stack;
		ss.ss_size = sizeof(near_stack);
		sigaltstack(&ss, NULL);
	} else if (strcmp(mode, "jmp") && strcmp(mode, "call") &&
		   strcmp(mode, "nest") &&
		   strcmp(mode, "inner") && strcmp(mode, "throw")) {
		return 2;
	}
	loop_lo = (void *)loop_throw;
	loop_hi = (void *)loop_throw_end;
	if (loop_hi <= loop_lo)
		loop_hi = (char *)loop_lo + 256;
	setup();
	if (!strcmp(mode, "inner"))
		loop_inner(msec);
	else if (!strcmp(mode, "throw"))
		loop_throw(msec);
	else
		loop_jmp(msec);
	setitimer(ITIMER_REAL, &off, NULL);
	printf("f %ld leaf %ld mid %ld jumps %ld\n", f_seen,
	       leaf_seen + hleaf_seen, mid_seen, jumps);
	printf("done\n");
	fflush(stdout);
	if (getenv("SJ_PAUSE"))
		sleep(atoi(getenv("SJ_PAUSE")));
	return target_result("ubt-sigjmp", wrong);
}
