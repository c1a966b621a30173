/*
 * A thread's block of the shared memfd, taken at its first hit (the
 * trampoline's slow path, rt_ring_write()): a fresh one while there are
 * (one atomic add), else the block of a thread that is gone.
 *
 * A block is taken again only when the kernel no longer knows its thread
 * (tgkill(pid, tid, 0) fails with ESRCH): the thread ran its last
 * instruction long before (it was released after its exit), so none of
 * its code, probe code included, can touch the block again.  A thread id
 * used again by a new thread of the process keeps the block as it is
 * (kill succeeds): wasted, never shared.  The owner word (tid and pid,
 * RT_BLK_TID) changes by compare-and-swap, so that two new threads never
 * take one block.  The map area stays as the old thread left it: its
 * aggregations merge with every other block's as before (a count goes on
 * from the old thread's, its @[tid] keys stay, under the old tid), and
 * the ring and its counters go on where they were, so that ubt's reader
 * of the block sees one producer after another, never two at once.
 * What was the thread's own is set anew: ids, rand, comm, credentials,
 * an empty shadow stack (a thread that left wrapped calls behind, by
 * pthread_exit() or longjmp(), left their entries there).
 *
 * A forked child takes only fresh blocks: the block its forking thread
 * held is a private copy there (rt.c rt_fork_child()), the same address
 * as the parent's.
 */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_abi.h"
#include "rt_int.h"

void *rt_block_get(void);

#define RT_ESRCH 3

/* tgkill(pid, tid, 0): 0, or -ESRCH when the kernel knows no such thread */
static long rt_tgkill0(uint32_t pid, uint32_t tid)
{
	return rt_syscall4(234 /* SYS_tgkill */, pid, tid, 0, 0);
}

/*
 * The block of a thread that is gone, now owned by (pid, tid); NULL when
 * every block's thread lives.  The search starts after the last block
 * taken again: threads that come and go in turn find one at once.
 */
