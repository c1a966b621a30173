/*
 * ubt-hotloop: the target of `make bench`.  Each thread calls a small
 * noinline function in blocks of BENCH_BLOCK calls, reads CLOCK_MONOTONIC
 * around each block, and reports the nanoseconds per call, so that a
 * probe on the function shows up as added nanoseconds per hit.
 *
 *   ubt-hotloop [-f nop|args|ret] [-t THREADS] [-d MS | -n CALLS]
 *               [-C CPU[,CPU...]] [-g] [-o FILE]
 *
 * -f   the function called: bench_nop() (count, @[tid]), bench_args(a, b)
 *      (hist(arg0), sum(arg1), printf of two integers; arg0 runs 0..999,
 *      arg1 is arg0 & 7), bench_ret(a) (uretprobe)
 * -t   threads, all calling the function at once (default 1)
 * -d   run each thread for MS milliseconds (default 300), or
 * -n   for CALLS calls (rounded up to whole blocks)
 * -C   pin thread i to the i-th CPU of the list (modulo its length)
 * -g   stall mode, for measuring how long an attach stops the process:
 *      blocks of BENCH_GAP_BLOCK calls, plus a watcher thread that only
 *      reads the clock; every thread records the stalls (time between two
 *      clock reads) longer than BENCH_GAP_NS with their start times; the
 *      run ends after -d MS or at SIGUSR1, whichever comes first
 * -o   write the report to FILE instead of stdout
 *
 * The report, one "key=value ..." line per record:
 *   total func=nop threads=1 calls=N timed_calls=N ns_per_call=X sum_arg1=S
 *   thread id=0 tid=T cpu=C calls=N ns=N ns_per_call=X
 *   gap thread=0 start=NS len=NS      (-g only; start in CLOCK_MONOTONIC)
 * "calls" counts every call made, warm-up included (what a probe sees);
 * ns_per_call covers the timed calls only.  total's ns_per_call is the
 * mean over the threads of their ns per call.
 *
 * Built with plain -O2 (no sanitizers): see bench/local.mk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BENCH_BLOCK	1000		/* calls between two clock reads */
#define BENCH_GAP_BLOCK	100		/* same, in stall mode */
#define BENCH_WARMUP	20		/* untimed blocks first */
#define BENCH_GAP_NS	20000		/* stalls recorded in -g mode */
#define BENCH_MAX_GAPS	4096		/* per thread */
#define BENCH_MAX_CPUS	64

enum bench_func {
	BENCH_NOP,
	BENCH_ARGS,
	BENCH_RET,
};

static const char *const bench_func_names[] = {
	[BENCH_NOP] = "nop",
	[BENCH_ARGS] = "args",
	[BENCH_RET] = "ret",
};

struct bench_gap {
	uint64_t start;
	uint64_t len;
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
	uint64_t sum_arg1;
	unsigned long sink;
	struct bench_gap *gaps;
	size_t ngaps;
	uint64_t gaps_dropped;
} __attribute__((aligned(64)));

struct bench_opts {
	enum bench_func func;
	int threads;
	uint64_t duration_ns;		/* 0: run calls instead */
	uint64_t calls;
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

__attribute__((noipa, used)) void bench_nop(void)
{
	bench_tls_sink++;
}

__attribute__((noipa, used)) void bench_args(unsigned long a, unsigned long b)
{
	bench_tls_sink += a ^ b;
}

__attribute__((noipa, used)) unsigned long bench_ret(unsigned long a)
{
	return a * 3 + 1;
}

static uint64_t bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* One block of n calls of the chosen function. */
static void bench_block(struct bench_thread *t, enum bench_func f, int n)
{
	unsigned long acc = 0;
	int i;

	switch (f) {
	case BENCH_NOP:
		for (i = 0; i < n; i++)
			bench_nop();
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
	}
	t->calls += n;
}

static void bench_gap_note(struct bench_thread *t, uint64_t prev,
			   uint64_t now)
{
	if (now - prev < BENCH_GAP_NS)
		return;
	if (t->ngaps == BENCH_MAX_GAPS) {
		t->gaps_dropped++;
		return;
	}
	t->gaps[t->ngaps++] = (struct bench_gap){ .start = prev,
						  .len = now - prev };
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

static void *bench_thread_main(void *arg)
{
	struct bench_thread *t = arg;
	const struct bench_opts *o = &bench_opts;
	int block = o->gaps ? BENCH_GAP_BLOCK : BENCH_BLOCK;
	uint64_t start, prev, now, end;
	int i;

	t->tid = (pid_t)syscall(SYS_gettid);
	bench_pin(t);
	pthread_barrier_wait(&bench_barrier);

	if (t->watcher) {
		end = bench_now() + o->duration_ns;
		prev = bench_now();
		do {
			now = bench_now();
			bench_gap_note(t, prev, now);
			prev = now;
		} while (now < end && !bench_stop);
		return NULL;
	}

	for (i = 0; i < BENCH_WARMUP; i++)
		bench_block(t, o->func, block);

	start = prev = bench_now();
	end = start + o->duration_ns;
	for (;;) {
		bench_block(t, o->func, block);
		t->timed_calls += block;
		now = bench_now();
		if (o->gaps) {
			bench_gap_note(t, prev, now);
			if (bench_stop)
				break;
		}
		prev = now;
		if (o->duration_ns ? now >= end : t->timed_calls >= o->calls)
			break;
	}
	t->ns = now - start;
	return NULL;
}

static void bench_usage(FILE *f)
{
	fputs("usage: ubt-hotloop [-f nop|args|ret] [-t THREADS] "
	      "[-d MS | -n CALLS]\n"
	      "                   [-C CPU[,CPU...]] [-g] [-o FILE]\n", f);
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
	return err ?: (o->ncpus ? 0 : -EINVAL);
}

static int bench_parse(int argc, char **argv, struct bench_opts *o)
{
	unsigned long long v;
	size_t i;
	int c;

	while ((c = getopt(argc, argv, "C:d:f:ghn:o:t:")) != -1) {
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
	double per_call = 0;
	int workers = 0, i;
	size_t j;

	for (i = 0; i < n; i++) {
		if (th[i].watcher)
			continue;
		workers++;
		calls += th[i].calls;
		timed += th[i].timed_calls;
		sum += th[i].sum_arg1;
		per_call += (double)th[i].ns / th[i].timed_calls;
	}
	fprintf(f, "total func=%s threads=%d calls=%llu timed_calls=%llu "
		"ns_per_call=%.4f sum_arg1=%llu\n",
		bench_func_names[o->func], workers, (unsigned long long)calls,
		(unsigned long long)timed, per_call / workers,
		(unsigned long long)sum);
	for (i = 0; i < n; i++) {
		const struct bench_thread *t = &th[i];

		if (t->watcher)
			fprintf(f, "watcher id=%d tid=%d cpu=%d\n", t->id,
				(int)t->tid, t->cpu);
		else
			fprintf(f, "thread id=%d tid=%d cpu=%d calls=%llu "
				"ns=%llu ns_per_call=%.4f\n", t->id,
				(int)t->tid, t->cpu,
				(unsigned long long)t->calls,
				(unsigned long long)t->ns,
				(double)t->ns / t->timed_calls);
		for (j = 0; j < t->ngaps; j++)
			fprintf(f, "gap thread=%d start=%llu len=%llu\n", t->id,
				(unsigned long long)t->gaps[j].start,
				(unsigned long long)t->gaps[j].len);
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
	for (i = 0; i < n; i++)
		free(th[i].gaps);
	free(th);
	return 0;
}
