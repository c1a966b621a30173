/*
 * Where thread block i lies in this process.  The target maps the head
 * of the memfd (control block, shared area, template) with the first
 * chunk of ctl->chunk_blocks blocks (ubt's remote mmap); the runtime maps
 * each further chunk from ctl->target_fd when a thread first takes a
 * block in it, so that a process with few threads holds the address
 * space of few blocks (RLIMIT_AS, the target's own mmap and malloc).
 *
 * The table of chunk addresses is this process's own (the runtime's
 * data): a forked child inherits the parent's chunks, mapped before the
 * fork, and maps the ones it needs later in its own address space,
 * where the parent never looks.  Threads that need the same chunk at
 * once each map it and publish their address by compare-and-swap; the
 * losers unmap theirs: no thread waits.  A chunk that cannot be mapped
 * (the address space is full) gives no block: the thread records
 * nothing and is counted in ctl->no_block, said at exit.
 */
#include <stdint.h>

#include "rt_abi.h"
#include "rt_int.h"

static uint64_t rt_chunks[RT_CHUNKS];

static long rt_mmap_shared(uint64_t len, int fd, uint64_t off)
{
	long ret;
	register long r10 __asm__("r10") = 0x01;	/* MAP_SHARED */
	register long r8 __asm__("r8") = fd;
	register long r9 __asm__("r9") = (long)off;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(9L) /* SYS_mmap */, "D"(0L), "S"(len),
			   "d"(3L) /* PROT_READ|PROT_WRITE */, "r"(r10),
			   "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* A new session (rt_init, every thread stopped): chunk 0 is ubt's. */
void rt_chunk_reset(struct rt_ctl *ctl)
{
	int k;

	for (k = 0; k < RT_CHUNKS; k++)
		__atomic_store_n(&rt_chunks[k], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&rt_chunks[0],
			 (uint64_t)(uintptr_t)ctl + ctl->block_off,
			 __ATOMIC_RELEASE);
}

/* Does ctl's chunk layout hold (ubt's to set; checked once, by rt_init)? */
int rt_chunk_valid(const struct rt_ctl *ctl)
{
	uint64_t per = ctl->chunk_blocks;

	if (!per)
		return 1;
	return !(per & (per - 1)) && ctl->target_fd >= 0 &&
	       (ctl->nblocks + per - 1) / per <= RT_CHUNKS;
}

static uint64_t rt_chunk_map(const struct rt_ctl *ctl, uint64_t k)
{
	uint64_t per = ctl->chunk_blocks, n = per, off, len, was = 0;
	long p;

	if (k * per >= ctl->nblocks)
		return 0;
	if (ctl->nblocks - k * per < n)
		n = ctl->nblocks - k * per;
	off = ctl->block_off + k * per * ctl->block_size;
	len = n * ctl->block_size;
	if (off > ctl->total_size || ctl->total_size - off < len)
		return 0;
	p = rt_mmap_shared(len, ctl->target_fd, off);
	if (p < 0 && p > -4096)
		return 0;
	if (__atomic_compare_exchange_n(&rt_chunks[k], &was, (uint64_t)p, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return (uint64_t)p;
	rt_syscall4(11 /* SYS_munmap */, p, (long)len, 0, 0);
	return was;
}

char *rt_block_addr(const struct rt_ctl *ctl, uint64_t i, int map)
{
	uint64_t per = ctl->chunk_blocks, k, c;

	if (!per)
		return (char *)ctl + ctl->block_off + i * ctl->block_size;
	k = i / per;
	if (k >= RT_CHUNKS)
		return 0;
	c = __atomic_load_n(&rt_chunks[k], __ATOMIC_ACQUIRE);
	if (!c && map)
		c = rt_chunk_map(ctl, k);
	if (!c)
		return 0;
	return (char *)(uintptr_t)c + (i % per) * ctl->block_size;
}
