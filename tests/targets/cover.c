/*
 * ubt-cover: function entries user mode used to refuse (issue 26), built
 * byte for byte with inline asm, for tests/user/cover.py:
 *
 *	cov_tiny(x)	lea 1(%rdi,%rdi,2),%rax; ret, then alignment
 *			padding: too short for a jump after the entry
 *			instruction; returns 3 * x + 1
 *	cov_zero(x)	xor %eax,%eax; ret (an entry instruction that runs
 *			again in the trampoline); returns 0
 *	cov_rdx(p)	mov 8(%rdi),%rdx first (changes %rdx, which a probe
 *			reading arg0 does not read); returns p[1] + 1
 *	cov_jshort(x)	mov %rdi,%rax; jmp cov_back (a 2-byte jmp right
 *			after the entry instruction); returns x + 5
 *	cov_back(x)	add $5,%rax; ret: reached by that jmp only
 *
 * With a count N as argument: N calls of each, exit 0 (1 on a wrong
 * result).  Without: reads commands on stdin, one per line: N makes N
 * calls of each and prints "done N"; at EOF prints "exit S" and exits S.
 */
#include <stdio.h>
#include <stdlib.h>

long cov_tiny(long x);
long cov_zero(long x);
long cov_rdx(const long *p);
long cov_jshort(long x);

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl cov_tiny\n"
	"	.type cov_tiny, @function\n"
	"cov_tiny:\n"
	"	leaq 1(%rdi,%rdi,2), %rax\n"
	"	ret\n"
	"	.size cov_tiny, .-cov_tiny\n"

	"	.p2align 4\n"
	"	.globl cov_zero\n"
	"	.type cov_zero, @function\n"
	"cov_zero:\n"
	"	xorl %eax, %eax\n"
	"	ret\n"
	"	.size cov_zero, .-cov_zero\n"

	"	.p2align 4\n"
	"	.globl cov_rdx\n"
	"	.type cov_rdx, @function\n"
	"cov_rdx:\n"
	"	movq 8(%rdi), %rdx\n"
	"	leaq 1(%rdx), %rax\n"
	"	nop\n"
	"	ret\n"
	"	.size cov_rdx, .-cov_rdx\n"

	"	.p2align 4\n"
	"	.globl cov_back\n"
	"	.type cov_back, @function\n"
	"cov_back:\n"
	"	addq $5, %rax\n"
	"	ret\n"
	"	.size cov_back, .-cov_back\n"

	"	.p2align 4\n"
	"	.globl cov_jshort\n"
	"	.type cov_jshort, @function\n"
	"cov_jshort:\n"
	"	movq %rdi, %rax\n"
	"	jmp cov_back\n"
	"	.size cov_jshort, .-cov_jshort\n"
	"	.p2align 4\n"
	"	.type cover_end, @function\n"
	"cover_end:\n"
	"	ret\n"
	"	.size cover_end, .-cover_end\n");

static int calls(long n)
{
	int bad = 0;

	for (long i = 0; i < n; i++) {
		long v[2] = { i, 7 * i };

		bad |= cov_tiny(i) != 3 * i + 1;
		bad |= cov_zero(i) != 0;
		bad |= cov_rdx(v) != 7 * i + 1;
		bad |= cov_jshort(i) != i + 5;
	}
	return bad;
}

int main(int argc, char **argv)
{
	char line[64];
	int bad = 0;

	if (argc > 1)
		return calls(atol(argv[1])) ? 1 : 0;
	setvbuf(stdout, NULL, _IONBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		long n = atol(line);

		bad |= calls(n);
		printf("done %ld\n", n);
	}
	printf("exit %d\n", bad ? 1 : 0);
	return bad ? 1 : 0;
}
