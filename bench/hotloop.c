/*
 * ubt-hotloop: the target of `make bench`.  Each thread calls a small
 * noinline function in blocks of BENCH_BLOCK calls, reads CLOCK_MONOTONIC
 * after each block until the time is up, and reports the nanoseconds per
 * call (wall clock, and its own CPU time), so that a probe on the
 * function shows up as added nanoseconds per hit.
 *
 *   ubt-hotloop [-f nop|args|ret|usdt] [-t THREADS] [-d MS | -n CALLS]
 *               [-w WORK] [-C CPU[,CPU...]] [-g] [-o FILE]
 *
 * -f   the function called: bench_nop() (count, @[tid]), bench_args(a, b)
 *      (hist(arg0), sum(arg1), printf of two integers; arg0 runs 0..999,
 *      arg1 is arg0 & 7), bench_ret(a) (uretprobe), bench_usdt(a) (its
 *      USDT site bench:hit, a sys/sdt.h 1-byte nop); or the floor of a
 *      probe on this CPU, bench_nop as ubt would patch it, patched at
 *      start-up by this program (bench/floor.c):
 *      floorjmp: its first instruction, a jump to a trampoline that
 *      increments a thread-local counter, runs the instruction the jump
 *      replaced and jumps back; floorcall: the same with a call into a
 *      separate function that increments the counter, and its ret;
 *      floortsc: floorjmp plus two rdtsc reads (the latency idiom's
 *      clock reads); floorvdso: a plain call that reads
 *      clock_gettime(CLOCK_MONOTONIC) through the vDSO twice (the
 *      idiom's clock reads where the TSC is not the kernel's clock)
 * -t   threads, all calling the function at once (default 1)
 * -d   run each thread for MS milliseconds (default 300), or
 * -n   for CALLS calls (rounded up to whole blocks)
 * -w   pace the calls: WORK steps of dependent arithmetic (~1 ns each)
 *      after every call, the same with and without a probe, so that an
 *      event per call comes at a rate the tracer's consumer can sustain
 *      (the printf row).  The time per call is then the call's own: the
 *      TSC read (lfence; rdtsc) before and after each call, converted to
 *      ns with the TSC rate over the run, in both ns_per_call and
 *      cpu_ns_per_call: the work's run-to-run noise (a few percent of
 *      microseconds) would hide a probe's tens of nanoseconds.  A call
 *      that took more than BENCH_SLOW_TICKS (the thread was preempted or
 *      interrupted: a kernel uprobe takes ~20 us) is left out of the
 *      figure, and counted in slow_calls
 * -C   pin thread i to the i-th CPU of the list (modulo its length)
 * -g   stall mode, for measuring how long an attach stops the process:
 *      the threads call the function once per clock read, plus a watcher
 *      thread only reads the clock; every BENCH_SAMPLE_NS each thread
 *      takes the time it was stopped or blocked: wall time - its CPU time
 *      (CLOCK_THREAD_CPUTIME_ID) - its run-queue wait (schedstat), when it
 *      gave up the CPU itself in that sample or the one before (a
 *      voluntary context switch: a spinning thread does that only when
 *      stopped or blocked; a virtual CPU taken away by the host shows no
 *      switch), and records the intervals where that is BENCH_GAP_NS or
 *      more; the run ends after -d MS or at SIGUSR1, whichever is first
 * -o   write the report to FILE instead of stdout
 *
 * The report, one "key=value ..." line per record:
 *   total func=nop threads=1 calls=N timed_calls=N ns_per_call=X
 *         cpu_ns_per_call=X sum_arg1=S                      (one line)
 *   thread id=0 tid=T cpu=C calls=N ns=N cpu_ns=N
 *   gap thread=0 start=NS len=NS off=NS   (-g only: an interval of
 *                                         CLOCK_MONOTONIC, time stopped)
 * "calls" counts every call made, warm-up included (what a probe sees);
 * ns_per_call is wall-clock time (CLOCK_MONOTONIC), cpu_ns_per_call the
 * thread's own CPU time (CLOCK_THREAD_CPUTIME_ID: what a probe adds to
 * the thread, without the time other processes took its CPU), both over
 * the timed calls only and averaged over the threads.
 *
 * Built with plain -O2 (no sanitizers): see bench/local.mk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sdt.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "floor.h"

#define BENCH_BLOCK	1000		/* calls between two clock reads */
#define BENCH_WARMUP	20		/* untimed blocks first */
#define BENCH_SAMPLE_NS	50000		/* -g: sampling interval */
#define BENCH_GAP_NS	20000		/* -g: stops recorded */
#define BENCH_MAX_GAPS	4096		/* per thread */
#define BENCH_MAX_CPUS	64
#define BENCH_SLOW_TICKS 1000000	/* -w: 0.2-1 ms at 1-5 GHz */

