/*
 * ubt-vfork ROUNDS [wait|vfork]: children that run in the parent's
 * memory with the parent's thread pointer (issue 24, item 4).  Each
 * round:
 *	ubt_vf_tick(i) 3 times in the parent;
 *	clone(CLONE_VM | CLONE_VFORK | SIGCHLD) on a stack of its own: the
 *	child calls ubt_vf_tick(i) 5 times and exits; "clone PID";
 *	with vfork: vfork(), the child likewise, on the parent's stack;
 *	"vfork PID";
 *	posix_spawn() of /bin/true with two dup2 file actions (glibc runs
 *	them in its CLONE_VM child: two dup2() calls there); "spawn PID".
 * ubt_vf_tick(i) returns 2i + 1.  First "pid PID"; with wait, "ready"
 * and a wait for SIGUSR1 first, "done" and a wait for SIGUSR1 after.
 * ubt-vfork N vm: clone(CLONE_VM | SIGCHLD) without CLONE_VFORK, a child
 * that runs beside its parent in its memory with its thread pointer
 * ("vm PID"); "ready", a wait for SIGUSR1, then both call ubt_vf_tick N
 * times, the parent reaps the child ("vmdone PID"), prints "done" and
 * waits for SIGUSR1 again.
 * ubt-vfork N vmlate|vmraw: "ready", a wait for SIGUSR1, then the child
 * is made (with ubt attached): by libc's clone(CLONE_VM | SIGCHLD)
 * (vmlate) or by the clone system call itself, outside libc (vmraw);
 * then as vm.
 * ubt-vfork N vmtaken: ubt_vf_tick N times first, "ticked", a wait for
 * SIGUSR1, the child made by the system call ("vm PID"), a wait for
 * SIGUSR1 again before the child runs its calls, then as vm.
 * ubt-vfork N vmhand: as vmtaken, but "ready" and a wait for SIGUSR1
 * first, then the N calls (with ubt attached), "ticked", the child.
 * ubt-vfork N vmhandc: for -c, no signals: the N calls, "ticked", the
 * child, then a wait (up to 60 s) until ubt_vf_tick's first byte is an
 * int3 (a kernel uprobe's: the probes were handed over to the kernel),
 * then both call ubt_vf_tick N times as in vm; "no int3" and exit 1 when
 * none came.
 * ubt-vfork N vmsync: "ready", a wait for SIGUSR1, the N calls,
 * "ticked", then libc's clone(CLONE_VM | SIGCHLD) ("vm PID") of a child
 * that looks at ubt_vf_tick's first byte, calls it N times, then writes
 * to a pipe, while the parent calls it N times too; the parent reads the
 * pipe, reaps the child ("vmdone PID"), prints "done" and waits for
 * SIGUSR1 again.  The child exits 5 when the byte it saw first was not
 * an int3 (a kernel uprobe's): it ran before the probes were in the
 * kernel.  vmsyncc: the same for -c, without the signals.
 * Exits 0, or 1 after a wrong result or a child that failed.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "target.h"

extern char **environ;

UBT_PROBE long ubt_vf_tick(long i)
{
	UBT_FRAME();
	return 2 * i + 1;
}

static long ticks(long n)
{
	long bad = 0;

	for (long i = 0; i < n; i++)
		bad |= ubt_vf_tick(i) != 2 * i + 1;
	return bad;
}

static int child(void *arg)
{
	(void)arg;
	_exit(ticks(5) ? 3 : 0);
}

/* wait for pid, print "WHAT PID": 0, or 1 when it did not exit 0 */
static long reap(const char *what, pid_t pid)
{
	int st;

	if (pid <= 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	printf("%s %d\n", what, (int)pid);
	return !WIFEXITED(st) || WEXITSTATUS(st);
}

static long round_(int with_vfork)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	posix_spawn_file_actions_t fa;
	char *argv[] = { "true", NULL };
	long bad = ticks(3);
	pid_t pid;

	pid = clone(child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK |
		    SIGCHLD, NULL);
	bad |= reap("clone", pid);
	if (with_vfork) {
		pid = vfork();
		if (!pid)
			_exit(ticks(5) ? 3 : 0);
		bad |= reap("vfork", pid);
	}
	if (posix_spawn_file_actions_init(&fa) ||
	    posix_spawn_file_actions_adddup2(&fa, 1, 20) ||
	    posix_spawn_file_actions_adddup2(&fa, 2, 21) ||
	    posix_spawn(&pid, "/bin/true", &fa, NULL, argv, environ))
		return 1;
	posix_spawn_file_actions_destroy(&fa);
	bad |= reap("spawn", pid);
	return bad;
}

static int vm_fd[2];
static long vm_n;

static int vm_child(void *arg)
{
	char c;

	(void)arg;
	if (read(vm_fd[0], &c, 1) != 1)
		_exit(4);
	_exit(ticks(vm_n) ? 3 : 0);
}

/*
 * clone(CLONE_VM | SIGCHLD) as a system call of its own: the child starts
 * on top (16-byte aligned), calls fn(NULL) and exits with its result.
 */
static long raw_clone_vm(char *top, int (*fn)(void *))
{
	register long r10 __asm__("r10") = 0;
	register long r8 __asm__("r8") = 0;
	register int (*r12)(void *) __asm__("r12") = fn;
	long ret = SYS_clone;

	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "xor %%ebp, %%ebp\n\t"
			 "xor %%edi, %%edi\n\t"
			 "call *%%r12\n\t"
			 "mov %%eax, %%edi\n\t"
			 "mov $60, %%eax\n\t"
			 "syscall\n\t"
			 "1:"
			 : "+a"(ret)
			 : "D"((long)(CLONE_VM | SIGCHLD)), "S"(top), "d"(0L),
			   "r"(r10), "r"(r8), "r"(r12)
			 : "rcx", "r11", "memory");
	return ret;
}

