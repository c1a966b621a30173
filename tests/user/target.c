/*
 * Target program for the user-mode tests.  The probed functions are written
 * in assembly so that their first bytes are known exactly:
 *
 *   ut_plain       push %rbp; ...          returns x + 1
 *   ut_endbr       endbr64; push %rbx ...  returns x + 2
 *   ut_riprel      mov ut_base(%rip),%rax first: returns ut_base + x
 *   ut_jcc         test; jz rel8 first:    returns x ? 2x : 7
 *   ut_short       4 bytes: refused        returns x
 *   ut_loop        branch to +2: refused   returns x (counts up to it)
 *   ut_jrcxz       jrcxz first: refused    returns x
 *   ut_icall       call *%rsi first: refused (no room for a jump after
 *                  it); never called
 *   ut_ret         returns 3x (return probes)
 *   ut_lj(x, jb)   longjmp(jb)s out when x is odd, else returns x
 *   ut_flags       cmp; ja: flags live at +4    returns x > 5 ? 100 : 200
 *   ut_redzone     stores in the red zone, reads it back at +5: x + 1
 *   ut_r11         %r11 live at +3               returns x + 3
 *                  (each with a nop at the probe's offset: the jump
 *                  follows the instruction there, which must change no
 *                  register)
 *   and atoi() from libc (a second module; sub $8,%rsp first)
 *   ut_sys(nr,a,b) mov %edi,%eax; syscall; ret: system call nr(nr, a, b),
 *                  a thread blocked in it stops inside the patch window
 *
 * Usage: target THREADS_BEFORE THREADS_AFTER ITERS
 *   prints "ready" once the first threads exist, reads a byte from stdin,
 *   runs one round (ITERS calls of each function per thread, with the
 *   second group of threads created during the round), prints "sum S",
 *   reads a byte, runs a second round, prints "sum S", exits 0.
 * Usage: target bench ITERS [ret]
 *   prints "ready", then for each byte read: times ITERS calls of ut_plain
 *   (or ut_ret), prints "ns X"; exits at end of input.
 * Usage: target exit USEC
 *   prints "ready PID", calls ut_plain in a loop for USEC microseconds,
 *   exits 0.
 * Usage: target fork
 *   prints "ready", reads a byte, calls ut_forker, which forks (the child
 *   calls ut_plain 1000 times, returns from ut_forker, checks ut_ret and
 *   exits), waits for the child, calls ut_plain 10 times, prints
 *   "done STATUS" with the child's wait status.
 * Usage: target exec
 *   prints "ready", reads a byte, calls ut_plain, then runs "target sys".
 * Usage: target sys [phdr]
 *   prints "ready", then reads stdin one byte at a time through ut_sys,
 *   printing "got N" for each; exits 0 at end of input.  With phdr, a
 *   thread holds the loader's lock (in a dl_iterate_phdr callback) from
 *   before "ready" until the first byte is read, then most of the time
 *   (sleeping in the callback), so a dlopen in another thread must wait.
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

long ut_base = 1000;

__asm__(".text\n"
	".globl ut_plain\n.type ut_plain,@function\n"
	"ut_plain:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	lea 1(%rdi), %rax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size ut_plain, .-ut_plain\n"

	".globl ut_endbr\n.type ut_endbr,@function\n"
	"ut_endbr:\n"
	"	endbr64\n"
	"	push %rbx\n"
	"	mov %rdi, %rbx\n"
	"	lea 2(%rbx), %rax\n"
	"	pop %rbx\n"
	"	ret\n"
	".size ut_endbr, .-ut_endbr\n"

	".globl ut_riprel\n.type ut_riprel,@function\n"
	"ut_riprel:\n"
	"	mov ut_base(%rip), %rax\n"
	"	add %rdi, %rax\n"
	"	test %rax, %rax\n"
	"	ret\n"
	".size ut_riprel, .-ut_riprel\n"

	".globl ut_jcc\n.type ut_jcc,@function\n"
	"ut_jcc:\n"
	"	test %rdi, %rdi\n"
	"	jz 1f\n"
	"	lea (%rdi,%rdi), %rax\n"
	"	ret\n"
	"1:	mov $7, %eax\n"
	"	ret\n"
	".size ut_jcc, .-ut_jcc\n"

	".globl ut_short\n.type ut_short,@function\n"
	"ut_short:\n"
	"	mov %rdi, %rax\n"
	"	ret\n"
	".size ut_short, .-ut_short\n"

	".globl ut_loop\n.type ut_loop,@function\n"
	"ut_loop:\n"
	"	xor %eax, %eax\n"
	"1:	cmp %rdi, %rax\n"
	"	jae 2f\n"
	"	add $1, %rax\n"
	"	jmp 1b\n"
	"2:	ret\n"
	".size ut_loop, .-ut_loop\n"

	".globl ut_jrcxz\n.type ut_jrcxz,@function\n"
	"ut_jrcxz:\n"
	"	jrcxz 1f\n"
	"	nop\n"
	"	nop\n"
	"	nop\n"
	"1:	mov %rdi, %rax\n"
	"	ret\n"
	".size ut_jrcxz, .-ut_jrcxz\n"

	".globl ut_icall\n.type ut_icall,@function\n"
	"ut_icall:\n"
	"	call *%rsi\n"
	"	nop\n"
	"	nop\n"
	"	nop\n"
	"	ret\n"
	".size ut_icall, .-ut_icall\n"

	".globl ut_ret\n.type ut_ret,@function\n"
	"ut_ret:\n"
	"	push %rbp\n"
	"	lea (%rdi,%rdi,2), %rax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size ut_ret, .-ut_ret\n"

	".globl ut_flags\n.type ut_flags,@function\n"
	"ut_flags:\n"
	"	cmp $5, %rdi\n"
	"	nop\n"				/* +4: the probe's */
	"	ja 1f\n"
	"	mov $200, %eax\n"
	"	ret\n"
	"1:	mov $100, %eax\n"
	"	ret\n"
	".size ut_flags, .-ut_flags\n"

	".globl ut_redzone\n.type ut_redzone,@function\n"
	"ut_redzone:\n"
	"	mov %rdi, -8(%rsp)\n"
	"	nop\n"				/* +5: the probe's */
	"	mov -8(%rsp), %rax\n"
	"	add $1, %rax\n"
	"	ret\n"
	".size ut_redzone, .-ut_redzone\n"

	".globl ut_r11\n.type ut_r11,@function\n"
	"ut_r11:\n"
	"	mov %rdi, %r11\n"
	"	nop\n"				/* +3: the probe's */
	"	lea 3(%r11), %rax\n"
	"	ret\n"
	".size ut_r11, .-ut_r11\n"

	".globl ut_sys\n.type ut_sys,@function\n"
	"ut_sys:\n"
	"	mov %edi, %eax\n"
	"	syscall\n"
	"	nop\n"
	"	nop\n"
	"	nop\n"
	"	ret\n"
	".size ut_sys, .-ut_sys\n"

	".globl ut_lj\n.type ut_lj,@function\n"
	"ut_lj:\n"
	"	test $1, %edi\n"
	"	jnz 1f\n"
	"	mov %rdi, %rax\n"
	"	ret\n"
	"1:	sub $8, %rsp\n"
	"	mov %rsi, %rdi\n"
	"	mov $1, %esi\n"
	"	call longjmp@PLT\n"
	".size ut_lj, .-ut_lj\n");

