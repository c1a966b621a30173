/*
 * The runtime's push of a shadow entry (rt_wrap_enter, runtime/rt_shadow.c;
 * libubt-rt.so loaded here with dlopen, as in a target): which entries it
 * drops as frames that are gone.  The test pushes with slots it chooses
 * (words in its own frames, on the stack or on an alternate signal stack)
 * and pops nothing, as a thread whose calls were left by siglongjmp();
 * the block's top and entries are read back.
 *
 * - an entry at or below the new slot on the same stack is dropped, one
 *   above is kept (a caller's);
 * - on an alternate stack far from the stack, the stack's entries are
 *   kept, the handler's own dead ones dropped; off it, an entry a handler
 *   left on it is dropped;
 * - on an alternate stack that lies in the thread's stack above the
 *   frames it interrupted, those frames' entries are kept (they are below
 *   the handler's slots, less than 8 MiB away, and live);
 * - a top the process wrote over: a return still finds its entry, a push
 *   refuses (counted), nothing reads outside the stack.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "memfd.h"
#include "tests/tap.h"

static struct memfd m;
static void *wrap_enter, *wrap_exit;
static char *blk;
static char far_stack[65536];	/* .bss: far from the stack */

/* rt_wrap_enter with %r11 = slot: the entry (%rbx), or NULL */
static __attribute__((noinline)) uint64_t *push(uint64_t *slot)
{
	register uint64_t r11 __asm__("r11") = (uint64_t)(uintptr_t)slot;
	uint64_t rax, rbx = 0;

	__asm__ volatile("lea -128(%%rsp), %%rsp\n\t"
			 "call *%[fn]\n\t"
			 "lea 128(%%rsp), %%rsp"
			 : "=a"(rax), "+b"(rbx), "+r"(r11)
			 : [fn] "r"(wrap_enter)
			 : "memory", "cc");
	if (!rax)
		return NULL;
	if (!blk)
		blk = (char *)(uintptr_t)(rbx & ~(uint64_t)4095);
	return (uint64_t *)(uintptr_t)rbx;
}

/* rt_wrap_exit with %r11 = slot: the return address it gives back */
static __attribute__((noinline)) uint64_t pop(uint64_t *slot)
{
	register uint64_t r11 __asm__("r11") = (uint64_t)(uintptr_t)slot;
	uint64_t rbx = 0;

	__asm__ volatile("lea -128(%%rsp), %%rsp\n\t"
			 "call *%[fn]\n\t"
			 "lea 128(%%rsp), %%rsp"
			 : "+b"(rbx), "+r"(r11)
			 : [fn] "r"(wrap_exit)
			 : "memory", "cc");
	return r11;
}

static uint64_t top(void)
{
	return *(volatile uint64_t *)(blk + RT_BLK_SHADOW_TOP) /
	       RT_SHADOW_ENTRY;
}

static uint64_t *slot_at(uint64_t i)
{
	return (uint64_t *)(uintptr_t) *
	       (volatile uint64_t *)(blk + RT_BLK_SHADOW + i * RT_SHADOW_ENTRY +
				     RT_SH_SLOT);
}

/* what the handler saw: top after each push, and its slots */
static volatile uint64_t h_top1, h_top2, *h_slot1, *h_slot2;
static volatile int h_on_alt;
static char *alt_lo;
static size_t alt_len;

static void on_usr1(int sig)
{
	uint64_t h[4] = { 0x51, 0x52, 0x53, 0x54 };

	(void)sig;
	h_on_alt = (char *)h >= alt_lo && (char *)h < alt_lo + alt_len;
	h_slot1 = &h[1];
	push(&h[1]);
	h_top1 = top();
	h_slot2 = &h[3];
	push(&h[3]);
	h_top2 = top();
}