/* the next wait for SIGUSR1 (target_wait_usr1() leaves it blocked) */
static void vm_rearm(void)
{
	sigset_t usr1;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	*target_usr1() = 0;
	sigprocmask(SIG_UNBLOCK, &usr1, NULL);
}

/* until ubt_vf_tick starts with an int3, at most 60 s: 0, else 1 */
static int vm_wait_int3(void)
{
	const volatile unsigned char *code =
		(const volatile unsigned char *)(uintptr_t)ubt_vf_tick;

	for (int i = 0; i < 60000; i++) {
		if (*code == 0xcc)
			return 0;
		usleep(1000);
	}
	printf("no int3\n");
	return 1;
}

/* vmsync's child: the first byte it finds, its calls, the pipe */
static int vm_sync_child(void *arg)
{
	const volatile unsigned char *code =
		(const volatile unsigned char *)(uintptr_t)ubt_vf_tick;
	int int3 = *code == 0xcc;
	long bad = ticks(vm_n);

	(void)arg;
	if (write(vm_fd[1], "x", 1) != 1)
		_exit(4);
	_exit(bad ? 3 : int3 ? 0 : 5);
}

/* ubt-vfork N vmsync (-p: signals) | vmsyncc (-c) */
static int vm_sync_main(long n, int signals)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	long bad = 0;
	sigset_t usr1;
	pid_t pid;
	char c;

	vm_n = n;
	if (pipe(vm_fd))
		return 1;
	if (signals)
		target_wait_usr1();
	bad |= ticks(n);
	printf("ticked\n");
	fflush(stdout);
	pid = clone(vm_sync_child, stack + sizeof(stack), CLONE_VM | SIGCHLD,
		    NULL);
	if (pid <= 0)
		return 1;
	bad |= ticks(n);
	bad |= read(vm_fd[0], &c, 1) != 1;
	printf("vm %d\n", (int)pid);
	bad |= reap("vmdone", pid);
	printf("done\n");
	fflush(stdout);
	if (signals) {
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		*target_usr1() = 0;
		sigprocmask(SIG_UNBLOCK, &usr1, NULL);
		target_wait_usr1();
	}
	return target_result("ubt-vfork", bad);
}

/*
 * ubt-vfork N vm|vmlate|vmraw|vmtaken (taken 1)|vmhand (taken 2)|vmhandc
 * (taken 3)
 */
static int vm_main(long n, int late, int raw, int taken)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	long bad = 0;
	sigset_t usr1;
	pid_t pid;

	vm_n = n;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (pipe(vm_fd))
		return 1;
	if (taken == 1) {
		bad |= ticks(n);
		printf("ticked\n");
		fflush(stdout);
	}
	if (late)
		target_wait_usr1();
	if (taken >= 2) {
		bad |= ticks(n);
		printf("ticked\n");
		fflush(stdout);
	}
	if (raw)
		pid = (pid_t)raw_clone_vm(stack + sizeof(stack), vm_child);
	else
		pid = clone(vm_child, stack + sizeof(stack),
			    CLONE_VM | SIGCHLD, NULL);
	if (pid <= 0)
		return 1;
	printf("vm %d\n", (int)pid);
	fflush(stdout);
	if (!late && taken != 3)
		target_wait_usr1();
	if (taken == 3)
		bad |= vm_wait_int3();
	else if (taken) {
		vm_rearm();
		target_wait_usr1();
	}
	bad |= write(vm_fd[1], "x", 1) != 1;
	bad |= ticks(n);
	bad |= reap("vmdone", pid);
	printf("done\n");
	fflush(stdout);
	if (taken == 3)
		return target_result("ubt-vfork", bad);
	*target_usr1() = 0;
	sigprocmask(SIG_UNBLOCK, &usr1, NULL);
	target_wait_usr1();
	return target_result("ubt-vfork", bad);
}

int main(int argc, char **argv)
{
	long rounds = target_count(argc, argv, 1, 20), bad = 0;
	int wait = argc > 2 && !strcmp(argv[2], "wait");
	int with_vfork = argc > 2 && !strcmp(argv[2], "vfork");

	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	if (argc > 2 && !strcmp(argv[2], "vm"))
		return vm_main(rounds, 0, 0, 0);
	if (argc > 2 && !strcmp(argv[2], "vmlate"))
		return vm_main(rounds, 1, 0, 0);
	if (argc > 2 && !strcmp(argv[2], "vmraw"))
		return vm_main(rounds, 1, 1, 0);
	if (argc > 2 && !strcmp(argv[2], "vmtaken"))
		return vm_main(rounds, 1, 1, 1);
	if (argc > 2 && !strcmp(argv[2], "vmhand"))
		return vm_main(rounds, 1, 1, 2);
	if (argc > 2 && !strcmp(argv[2], "vmhandc"))
		return vm_main(rounds, 0, 1, 3);
	if (argc > 2 && !strcmp(argv[2], "vmsync"))
		return vm_sync_main(rounds, 1);
	if (argc > 2 && !strcmp(argv[2], "vmsyncc"))
		return vm_sync_main(rounds, 0);
	if (wait)
		target_wait_usr1();
	for (long r = 0; r < rounds; r++)
		bad |= round_(with_vfork);
	if (wait) {
		printf("done\n");
		fflush(stdout);
		sigset_t usr1;

		/* the first wait left SIGUSR1 blocked */
		*target_usr1() = 0;
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_UNBLOCK, &usr1, NULL);
		target_wait_usr1();
	}
	return target_result("ubt-vfork", bad);
}
