/*
 * ubt-sacred MODE [N]: processes ubt did not expect (issue 24), each
 * making N (default 100) calls of a probed function and checking its
 * results; exits 0, or 1 after a wrong result ("ubt-sacred: wrong
 * result" on stderr).  MODE:
 *
 *	insn	ubt_sacred_insn(i) returns 3i + 7; its code, byte for byte:
 *		+0 push %rbp (1)  +1 mov %rsp,%rbp (3)  +4 cmp $0,%rdi (4)
 *		+8 lea (5)  +13 pop %rbp (1)  +14 ret: +2 and +5 are inside
 *		instructions
 *	lock	ubt_sacred_lock(i) starts with `lock addq $1, lock_hits(%rip)`
 *		and returns i + 1; lock_hits must end at N
 *	lock-wait  (for -p) "ready", a wait for SIGUSR1, then as lock and
 *		"done N"
 *	tsc	prctl(PR_SET_TSC, PR_TSC_SIGSEGV) first, then the N calls of
 *		ubt_sacred_tick(i) (returns i + 1) in the main thread and N
 *		in a thread started after it (which inherits the mode)
 *	tsc-wait  the same, but prints "ready" after the prctl and waits
 *		for SIGUSR1 first (for -p)
 *	seccomp-kill  (for -p) a filter that kills the process on the
 *		calls an injector makes (memfd_create, mmap, mprotect,
 *		openat, rt_sigaction), then "ready", a wait for SIGUSR1
 *		(30 s at most), the N calls
 *	seccomp-trap  (for -p) the same with a filter that traps (SIGSYS)
 *		gettid, getuid, getgid, prctl, rt_sigprocmask, sigaltstack:
 *		what a probe's first hit in a thread would make
 *	seccomp-strict  (for -p) SECCOMP_MODE_STRICT (read, write, exit,
 *		sigreturn only), "ready", a spin until SIGUSR1, the N calls,
 *		exit(2) directly
 *	threads T  T threads (default 1500), all alive at once: each makes
 *		the N calls of ubt_sacred_tick(i), then waits at a barrier
 *		for the others before it exits
 *	threads-wait T  (for -p) "ready" once the T threads are up (they
 *		wait), a wait for SIGUSR1, then as threads, "done T*N",
 *		"ready" and a wait for SIGUSR1 again
 *	ppid	N times ubt_sacred_tick(i) followed by a getppid() system
 *		call (the latency idiom's two halves; run in a PID
 *		namespace), and "done N"
 *	ppid-wait  (for -p) "ready", a wait for SIGUSR1, then as ppid,
 *		then "ready" and a wait for SIGUSR1 again
 *	storm K  the N calls, 20 ms, then an exec of itself with
 *		"storm N K-1" (one process, K + 1 images), "done N" in
 *		the last
 *	uring-wait  (for -p) io_uring through raw system calls: a ring with
 *		a kernel polling thread (iou-sqp-*) and a read of an empty
 *		pipe forced to a worker (iou-wrk-*), then as ppid-wait
 *		with ubt_sacred_tick(i) alone; the read completes after
 *		(exit 1 when the kernel has no io_uring)
 */
#define _GNU_SOURCE
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "target.h"

long lock_hits;

/* long ubt_sacred_insn(long x): 3x + 7, with a frame */
long ubt_sacred_insn(long x);
__asm__(".text\n"
	".globl ubt_sacred_insn\n"
	".type ubt_sacred_insn,@function\n"
	"ubt_sacred_insn:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	cmpq $0, %rdi\n"
	"	lea 7(%rdi,%rdi,2), %rax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size ubt_sacred_insn, .-ubt_sacred_insn\n");

/* long ubt_sacred_lock(long x): x + 1, counting its calls atomically */
long ubt_sacred_lock(long x);
__asm__(".text\n"
	".globl ubt_sacred_lock\n"
	".type ubt_sacred_lock,@function\n"
	"ubt_sacred_lock:\n"
	"	lock addq $1, lock_hits(%rip)\n"
	"	lea 1(%rdi), %rax\n"
	"	nopl 0(%rax,%rax,1)\n"
	"	ret\n"
	".size ubt_sacred_lock, .-ubt_sacred_lock\n");

UBT_PROBE long ubt_sacred_tick(long i)
{
	UBT_FRAME();
	return i + 1;
}

static long n_calls = 100;

static long ticks(void)
{
	long bad = 0;

	for (long i = 0; i < n_calls; i++)
		bad |= ubt_sacred_tick(i) != i + 1;
	return bad;
}

static void *thread_ticks(void *arg)
{
	(void)arg;
	return (void *)ticks();
}

static long tsc(int wait)
{
	pthread_t t;
	void *res = (void *)1;
	long bad;

	if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0))
		return 1;
	if (wait)
		target_wait_usr1();
	bad = ticks();
	if (pthread_create(&t, NULL, thread_ticks, NULL) ||
	    pthread_join(t, &res))
		return 1;
	return bad | (long)res;
}