static void on_alt(char *lo, size_t len)
{
	stack_t ss = { .ss_sp = lo, .ss_size = len };
	struct sigaction sa = { .sa_handler = on_usr1,
				.sa_flags = SA_ONSTACK };

	alt_lo = lo;
	alt_len = len;
	sigaltstack(&ss, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
}

static __attribute__((noinline)) void deeper(char *near, size_t len)
{
	uint64_t b[4] = { 0x21, 0x22, 0x23, 0x24 };
	uint64_t *e;

	e = push(&b[1]);
	ok(e && top() == 2 && slot_at(1) == &b[1] && e[1] == 0x22,
	   "a callee's entry goes above its caller's (slot, return address)");
	push(&b[3]);
	ok(top() == 2 && slot_at(1) == &b[3],
	   "an entry below the new slot, on the same stack, is dropped");

	/* an alternate stack far away (.bss); its handler leaves an entry */
	on_alt(far_stack, sizeof(far_stack));
	ok(h_on_alt && h_top1 == 3 && slot_at(1) == &b[3],
	   "on an alternate stack far away, the stack's entries are kept");
	ok(h_top2 == 3 && slot_at(2) == h_slot2,
	   "the handler's own entry below its new slot is dropped");
	e = push(&b[0]);
	ok(e && top() == 3 && slot_at(2) == &b[0] && slot_at(1) == &b[3],
	   "off it, the entry its handler left is dropped (top %llu)",
	   (unsigned long long)top());

	/* an alternate stack in main's frame: above these frames */
	on_alt(near, len);
	if (!h_on_alt || (char *)h_slot1 < (char *)&b[3])
		diag("the alternate stack is not above the frames "
		     "(%p, %p): the check below may not mean much",
		     (void *)h_slot1, (void *)&b[3]);
	ok(h_top1 == 4 && h_top2 == 4 && slot_at(2) == &b[0] &&
		   slot_at(1) == &b[3] && slot_at(3) == h_slot2,
	   "on an alternate stack above the stack, the interrupted frames' "
	   "entries are kept (top %llu, then %llu)",
	   (unsigned long long)h_top1, (unsigned long long)h_top2);

	/* the process wrote over its block's top */
	*(volatile uint64_t *)(blk + RT_BLK_SHADOW_TOP) = 1ULL << 40;
	ok(pop(&b[0]) == 0x21 && top() == 2,
	   "a scribbled top: a return finds its entry among the stack's");
	*(volatile uint64_t *)(blk + RT_BLK_SHADOW_TOP) = 1ULL << 40;
	ok(!push(&b[2]) &&
		   *(volatile uint64_t *)(blk + RT_BLK_SHADOW_LOST) == 1,
	   "a scribbled top: a call is not wrapped, and counted");
}

static __attribute__((noinline)) void scenario(char *near, size_t len)
{
	uint64_t a[4] = { 0x11, 0x12, 0x13, 0x14 };
	uint64_t *e = push(&a[2]);

	ok(e && blk && top() == 1 && slot_at(0) == &a[2] && e[1] == 0x13,
	   "the first push takes the thread's block and fills the entry");
	if (!e || !blk)
		return;
	deeper(near, len);
}

int main(void)
{
	struct memfd_layout l = {
		.map_size = 4096, .ring_size = 256, .nblocks = 4,
	};
	long (*rt_init)(struct rt_ctl *);
	char near[65536];
	void *h;

	h = tap_runtime();
	if (!h)
		return 99;
	rt_init = (long (*)(struct rt_ctl *))dlsym(h, "rt_init");
	ok(rt_init && !memfd_create_local(&m, &l),
	   "runtime loaded, memfd made");
	if (tap_nfail)
		return 1;
	rt_init(m.ctl);
	wrap_enter = (void *)(uintptr_t)m.ctl->fn[RT_FN_WRAP_ENTER];
	wrap_exit = (void *)(uintptr_t)m.ctl->fn[RT_FN_WRAP_EXIT];
	memset(near, 0, sizeof(near));
	scenario(near, sizeof(near));
	return tap_done();
}
