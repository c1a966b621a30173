/*
 * Unit tests of shim/merge.c: the queue hands records back in time order
 * (equal times in push order, nothing at or after the bound), and the
 * time-stamp counter converted to CLOCK_MONOTONIC agrees with
 * clock_gettime() and with the kernel's bpf_ktime_get_ns() (a BPF syscall
 * program run with BPF_PROG_TEST_RUN between two counter reads) to well
 * under a microsecond.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "merge.h"
#include "util.h"

static int ntest;
static int nfail;

static void check(const char *name, int ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check(const char *name, int ok, const char *fmt, ...)
{
	va_list ap;

	ntest++;
	printf("%sok %d - %s\n", ok ? "" : "not ", ntest, name);
	if (!ok)
		nfail++;
	if (fmt) {
		printf("# ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
}

/* ---- the queue ----------------------------------------------------- */

struct rec {
	int src;
	int n;		/* position in its source */
};

/* Three sources, each in time order, pushed interleaved; some equal times. */
static void test_order(void)
{
	struct merge_queue q;
	struct merge_ev *e;
	uint64_t last_ts = 0, last_seq = 0;
	int next[3] = { 0 }, n = 0, bad = 0;
	uint64_t ts[3] = { 0 };
	unsigned seed = 12345;

	merge_init(&q);
	for (int i = 0; i < 30000; i++) {
		int s = rand_r(&seed) % 3;
		struct rec r = { .src = s, .n = next[s]++ };

		/* steps of 0..3 ns: many ties across sources */
		ts[s] += rand_r(&seed) % 4;
		merge_push(&q, ts[s], s, &r, sizeof(r));
	}
	memset(next, 0, sizeof(next));
	while ((e = merge_pop(&q, UINT64_MAX))) {
		struct rec r;

		memcpy(&r, e->data, sizeof(r));
		if (e->len != sizeof(r) || e->src != r.src ||
		    r.n != next[r.src]++)
			bad++;
		if (n && (e->ts < last_ts ||
			  (e->ts == last_ts && e->seq < last_seq)))
			bad++;
		last_ts = e->ts;
		last_seq = e->seq;
		n++;
		free(e);
	}
	check("queue: 30000 records of 3 sources pop in time order, each "
	      "source in its own order, ties in push order",
	      n == 30000 && !bad, "%d popped, %d out of order", n, bad);
	merge_release(&q);
}

/* A round: only what is older than the bound comes out. */
static void test_bound(void)
{
	struct merge_queue q;
	struct merge_ev *e;
	int got[8], n = 0;
	static const uint64_t ts[] = { 50, 10, 40, 30, 10, 70, 20, 60 };

	merge_init(&q);
	for (int i = 0; i < 8; i++)
		merge_push(&q, ts[i], 0, &i, sizeof(i));
	while ((e = merge_pop(&q, 40))) {
		memcpy(&got[n++], e->data, sizeof(int));
		free(e);
	}
	check("queue: a bound of 40 pops 10, 10, 20, 30 (the tie in push "
	      "order) and keeps the rest",
	      n == 4 && got[0] == 1 && got[1] == 4 && got[2] == 6 &&
		      got[3] == 3 && q.n == 4 && merge_oldest(&q) == 40,
	      NULL);
	while ((e = merge_pop(&q, UINT64_MAX))) {
		memcpy(&got[n++], e->data, sizeof(int));
		free(e);
	}
	check("queue: the rest, at the end, in order",
	      n == 8 && got[4] == 2 && got[5] == 0 && got[6] == 7 &&
		      got[7] == 5 && merge_oldest(&q) == UINT64_MAX,
	      NULL);
	merge_push(&q, 5, 0, "x", 1);
	merge_release(&q);
	check("queue: released with a record in it", q.n == 0 && !q.heap,
	      NULL);
}

/* ---- the clock ----------------------------------------------------- */

