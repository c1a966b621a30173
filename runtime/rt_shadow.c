/*
 * The push of a shadow entry that the return probes' trampolines leave to
 * the runtime (rt_wrap_enter, rt.c): the thread has no block yet, its
 * shadow stack is full, or the top entry may be a frame that is gone
 * (left by longjmp, a C++ exception, a forced unwind, or a signal handler
 * that did not return).  Dead entries are dropped first.
 *
 * A signal handler may run between any two instructions here, push and
 * pop entries of its own, or never return (siglongjmp() out of it).  The
 * push is the trampoline's: the slot goes in at the top's index, then the
 * new top; then the slot is read back, and when a handler that came in
 * between took the entry (it dropped it as dead: its slot was not ours
 * yet) all of it starts over.  Once the slot reads back ours, with the
 * top above it, no handler takes it any more: its frame is above every
 * frame of a handler on the same stack.
 */
#include <stddef.h>
#include <stdint.h>

#include "rt_abi.h"
#include "rt_int.h"

/* The return addresses of wrapped calls: rt_wrap_call's and the stub
 * slots' (rt.c, which passes them: no reference back to it). */
struct rt_wrap_rets {
	uint64_t ret, stubs;
};

void *rt_shadow_push(uint64_t slot, uint64_t rbx, uint64_t wrap_ret,
		     uint64_t stubs);
void *rt_block_get(void);

/* The kernel's stack_t. */
struct rt_stack_t {
	uint64_t sp;
	int32_t flags;
	uint64_t size;
};
#define RT_SS_ONSTACK 1
#define RT_SS_DISABLE 2

/* What sigaltstack() says of the calling thread's alternate stack. */
struct rt_alt {
	int known;	/* asked */
	int on;		/* running on it */
	uint64_t lo, hi;	/* its bytes; lo == hi: none */
};

static void rt_alt_get(struct rt_alt *a)
{
	struct rt_stack_t ss = { 0 };
	long ret;

	a->known = 1;
	ret = rt_syscall4(131 /* SYS_sigaltstack */, 0, (long)&ss, 0, 0);
	a->on = ret == 0 && (ss.flags & RT_SS_ONSTACK);
	a->lo = a->hi = 0;
	if (ret == 0 && !(ss.flags & RT_SS_DISABLE) && ss.size) {
		a->lo = ss.sp;
		a->hi = ss.sp + ss.size;
	}
}

/* A call's return address is rt_wrap_call's or a stub's, after its call. */
static int rt_is_wrap_ret(const struct rt_wrap_rets *w, uint64_t ret)
{
	uint64_t off = ret - w->stubs;

	if (ret == w->ret)
		return 1;
	return off < RT_WRAP_STUBS * RT_WRAP_STUB &&
	       (off & (RT_WRAP_STUB - 1)) == 5;
}

/*
 * Is the entry of a frame whose return address was at old gone, seen from
 * a call whose return address is at slot?  A frame at or below ours on
 * our stack is (a live caller's is above ours), unless it is the same
 * slot and the new call's return address is a wrapped call's: a wrapped
 * function's tail call, whose caller is still running.  On the alternate
 * signal stack, frames off it belong to the code the signal interrupted
 * (live, even within RT_SAME_STACK of ours: the alternate stack may lie
 * in the thread's stack); off it, frames on it are gone (its handlers
 * left: a signal that comes while one runs runs on it too).  Frames
 * farther than RT_SAME_STACK on no known stack may be another stack's
 * (a coroutine's): kept.
 */
static int rt_shadow_dead(const struct rt_wrap_rets *w, struct rt_alt *a,
			  uint64_t old, uint64_t slot)
{
	int old_alt;

	if (old == slot && rt_is_wrap_ret(w, *(volatile uint64_t *)slot))
		return 0;
	if (!a->known)
		rt_alt_get(a);
	old_alt = old >= a->lo && old < a->hi;
	if (a->on)
		return old_alt && old <= slot;
	if (old_alt)
		return 1;
	return old <= slot && slot - old < RT_SAME_STACK;
}

/*
 * Push {slot, *slot, rbx} on the calling thread's shadow stack; the entry,
 * or NULL (no block, or the stack is full: counted).
 */
__attribute__((visibility("hidden"))) void *
rt_shadow_push(uint64_t slot, uint64_t rbx, uint64_t wrap_ret, uint64_t stubs)
{
	const struct rt_wrap_rets w = { wrap_ret, stubs };
	char *blk = rt_self ? rt_self : rt_block_get();
	volatile uint64_t *top, *e;
	struct rt_alt alt = { 0 };
	uint64_t t;

	if (!blk)
		return NULL;
	top = (volatile uint64_t *)(blk + RT_BLK_SHADOW_TOP);
again:
	t = *top & -(uint64_t)RT_SHADOW_ENTRY;
	if (t > RT_SHADOW_DEPTH * RT_SHADOW_ENTRY)
		t = RT_SHADOW_DEPTH * RT_SHADOW_ENTRY;	/* a scribbled top */
	while (t) {
		uint64_t old;

		e = (volatile uint64_t *)(blk + RT_BLK_SHADOW + t -
					  RT_SHADOW_ENTRY);
		old = e[RT_SH_SLOT / 8];
		if (old > slot && old - slot < RT_SAME_STACK) {
			/*
			 * A caller's, just above ours; or, when the alternate
			 * stack was asked about already (no system call per
			 * call here), off it, a frame on it: gone.
			 */
			if (!alt.known || alt.on || old < alt.lo ||
			    old >= alt.hi)
				break;
		} else if (!rt_shadow_dead(&w, &alt, old, slot)) {
			break;
		}
		t -= RT_SHADOW_ENTRY;
	}
	if (t >= RT_SHADOW_DEPTH * RT_SHADOW_ENTRY) {
		(*(volatile uint64_t *)(blk + RT_BLK_SHADOW_LOST))++;
		return NULL;
	}
	e = (volatile uint64_t *)(blk + RT_BLK_SHADOW + t);
	e[RT_SH_SLOT / 8] = slot;
	*top = t + RT_SHADOW_ENTRY;
	if (e[RT_SH_SLOT / 8] != slot)
		goto again;	/* a handler took it: see above */
	e[RT_SH_RET / 8] = *(volatile uint64_t *)slot;
	e[RT_SH_RBX / 8] = rbx;
	return (void *)e;
}
