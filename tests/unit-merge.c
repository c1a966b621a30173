/*
 * Unit tests of shim/base/merge.c and of the user side's two clocks: the queue
 * hands records back in time order (equal times in push order, nothing at
 * or after the bound); where the time-stamp counter is a clock, it
 * converts to CLOCK_MONOTONIC in agreement with clock_gettime() and with
 * the kernel's bpf_ktime_get_ns() (a BPF syscall program run with
 * BPF_PROG_TEST_RUN between two counter reads) to well under a
 * microsecond; on every machine, UBT_NO_TSC forces the fallback, and the
 * fallback, the runtime's rt_clock_ns() (RT_FN_CLOCK_NS), reads
 * CLOCK_MONOTONIC as clock_gettime() and the kernel do, without a system
 * call (checked under a seccomp filter that refuses clock_gettime).
 * nsecs in user-mode probes: the counter-to-ns segment ubt writes into
 * the control block (shim/user/user_clock.c), applied as probe code applies
 * it, agrees with clock_gettime() and bpf_ktime_get_ns() within 1 us
 * while ubt renews it, and never steps back.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/audit.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "memfd.h"
#include "merge.h"
#include "user_clock.h"
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

static void skip(const char *name, const char *why)
{
	ntest++;
	printf("ok %d - %s # SKIP %s\n", ntest, name, why);
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
	check("clock: converted counter reads lie between the clock_gettime "
	      "reads around them (200 ns of tolerance)",
	      used > NREADS / 2 && !bad,
	      "%d reads used, %d outside, worst %lld ns outside", used, bad,
	      (long long)worst);
}

/* Arithmetic only: holds whatever the counter is. */
static void test_garbage(void)
{
	struct merge_clock c;

	merge_clock_init(&c);
	sleep_ms(2);
	merge_clock_sample(&c);
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
}

/* UBT_NO_TSC forces the fallback on any machine; 0 or empty does not. */
static void test_force(void)
{
	const char *was = getenv("UBT_NO_TSC");
	char *keep = was ? xstrdup(was) : NULL;
	bool usable, forced, zero, empty;

	unsetenv("UBT_NO_TSC");
	usable = merge_tsc_usable();
	setenv("UBT_NO_TSC", "1", 1);
	forced = merge_tsc_usable();
	setenv("UBT_NO_TSC", "0", 1);
	zero = merge_tsc_usable();
	setenv("UBT_NO_TSC", "", 1);
	empty = merge_tsc_usable();
	if (keep)
		setenv("UBT_NO_TSC", keep, 1);
	else
		unsetenv("UBT_NO_TSC");
	free(keep);
	check("UBT_NO_TSC=1: the fallback clock, whatever the machine",
	      !forced, NULL);
	check("UBT_NO_TSC=0 or empty: as unset", zero == usable &&
	      empty == usable, zero == usable && empty == usable ? NULL :
	      "unset %d, 0 %d, empty %d", usable, zero, empty);
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

/* ---- nsecs in user-mode probes: the segment in the control block ---- */

/* What probe code computes (codegen/irb_native_helper.c, nat_clock()). */
static bool ctl_ns(const struct rt_ctl *ctl, uint64_t *ns)
{
	uint32_t seq = __atomic_load_n(&ctl->clk_seq, __ATOMIC_ACQUIRE);
	uint64_t mult = ctl->clk_mult, tsc0 = ctl->clk_tsc0;
	uint64_t ns0 = ctl->clk_ns0;
	uint32_t shift = ctl->clk_shift & 63;
	uint64_t tsc = merge_rdtsc();
	__int128 d;

	if (!mult || (seq & 1) ||
	    __atomic_load_n(&ctl->clk_seq, __ATOMIC_ACQUIRE) != seq)
		return false;
	d = (__int128)(int64_t)(tsc - tsc0) * mult;
	*ns = ns0 + (uint64_t)(int64_t)(d >> shift);
	return true;
}

static void test_user_clock(void)
{
	struct memfd_layout l = { .map_size = 4096, .ring_size = 4096,
				  .nblocks = 1 };
	static struct memfd m;
	static struct user_clock k;
	int64_t worst = 0, kworst = 0, back = 0, drift = 0;
	uint64_t prev = 0, reads = 0, kreads = 0;
	int fd = ktime_prog();

	if (memfd_create_local(&m, &l)) {
		check("user clock: a control block", 0, NULL);
		return;
	}
	user_clock_begin(&k);
	check("user clock: the counter is used where it is a clock",
	      k.usable == merge_tsc_usable(), NULL);
	if (!k.usable) {
		user_clock_update(&k, m.ctl);
		check("user clock: none written where it is not (probes read "
		      "the vDSO)", !m.ctl->clk_mult && !m.ctl->clk_seq, NULL);
		memfd_release(&m);
		if (fd >= 0)
			close(fd);
		return;
	}
	for (int i = 0; i < 500; i++) {
		user_clock_update(&k, m.ctl);
		if (llabs(k.err) > drift)
			drift = llabs(k.err);
		for (int j = 0; j < 4; j++) {
			uint64_t a = mono_ns(), r, b;
			bool ok = ctl_ns(m.ctl, &r);

			b = mono_ns();
			if (!ok)
				continue;
			reads++;
			if ((int64_t)(a - r) > worst)
				worst = (int64_t)(a - r);
			if ((int64_t)(r - b) > worst)
				worst = (int64_t)(r - b);
			if (r < prev && (int64_t)(prev - r) > back)
				back = (int64_t)(prev - r);
			prev = r;
		}
		if (fd >= 0) {
			uint64_t kt = 0, a, b;
			LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &kt,
				    .ctx_size_in = sizeof(kt));

			if (ctl_ns(m.ctl, &a) && !bpf_prog_test_run_opts(fd, &o) &&
			    ctl_ns(m.ctl, &b)) {
				kreads++;
				if ((int64_t)(a - kt) > kworst)
					kworst = (int64_t)(a - kt);
				if ((int64_t)(kt - b) > kworst)
					kworst = (int64_t)(kt - b);
			}
		}
		sleep_ms(1);
	}
	check("user clock: renewed while the run goes on (every 50 ms)",
	      k.writes >= 5, "%u segments in ~0.6 s; the old segment was "
	      "off by at most %lld ns at a renewal", k.writes,
	      (long long)drift);
	check("user clock: each read lies between the clock_gettime() reads "
	      "around it, within 1 us", reads > 1000 && worst <= 1000,
	      "%llu reads, worst %lld ns outside", (unsigned long long)reads,
	      (long long)worst);
	check("user clock: bpf_ktime_get_ns() lies between the reads around "
	      "BPF_PROG_TEST_RUN, within 1 us", fd >= 0 && kreads > 200 &&
	      kworst <= 1000, "%llu runs, worst %lld ns outside",
	      (unsigned long long)kreads, (long long)kworst);
	check("user clock: never steps back across renewals", !back,
	      back ? "stepped back %lld ns" : NULL, (long long)back);
	memfd_release(&m);
	if (fd >= 0)
		close(fd);
}