long ut_plain(long), ut_endbr(long), ut_riprel(long), ut_jcc(long);
long ut_short(long), ut_loop(long), ut_jrcxz(long), ut_ret(long);
long ut_lj(long, jmp_buf *);
long ut_sys(long nr, void *a1, long a2);
long ut_flags(long), ut_redzone(long), ut_r11(long);


/* through volatile pointers: nothing gets inlined or folded */
static long (*volatile f_plain)(long) = ut_plain;
static long (*volatile f_endbr)(long) = ut_endbr;
static long (*volatile f_riprel)(long) = ut_riprel;
static long (*volatile f_jcc)(long) = ut_jcc;
static long (*volatile f_short)(long) = ut_short;
static long (*volatile f_loop)(long) = ut_loop;
static long (*volatile f_jrcxz)(long) = ut_jrcxz;
static long (*volatile f_ret)(long) = ut_ret;
static long (*volatile f_lj)(long, jmp_buf *) = ut_lj;
static long (*volatile f_flags)(long) = ut_flags;
static long (*volatile f_redzone)(long) = ut_redzone;
static long (*volatile f_r11)(long) = ut_r11;

static long iters;
static int nbefore, nafter;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int round_no, done_count;
static long total;

static const char *volatile seven = "7";
/* a call gcc cannot turn into strtol() */
static int (*volatile f_atoi)(const char *) = atoi;

static long one_round(void)
{
	volatile long i, s = 0;
	jmp_buf jb;

	for (i = 0; i < iters; i++) {
		s += f_plain(i) + f_endbr(i) + f_riprel(i) + f_jcc(i & 3);
		s += f_short(i) + f_loop(i & 7) + f_jrcxz(i) + f_ret(i);
		s += f_atoi(seven) == 7 ? 0 : 1000000;	/* in libc */
		s += f_flags(i & 7) + f_redzone(i) + f_r11(i);
		if (!setjmp(jb))
			s += f_lj(i, &jb);	/* odd i: longjmp out */
		else
			s += 1;
	}
	return s;
}

/* what one_round returns, computed without calling anything probed */
static long expected_round(void)
{
	long i, s = 0;

	for (i = 0; i < iters; i++) {
		s += (i + 1) + (i + 2) + (ut_base + i) +
		     ((i & 3) ? 2 * (i & 3) : 7);
		s += i + (i & 7) + i + 3 * i;
		s += (i & 1) ? 1 : i;
		s += ((i & 7) > 5 ? 100 : 200) + (i + 1) + (i + 3);
	}
	return s;
}

