/*
 * ubt-share: a long-lived target for the process-safety tests
 * (tests/user/share.py): it waits for commands on stdin, one per line, so
 * that tracers can come and go between batches of calls.
 *
 *	N		calls share_push(i) and share_riprel(i) for i in
 *			0..N-1, checks every result, prints "done N"
 *	fork N		a child makes the N calls of each and exits 0 (1 on a
 *			wrong result); prints "child STATUS" (the wait status)
 *	hold N		a child makes the N calls of each, prints "held PID",
 *			waits for SIGUSR1, makes them again and exits 0 (1 on a
 *			wrong result); its status counts at EOF
 *	exec N		execs itself with "--calls N": the new image makes the
 *			N calls of each, prints "exec done N", then reads
 *			commands on as before
 *	memfds N	maps N memfds of its own named "ubt-decoy" (8 MiB
 *			each, read-only) at low addresses, before any ubt's
 *			in the address order; prints "memfds N"
 *	memfd NAME	makes a memfd of its own named NAME and keeps its
 *			descriptor open, unmapped; prints "memfd FD"
 *	EOF		prints "exit S" and exits S: 0, or 1 if a result was
 *			ever wrong
 *
 *	share_push(x)	push %rbp first (gcc's frame); returns 2 * x + 1
 *	share_riprel(x)	a %rip-relative load first; adds x to share_total
 *			and returns 2 * x
 *	share_mid(x)	push %rbp; mov %rsp,%rbp; then at +4 a test (a site
 *			inside the function); returns 2 * x + 1
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target.h"

long share_total;
long share_riprel(long x);
long share_mid(long x);

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl share_riprel\n"
	"	.type share_riprel, @function\n"
	"share_riprel:\n"
	"	movq share_total(%rip), %rax\n"
	"	addq %rdi, %rax\n"
	"	movq %rax, share_total(%rip)\n"
	"	leaq (%rdi,%rdi), %rax\n"
	"	ret\n"
	"	.size share_riprel, .-share_riprel\n"

	"	.p2align 4\n"
	"	.globl share_mid\n"
	"	.type share_mid, @function\n"
	"share_mid:\n"
	"	pushq %rbp\n"
	"	movq %rsp, %rbp\n"
	"	testq %rdi, %rdi\n"		/* +4 */
	"	leaq 1(%rdi,%rdi), %rax\n"
	"	popq %rbp\n"
	"	ret\n"
	"	.size share_mid, .-share_mid\n");

UBT_PROBE long share_push(long x)
{
	UBT_FRAME();
	return 2 * x + 1;
}

static long (*volatile f_push)(long) = share_push;
static long (*volatile f_riprel)(long) = share_riprel;
static long (*volatile f_mid)(long) = share_mid;

static long calls(long n)
{
	long bad = 0, before = share_total;

	for (long i = 0; i < n; i++) {
		bad |= f_push(i) != 2 * i + 1;
		bad |= f_riprel(i) != 2 * i;
		bad |= f_mid(i) != 2 * i + 1;
	}
	bad |= share_total - before != n * (n - 1) / 2;
	return bad;
}

int main(int argc, char **argv)
{
	char line[64];
	long bad = 0, n;
	pid_t held = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "--calls")) {
		n = target_count(argc, argv, 2, 0);
		bad |= calls(n);
		printf("exec done %ld\n", n);
	}
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "hold %ld", &n) == 1) {
			sigset_t usr1;
			int sig;

			sigemptyset(&usr1);
			sigaddset(&usr1, SIGUSR1);
			sigprocmask(SIG_BLOCK, &usr1, NULL);
			held = fork();
			if (held == 0) {
				long b = calls(n);

				printf("held %d\n", (int)getpid());
				sigwait(&usr1, &sig);
				_exit(b | calls(n) ? 1 : 0);
			}
			sigprocmask(SIG_UNBLOCK, &usr1, NULL);
			bad |= held < 0;
		} else if (sscanf(line, "fork %ld", &n) == 1) {
			int st = 0;
			pid_t pid = fork();

			if (pid == 0)
				_exit(calls(n) ? 1 : 0);
			if (pid < 0 || waitpid(pid, &st, 0) != pid)
				bad = 1;
			printf("child %d\n", st);
		} else if (sscanf(line, "exec %ld", &n) == 1) {
			char arg[32];

			if (bad)
				break;
			snprintf(arg, sizeof(arg), "%ld", n);
			execl("/proc/self/exe", argv[0], "--calls", arg,
			      (char *)NULL);
			bad = 1;
		} else if (!strncmp(line, "memfd ", 6)) {
			line[strcspn(line, "\n")] = 0;
			printf("memfd %d\n", memfd_create(line + 6, 0));
		} else if (sscanf(line, "memfds %ld", &n) == 1) {
			for (long i = 0; i < n; i++) {
				size_t len = 8 << 20;
				void *at = (void *)(0x10000000UL + i * len);
				int fd = memfd_create("ubt-decoy", MFD_CLOEXEC);

				bad |= fd < 0 || ftruncate(fd, (off_t)len) ||
				       mmap(at, len, PROT_READ,
					    MAP_SHARED | MAP_FIXED_NOREPLACE,
					    fd, 0) != at;
				if (fd >= 0)
					close(fd);
			}
			printf("memfds %ld\n", n);
		} else if (sscanf(line, "%ld", &n) == 1) {
			bad |= calls(n);
			printf("done %ld\n", n);
		}
	}
	if (held > 0) {
		int st = 0;

		bad |= waitpid(held, &st, 0) != held || st != 0;
	}
	printf("exit %d\n", bad ? 1 : 0);
	return target_result("ubt-share", bad);
}