static char *rt_block_reclaim(struct rt_ctl *ctl, uint64_t owner)
{
	uint32_t n = ctl->nblocks, start, i;

	if (ctl->sz < offsetof(struct rt_ctl, blocks_reused) + 8 || !n ||
	    rt_forked)
		return NULL;
	start = __atomic_load_n(&ctl->reclaim_next, __ATOMIC_RELAXED) % n;
	for (i = 0; i < n; i++) {
		uint32_t k = (start + i) % n;
		char *blk = rt_block_addr(ctl, k, 0);
		uint64_t *own;
		uint64_t was;

		if (!blk)
			continue;	/* in a chunk not mapped here */
		own = (uint64_t *)(blk + RT_BLK_TID);
		/* not set up yet (a fresh block being taken) */
		if (__atomic_load_n((uint32_t *)(blk + RT_BLK_SZ),
				    __ATOMIC_ACQUIRE) != RT_BLK_MAP)
			continue;
		was = __atomic_load_n(own, __ATOMIC_ACQUIRE);
		/* no pid: an owner that cannot be checked */
		if (!(uint32_t)was || !(uint32_t)(was >> 32) ||
		    rt_tgkill0((uint32_t)(was >> 32), (uint32_t)was) !=
			    -RT_ESRCH)
			continue;
		if (!__atomic_compare_exchange_n(own, &was, owner, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&ctl->reclaim_next, k + 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&ctl->blocks_reused, 1, __ATOMIC_RELAXED);
		return blk;
	}
	return NULL;
}

/* A fresh block, owned by (pid, tid), its map area the template; NULL when
 * none is left. */
static char *rt_block_fresh(struct rt_ctl *ctl, uint64_t owner)
{
	uint64_t n = __atomic_load_n(&ctl->next_block, __ATOMIC_RELAXED);
	char *blk;

	do {
		if (n >= ctl->nblocks)
			return NULL;
	} while (!__atomic_compare_exchange_n(&ctl->next_block, &n, n + 1, 1,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	blk = rt_block_addr(ctl, n, 1);
	if (!blk)
		return NULL;	/* its chunk could not be mapped */
	__atomic_store_n((uint64_t *)(blk + RT_BLK_TID), owner,
			 __ATOMIC_RELAXED);
	*(uint64_t *)(blk + RT_BLK_CTL) = (uint64_t)(uintptr_t)ctl;
	if (ctl->tmpl_len && ctl->tmpl_len <= ctl->map_size) {
		const char *t = (const char *)ctl + ctl->tmpl_off;
		uint64_t i;

		for (i = 0; i < ctl->tmpl_len; i++)
			blk[RT_BLK_MAP + i] = t[i];
	}
	return blk;
}

/* The calling thread's block, fresh or taken again, or NULL (signals
 * blocked: rt_block_get()). */
static char *rt_block_take(struct rt_ctl *ctl)
{
	uint64_t tid, pid, owner;
	char *blk;

	tid = (uint32_t)rt_syscall0(186 /* gettid */);
	pid = (uint32_t)rt_syscall0(39 /* getpid */);
	owner = pid << 32 | tid;
	blk = rt_block_fresh(ctl, owner);
	if (!blk) {
		blk = rt_block_reclaim(ctl, owner);
		if (!blk) {
			__atomic_fetch_add(&ctl->no_block, 1,
					   __ATOMIC_RELAXED);
			rt_noblock = 1;
			return NULL;
		}
		/* its wrapped calls are over */
		*(uint64_t *)(blk + RT_BLK_SHADOW_TOP) = 0;
		/* its @m[tid] entries left: into the tables */
		rt_tslot_spill(ctl, blk);
	}
	*(uint64_t *)(blk + RT_BLK_TID_HASH) = rt_hash(&tid, sizeof(tid));
	rt_block_builtins(blk);
	/* the template has the target's pid; a forked child is another, so
	 * is a vfork child running in its memory (user_vfork.c lent it the
	 * block pointer), and a block taken again may be a gone child's */
	if (ctl->map_size >= RT_MAP_PID + 8 &&
	    pid != *(uint64_t *)(blk + RT_BLK_MAP + RT_MAP_PID))
		*(uint64_t *)(blk + RT_BLK_MAP + RT_MAP_PID) = pid;
	__atomic_store_n((uint32_t *)(blk + RT_BLK_SZ), RT_BLK_MAP,
			 __ATOMIC_RELEASE);
	rt_self = blk;
	return blk;
}

/* rt_sigprocmask(how, set, old) with the kernel's 8-byte mask */
static void rt_sigmask(int how, const uint64_t *set, uint64_t *old)
{
	rt_syscall4(14 /* SYS_rt_sigprocmask */, how, (long)set, (long)old, 8);
}

/* Every signal but those a fault raises (blocked, a fault kills). */
#define RT_SIG_BIT(s) (1ULL << ((s) - 1))
#define RT_SIG_ASYNC                                                      \
	(~(RT_SIG_BIT(SIGSEGV) | RT_SIG_BIT(SIGBUS) | RT_SIG_BIT(SIGILL) |  \
	   RT_SIG_BIT(SIGFPE) | RT_SIG_BIT(SIGTRAP)))

/*
 * The calling thread's block: taken at its first hit, with signals
 * blocked meanwhile.  A signal handler that came in here and called a
 * probed function would take a block of its own, and one that left by
 * siglongjmp() would leave the block taken and never used: a thread
 * whose first hits a signal timer keeps interrupting so could use up
 * every block.
 */
__attribute__((visibility("hidden"))) void *rt_block_get(void)
{
	struct rt_ctl *ctl = rt_ctl_p;
	uint64_t set = RT_SIG_ASYNC, old;
	char *blk;

	if (rt_self)
		return rt_self;
	if (rt_noblock || !ctl)
		return NULL;
	rt_sigmask(SIG_BLOCK, &set, &old);
	blk = rt_self ? rt_self : rt_block_take(ctl);
	rt_sigmask(SIG_SETMASK, &old, NULL);
	return blk;
}