static void *worker(void *arg)
{
	int my_round = 0;
	long s;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (round_no == my_round)
			pthread_cond_wait(&cv, &mu);
		my_round = round_no;
		pthread_mutex_unlock(&mu);
		if (my_round > 2)
			return NULL;
		s = one_round();
		pthread_mutex_lock(&mu);
		total += s;
		done_count++;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
}

static void start_round(void)
{
	pthread_mutex_lock(&mu);
	round_no++;
	done_count = 0;
	total = 0;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void wait_round(int n)
{
	pthread_mutex_lock(&mu);
	while (done_count < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

/* forks inside itself: the child returns through it too (-2) */
__attribute__((noinline)) long ut_forker(void)
{
	pid_t pid;
	int i, st = -1;

	pid = fork();
	if (!pid) {
		for (i = 0; i < 1000; i++)
			f_plain(i);
		return -2;
	}
	waitpid(pid, &st, 0);
	return st;
}

static long (*volatile f_forker)(void) = ut_forker;

static int phdr_gate[2];	/* the first callback waits for a byte */
static volatile int phdr_in;	/* and says it holds the lock */

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	char c;

	(void)info;
	(void)size;
	(void)arg;
	if (!phdr_in) {
		phdr_in = 1;
		if (read(phdr_gate[0], &c, 1) != 1)
			_exit(5);
	} else {
		usleep(20000);
	}
	return 1;
}

static void *phdr_main(void *arg)
{
	(void)arg;
	for (;;)
		dl_iterate_phdr(phdr_cb, NULL);
	return NULL;
}

static int bench(long n, bool ret)
{
	long (*volatile f)(long) = ret ? f_ret : f_plain;
	struct timespec a, b;
	char c;
	long i, s = 0;

	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) == 1) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (i = 0; i < n; i++)
			s += f(i);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("ns %.3f %ld\n",
		       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) /
			       n,
		       s);
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	int i, r, nth = 0;
	char c;

	if (argc >= 3 && !strcmp(argv[1], "bench"))
		return bench(atol(argv[2]), argc > 3);
	if (argc == 3 && !strcmp(argv[1], "exit")) {
		struct timespec a, b;
		long us = atol(argv[2]), i = 0;

		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		clock_gettime(CLOCK_MONOTONIC, &a);
		do {
			f_plain(i++);
			clock_gettime(CLOCK_MONOTONIC, &b);
		} while ((b.tv_sec - a.tv_sec) * 1000000 +
				 (b.tv_nsec - a.tv_nsec) / 1000 <
			 us);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "fork")) {
		printf("ready\n");
		fflush(stdout);
		if (read(0, &c, 1) != 1)
			return 3;
		long st = f_forker();
		int i;

		if (st == -2)
			_exit(f_ret(5) == 15 ? 0 : 1);
		for (i = 0; i < 10; i++)
			f_plain(i);
		printf("done %ld\n", st);
		fflush(stdout);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "exec")) {
		printf("ready\n");
		fflush(stdout);
		if (read(0, &c, 1) != 1)
			return 3;
		f_plain(1);
		execl("/proc/self/exe", argv[0], "sys", (char *)NULL);
		return 4;
	}
	if (argc >= 2 && !strcmp(argv[1], "sys")) {
		long n = 0;

		if (argc > 2) {
			if (pipe(phdr_gate))
				return 5;
			pthread_create(&th[0], NULL, phdr_main, NULL);
			/* "ready" once the lock is held */
			while (!phdr_in)
				usleep(1000);
		}
		printf("ready\n");
		fflush(stdout);
		while (ut_sys(0, &c, 1) == 1) {
			if (argc > 2 && !n && write(phdr_gate[1], "x", 1) != 1)
				return 5;
			printf("got %ld\n", ++n);
			fflush(stdout);
		}
		return 0;
	}
	if (argc != 4)
		return 2;
	nbefore = atoi(argv[1]);
	nafter = atoi(argv[2]);
	iters = atol(argv[3]);
	if (nbefore + nafter > 64)
		return 2;
	for (i = 0; i < nbefore; i++)
		pthread_create(&th[nth++], NULL, worker, NULL);
	/* warm up: the process has been running for a while */
	one_round();
	printf("ready\n");
	fflush(stdout);
	for (r = 1; r <= 2; r++) {
		if (read(0, &c, 1) != 1)
			return 3;
		start_round();
		if (r == 1)
			for (i = 0; i < nafter; i++)
				pthread_create(&th[nth++], NULL, worker,
					       NULL);
		wait_round(nth);
		printf("sum %ld expected %ld\n", total,
		       expected_round() * nth);
		fflush(stdout);
	}
	start_round();
	for (i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	return 0;
}