enum bench_func {
	BENCH_NOP,
	BENCH_ARGS,
	BENCH_RET,
	BENCH_USDT,
	BENCH_FLOOR_JMP,
	BENCH_FLOOR_CALL,
	BENCH_FLOOR_TSC,
	BENCH_FLOOR_VDSO,
};

static const char *const bench_func_names[] = {
	[BENCH_NOP] = "nop",
	[BENCH_ARGS] = "args",
	[BENCH_RET] = "ret",
	[BENCH_USDT] = "usdt",
	[BENCH_FLOOR_JMP] = "floorjmp",
	[BENCH_FLOOR_CALL] = "floorcall",
	[BENCH_FLOOR_TSC] = "floortsc",
	[BENCH_FLOOR_VDSO] = "floorvdso",
};

struct bench_gap {
	uint64_t start;
	uint64_t len;
	uint64_t off;			/* neither running nor runnable */
};

/* One per thread, written only by its thread, on its own cache lines. */
struct bench_thread {
	pthread_t pthread;
	int id;
	int cpu;			/* -1: not pinned */
	bool watcher;			/* -g: only reads the clock */
	pid_t tid;
	uint64_t calls;			/* every call, warm-up included */
	uint64_t timed_calls;
	uint64_t ns;			/* time of the timed calls */
	uint64_t cpu_ns;		/* the thread's CPU time in them */
	uint64_t sum_arg1;
	uint64_t call_ticks;		/* -w: TSC ticks inside the calls */
	uint64_t slow_calls;		/* -w: calls left out, see -w */
	unsigned long sink;
	struct bench_gap *gaps;
	size_t ngaps;
	uint64_t gaps_dropped;
	bool failed;
} __attribute__((aligned(64)));

struct bench_opts {
	enum bench_func func;
	int threads;
	uint64_t duration_ns;		/* 0: run calls instead */
	uint64_t calls;
	unsigned work;			/* -w */
	int cpus[BENCH_MAX_CPUS];
	int ncpus;
	bool gaps;
	const char *output;
};

static struct bench_opts bench_opts = {
	.func = BENCH_NOP,
	.threads = 1,
	.duration_ns = 300 * 1000000ull,
};

static pthread_barrier_t bench_barrier;
static volatile sig_atomic_t bench_stop;	/* -g: SIGUSR1 */

/*
 * The probed functions: global, never inlined, cloned or specialised
 * (noipa), so that the symbol is called at every iteration with its
 * arguments in registers.  Each has a body of a few instructions, like a
 * real small function, and writes only thread-local data.
 */
__thread unsigned long bench_tls_sink;

/*
 * Each keeps a standard frame (push %rbp; mov %rsp,%rbp), as functions
 * built with frame pointers do: ubt's jump follows a function's first
 * instruction, and these leaf functions would otherwise be a single
 * instruction and a ret, too short for a jump after it.
 */
#define BENCH_FRAME() __asm__ volatile("" : : "r"(__builtin_frame_address(0)))

__attribute__((noipa, used)) void bench_nop(void)
{
	BENCH_FRAME();
	bench_tls_sink++;
}

__attribute__((noipa, used)) void bench_args(unsigned long a, unsigned long b)
{
	BENCH_FRAME();
	bench_tls_sink += a ^ b;
}

__attribute__((noipa, used)) unsigned long bench_ret(unsigned long a)
{
	BENCH_FRAME();
	return a * 3 + 1;
}

/* A SystemTap USDT site (sys/sdt.h: a 1-byte nop) inside a function. */
__attribute__((noipa, used)) void bench_usdt(unsigned long a)
{
	BENCH_FRAME();
	STAP_PROBE1(bench, hit, a);
	bench_tls_sink += a;
}

