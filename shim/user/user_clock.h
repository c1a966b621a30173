/*
 * nsecs in user-mode probes from the time-stamp counter: the segment ubt
 * keeps in the control block (user_clock.c; rt_abi.h, clk_*).
 */
#ifndef UBT_USER_CLOCK_H
#define UBT_USER_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "merge.h"
#include "rt_abi.h"

struct user_clock {
	bool usable;		/* the time-stamp counter is a clock */
	struct merge_clock mc;	/* ubt's pairs and slope */
	const struct rt_ctl *ctl;	/* the block written, NULL: none yet */
	uint32_t seq;		/* ubt's copy of clk_seq */
	uint64_t tsc0, ns0, mult;	/* ubt's copy of the segment */
	uint64_t last;		/* mono_ns() of the last write */
	int64_t err;		/* the old segment's error then, ns */
	uint32_t writes;	/* segments written */
};

/* The first pair (before the target stops: it may take 0.5 ms). */
void user_clock_begin(struct user_clock *k);
/* Write a new segment into ctl when one is due (see user_clock.c). */
void user_clock_update(struct user_clock *k, struct rt_ctl *ctl);
/* The segment's value at tsc, as probe code computes it. */
uint64_t user_clock_at(const struct user_clock *k, uint64_t tsc);

#endif
