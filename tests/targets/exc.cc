/*
 * ubt-exc [N]: C++ exceptions, forced unwinding and backtraces through
 * functions that return probes wrap (a kernel uretprobe hijacks the return
 * address, ubt's user mode call-wraps).  Deterministic sequence:
 *
 *   for i in 0..N-1 (default 12):
 *     ubt_exc_outer(i) -> ubt_exc_mid(i) -> ubt_exc_throw(i)
 *       ubt_exc_throw(v) throws v (a long) when v % 3 == 0, else returns
 *       v * 2; ubt_exc_mid returns that + 1; ubt_exc_outer catches the
 *       exception (returns -1) or returns ubt_exc_mid's value
 *     -> for N = 12: 4 throws (0 3 6 9), 8 returns of ubt_exc_mid with
 *        retvals 3 5 9 11 15 17 21 23 (sum 104)
 *   ubt_exc_deep(3): ubt_exc_deep(n) calls itself down to 0, which calls
 *     ubt_exc_throw(0): the exception passes 4 frames of ubt_exc_deep;
 *     main catches it
 *   for i in 0..2: ubt_exc_tail_outer(i) -> ubt_exc_tail(i), which
 *     tail-calls (jmp) ubt_exc_mid(i): 0 throws through both, 1 and 2
 *     return 3 and 5 -> "tail caught 1 returned 2 sum 8"
 *   ubt_exc_mid(1) once more (returns 3): 11 returns in all, sum 115
 *   a thread: ubt_exc_guard() holds an object whose destructor sets a
 *     flag, calls ubt_exc_pexit(), which calls pthread_exit(): the
 *     forced unwind must run the destructor
 *   ubt_exc_bt(): glibc backtrace() from inside it must reach main
 *   ubt_exc_mid(2) once more (returns 5): 12 returns in all, sum 120
 *   (ubt_exc_throw: 18 calls, 12 returns)
 *   ubt::exc_named(2) (a C++ name, _ZN3ubt9exc_namedEl): returns 42
 *   ubt_exc_regs(5): calls ubt_exc_leaf(5) (returns 16) keeping 5 in
 *     %rdi and %rsi, which the leaf does not touch (as gcc's -fipa-ra
 *     lets a caller do); prints "registers kept" when they survived
 *
 * Prints "caught C returned R sum S", "deep caught", "tail caught ...",
 * "registers kept" (or "... clobbered"), "pthread_exit
 * cleanup ran" (or "... skipped"), "backtrace reaches main" (or "...
 * stops early"), "done"; a wrong result prints "ubt-exc: wrong result"
 * and exits 1.  A C++ runtime that cannot unwind calls std::terminate.
 *
 * ubt-exc N detach: for -p, a wrapped call in progress while the tracer
 * detaches.  Prints "ready", waits (up to 30 s) for SIGUSR1, then calls
 * ubt_exc_hold(), which calls ubt_exc_hold_wait() (a probe there can make
 * the tracer exit) and then waits (up to 10 s) until the entry of
 * ubt_exc_hold_wait is no longer a patched jump before it throws 5
 * through ubt_exc_throw(3); main catches it and prints "caught after
 * detach (restored)" (or "(still patched)"), then runs the sequence
 * above.
 *
 * ubt-exc N reattach: for -p, a wrapped call in progress across two
 * attaches.  Prints "ready", waits for SIGUSR1, calls ubt_exc_hold_ret(4),
 * which calls ubt_exc_hold_wait(), waits until its entry is restored,
 * prints "detached", waits for SIGUSR1 again and returns 5; main prints
 * "returned after reattach 5", then runs the sequence above.
 *
 * ubt-exc N reclaim: as reattach, then prints "waiting" and waits for
 * SIGUSR1 once more before the sequence (tests/user/mem-sessions.py).
 *
 * ubt-exc N throw: as reattach, but ubt_exc_hold_throw(4) then throws 12
 * through ubt_exc_throw(12) (through its own frame, wrapped while a
 * tracer was attached); main prints "caught after detach 12", then runs
 * the sequence.
 *
 * ubt-exc MSEC signals: for MSEC milliseconds, main calls ubt_exc_sig(i)
 * (returns i + 2 through ubt_exc_sig_leaf(i) = i + 1) while a 20 us
 * interval timer's SIGALRM handler calls ubt_exc_sig(1) and
 * ubt_exc_sig_leaf(2): wrapped calls interrupted anywhere by wrapped
 * calls.  Prints "signal calls N" (every call of both functions), exits.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

static int wrong;

extern "C" UBT_PROBE long ubt_exc_throw(long v)
{
	UBT_FRAME();
	if (v % 3 == 0)
		throw v;
	return v * 2;
}

extern "C" UBT_PROBE long ubt_exc_mid(long v)
{
	UBT_FRAME();
	return ubt_exc_throw(v) + 1;
}

extern "C" UBT_PROBE long ubt_exc_outer(long v)
{
	UBT_FRAME();
	try {
		return ubt_exc_mid(v);
	} catch (long e) {
		if (e != v)
			wrong = 1;
		return -1;
	}
}

extern "C" UBT_PROBE long ubt_exc_deep(long n)
{
	UBT_FRAME();
	if (!n)
		return ubt_exc_throw(0);
	return ubt_exc_deep(n - 1) + 1;
}

/* long ubt_exc_tail(long v): a tail call (jmp) of ubt_exc_mid(v) */
extern "C" long ubt_exc_tail(long v);
__asm__(".text\n"
	".globl ubt_exc_tail\n"
	".type ubt_exc_tail,@function\n"
	"ubt_exc_tail:\n"
	"	xor %eax, %eax\n"
	"	jmp ubt_exc_mid\n"
	".size ubt_exc_tail, .-ubt_exc_tail\n");

