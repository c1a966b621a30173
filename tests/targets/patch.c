/*
 * ubt-patch [N]: functions whose first instructions are the hard cases for
 * patching a jump over a function entry, written in assembly so that no
 * compiler changes them. Each is called N rounds (default 3) and its
 * result checked; the exit status is non-zero if any result is wrong, so
 * a broken patch shows up as a failing target.
 *
 *	ubt_patch_loop(n)	entry is a loop: offset 2 is a branch target
 *				(inside the first 5 bytes); returns n (n >= 1)
 *	ubt_patch_endbr(a, b)	starts with endbr64; returns a + b
 *	ubt_patch_riprel(x)	first instruction reads %rip-relative data;
 *				adds x to a counter and returns the new value
 *	ubt_patch_short(x)	4 bytes long in all; returns x + 1
 *	ubt_patch_plain(x)	an ordinary push %rbp prologue; returns 2 * x
 */
#include "target.h"

int ubt_patch_loop(int n);
int ubt_patch_endbr(int a, int b);
long ubt_patch_riprel(long x);
int ubt_patch_short(int x);
long ubt_patch_plain(long x);

long ubt_patch_counter;

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl ubt_patch_loop\n"
	"	.type ubt_patch_loop, @function\n"
	"ubt_patch_loop:\n"
	"	xorl %eax, %eax\n"		/* 2 bytes */
	"1:	incl %eax\n"			/* offset 2: branch target */
	"	decl %edi\n"
	"	jnz 1b\n"
	"	ret\n"
	"	.size ubt_patch_loop, .-ubt_patch_loop\n"

	"	.p2align 4\n"
	"	.globl ubt_patch_endbr\n"
	"	.type ubt_patch_endbr, @function\n"
	"ubt_patch_endbr:\n"
	"	endbr64\n"
	"	pushq %rbp\n"
	"	movq %rsp, %rbp\n"
	"	leal (%rdi,%rsi), %eax\n"
	"	popq %rbp\n"
	"	ret\n"
	"	.size ubt_patch_endbr, .-ubt_patch_endbr\n"

	"	.p2align 4\n"
	"	.globl ubt_patch_riprel\n"
	"	.type ubt_patch_riprel, @function\n"
	"ubt_patch_riprel:\n"
	"	movq ubt_patch_counter(%rip), %rax\n"
	"	addq %rdi, %rax\n"
	"	movq %rax, ubt_patch_counter(%rip)\n"
	"	ret\n"
	"	.size ubt_patch_riprel, .-ubt_patch_riprel\n"

	"	.p2align 4\n"
	"	.globl ubt_patch_short\n"
	"	.type ubt_patch_short, @function\n"
	"ubt_patch_short:\n"
	"	leal 1(%rdi), %eax\n"		/* 3 bytes */
	"	ret\n"				/* 1 byte */
	"	.size ubt_patch_short, .-ubt_patch_short\n"

	"	.p2align 4\n"
	"	.globl ubt_patch_plain\n"
	"	.type ubt_patch_plain, @function\n"
	"ubt_patch_plain:\n"
	"	pushq %rbp\n"
	"	movq %rsp, %rbp\n"
	"	leaq (%rdi,%rdi), %rax\n"
	"	popq %rbp\n"
	"	ret\n"
	"	.size ubt_patch_plain, .-ubt_patch_plain\n");

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 3);
	long sum = 0;
	int bad = 0;

	for (int i = 1; i <= n; i++) {
		sum += i;
		bad |= ubt_patch_loop(i) != i;
		bad |= ubt_patch_endbr(i, 2 * i) != 3 * i;
		bad |= ubt_patch_riprel(i) != sum;
		bad |= ubt_patch_short(i) != i + 1;
		bad |= ubt_patch_plain(i) != 2 * i;
	}
	return target_result("ubt-patch", bad);
}