static uint64_t bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* -w: n steps of a dependency chain the compiler cannot fold. */
static inline unsigned long bench_work(unsigned long x, unsigned n)
{
	while (n--) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

/* -w: the TSC, after every earlier instruction completed */
static inline uint64_t bench_tsc(void)
{
	_mm_lfence();
	return __rdtsc();
}

/* One block of n calls of the chosen function. */
static void bench_block(struct bench_thread *t, enum bench_func f, int n)
{
	unsigned long acc = 0;
	unsigned w = bench_opts.work;
	int i;

	if (w) {
		/* the same calls as below, each timed, then the work */
		uint64_t ticks = 0, t0, d, slow = 0;

		for (i = 0; i < n; i++) {
			t0 = bench_tsc();
			switch (f) {
			case BENCH_NOP:
				bench_nop();
				break;
			case BENCH_ARGS:
				bench_args(i, i & 7);
				acc += i & 7;
				break;
			case BENCH_RET:
				t->sink += bench_ret(i);
				break;
			case BENCH_USDT:
				bench_usdt(i);
				break;
			case BENCH_FLOOR_JMP:
				bench_floor_jmp();
				break;
			case BENCH_FLOOR_CALL:
				bench_floor_call();
				break;
			case BENCH_FLOOR_TSC:
				bench_floor_tsc();
				break;
			case BENCH_FLOOR_VDSO:
				bench_floor_vdso();
				break;
			}
			d = bench_tsc() - t0;
			if (d > BENCH_SLOW_TICKS)
				slow++;
			else
				ticks += d;
			t->sink = bench_work(t->sink, w);
		}
		t->call_ticks += ticks;
		t->slow_calls += slow;
		if (f == BENCH_ARGS)
			t->sum_arg1 += acc;
		t->calls += n;
		return;
	}
	switch (f) {
	case BENCH_NOP:
		for (i = 0; i < n; i++)
			bench_nop();
		break;
	case BENCH_FLOOR_JMP:
		for (i = 0; i < n; i++)
			bench_floor_jmp();
		break;
	case BENCH_FLOOR_CALL:
		for (i = 0; i < n; i++)
			bench_floor_call();
		break;
	case BENCH_FLOOR_TSC:
		for (i = 0; i < n; i++)
			bench_floor_tsc();
		break;
	case BENCH_FLOOR_VDSO:
		for (i = 0; i < n; i++)
			bench_floor_vdso();
		break;
	case BENCH_ARGS:
		for (i = 0; i < n; i++) {
			bench_args(i, i & 7);
			acc += i & 7;
		}
		t->sum_arg1 += acc;
		break;
	case BENCH_RET:
		for (i = 0; i < n; i++)
			acc += bench_ret(i);
		t->sink += acc;
		break;
	case BENCH_USDT:
		for (i = 0; i < n; i++)
			bench_usdt(i);
		break;
	}
	t->calls += n;
}

static void bench_on_usr1(int sig)
{
	(void)sig;
	bench_stop = 1;
}

static void bench_pin(struct bench_thread *t)
{
	cpu_set_t set;

	if (t->cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
		fprintf(stderr, "ubt-hotloop: cannot pin thread %d to cpu %d\n",
			t->id, t->cpu);
		t->cpu = -1;
	}
}

static uint64_t bench_cputime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Time spent waiting on a run queue: schedstat's second field. */
static int bench_run_delay(int fd, uint64_t *delay)
{
	char buf[128];
	unsigned long long run, wait;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
		return -EIO;
	*delay = wait;
	return 0;
}

/* -g: see the top of the file. */
static void bench_stall_loop(struct bench_thread *t)
{
	const struct bench_opts *o = &bench_opts;
	uint64_t prev, now, end, cpu, pcpu, delay, pdelay;
	struct rusage ru;
	long pvcsw, ppvcsw;
	int64_t off;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat",
		 (int)t->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || bench_run_delay(fd, &pdelay)) {
		fprintf(stderr, "ubt-hotloop: cannot read %s: %s\n", path,
			strerror(errno));
		t->failed = true;
		return;
	}
	getrusage(RUSAGE_THREAD, &ru);
	pvcsw = ppvcsw = ru.ru_nvcsw;
	prev = bench_now();
	pcpu = bench_cputime();
	end = prev + o->duration_ns;
	for (;;) {
		if (!t->watcher)
			bench_block(t, o->func, 1);
		now = bench_now();
		if (now - prev < BENCH_SAMPLE_NS)
			continue;
		cpu = bench_cputime();
		if (bench_run_delay(fd, &delay)) {
			t->failed = true;
			break;
		}
		getrusage(RUSAGE_THREAD, &ru);
		off = (int64_t)(now - prev) - (int64_t)(cpu - pcpu) -
		      (int64_t)(delay - pdelay);
		/*
		 * The switch and the time stopped may fall into two
		 * consecutive samples: the reads are not one atomic step.
		 */
		if (ru.ru_nvcsw == ppvcsw)
			off = 0;
		if (off >= BENCH_GAP_NS && t->ngaps < BENCH_MAX_GAPS)
			t->gaps[t->ngaps++] = (struct bench_gap){
				.start = prev, .len = now - prev, .off = off };
		else if (off >= BENCH_GAP_NS)
			t->gaps_dropped++;
		prev = now;
		pcpu = cpu;
		pdelay = delay;
		ppvcsw = pvcsw;
		pvcsw = ru.ru_nvcsw;
		if (now >= end || bench_stop)
			break;
	}
	close(fd);
}

