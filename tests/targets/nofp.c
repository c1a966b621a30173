/*
 * ubt-nofp [N]: calls ubt_nofp_leaf(i) (returns i + 1) for i in 1..N
 * (default 3) with %rbp holding what a frame pointer is not, as code
 * built without frame pointers may leave it, in this order for each i:
 *	1. on a stack of its own (swapcontext), %rbp pointing into the
 *	   PROT_NONE page above that stack: reading the "frame" faults;
 *	2. %rbp = 0;
 *	3. %rbp not aligned, above the stack pointer;
 *	4. %rbp at a "frame" that points at itself (a loop);
 * 4 * N calls in all, then exits 0. A stack walk must stop at each (a
 * tracer's ustack shows ubt_nofp_leaf and its return address in
 * nofp_call, and nothing of the bogus frames) without faulting.
 * Built with -fomit-frame-pointer -mno-red-zone (nofp_call pushes).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "target.h"

UBT_PROBE long ubt_nofp_leaf(long x)
{
	UBT_FRAME();
	return x + 1;
}

/* Call fn(x) with %rbp = bp (kept 16-byte aligned at the call). */
__attribute__((noinline)) static long nofp_call(long (*fn)(long), long x,
						uintptr_t bp)
{
	long r;

	__asm__ volatile("push %%rbp\n\t"
			 "sub $8, %%rsp\n\t"
			 "mov %[bp], %%rbp\n\t"
			 "call *%[fn]\n\t"
			 "add $8, %%rsp\n\t"
			 "pop %%rbp"
			 : "=a"(r), "+D"(x)
			 : [fn] "r"(fn), [bp] "r"(bp)
			 : "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11",
			   "memory", "cc");
	return r;
}

static long nofp_n, nofp_bad;
static uintptr_t nofp_guard;
static ucontext_t nofp_main_uc, nofp_uc;

static void nofp_on_stack(void)
{
	for (long i = 1; i <= nofp_n; i++)
		nofp_bad |= nofp_call(ubt_nofp_leaf, i, nofp_guard + 64) !=
			    i + 1;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 3);
	long page = sysconf(_SC_PAGESIZE);
	char *st = mmap(NULL, 16 * page, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t loop[2];

	if (st == MAP_FAILED || mprotect(st + 15 * page, page, PROT_NONE))
		return target_result("ubt-nofp", 1);
	/* 1: the page above the stack is PROT_NONE */
	nofp_n = n;
	nofp_guard = (uintptr_t)(st + 15 * page);
	getcontext(&nofp_uc);
	nofp_uc.uc_stack.ss_sp = st;
	nofp_uc.uc_stack.ss_size = 15 * page;
	nofp_uc.uc_link = &nofp_main_uc;
	makecontext(&nofp_uc, nofp_on_stack, 0);
	if (swapcontext(&nofp_main_uc, &nofp_uc))
		return target_result("ubt-nofp", 1);
	for (long i = 1; i <= n; i++) {
		/* 2, 3, 4 */
		nofp_bad |= nofp_call(ubt_nofp_leaf, i, 0) != i + 1;
		nofp_bad |= nofp_call(ubt_nofp_leaf, i,
				      (uintptr_t)&loop + 3) != i + 1;
		loop[0] = (uintptr_t)&loop;
		loop[1] = 0x1234;
		nofp_bad |= nofp_call(ubt_nofp_leaf, i,
				      (uintptr_t)&loop) != i + 1;
	}
	return target_result("ubt-nofp", nofp_bad);
}
