/*
 * What the builtins of user-mode probes read from the thread's block
 * instead of making a system call per hit (rt_abi.h): the ids, read when
 * the thread takes its block (uid and gid again after a credentials
 * change); the rand state; the thread's name, kept up to date through the
 * slots ubt's task_rename program writes (RT_COMM_SLOTS).
 */
#include <stddef.h>
#include <stdint.h>

#include "rt_abi.h"
#include "rt_int.h"

#define RT_PR_GET_NAME 16
#define RT_PR_GET_TSC 25
#define RT_PR_TSC_SIGSEGV 2

static long rt_prctl_name(char *buf)
{
	return rt_syscall4(157 /* SYS_prctl */, RT_PR_GET_NAME, (long)buf, 0,
			   0);
}

/* 16 bytes of name from src into the block, NUL-padded after its end. */
static void rt_comm_store(char *blk, const char *src)
{
	char *dst = blk + RT_BLK_COMM;
	int i, end = 0;

	for (i = 0; i < 16; i++) {
		if (!end && !src[i])
			end = 1;
		dst[i] = end ? 0 : src[i];
	}
	dst[15] = 0;
}

/* The thread's slot, if the table is live and this is the target. */
static struct rt_comm_slot *rt_comm_slot(struct rt_ctl *ctl, uint32_t tid)
{
	uint64_t tab;

	if (rt_forked || !__atomic_load_n(&ctl->comm_live, __ATOMIC_ACQUIRE))
		return NULL;
	tab = __atomic_load_n(&ctl->comm_tab, __ATOMIC_RELAXED);
	return tab ? (struct rt_comm_slot *)(uintptr_t)tab + tid % RT_COMM_SLOTS :
		     NULL;
}

/*
 * Read the thread's name with prctl, noting the slot's word first: a
 * rename after the read changes the word, so the next hit reads again.
 * Without a slot, every hit reads it (comm_slot points at a word that
 * never holds RT_COMM_NEVER).
 */
static void rt_comm_read(char *blk, struct rt_ctl *ctl, uint32_t tid)
{
	struct rt_comm_slot *s = rt_comm_slot(ctl, tid);
	uint64_t w = s ? __atomic_load_n(&s->word, __ATOMIC_ACQUIRE) :
			 RT_COMM_NEVER;
	char name[16] = { 0 };

	*(uint64_t *)(blk + RT_BLK_COMM_SLOT) =
		s ? (uint64_t)(uintptr_t)&s->word :
		    (uint64_t)(uintptr_t)&ctl->comm_tab;
	if (rt_prctl_name(name))
		name[0] = 0;
	rt_comm_store(blk, name);
	*(uint64_t *)(blk + RT_BLK_COMM_WORD) = w;
}

RT_EXPORT void rt_comm_sync(void)
{
	struct rt_ctl *ctl = rt_ctl_p;
	char *blk = rt_self;
	struct rt_comm_slot *s;
	uint32_t tid;
	uint64_t w;
	char name[16];

	if (!blk || !ctl)
		return;
	tid = *(uint32_t *)(blk + RT_BLK_TID);
	s = rt_comm_slot(ctl, tid);
	w = s ? __atomic_load_n(&s->word, __ATOMIC_ACQUIRE) : 0;
	if (s && (uint32_t)w == tid) {
		for (int i = 0; i < 16; i++)
			name[i] = __atomic_load_n(&s->name[i],
						  __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->word, __ATOMIC_RELAXED) == w) {
			rt_comm_store(blk, name);
			*(uint64_t *)(blk + RT_BLK_COMM_SLOT) =
				(uint64_t)(uintptr_t)&s->word;
			*(uint64_t *)(blk + RT_BLK_COMM_WORD) = w;
			return;
		}
	}
	rt_comm_read(blk, ctl, tid);
}

/* Read uid and gid, noting the credentials generation first. */
static void rt_cred_read(char *blk, struct rt_ctl *ctl)
{
	uint64_t tab = 0, *gen;

	if (!rt_forked && __atomic_load_n(&ctl->comm_live, __ATOMIC_ACQUIRE))
		tab = __atomic_load_n(&ctl->comm_tab, __ATOMIC_RELAXED);
	gen = tab ? (uint64_t *)(uintptr_t)(tab + RT_COMM_CRED_OFF) :
		    (uint64_t *)(blk + RT_BLK_CRED_GEN);
	*(uint64_t *)(blk + RT_BLK_CRED_GEN) =
		__atomic_load_n(gen, __ATOMIC_ACQUIRE);
	*(uint64_t *)(blk + RT_BLK_CRED_AT) = (uint64_t)(uintptr_t)gen;
	*(uint32_t *)(blk + RT_BLK_UID) =
		(uint32_t)rt_syscall0(102 /* getuid */);
	*(uint32_t *)(blk + RT_BLK_GID) =
		(uint32_t)rt_syscall0(104 /* getgid */);
}

RT_EXPORT void rt_cred_sync(void)
{
	if (rt_self && rt_ctl_p)
		rt_cred_read(rt_self, rt_ctl_p);
}

/* Fill a new block's builtins (its tid is set). */
__attribute__((visibility("hidden"))) void rt_block_builtins(char *blk)
{
	struct rt_ctl *ctl = rt_ctl_p;
	uint32_t lo = 0, hi = 0, tid = *(uint32_t *)(blk + RT_BLK_TID);
	int tsc_mode = 0;
	uint64_t seed;

	/* the counter may be off for this thread: never run rdtsc then */
	if (!rt_syscall4(157 /* SYS_prctl */, RT_PR_GET_TSC, (long)&tsc_mode,
			 0, 0) &&
	    tsc_mode == RT_PR_TSC_SIGSEGV) {
		*(uint32_t *)(blk + RT_BLK_NOTSC) = 1;
		if (ctl)
			__atomic_fetch_add(&ctl->notsc_threads, 1,
					   __ATOMIC_RELAXED);
		long ts[2] = { 0, 0 };

		/* the system call: the vDSO's clock reads the counter */
		rt_syscall4(228 /* clock_gettime */, 1, (long)ts, 0, 0);
		seed = (uint64_t)ts[0] * 1000000000u + (uint64_t)ts[1];
		seed ^= (uint64_t)(uintptr_t)blk;
		lo = (uint32_t)seed;
		hi = (uint32_t)(seed >> 32);
	} else {
		*(uint32_t *)(blk + RT_BLK_NOTSC) = 0;
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	}
	/* splitmix64 of the counter and the thread: distinct, never 0 */
	seed = ((uint64_t)hi << 32 | lo) ^ (uint64_t)tid << 40;
	seed += 0x9e3779b97f4a7c15ULL;
	seed = (seed ^ (seed >> 30)) * 0xbf58476d1ce4e5b9ULL;
	seed = (seed ^ (seed >> 27)) * 0x94d049bb133111ebULL;
	seed ^= seed >> 31;
	*(uint64_t *)(blk + RT_BLK_RAND) = seed ? seed : 1;
	rt_cred_read(blk, ctl);
	rt_comm_read(blk, ctl, tid);
}
