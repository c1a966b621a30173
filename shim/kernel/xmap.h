/*
 * ubt's side of the tables user-mode and kernel probes share
 * (codegen/cg_xmap.h): the header written before any probe runs, the
 * entries and the dropped updates read back at exit or print().  The
 * table is in memory the target writes: every word read is checked.
 */
#ifndef UBT_XMAP_H
#define UBT_XMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "cg.h"
#include "kernel.h"

/* Write map m's table header through fd (the BPF array's). 0 or -errno. */
int xmap_init(int fd, const struct cg_map *m);
/* fn(key, value, ctx) for every key with a value, key as the map's BPF
 * key (8 bytes), value as its value (8 bytes); stops at fn's non-zero.
 * Slots whose words cannot be the code's are skipped and counted in
 * *bad (may be NULL); a key read twice (deleted and inserted again in a
 * later slot meanwhile) comes once, as read last. */
int xmap_foreach(int fd, const struct cg_map *m, kernel_entry_fn fn,
		 void *ctx, uint64_t *bad);
/* clear(): every live key deleted; zero(): every live value 0 (as ubt
 * does a BPF map's, asynchronously: a racing store may survive). */
int xmap_clear(int fd, const struct cg_map *m, bool zero);
/* The table's count at header offset off (CG_XMAP_OFF_DROPPED: refused
 * past max_entries; CG_XMAP_OFF_COLLIDED: no slot found;
 * CG_XMAP_OFF_RACED: races lost), UINT64_MAX when it cannot be read. */
uint64_t xmap_count(int fd, const struct cg_map *m, uint32_t off);

#endif