extern "C" UBT_PROBE long ubt_exc_tail_outer(long v)
{
	UBT_FRAME();
	try {
		return ubt_exc_tail(v);
	} catch (long e) {
		if (e != v)
			wrong = 1;
		return -1;
	}
}

/*
 * long ubt_exc_regs(long x): 0 when %rdi and %rsi still hold x after a
 * call of ubt_exc_leaf(x) = 3x + 1, which leaves them alone.
 */
extern "C" long ubt_exc_regs(long x);
__asm__(".text\n"
	".globl ubt_exc_leaf\n"
	".type ubt_exc_leaf,@function\n"
	"ubt_exc_leaf:\n"
	"	lea 1(%rdi,%rdi,2), %rax\n"
	"	nopw 0(%rax,%rax,1)\n"	/* room for a jump after the lea */
	"	ret\n"
	".size ubt_exc_leaf, .-ubt_exc_leaf\n"
	".globl ubt_exc_regs\n"
	".type ubt_exc_regs,@function\n"
	"ubt_exc_regs:\n"
	"	push %rbx\n"
	"	mov %rdi, %rbx\n"
	"	mov %rdi, %rsi\n"
	"	call ubt_exc_leaf\n"
	"	sub %rbx, %rdi\n"
	"	sub %rbx, %rsi\n"
	"	or %rsi, %rdi\n"
	"	lea 1(%rbx,%rbx,2), %rcx\n"
	"	sub %rcx, %rax\n"
	"	or %rdi, %rax\n"
	"	pop %rbx\n"
	"	ret\n"
	".size ubt_exc_regs, .-ubt_exc_regs\n");

static volatile int cleaned;

struct guard {
	~guard() { cleaned = 1; }
};

extern "C" UBT_PROBE long ubt_exc_pexit(long v)
{
	UBT_FRAME();
	pthread_exit((void *)v);
}

extern "C" UBT_PROBE long ubt_exc_guard(long v)
{
	guard g;

	return ubt_exc_pexit(v) + 1;
}

static void *thread_main(void *arg)
{
	ubt_exc_guard((long)arg);
	return NULL;
}

static int bt_main;

extern "C" UBT_PROBE long ubt_exc_bt(long v)
{
	void *pcs[64];
	int n, i;

	UBT_FRAME();
	n = backtrace(pcs, 64);
	for (i = 0; i < n; i++) {
		Dl_info d;

		if (dladdr(pcs[i], &d) && d.dli_sname &&
		    !strcmp(d.dli_sname, "main"))
			bt_main = 1;
	}
	return v;
}

extern "C" UBT_PROBE long ubt_exc_hold_wait(long v)
{
	UBT_FRAME();
	return v;
}

/* Is the entry of fn (after an endbr64) a jmp, as a patched one is? */
static bool patched(const void *fn)
{
	const uint8_t *p = (const uint8_t *)fn;
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };

	if (!memcmp(p, endbr64, 4))
		p += 4;
	return *(const volatile uint8_t *)p == 0xe9;
}

static int restored;

/* Wait (10 s at most) until fn's entry is no longer patched. */
static void wait_unpatched(const void *fn)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 10000 && patched(fn); i++)
		nanosleep(&ms, NULL);
}

extern "C" UBT_PROBE long ubt_exc_hold(long v)
{
	UBT_FRAME();
	ubt_exc_hold_wait(v);
	wait_unpatched((const void *)ubt_exc_hold_wait);
	restored = !patched((const void *)ubt_exc_hold_wait);
	return ubt_exc_throw(v * 3) + 1;
}

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

/* Print msg, then wait for SIGUSR1 (30 s at most), as ubt-wait does. */
static void wait_usr1(const char *msg)
{
	struct sigaction sa = {};
	sigset_t block, old;

	sa.sa_handler = on_usr1;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGUSR1, &sa, NULL);
	printf("%s\n", msg);
	fflush(stdout);
	alarm(30);
	while (!go)
		sigsuspend(&old);
	alarm(0);
	go = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

extern "C" UBT_PROBE long ubt_exc_hold_ret(long v)
{
	UBT_FRAME();
	ubt_exc_hold_wait(v);
	wait_unpatched((const void *)ubt_exc_hold_wait);
	wait_usr1("detached");
	return v + 1;
}

