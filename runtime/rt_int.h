/*
 * Internal to libubt-rt.so: what rt.c (thread blocks, faults, fork,
 * rings, init), rt_htab.c (per-thread keyed tables and their iteration),
 * rt_shtab.c (tables shared by all threads) and rt_stack.c (ustack's
 * frame-pointer walk), rt_vfork.c (the block lent to a CLONE_VM child,
 * the hand-over before one that does not wait)
 * share; the state itself
 * is in rt_state.c, so that calls run one way (rt.c -> the tables ->
 * rt_state.c).  Everything not
 * RT_EXPORT is hidden (-fvisibility=hidden): calls between these files
 * stay direct.
 */
#ifndef UBT_RT_INT_H
#define UBT_RT_INT_H

#include <stdint.h>

#include "rt_abi.h"

#define RT_EXPORT __attribute__((visibility("default")))

/*
 * Per-thread state.  self (the thread's block) must stay first: probe code
 * and the trampolines read it at %fs:tls_offset.  ubt zeroes the whole
 * struct in every thread when it attaches again (new memfd).
 */
struct rt_tls {
	void *self;
	uint64_t noblock;
	/* rt_vfork.c: what a CLONE_VM child's parent lent (ubt zeroes
	 * self and noblock only, a call in flight keeps these) */
	void *vf_self;
	uint64_t vf_noblock;
	uint64_t vf_ret;	/* the caller's return address, 0: none lent */
	uint64_t vf_pid;
	void *vf_ctl;		/* rt_ctl_p when it was lent */
};
extern __thread struct rt_tls rt_tls
	__attribute__((tls_model("initial-exec")));
#define rt_self (rt_tls.self)
#define rt_noblock (rt_tls.noblock)

/* rt_state.c: the shared memfd's control block (set by rt_init) */
extern struct rt_ctl *rt_ctl_p __attribute__((visibility("hidden")));

/*
 * rt_chunk.c: the address of thread block i in this process, its chunk
 * mapped first when map is set; NULL when it is not mapped (here)
 */
char *rt_block_addr(const struct rt_ctl *ctl, uint64_t i, int map)
	__attribute__((visibility("hidden")));
void rt_chunk_reset(struct rt_ctl *ctl) __attribute__((visibility("hidden")));
int rt_chunk_valid(const struct rt_ctl *ctl)
	__attribute__((visibility("hidden")));

/* rt_state.c: this process is a forked child of the one ubt attached to */
extern int rt_forked __attribute__((visibility("hidden")));
/* rt_state.c: the pid of the process rt_init ran in */
extern long rt_pid __attribute__((visibility("hidden")));

/* rt_tslot.c: a gone thread's per-thread slots, moved into their
 * maps' tables (blk taken again) */
void rt_tslot_spill(const struct rt_ctl *ctl, char *blk)
	__attribute__((visibility("hidden")));
void *rt_htab_lookup(struct rt_htab *h, const void *key);

/* rt_builtin.c: a new block's builtins (ids, rand, comm) */
void rt_block_builtins(char *blk) __attribute__((visibility("hidden")));
void rt_comm_sync(void);
void rt_cred_sync(void);

/* A system call without arguments (no libc, no errno). */
static inline long rt_syscall0(long nr)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr)
			 : "rcx", "r11", "memory");
	return ret;
}

/* A system call of up to four arguments (the fourth in %r10). */
static inline long rt_syscall4(long nr, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

/* futex(addr, FUTEX_WAIT, val, timeout): shared memory, not private */
static inline long rt_futex_wait(uint32_t *addr, uint32_t val, long ns)
{
	struct { long sec, nsec; } ts = { ns / 1000000000L,
					  ns % 1000000000L };

	/* SYS_futex, FUTEX_WAIT */
	return rt_syscall4(202, (long)addr, 0, (long)val, (long)&ts);
}

typedef uint64_t rt_u64u __attribute__((aligned(1), may_alias));

/* FNV-1a over 8-byte words, then bytes */
static inline uint64_t rt_hash(const void *key, uint32_t ks)
{
	uint64_t hash = 1469598103934665603ULL, w;
	const uint8_t *k = key;

	for (w = 0; w + 8 <= ks; w += 8)
		hash = (hash ^ *(const rt_u64u *)(k + w)) * 1099511628211ULL;
	for (; w < ks; w++)
		hash = (hash ^ k[w]) * 1099511628211ULL;
	return hash ^ (hash >> 29);
}

/* rt_stack.c: RT_FN_USTACK; the loads of rt_frame_read() that may
 * fault and where the fault handler (rt.c) resumes them */
uint64_t rt_ustack(uint64_t *out, uint64_t limit, uint64_t ip, uint64_t sp,
		   uint64_t fp);
extern const char rt_frame_insn0[], rt_frame_insn1[], rt_frame_fixup[];

static inline int rt_key_eq(const uint8_t *a, const uint8_t *b, uint32_t n)
{
	uint32_t w;

	for (w = 0; w + 8 <= n; w += 8)
		if (*(const rt_u64u *)(a + w) != *(const rt_u64u *)(b + w))
			return 0;
	for (; w < n; w++)
		if (a[w] != b[w])
			return 0;
	return 1;
}


static inline void rt_pause(void)
{
	__asm__ volatile("pause" ::: "memory");
}

#endif