#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define ON(nr, ret)                                                      \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                 \
		BPF_STMT(BPF_RET | BPF_K, (ret))

static int filter(int trap)
{
	struct sock_filter kill[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		ON(SYS_memfd_create, SECCOMP_RET_KILL_PROCESS),
		ON(SYS_mmap, SECCOMP_RET_KILL_PROCESS),
		ON(SYS_mprotect, SECCOMP_RET_KILL_PROCESS),
		ON(SYS_openat, SECCOMP_RET_KILL_PROCESS),
		ON(SYS_rt_sigaction, SECCOMP_RET_KILL_PROCESS),
		ALLOW,
	};
	struct sock_filter traps[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		ON(SYS_gettid, SECCOMP_RET_TRAP),
		ON(SYS_getuid, SECCOMP_RET_TRAP),
		ON(SYS_getgid, SECCOMP_RET_TRAP),
		ON(SYS_prctl, SECCOMP_RET_TRAP),
		ON(SYS_rt_sigprocmask, SECCOMP_RET_TRAP),
		ON(SYS_sigaltstack, SECCOMP_RET_TRAP),
		ALLOW,
	};
	struct sock_fprog prog = {
		.len = trap ? sizeof(traps) / sizeof(traps[0]) :
			      sizeof(kill) / sizeof(kill[0]),
		.filter = trap ? traps : kill,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

static pthread_barrier_t all_up, all_done;

static void *thread_many(void *arg)
{
	long bad;

	if (arg)
		pthread_barrier_wait(&all_up);
	bad = ticks();
	pthread_barrier_wait(&all_done);
	return (void *)bad;
}

/* T threads alive at once, each making the N calls (wait: after "ready"
 * and SIGUSR1, with every thread made before) */
static long threads(long t, int wait)
{
	pthread_t *tid = calloc((size_t)t, sizeof(*tid));
	pthread_attr_t attr;
	sigset_t usr1;
	long bad = 0, i, made;
	void *res;

	if (t < 1 || !tid || pthread_attr_init(&attr) ||
	    pthread_attr_setstacksize(&attr, 64 * 1024) ||
	    pthread_barrier_init(&all_up, NULL, (unsigned)t + 1) ||
	    pthread_barrier_init(&all_done, NULL, (unsigned)t))
		return 1;
	/* SIGUSR1 for the main thread alone: the threads start with it
	 * blocked */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	for (made = 0; made < t; made++)
		if (pthread_create(&tid[made], &attr, thread_many,
				   wait ? &all_up : NULL))
			break;
	if (made < t) {
		fprintf(stderr, "ubt-sacred: %ld threads made of %ld\n", made,
			t);
		exit(3);
	}
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	if (wait) {
		target_wait_usr1();
		pthread_barrier_wait(&all_up);
	}
	for (i = 0; i < t; i++) {
		bad |= pthread_join(tid[i], &res) != 0;
		bad |= (long)res;
	}
	free(tid);
	if (wait && !bad) {
		/* the code can be read back after the detach */
		*target_usr1() = 0;
		pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
		printf("done %ld\n", t * n_calls);
		target_wait_usr1();
	}
	return bad;
}

/* A ring of its own kind: SQPOLL (a polling thread), or one whose read of
 * pipe fd rd (IOSQE_ASYNC) waits in an io-wq worker; its fd, or -1. */
static int uring(int sqpoll, int rd, char *buf)
{
	struct io_uring_params p;
	struct io_uring_sqe *sqe;
	unsigned *tail, *array;
	char *sq;
	int fd;

	memset(&p, 0, sizeof(p));
	if (sqpoll) {
		p.flags = IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 60000;
	}
	fd = (int)syscall(SYS_io_uring_setup, 4, &p);
	if (fd < 0 || sqpoll)
		return fd;
	sq = mmap(NULL, p.sq_off.array + p.sq_entries * sizeof(unsigned),
		  PROT_READ | PROT_WRITE, MAP_SHARED, fd, IORING_OFF_SQ_RING);
	sqe = mmap(NULL, p.sq_entries * sizeof(*sqe), PROT_READ | PROT_WRITE,
		   MAP_SHARED, fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || sqe == MAP_FAILED)
		return -1;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ;
	sqe->flags = IOSQE_ASYNC;
	sqe->fd = rd;
	sqe->addr = (uint64_t)(uintptr_t)buf;
	sqe->len = 1;
	sqe->user_data = 1;
	tail = (unsigned *)(sq + p.sq_off.tail);
	array = (unsigned *)(sq + p.sq_off.array);
	array[*tail & *(unsigned *)(sq + p.sq_off.ring_mask)] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(SYS_io_uring_enter, fd, 1, 0, 0, NULL, 0) != 1)
		return -1;
	return fd;
}

/* Threads of this process whose names start with prefix. */
static int threads_named(const char *prefix)
{
	char path[300], name[32];
	struct dirent *e;
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	while (d && (e = readdir(d))) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) &&
		    !strncmp(name, prefix, strlen(prefix)))
			n++;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* the uring-wait mode */