extern "C" UBT_PROBE long ubt_exc_hold_throw(long v)
{
	UBT_FRAME();
	ubt_exc_hold_wait(v);
	wait_unpatched((const void *)ubt_exc_hold_wait);
	wait_usr1("detached");
	return ubt_exc_throw(v * 3) + 1;
}

/* A C++ name (mangled _ZN3ubt9exc_namedEl): symbols demangled */
namespace ubt {
UBT_PROBE long exc_named(long v)
{
	UBT_FRAME();
	return v + 40;
}
}

extern "C" UBT_PROBE long ubt_exc_sig_leaf(long v)
{
	UBT_FRAME();
	return v + 1;
}

extern "C" UBT_PROBE long ubt_exc_sig(long v)
{
	UBT_FRAME();
	return ubt_exc_sig_leaf(v) + 1;
}

static volatile long sig_calls;

static void on_alrm(int sig)
{
	(void)sig;
	if (ubt_exc_sig(1) != 3 || ubt_exc_sig_leaf(2) != 3)
		wrong = 1;
	sig_calls += 3;
}

static int signals(long msec)
{
	struct itimerval it = {};
	struct sigaction sa = {};
	struct timespec t0, t1;
	long calls = 0, i;

	sa.sa_handler = on_alrm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	it.it_value.tv_usec = it.it_interval.tv_usec = 20;
	setitimer(ITIMER_REAL, &it, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (i = 0; i < 1000; i++) {
			if (ubt_exc_sig(i) != i + 2)
				wrong = 1;
			calls += 2;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while ((t1.tv_sec - t0.tv_sec) * 1000 +
			 (t1.tv_nsec - t0.tv_nsec) / 1000000 < msec);
	it = (struct itimerval){};
	setitimer(ITIMER_REAL, &it, NULL);
	printf("signal calls %ld\n", calls + sig_calls);
	if (wrong)
		printf("ubt-exc: wrong result\n");
	return wrong;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 12), i, r, caught = 0, ret = 0;
	long sum = 0, want_sum = 0;
	pthread_t t;
	void *res = NULL;

	if (argc > 2 && !strcmp(argv[2], "signals"))
		return signals(n);
	if (argc > 2 && (!strcmp(argv[2], "reattach") ||
			 !strcmp(argv[2], "reclaim"))) {
		wait_usr1("ready");
		r = ubt_exc_hold_ret(4);
		printf("returned after reattach %ld\n", r);
		if (r != 5)
			wrong = 1;
		if (!strcmp(argv[2], "reclaim"))
			wait_usr1("waiting");
	} else if (argc > 2 && !strcmp(argv[2], "throw")) {
		wait_usr1("ready");
		try {
			ubt_exc_hold_throw(4);
			wrong = 1;
		} catch (long e) {
			printf("caught after detach %ld\n", e);
			if (e != 12)
				wrong = 1;
		}
	} else if (argc > 2 && !strcmp(argv[2], "detach")) {
		wait_usr1("ready");
		try {
			ubt_exc_hold(1);
			wrong = 1;
		} catch (long e) {
			printf("caught after detach (%s)\n",
			       restored ? "restored" : "still patched");
			if (e != 3)
				wrong = 1;
		}
	} else if (argc > 2) {
		exit(2);
	}
	for (i = 0; i < n; i++) {
		r = ubt_exc_outer(i);
		if (r == -1) {
			caught++;
		} else {
			ret++;
			sum += r;
		}
		if (i % 3)
			want_sum += i * 2 + 1;
		if ((r == -1) != (i % 3 == 0))
			wrong = 1;
	}
	printf("caught %ld returned %ld sum %ld\n", caught, ret, sum);
	if (sum != want_sum)
		wrong = 1;
	try {
		ubt_exc_deep(3);
		wrong = 1;
	} catch (long e) {
		printf("deep caught\n");
	}
	caught = ret = sum = 0;
	for (i = 0; i < 3; i++) {
		r = ubt_exc_tail_outer(i);
		if (r == -1) {
			caught++;
		} else {
			ret++;
			sum += r;
		}
	}
	printf("tail caught %ld returned %ld sum %ld\n", caught, ret, sum);
	if (caught != 1 || sum != 8)
		wrong = 1;
	if (ubt_exc_mid(1) != 3)
		wrong = 1;
	r = ubt_exc_regs(5);
	printf("registers %s\n", r ? "clobbered" : "kept");
	if (r)
		wrong = 1;
	if (pthread_create(&t, NULL, thread_main, (void *)7L) ||
	    pthread_join(t, &res) || res != (void *)7L)
		wrong = 1;
	printf("pthread_exit cleanup %s\n", cleaned ? "ran" : "skipped");
	ubt_exc_bt(1);
	printf("backtrace %s\n", bt_main ? "reaches main" : "stops early");
	if (ubt_exc_mid(2) != 5)
		wrong = 1;
	if (ubt::exc_named(2) != 42)
		wrong = 1;
	if (wrong)
		printf("ubt-exc: wrong result\n");
	printf("done\n");
	fflush(stdout);
	return wrong;
}