static void sleep_ms(long ms)
{
	struct timespec t = { .tv_sec = ms / 1000,
			      .tv_nsec = (ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

#define NREADS 2000

/*
 * Reads of clock_gettime around a counter read, converted after the
 * round's anchor, as run.c converts the user rings' stamps.
 */
static void test_clock(void)
{
	static uint64_t a[NREADS], t[NREADS], b[NREADS];
	struct merge_clock c;
	int64_t worst = 0;
	int used = 0, bad = 0;

	check("clock: the time-stamp counter is a clock here "
	      "(constant_tsc, nonstop_tsc, the tsc clocksource)",
	      merge_tsc_usable(), NULL);
	merge_clock_init(&c);
	sleep_ms(20);
	merge_clock_sample(&c);
	sleep_ms(5);
	for (int i = 0; i < NREADS; i++) {
		a[i] = mono_ns();
		t[i] = merge_rdtsc();
		b[i] = mono_ns();
	}
	sleep_ms(5);
	merge_clock_sample(&c);
	for (int i = 0; i < NREADS; i++) {
		int64_t ns = (int64_t)merge_clock_ns(&c, t[i]), e = 0;

		if (b[i] - a[i] > 1000)
			continue;	/* preempted between the reads */
		used++;
		if (ns < (int64_t)a[i])
			e = (int64_t)a[i] - ns;
		else if (ns > (int64_t)b[i])
			e = ns - (int64_t)b[i];
		if (e > worst)
			worst = e;
		bad += e > 200;
	}
	check("clock: counter values far off (a target's garbage) convert "
	      "to times far off, without overflow",
	      merge_clock_ns(&c, 0) < c.ns1 &&
		      merge_clock_ns(&c, c.tsc1 - (c.tsc1 >> 1) * 3) == 0 &&
		      merge_clock_ns(&c, c.tsc1 + ((uint64_t)1 << 63) - 1) >
			      c.ns1 + ((uint64_t)1 << 60) &&
		      merge_clock_ns(&c, c.tsc1 + ((uint64_t)1 << 63) - 1) <=
			      (uint64_t)1 << 62 &&
		      merge_clock_ns(&c, c.tsc1) == c.ns1,
	      NULL);
	check("clock: converted counter reads lie between the clock_gettime "
	      "reads around them (200 ns of tolerance)",
	      used > NREADS / 2 && !bad,
	      "%d reads used, %d outside, worst %lld ns outside", used, bad,
	      (long long)worst);
}

/*
 * A BPF syscall program: *(u64 *)ctx = bpf_ktime_get_ns(); return 0.
 */
static int ktime_prog(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_6,
		  .src_reg = BPF_REG_1 },
		{ .code = BPF_JMP | BPF_CALL,
		  .imm = BPF_FUNC_ktime_get_ns },
		{ .code = BPF_STX | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_6,
		  .src_reg = BPF_REG_0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .prog_flags = BPF_F_SLEEPABLE);

	return bpf_prog_load(BPF_PROG_TYPE_SYSCALL, "ubt_ktime", "GPL", insns,
			     sizeof(insns) / sizeof(insns[0]), &o);
}

/*
 * The kernel's stamp against counter reads just before and just after
 * the program ran: the least gap each way bounds the clocks' offset.
 */
static void test_kernel_clock(void)
{
	static uint64_t a[NREADS], k[NREADS], b[NREADS];
	struct merge_clock c;
	int64_t before = INT64_MAX, after = INT64_MAX;
	int fd = ktime_prog(), ran = 0;

	check("clock: a BPF program reading bpf_ktime_get_ns() loads",
	      fd >= 0, fd < 0 ? "bpf_prog_load: %s" : NULL,
	      strerror(-fd));
	if (fd < 0)
		return;
	merge_clock_init(&c);
	sleep_ms(20);
	for (int i = 0; i < NREADS; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &k[i],
			    .ctx_size_in = sizeof(k[i]));

		a[i] = merge_rdtsc();
		if (bpf_prog_test_run_opts(fd, &o))
			break;
		b[i] = merge_rdtsc();
		ran++;
	}
	sleep_ms(5);
	merge_clock_sample(&c);
	for (int i = 0; i < ran; i++) {
		int64_t ua = (int64_t)merge_clock_ns(&c, a[i]);
		int64_t ub = (int64_t)merge_clock_ns(&c, b[i]);

		if ((int64_t)k[i] - ua < before)
			before = (int64_t)k[i] - ua;
		if (ub - (int64_t)k[i] < after)
			after = ub - (int64_t)k[i];
	}
	close(fd);
	/*
	 * offset = kernel - user lies in [-before, after] ... widened by
	 * the conversion's own error: each must stay above -200 ns, and
	 * together they bound the offset within their sum
	 */
	check("clock: bpf_ktime_get_ns() lies between the converted counter "
	      "reads around BPF_PROG_TEST_RUN (200 ns of tolerance)",
	      ran == NREADS && before > -200 && after > -200 &&
		      before + after < 3000,
	      "%d runs; kernel stamp at least %lld ns after the read before, "
	      "%lld ns before the read after", ran, (long long)before,
	      (long long)after);
}

int main(void)
{
	test_order();
	test_bound();
	test_clock();
	test_kernel_clock();
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}