static long uring_calls(void)
{
	static char buf[1];
	int pfd[2], a, b, k;
	sigset_t usr1;
	long bad = 0;

	if (pipe(pfd))
		return 1;
	a = uring(1, -1, buf);
	b = uring(0, pfd[0], buf);
	if (a < 0 || b < 0) {
		fprintf(stderr, "ubt-sacred: no io_uring\n");
		return 1;
	}
	/* the worker is made when the read is queued: wait for it */
	for (k = 0; k < 500 && (threads_named("iou-wrk") < 1 ||
				threads_named("iou-sqp") < 1); k++)
		usleep(10000);
	if (k == 500) {
		fprintf(stderr, "ubt-sacred: no io_uring workers\n");
		return 1;
	}
	target_wait_usr1();
	for (long i = 0; i < n_calls; i++)
		bad |= ubt_sacred_tick(i) != i + 1;
	*target_usr1() = 0;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	if (!bad)
		printf("done %ld\n", n_calls);
	target_wait_usr1();
	/* the worker's read completes */
	bad |= write(pfd[1], "x", 1) != 1;
	close(a);
	close(b);
	return bad;
}

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

/* ready, then SIGUSR1, under seccomp MODE (kill, trap, strict) */
static long seccomp(const char *mode)
{
	struct sigaction sa;
	sigset_t block, old;
	int strict = !strcmp(mode, "strict");

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	if (!strict)
		sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGUSR1, &sa, NULL);
	alarm(30);
	fflush(stdout);
	if (strict ? prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) :
		     filter(!strcmp(mode, "trap")))
		return 1;
	syscall(SYS_write, 1, "ready\n", 6);
	if (strict) {
		while (!go)
			__asm__ volatile("pause");
	} else {
		while (!go)
			sigsuspend(&old);
	}
	if (!strict)
		return ticks();
	if (ticks()) {
		syscall(SYS_write, 2, "ubt-sacred: wrong result\n", 25);
		syscall(SYS_exit, 1);
	}
	syscall(SYS_exit, 0);
	return 1;
}

/*
 * storm N K: the N calls, 20 ms, then an exec of this program with
 * "storm N K-1" (the same process, a new image), until K is 0: "done N"
 */
static long storm(int argc, char **argv)
{
	long k = target_count(argc, argv, 3, 0);
	char kb[32];

	if (argc < 3 || ticks())
		return 1;
	if (!k) {
		printf("done %ld\n", n_calls);
		return 0;
	}
	usleep(20000);
	snprintf(kb, sizeof(kb), "%ld", k - 1);
	execl("/proc/self/exe", argv[0], "storm", argv[2], kb, (char *)NULL);
	return 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long bad = 0;

	n_calls = target_count(argc, argv, 2, 100);
	if (!strcmp(mode, "insn")) {
		for (long i = 0; i < n_calls; i++)
			bad |= ubt_sacred_insn(i) != 3 * i + 7;
	} else if (!strcmp(mode, "lock") || !strcmp(mode, "lock-wait")) {
		if (!strcmp(mode, "lock-wait"))
			target_wait_usr1();
		for (long i = 0; i < n_calls; i++)
			bad |= ubt_sacred_lock(i) != i + 1;
		bad |= lock_hits != n_calls;
		if (!strcmp(mode, "lock-wait") && !bad)
			printf("done %ld\n", lock_hits);
	} else if (!strcmp(mode, "tsc") || !strcmp(mode, "tsc-wait")) {
		bad = tsc(!strcmp(mode, "tsc-wait"));
	} else if (!strcmp(mode, "threads") ||
		   !strcmp(mode, "threads-wait")) {
		bad = threads(target_count(argc, argv, 3, 1500),
			      !strcmp(mode, "threads-wait"));
	} else if (!strcmp(mode, "uring-wait")) {
		bad = uring_calls();
	} else if (!strcmp(mode, "ppid") || !strcmp(mode, "ppid-wait")) {
		if (!strcmp(mode, "ppid-wait"))
			target_wait_usr1();
		for (long i = 0; i < n_calls; i++) {
			bad |= ubt_sacred_tick(i) != i + 1;
			syscall(SYS_getppid);
		}
		if (!bad && !strcmp(mode, "ppid-wait")) {
			/* the code can be read back after the detach */
			sigset_t usr1;

			*target_usr1() = 0;
			sigemptyset(&usr1);
			sigaddset(&usr1, SIGUSR1);
			pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
			printf("done %ld\n", n_calls);
			target_wait_usr1();
		} else if (!bad) {
			printf("done %ld\n", n_calls);
		}
	} else if (!strncmp(mode, "seccomp-", 8)) {
		bad = seccomp(mode + 8);
	} else if (!strcmp(mode, "storm")) {
		bad = storm(argc, argv);
	} else {
		return 2;
	}
	return target_result("ubt-sacred", bad);
}
