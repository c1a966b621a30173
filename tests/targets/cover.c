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
 *	cov_ireg(f, x)	mov %rdi,%rax; mov %rsi,%rdi; call *%rax: an
 *			indirect call ending the window after the entry
 *			instruction; returns f(x) + 1
 *	cov_irsp(f, x)	push %rdi; mov %rsi,%rdi; call *(%rsp): the same
 *			through the stack (reads %rsp); returns f(x) + 1
 *	cov_irip(x)	mov %rdi,%rax; call *icall_ptr(%rip): through a
 *			RIP-relative pointer to icall_dbl; returns 2x + 1
 *	icall_short(x)	lea icall_dbl(%rip),%rax; call *%rax: the call
 *			right after the entry instruction would return
 *			inside the window: stays in the kernel; returns
 *			2x + 1
 *	icall_dbl(x)	returns 2x (the callee; not a cov_ function)
 *	usdt_icall(f, x) mov %rdi,%rax; the USDT site ubt_cover:icall(x)
 *			(a nop); mov %rsi,%rdi; call *%rax: an indirect
 *			call ends the window after the site; returns
 *			f(x) + 1
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
long cov_ireg(long (*f)(long), long x);
long cov_irsp(long (*f)(long), long x);
long cov_irip(long x);
long icall_short(long x);
long icall_dbl(long x);
long usdt_icall(long (*f)(long), long x);

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
	"	.globl icall_dbl\n"
	"	.type icall_dbl, @function\n"
	"icall_dbl:\n"
	"	leaq (%rdi,%rdi), %rax\n"
	"	ret\n"
	"	.size icall_dbl, .-icall_dbl\n"

	"	.p2align 4\n"
	"	.globl cov_ireg\n"
	"	.type cov_ireg, @function\n"
	"cov_ireg:\n"
	"	movq %rdi, %rax\n"
	"	movq %rsi, %rdi\n"
	"	call *%rax\n"
	"	addq $1, %rax\n"
	"	ret\n"
	"	.size cov_ireg, .-cov_ireg\n"

	"	.p2align 4\n"
	"	.globl cov_irsp\n"
	"	.type cov_irsp, @function\n"
	"cov_irsp:\n"
	"	pushq %rdi\n"
	"	movq %rsi, %rdi\n"
	"	call *(%rsp)\n"
	"	addq $8, %rsp\n"
	"	addq $1, %rax\n"
	"	ret\n"
	"	.size cov_irsp, .-cov_irsp\n"

	"	.p2align 4\n"
	"	.globl cov_irip\n"
	"	.type cov_irip, @function\n"
	"cov_irip:\n"
	"	movq %rdi, %rax\n"
	"	call *icall_ptr(%rip)\n"
	"	addq $1, %rax\n"
	"	ret\n"
	"	.size cov_irip, .-cov_irip\n"

	"	.p2align 4\n"
	"	.globl icall_short\n"
	"	.type icall_short, @function\n"
	"icall_short:\n"
	"	leaq icall_dbl(%rip), %rax\n"
	"	call *%rax\n"
	"	addq $1, %rax\n"
	"	ret\n"
	"	.size icall_short, .-icall_short\n"

	"	.p2align 4\n"
	"	.globl usdt_icall\n"
	"	.type usdt_icall, @function\n"
	"usdt_icall:\n"
	"	movq %rdi, %rax\n"
	"990:	nop\n"
	"	movq %rsi, %rdi\n"
	"	call *%rax\n"
	"	addq $1, %rax\n"
	"	ret\n"
	"	.size usdt_icall, .-usdt_icall\n"
	/* its stapsdt note, as <sys/sdt.h> writes one */
	"	.pushsection .note.stapsdt, \"\", \"note\"\n"
	"	.balign 4\n"
	"	.4byte 992f-991f, 994f-993f, 3\n"
	"991:	.asciz \"stapsdt\"\n"
	"992:	.balign 4\n"
	"993:	.8byte 990b, _.stapsdt.base, 0\n"
	"	.asciz \"ubt_cover\"\n"
	"	.asciz \"icall\"\n"
	"	.asciz \"8@%rsi\"\n"
	"994:	.balign 4\n"
	"	.popsection\n"
	"	.ifndef _.stapsdt.base\n"
	"	.pushsection .stapsdt.base, \"aG\", \"progbits\", "
	".stapsdt.base, comdat\n"
	"	.weak _.stapsdt.base\n"
	"	.hidden _.stapsdt.base\n"
	"_.stapsdt.base:\n"
	"	.space 1\n"
	"	.size _.stapsdt.base, 1\n"
	"	.popsection\n"
	"	.endif\n"

	"	.p2align 4\n"
	"	.type cover_end, @function\n"
	"cover_end:\n"
	"	ret\n"
	"	.size cover_end, .-cover_end\n"
	"	.section .data.rel.ro, \"aw\"\n"
	"	.p2align 3\n"
	"icall_ptr:\n"
	"	.quad icall_dbl\n"
	"	.text\n");

static int calls(long n)
{
	int bad = 0;

	for (long i = 0; i < n; i++) {
		long v[2] = { i, 7 * i };

		bad |= cov_tiny(i) != 3 * i + 1;
		bad |= cov_zero(i) != 0;
		bad |= cov_rdx(v) != 7 * i + 1;
		bad |= cov_jshort(i) != i + 5;
		bad |= cov_ireg(icall_dbl, i) != 2 * i + 1;
		bad |= cov_irsp(icall_dbl, i) != 2 * i + 1;
		bad |= cov_irip(i) != 2 * i + 1;
		bad |= icall_short(i) != 2 * i + 1;
		bad |= usdt_icall(icall_dbl, i) != 2 * i + 1;
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