/* ---- the fallback: the runtime's clock ------------------------------ */

static uint64_t (*rt_clock)(void);

/* Load the runtime as ubt loads it in a target, and point it at a memfd. */
static bool runtime_clock(void)
{
	struct memfd_layout l = { .map_size = 4096, .ring_size = 4096,
				  .nblocks = 1 };
	static struct memfd m;
	const char *b = getenv("top_builddir");
	char path[4096];
	long (*init)(struct rt_ctl *);
	void *h;

	snprintf(path, sizeof(path), "%s/libubt-rt.so", b ? b : ".");
	h = dlopen(path, RTLD_NOW);
	init = h ? (long (*)(struct rt_ctl *))dlsym(h, "rt_init") : NULL;
	if (!init || memfd_create_local(&m, &l) ||
	    init(m.ctl) != m.ctl->tls_offset) {
		printf("Bail out! cannot load the runtime %s: %s\n", path,
		       h ? "rt_init failed" : dlerror());
		exit(99);
	}
	rt_clock = (uint64_t (*)(void))(uintptr_t)m.ctl->fn[RT_FN_CLOCK_NS];
	return rt_clock && (void *)(uintptr_t)rt_clock == dlsym(h,
								 "rt_clock_ns");
}

/* Same clock as clock_gettime(CLOCK_MONOTONIC): exactly in order. */
static void test_rt_clock(void)
{
	int bad = 0;
	uint64_t a = 0, r = 0, b = 0;

	check("fallback: the runtime publishes rt_clock_ns as RT_FN_CLOCK_NS",
	      runtime_clock(), NULL);
	for (int i = 0; i < NREADS; i++) {
		a = mono_ns();
		r = rt_clock();
		b = mono_ns();
		if (r < a || r > b) {
			bad++;
			break;
		}
	}
	check("fallback: rt_clock_ns() reads CLOCK_MONOTONIC (each read "
	      "between the clock_gettime() reads around it)", !bad,
	      bad ? "%llu <= %llu <= %llu fails" : NULL,
	      (unsigned long long)a, (unsigned long long)r,
	      (unsigned long long)b);
}

