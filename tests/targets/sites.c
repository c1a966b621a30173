/*
 * ubt-sites [N [wait]]: functions of which some can be patched for user
 * mode and some cannot, each called a different number of times, so that
 * a wildcard probe over them has sites in both domains and counts that
 * print in one order. Per round i (1..N, default 3):
 *
 *	ubt_site_one(i)		once; returns i + 1 (C, a frame)
 *	ubt_site_two(i)		twice; returns 2 * i + 1 (C, a frame)
 *	ubt_site_tiny(i)	three times; 4 bytes long in all, no
 *				padding after it, never patched; returns
 *				i + 1
 *	ubt_site_spin(i)	four times; its entry is a loop (a branch
 *				targets offset 2), never patched; returns i
 *	ubt_site_five(i)	five times; returns 3 * i (C, a frame)
 *
 * and ubt_nops(i) once (not ubt_site_*): eight one-byte nops, then
 * returns i + 1; patches at +0 and +2 would overlap, at +0 and +4 not.
 *
 * The exit status is non-zero if any result is wrong. With "wait", first
 * prints "ready" and waits (up to 30 s) for SIGUSR1, for -p.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "target.h"

int ubt_site_tiny(int x);
int ubt_site_spin(int n);
int ubt_nops(int x);

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl ubt_site_tiny\n"
	"	.type ubt_site_tiny, @function\n"
	"ubt_site_tiny:\n"
	"	leal 1(%rdi), %eax\n"		/* 3 bytes */
	"	ret\n"				/* 1 byte */
	"	.size ubt_site_tiny, .-ubt_site_tiny\n"

	/* no padding between: ubt_site_tiny has none to lend */
	"	.globl ubt_site_spin\n"
	"	.type ubt_site_spin, @function\n"
	"ubt_site_spin:\n"
	"	xorl %eax, %eax\n"		/* 2 bytes */
	"1:	incl %eax\n"			/* offset 2: branch target */
	"	decl %edi\n"
	"	jnz 1b\n"
	"	ret\n"
	"	.size ubt_site_spin, .-ubt_site_spin\n"

	"	.p2align 4\n"
	"	.globl ubt_nops\n"
	"	.type ubt_nops, @function\n"
	"ubt_nops:\n"
	"	nop\n	nop\n	nop\n	nop\n	nop\n	nop\n	nop\n	nop\n"
	"	leal 1(%rdi), %eax\n"
	"	ret\n"
	"	.size ubt_nops, .-ubt_nops\n");

UBT_PROBE int ubt_site_one(int x)
{
	UBT_FRAME();
	return x + 1;
}

UBT_PROBE int ubt_site_two(int x)
{
	UBT_FRAME();
	return 2 * x + 1;
}

UBT_PROBE int ubt_site_five(int x)
{
	UBT_FRAME();
	return 3 * x;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 3);
	int bad = 0;

	if (argc > 2) {
		if (strcmp(argv[2], "wait") != 0)
			return 2;
		target_wait_usr1();
	}
	for (int i = 1; i <= n; i++) {
		bad |= ubt_site_one(i) != i + 1;
		for (int k = 0; k < 2; k++)
			bad |= ubt_site_two(i) != 2 * i + 1;
		for (int k = 0; k < 3; k++)
			bad |= ubt_site_tiny(i) != i + 1;
		for (int k = 0; k < 4; k++)
			bad |= ubt_site_spin(i) != i;
		for (int k = 0; k < 5; k++)
			bad |= ubt_site_five(i) != 3 * i;
		bad |= ubt_nops(i) != i + 1;
	}
	return target_result("ubt-sites", bad);
}