static void *bench_thread_main(void *arg)
{
	struct bench_thread *t = arg;
	const struct bench_opts *o = &bench_opts;
	uint64_t start, now, end, cpu, tsc, ticks, slow;
	int i;

	t->tid = (pid_t)syscall(SYS_gettid);
	bench_pin(t);
	pthread_barrier_wait(&bench_barrier);

	if (o->gaps) {
		bench_stall_loop(t);
		return NULL;
	}

	for (i = 0; i < BENCH_WARMUP; i++)
		bench_block(t, o->func, BENCH_BLOCK);

	cpu = bench_cputime();
	start = bench_now();
	tsc = __rdtsc();
	ticks = t->call_ticks;
	slow = t->slow_calls;
	end = start + o->duration_ns;
	for (;;) {
		bench_block(t, o->func, BENCH_BLOCK);
		t->timed_calls += BENCH_BLOCK;
		now = bench_now();
		if (o->duration_ns ? now >= end : t->timed_calls >= o->calls)
			break;
	}
	t->ns = now - start;
	t->cpu_ns = bench_cputime() - cpu;
	if (o->work) {
		/* the calls' own time, in ns at the TSC rate of the run */
		double ns_per_tick;

		tsc = __rdtsc() - tsc;
		ns_per_tick = tsc ? (double)t->ns / tsc : 0;
		slow = t->slow_calls - slow;
		/* per timed call below: scale to the calls that counted */
		t->ns = t->cpu_ns = slow >= t->timed_calls ? 0 :
			(uint64_t)((double)(t->call_ticks - ticks) *
				   ns_per_tick * t->timed_calls /
				   (t->timed_calls - slow));
	}
	return NULL;
}

static void bench_usage(FILE *f)
{
	fputs("usage: ubt-hotloop [-f nop|args|ret] [-t THREADS] "
	      "[-d MS | -n CALLS]\n"
	      "                   [-w WORK] [-C CPU[,CPU...]] [-g] "
	      "[-o FILE]\n", f);
}

static int bench_number(const char *s, unsigned long long min,
			unsigned long long max, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *v < min || *v > max)
		return -EINVAL;
	return 0;
}

static int bench_cpus(const char *s, struct bench_opts *o)
{
	char *copy = strdup(s), *tok, *save = NULL;
	unsigned long long v;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	o->ncpus = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->ncpus == BENCH_MAX_CPUS ||
		    bench_number(tok, 0, CPU_SETSIZE - 1, &v)) {
			err = -EINVAL;
			break;
		}
		o->cpus[o->ncpus++] = (int)v;
	}
	free(copy);
	if (err)
		return err;
	return o->ncpus ? 0 : -EINVAL;
}