/*
 * In a child that may not call clock_gettime(2) (seccomp: EPERM):
 * 0 when rt_clock_ns() still reads the clock, 1 when it does not, 77
 * when libc's clock_gettime() cannot either (the clocksource needs the
 * system call here: nothing to check).
 */
static int no_syscall_child(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clock_gettime, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };
	struct timespec ts;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return 99;
	if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != -1 ||
	    errno != EPERM)
		return 99;	/* the filter does not work */
	for (int i = 0; i < NREADS; i++) {
		uint64_t a, r, b;

		if (clock_gettime(CLOCK_MONOTONIC, &ts))
			return 77;
		a = (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
		r = rt_clock();
		if (clock_gettime(CLOCK_MONOTONIC, &ts))
			return 77;
		b = (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
		if (r < a || r > b)
			return 1;
	}
	return 0;
}

static void test_rt_no_syscall(void)
{
	const char *name = "fallback: rt_clock_ns() makes no system call "
			   "(it reads the clock under a seccomp filter that "
			   "refuses clock_gettime)";
	int st = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(no_syscall_child());
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
		check(name, 0, "the child did not exit (%#x)", st);
		return;
	}
	if (WEXITSTATUS(st) == 77)
		skip(name, "this clocksource needs the system call in the "
			   "vDSO as well");
	else
		check(name, WEXITSTATUS(st) == 0,
		      WEXITSTATUS(st) ? "child exit %d%s" : NULL,
		      WEXITSTATUS(st), WEXITSTATUS(st) == 99 ?
		      " (seccomp filter failed)" : "");
}

/* The kernel's stamps: between the fallback's reads around them. */
static void test_rt_kernel(void)
{
	int fd = ktime_prog(), ran = 0, bad = 0;

	if (fd < 0) {
		check("fallback: bpf_ktime_get_ns() between rt_clock_ns() "
		      "reads", 0, "bpf_prog_load: %s", strerror(-fd));
		return;
	}
	for (int i = 0; i < NREADS; i++) {
		uint64_t a, k = 0, b;
		LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &k,
			    .ctx_size_in = sizeof(k));

		a = rt_clock();
		if (bpf_prog_test_run_opts(fd, &o))
			break;
		b = rt_clock();
		ran++;
		bad += k < a || k > b;
	}
	close(fd);
	check("fallback: bpf_ktime_get_ns() lies between the rt_clock_ns() "
	      "reads around BPF_PROG_TEST_RUN (exactly: one clock)",
	      ran == NREADS && !bad, "%d runs, %d outside", ran, bad);
}

/* /proc/cpuinfo lists constant_tsc and nonstop_tsc */
static bool cpu_flags_constant(void)
{
	char line[4096];
	bool ok = false;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		ok = strstr(line, " constant_tsc") &&
		     strstr(line, " nonstop_tsc");
		break;
	}
	if (f)
		fclose(f);
	return ok;
}

int main(void)
{
	char src[64] = "unknown";
	FILE *f;

	f = fopen("/sys/devices/system/clocksource/clocksource0/"
		  "current_clocksource", "r");
	if (f) {
		if (fgets(src, sizeof(src), f))
			src[strcspn(src, "\n")] = 0;
		fclose(f);
	}
	printf("# clocksource %s; the time-stamp counter is %sa clock here\n",
	       src, merge_tsc_usable() ? "" : "not ");
	test_order();
	test_bound();
	test_force();
	test_garbage();
	if (merge_tsc_usable()) {
		test_clock();
		test_kernel_clock();
	} else {
		/*
		 * Where the kernel keeps time with another clocksource (a
		 * virtual machine's kvm-clock, a TSC marked unstable), the
		 * counter does not follow bpf_ktime_get_ns(): user-mode stamps
		 * must come from the fallback, checked below on every machine.
		 */
		int ok = getenv("UBT_NO_TSC") || strcmp(src, "tsc") ||
			 !cpu_flags_constant();

		check("clock: the counter is not taken for a clock where the "
		      "kernel's clocksource is not tsc", ok,
		      ok ? NULL : "clocksource %s, constant and nonstop "
				  "counter, yet not used", src);
	}
	test_user_clock();
	test_rt_clock();
	test_rt_no_syscall();
	test_rt_kernel();
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}
