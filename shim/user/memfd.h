/*
 * ubt's side of the shared memfd (layout: runtime/rt_abi.h).  ubt keeps its
 * own copy of every size and offset and never trusts what it reads back from
 * the memfd: the target can write anything there.  Every index, length and
 * offset read from the memfd is checked against ubt's copy.
 *
 * Counters are checked for plausibility: ubt keeps its own ring tails and
 * the last value of every counter it read (ring drops, lost return probes,
 * blocks handed out, threads without a block, a shared table's drops).
 * Corruption is a counter that went down or grew faster than one a
 * nanosecond (per thread that can write it) since the memfd was mapped, a
 * ring head behind ubt's tail, more than a ring ahead of it or not
 * 8-aligned, a malformed ring record, a slot state or thread id no
 * runtime writes.  ubt then says once, on stderr,
 *   ubt: warning: pid N: the process corrupted ubt's shared memory (what)
 * and ignores the corrupted data: a counter keeps its last plausible value
 * (the block's, or the control block's, are not read again), the block's
 * ring is not read again, a slot with a bad state is skipped.
 */
#ifndef UBT_MEMFD_H
#define UBT_MEMFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_abi.h"

struct memfd_layout {
	uint64_t map_size;	/* bytes of map area per thread, 8-aligned */
	uint64_t ring_size;	/* bytes of ring per thread, power of two */
	uint32_t nblocks;	/* threads that can record */
	uint64_t shared_size;	/* bytes of shared tables, 8-aligned */
};

struct memfd_seen;

struct memfd {
	int fd;
	char *base;		/* ubt's read-write mapping */
	uint64_t size;
	struct rt_ctl *ctl;
	struct memfd_layout l;
	uint64_t block_off, block_size, tmpl_off;
	int pid;		/* the target, for the warning (0: not said) */
	struct memfd_seen *seen;	/* what ubt read back (memfd.c) */
};

void memfd_layout_default(struct memfd_layout *l);
uint64_t memfd_layout_size(const struct memfd_layout *l);

/* Map fd (already sized to memfd_layout_size()) and write the control block. */
int memfd_map(struct memfd *m, int fd, const struct memfd_layout *l);
/* Create an anonymous memfd in this process (tests, in-process runtime). */
int memfd_create_local(struct memfd *m, const struct memfd_layout *l);
void memfd_release(struct memfd *m);

/*
 * The target's view (rt_abi.h): blocks per chunk (0: one view of every
 * block), and the bytes of its first view, the head and the first chunk.
 */
uint32_t memfd_chunk_blocks(const struct memfd *m);
uint64_t memfd_target_size(const struct memfd *m);

/* ubt's writable view of code slice i, RT_CODE_SLICE bytes; NULL if none. */
void *memfd_code(struct memfd *m, unsigned int i);
uint64_t memfd_code_off(unsigned int i);

/* Number of thread blocks handed out so far, clamped to nblocks. */
uint32_t memfd_nblocks_used(const struct memfd *m);
/* Threads that found no free block (ctl->no_block). */
uint64_t memfd_no_block(const struct memfd *m);
/* Blocks taken again after their threads were gone (ctl->blocks_reused). */
uint64_t memfd_blocks_reused(const struct memfd *m);
/* Threads that took a block with the time-stamp counter off (-v). */
uint64_t memfd_notsc_threads(const struct memfd *m);
/* Thread id recorded in block i (0 if not initialized or out of range). */
uint32_t memfd_block_tid(const struct memfd *m, uint32_t i);
/* Has the target corrupted the memfd (the warning was printed)? */
bool memfd_corrupted(const struct memfd *m);

/* Copy len bytes at map offset off of block i; -ERANGE if out of bounds. */
int memfd_map_read(const struct memfd *m, uint32_t i, uint64_t off,
		   void *out, uint64_t len);
/* Sum of the u64 at map offset off over all blocks (count, sum). */
int memfd_sum_u64(const struct memfd *m, uint64_t off, uint64_t *out);

/*
 * Keyed tables.  memfd_htab_add() places an empty table at map offset off
 * in the template every block starts from; ubt's own nslots/key/value sizes
 * are used when reading back, never the header in the memfd.
 */
