/*
 * Probe code copied into a trampoline (shim/patch/tramp_inline.c): the copy runs
 * as the call would (each ret leaves to the end of the copy, short branches
 * reach as far as before), code that cannot move is refused, and the
 * argument registers the code reads are reported.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "tramp.h"
#include "tests/tap.h"

static uint8_t *page;

/*
 * long f(long rdi, long rsi): lea -8(%rsp),%rsp; the copy; lea 8(%rsp),%rsp;
 * ret, as a trampoline places it.  NULL when tramp_inline() refused.
 */
static long (*build(const uint8_t *code, size_t len, unsigned *reads,
		    int *ret))(long, long)
{
	static const uint8_t pre[] = { 0x48, 0x8d, 0x64, 0x24, 0xf8 };
	static const uint8_t post[] = { 0x48, 0x8d, 0x64, 0x24, 0x08, 0xc3 };
	int n;

	memset(page, 0xcc, 4096);
	memcpy(page, pre, sizeof(pre));
	n = tramp_inline(code, len, page + sizeof(pre), 1024, reads);
	*ret = n;
	if (n < 0)
		return NULL;
	memcpy(page + sizeof(pre) + n, post, sizeof(post));
	return (long (*)(long, long))(void *)page;
}

int main(void)
{
	/* rdi ? rdi + 5 : 7, two rets, a short jcc */
	static const uint8_t twoways[] = {
		0x48, 0x89, 0xf8,		/* mov %rdi,%rax */
		0x48, 0x85, 0xff,		/* test %rdi,%rdi */
		0x74, 0x05,			/* je +5 */
		0x48, 0x83, 0xc0, 0x05,		/* add $5,%rax */
		0xc3,				/* ret */
		0xb8, 0x07, 0x00, 0x00, 0x00,	/* mov $7,%eax */
		0xc3,				/* ret */
	};
	/* count up to rdi: a backward short jump */
	static const uint8_t loop[] = {
		0x31, 0xc0,			/* xor %eax,%eax */
		0x48, 0xff, 0xc0,		/* inc %rax */
		0x48, 0x39, 0xf8,		/* cmp %rdi,%rax */
		0x72, 0xf8,			/* jb -8 */
		0xc3,				/* ret */
	};
	/* rsi * 2 through the stack the copy may use, ending in a jmp */
	static const uint8_t stack[] = {
		0x56,				/* push %rsi */
		0x58,				/* pop %rax */
		0x48, 0x01, 0xc0,		/* add %rax,%rax */
		0xeb, 0x00,			/* jmp +0 */
		0xc3,				/* ret */
	};
	static const uint8_t nothing[] = {
		0x31, 0xc0,			/* xor %eax,%eax */
		0xc3,				/* ret */
	};
	static const uint8_t riprel[] = {
		0x48, 0x8d, 0x05, 0, 0, 0, 0,	/* lea 0(%rip),%rax */
		0xc3,
	};
	static const uint8_t call[] = {
		0xe8, 0, 0, 0, 0,		/* call +0 */
		0xc3,
	};
	static const uint8_t out[] = {
		0x74, 0x10,			/* je out of the code */
		0xc3,
	};
	static const uint8_t into[] = {
		0x74, 0x01,			/* je into the mov */
		0xb8, 0x07, 0x00, 0x00, 0x00,
		0xc3,
	};
	static const uint8_t falls[] = {
		0x31, 0xc0,			/* xor %eax,%eax: no ret */
	};
	static const uint8_t retimm[] = {
		0xc2, 0x08, 0x00,		/* ret $8 */
	};
	uint8_t big[TRAMP_INLINE_MAX + 1];
	long (*f)(long, long);
	unsigned reads;
	int n;

	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;

	f = build(twoways, sizeof(twoways), &reads, &n);
	ok(f && f(3, 0) == 8 && f(0, 0) == 7,
	   "two rets and a short jcc: the copy (%d bytes) runs as the call",
	   n);
	ok(reads == TRAMP_READS_RDI, "it reads %%rdi only (%u)", reads);
	ok(n == (int)sizeof(twoways) - 2 - 1 - 1 + 6 + 5,
	   "jcc rel8 became rel32, the first ret a jmp, the last one gone");
	f = build(loop, sizeof(loop), &reads, &n);
	ok(f && f(5, 0) == 5 && f(1, 0) == 1, "a backward short jump");
	f = build(stack, sizeof(stack), &reads, &n);
	ok(f && f(0, 21) == 42 &&
		   reads == (TRAMP_READS_RSI | TRAMP_USES_RSP),
	   "push/pop on the copy's stack, a jmp, reads %%rsi, uses %%rsp "
	   "(%u)", reads);
	f = build(nothing, sizeof(nothing), &reads, &n);
	ok(f && f(1, 2) == 0 && reads == 0 && n == 2,
	   "xor; ret: the copy is the xor alone, reads nothing");

	build(riprel, sizeof(riprel), &reads, &n);
	ok(n == -EINVAL, "a RIP-relative operand is refused (%d)", n);
	build(call, sizeof(call), &reads, &n);
	ok(n == -EINVAL, "a relative call is refused (%d)", n);
	build(out, sizeof(out), &reads, &n);
	ok(n == -EINVAL, "a branch out of the code is refused (%d)", n);
	build(into, sizeof(into), &reads, &n);
	ok(n == -EINVAL, "a branch into an instruction is refused (%d)", n);
	build(falls, sizeof(falls), &reads, &n);
	ok(n == -EINVAL, "code that falls off its end is refused (%d)", n);
	build(retimm, sizeof(retimm), &reads, &n);
	ok(n == -EINVAL, "ret $imm is refused (%d)", n);
	memset(big, 0x90, sizeof(big));
	big[sizeof(big) - 1] = 0xc3;
	build(big, sizeof(big), &reads, &n);
	ok(n == -EINVAL, "more than %d bytes is refused (%d)",
	   TRAMP_INLINE_MAX, n);
	n = tramp_inline(twoways, sizeof(twoways), page, 8, &reads);
	ok(n == -ENOSPC, "too little room: -ENOSPC (%d)", n);
	return tap_done();
}
