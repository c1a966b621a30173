/*
 * Shared between memfd.c (layout, thread blocks, rings) and memfd_shtab.c
 * (tables shared by all threads): what ubt read back so far, and the
 * checks that tell a corrupted value.  memfd.c owns struct memfd_seen
 * (made in memfd_map(), freed in memfd_release()); memfd_shtab.c adds to
 * its tabs.
 */
#ifndef UBT_MEMFD_INT_H
#define UBT_MEMFD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "memfd.h"

/* What ubt read back from one thread block. */
struct memfd_block_seen {
	uint64_t tail;		/* ubt's ring tail (the memfd's: a copy) */
	uint64_t dropped;	/* the last plausible RT_BLK_RING_DROPPED */
	uint64_t shadow_lost;	/* and RT_BLK_SHADOW_LOST */
	bool bad;		/* corrupted: ring and counters ignored */
};

/* A shared table's drop counter. */
struct memfd_table_seen {
	uint64_t off, dropped, lockdrop;
};

struct memfd_seen {
	uint64_t t0;		/* mono_ns() at memfd_map() */
	uint64_t next_block;	/* the last plausible ctl->next_block */
	uint64_t no_block;	/* and ctl->no_block */
	bool ctl_bad;		/* those two are not read again */
	bool corrupted;		/* the warning was printed */
	struct memfd_table_seen *tabs;
	size_t ntabs;
	struct memfd_block_seen b[];
};

/* One read of a shared word: the target may change it at any time. */
static inline uint64_t memfd_load64(const void *p)
{
	return __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE);
}

/* Corruption found: say so, once per memfd. */
void memfd_corrupt(const struct memfd *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Counter name (of where) read as v, last plausible value last: false,
 * and the warning, when v went down or grew too fast for writers threads.
 */
bool memfd_counter_ok(const struct memfd *m, const char *where,
		      const char *name, uint64_t v, uint64_t last,
		      uint64_t writers);

#endif