struct memfd_htab {
	uint64_t off;
	uint32_t nslots, key_size, val_size;
	/* 1 + a block memfd_htab_clear/zero/delete leave alone; 0: none */
	uint32_t skip;
	uint32_t max_keys;	/* keys a block's table takes; 0: nslots */
};
uint64_t memfd_htab_bytes(uint32_t nslots, uint32_t key_size,
			  uint32_t val_size);
int memfd_htab_add(struct memfd *m, const struct memfd_htab *t);
/* Call cb for every used slot of every block; stops on a non-zero return. */
int memfd_htab_foreach(const struct memfd *m, const struct memfd_htab *t,
		       int (*cb)(const void *key, const void *val,
				 uint32_t block, void *arg),
		       void *arg);
/*
 * Inserts the blocks' tables refused because they were full, summed.  A
 * block's count above bound (more than its thread could have tried) is
 * not believed: it is left out, and counted in *implausible.
 */
uint64_t memfd_htab_dropped(const struct memfd *m, const struct memfd_htab *t,
			    uint64_t bound, uint32_t *implausible);

/*
 * clear(), zero() and delete() of an aggregation, done by ubt in every
 * block while the owners keep running (an update racing with it may be
 * lost or land after it, as with bpftrace's asynchronous clear()):
 * memfd_map_zero() stores zeros over len bytes at map offset off (racy
 * against an owner's read-modify-write: shim/run/run.c uses it only for
 * min/max); memfd_htab_clear() deletes every entry of a keyed table,
 * memfd_htab_zero() makes every entry read back with a zero value (slot
 * state RT_HTAB_ZEROED), memfd_htab_delete() deletes key; all three only
 * change slot states, by compare-and-swap, and skip block t->skip - 1.
 */
int memfd_map_zero(struct memfd *m, uint64_t off, uint64_t len);
/* The same in block i only. */
int memfd_map_zero_block(struct memfd *m, uint32_t i, uint64_t off,
			 uint64_t len);
int memfd_htab_clear(struct memfd *m, const struct memfd_htab *t);
int memfd_htab_zero(struct memfd *m, const struct memfd_htab *t);
int memfd_htab_delete(struct memfd *m, const struct memfd_htab *t,
		      const void *key);

/*
 * Tables shared by all threads (struct rt_shtab), for ordinary maps, at
 * offset off of the shared area (RT_SHARED_OFF).  memfd_shtab_add() places
 * an empty table; reading back uses ubt's own sizes, never the header in
 * the memfd, and copies each value consistently (its sequence counter
 * even and unchanged around the copy).
 */
struct memfd_shtab {
	uint64_t off;
	uint32_t nslots, key_size, val_size, max_probe;
	uint32_t max_keys;	/* keys the table takes; 0: nslots */
};
uint64_t memfd_shtab_bytes(uint32_t nslots, uint32_t key_size,
			   uint32_t val_size);
int memfd_shtab_add(struct memfd *m, const struct memfd_shtab *t);
/* Call cb for every used slot; stops on a non-zero return. */
int memfd_shtab_foreach(const struct memfd *m, const struct memfd_shtab *t,
			int (*cb)(const void *key, const void *val, void *arg),
			void *arg);
/* Updates the target dropped because the table was full. */
uint64_t memfd_shtab_dropped(const struct memfd *m,
			     const struct memfd_shtab *t);
/*
 * Inserts the target dropped because another thread held the table's
 * insert lock past the runtime's bounded wait (a preempted holder).
 */
uint64_t memfd_shtab_lockdrop(const struct memfd *m,
			      const struct memfd_shtab *t);
/* Delete every entry (tombstones), as clear() does. */
int memfd_shtab_clear(struct memfd *m, const struct memfd_shtab *t);
/* Set every value to zero, as zero() does. */
int memfd_shtab_zero(struct memfd *m, const struct memfd_shtab *t);

/*
 * Consume the records of block i's ring: cb(type, data, len) for each.
 * A malformed ring (bad head, length or padding) is corruption: -EBADMSG
 * the first time, and the ring is not read again (0).  Returns the number
 * of records or -errno.
 */
int memfd_ring_consume(const struct memfd *m, uint32_t i,
		       int (*cb)(uint32_t type, const void *data,
				 uint32_t len, void *arg),
		       void *arg);
/* Events dropped by full rings, summed over blocks. */
uint64_t memfd_ring_dropped(const struct memfd *m);
/* Return probes not wrapped because a shadow stack was full. */
uint64_t memfd_shadow_lost(const struct memfd *m);

#endif