static int bench_parse(int argc, char **argv, struct bench_opts *o)
{
	unsigned long long v;
	size_t i;
	int c;

	while ((c = getopt(argc, argv, "C:d:f:ghn:o:t:w:")) != -1) {
		switch (c) {
		case 'C':
			if (bench_cpus(optarg, o))
				goto bad;
			break;
		case 'd':
			if (bench_number(optarg, 1, 3600000, &v))
				goto bad;
			o->duration_ns = v * 1000000ull;
			break;
		case 'f':
			for (i = 0; i < sizeof(bench_func_names) /
					sizeof(bench_func_names[0]); i++)
				if (!strcmp(optarg, bench_func_names[i]))
					break;
			if (i == sizeof(bench_func_names) /
				 sizeof(bench_func_names[0]))
				goto bad;
			o->func = i;
			break;
		case 'g':
			o->gaps = true;
			break;
		case 'h':
			bench_usage(stdout);
			exit(0);
		case 'n':
			if (bench_number(optarg, 1, 1ull << 50, &v))
				goto bad;
			o->calls = v;
			o->duration_ns = 0;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 't':
			if (bench_number(optarg, 1, 256, &v))
				goto bad;
			o->threads = (int)v;
			break;
		case 'w':
			if (bench_number(optarg, 0, 1000000, &v))
				goto bad;
			o->work = (unsigned)v;
			break;
		default:
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;
	if (o->gaps && !o->duration_ns) {
		fputs("ubt-hotloop: -g needs a duration (-d)\n", stderr);
		return -EINVAL;
	}
	return 0;
bad:
	bench_usage(stderr);
	return -EINVAL;
}

static void bench_report(FILE *f, struct bench_thread *th, int n)
{
	const struct bench_opts *o = &bench_opts;
	uint64_t calls = 0, timed = 0, sum = 0;
	double per_call = 0, cpu_per_call = 0;
	int workers = 0, i;
	size_t j;

	for (i = 0; i < n; i++) {
		if (th[i].watcher)
			continue;
		workers++;
		calls += th[i].calls;
		timed += th[i].timed_calls;
		sum += th[i].sum_arg1;
		if (!th[i].timed_calls)
			continue;
		per_call += (double)th[i].ns / th[i].timed_calls;
		cpu_per_call += (double)th[i].cpu_ns / th[i].timed_calls;
	}
	fprintf(f, "total func=%s threads=%d calls=%llu timed_calls=%llu "
		"ns_per_call=%.4f cpu_ns_per_call=%.4f sum_arg1=%llu work=%u\n",
		bench_func_names[o->func], workers, (unsigned long long)calls,
		(unsigned long long)timed, per_call / workers,
		cpu_per_call / workers, (unsigned long long)sum, o->work);
	for (i = 0; i < n; i++) {
		const struct bench_thread *t = &th[i];

		if (t->watcher)
			fprintf(f, "watcher id=%d tid=%d cpu=%d\n", t->id,
				(int)t->tid, t->cpu);
		else
			fprintf(f, "thread id=%d tid=%d cpu=%d calls=%llu "
				"ns=%llu cpu_ns=%llu slow_calls=%llu\n", t->id,
				(int)t->tid, t->cpu,
				(unsigned long long)t->calls,
				(unsigned long long)t->ns,
				(unsigned long long)t->cpu_ns,
				(unsigned long long)t->slow_calls);
		for (j = 0; j < t->ngaps; j++)
			fprintf(f, "gap thread=%d start=%llu len=%llu off=%llu\n",
				t->id, (unsigned long long)t->gaps[j].start,
				(unsigned long long)t->gaps[j].len,
				(unsigned long long)t->gaps[j].off);
		if (t->gaps_dropped)
			fprintf(f, "gaps_dropped thread=%d n=%llu\n", t->id,
				(unsigned long long)t->gaps_dropped);
	}
}

int main(int argc, char **argv)
{
	struct bench_opts *o = &bench_opts;
	struct bench_thread *th;
	FILE *out = stdout;
	int n, i, err;

	if (bench_parse(argc, argv, o))
		return 2;
	if ((o->func == BENCH_FLOOR_JMP || o->func == BENCH_FLOOR_CALL ||
	     o->func == BENCH_FLOOR_TSC) && bench_floor_init())
		return 1;
	if (o->gaps)
		signal(SIGUSR1, bench_on_usr1);
	/* -g adds a watcher thread that does not call the function */
	n = o->threads + (o->gaps ? 1 : 0);
	th = aligned_alloc(64, sizeof(*th) * n);
	if (!th) {
		perror("ubt-hotloop");
		return 1;
	}
	memset(th, 0, sizeof(*th) * n);
	if (pthread_barrier_init(&bench_barrier, NULL, n)) {
		perror("ubt-hotloop: pthread_barrier_init");
		return 1;
	}
	for (i = 0; i < n; i++) {
		th[i].id = i;
		th[i].watcher = o->gaps && i == n - 1;
		th[i].cpu = o->ncpus ? o->cpus[i % o->ncpus] : -1;
		if (o->gaps) {
			th[i].gaps = calloc(BENCH_MAX_GAPS,
					    sizeof(*th[i].gaps));
			if (!th[i].gaps) {
				perror("ubt-hotloop");
				return 1;
			}
		}
	}
	/* thread 0 is the main thread: a -c target's first thread works */
	for (i = 1; i < n; i++) {
		err = pthread_create(&th[i].pthread, NULL, bench_thread_main,
				     &th[i]);
		if (err) {
			fprintf(stderr, "ubt-hotloop: pthread_create: %s\n",
				strerror(err));
			return 1;
		}
	}
	bench_thread_main(&th[0]);
	for (i = 1; i < n; i++)
		pthread_join(th[i].pthread, NULL);

	if (o->output) {
		out = fopen(o->output, "w");
		if (!out) {
			fprintf(stderr, "ubt-hotloop: cannot open %s: %s\n",
				o->output, strerror(errno));
			return 1;
		}
	}
	bench_report(out, th, n);
	if (fflush(out) || (out != stdout && fclose(out))) {
		fprintf(stderr, "ubt-hotloop: cannot write report: %s\n",
			strerror(errno));
		return 1;
	}
	err = 0;
	for (i = 0; i < n; i++) {
		err |= th[i].failed;
		free(th[i].gaps);
	}
	free(th);
	return err ? 1 : 0;
}
