/*
 * Events of the kernel's ring buffer and of the user rings in one stream,
 * in the order they happened: shim/run/run.c uses this when a program has
 * run-time events on both sides (codegen/cg.h enum cg_event_time: every
 * record then ends in a time stamp).
 *
 * The clock.  Kernel records carry CLOCK_MONOTONIC ns (bpf_ktime_get_ns());
 * user-mode records the raw time-stamp counter (rdtsc inline in the native
 * code: no call, no syscall).  With constant_tsc and nonstop_tsc, and
 * tsc as the kernel's clocksource, the counter runs at one rate on every
 * CPU, in every process, and the kernel computes CLOCK_MONOTONIC from it
 * linearly.  Otherwise (another clocksource, such as kvm-clock; or
 * UBT_NO_TSC set to anything but 0, which tests use to run this fallback
 * on every machine) user-mode records carry CLOCK_MONOTONIC ns too, read
 * through the vDSO by the runtime (RT_FN_CLOCK_NS: no syscall either,
 * ~20 ns).  merge_clock converts counts
 * to ns by interpolating between pairs (rdtsc, clock_gettime()) that ubt
 * reads itself, the tightest of a few tries each.  merge_clock_sample()
 * takes a new pair (the anchor) each round, before the rings are read, so
 * that the records read lie between the first pair and the anchor; the
 * slope is taken over pairs 10 to 20 s apart, following NTP's slow
 * frequency corrections.
 *
 * The queue.  A round (shim/run/run.c): T = merge_clock_sample(), then read
 * every source (each is in order, or nearly: the kernel's ring is shared
 * by the CPUs), pushing each record with its time; then pop and print
 * everything older than T - MERGE_SLACK_NS in time order, and keep the
 * rest for the next round: a record stamped before T but written after
 * the source was read (a producer preempted between its clock read and
 * its ring write) still comes in order while the delay is under the
 * slack.  At the end, pop everything.  Equal times pop in push order.
 */
#ifndef UBT_MERGE_H
#define UBT_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MERGE_SLACK_NS 2000000ull	/* 2 ms */
#define MERGE_REBASE_NS 10000000000ull	/* 10 s */

struct merge_clock {
	uint64_t tsc0, ns0;	/* the slope's first pair */
	uint64_t tscm, nsm;	/* the next first pair, once taken */
	uint64_t tsc1, ns1;	/* the anchor: the latest pair */
	double ns_per_tick;	/* over (tsc0, ns0) .. (tsc1, ns1) */
	bool mid;		/* (tscm, nsm) taken */
};

/* Is the time-stamp counter a clock (constant_tsc and nonstop_tsc, and
 * the kernel's clocksource), and UBT_NO_TSC unset (or 0)? */
bool merge_tsc_usable(void);
/* The counter now (serialised against earlier loads). */
uint64_t merge_rdtsc(void);
/* The first pair. */
void merge_clock_init(struct merge_clock *c);
/* A new anchor pair; returns its time in ns. */
uint64_t merge_clock_sample(struct merge_clock *c);
/* A counter value in CLOCK_MONOTONIC ns. */
uint64_t merge_clock_ns(const struct merge_clock *c, uint64_t tsc);

/* A record in the queue: its bytes follow (len of them). */
struct merge_ev {
	uint64_t ts;		/* CLOCK_MONOTONIC ns */
	uint64_t seq;		/* push order */
	uint32_t len;
	int src;		/* the caller's: where it came from */
	unsigned char data[];
};

struct merge_queue {
	struct merge_ev **heap;	/* a binary min-heap by (ts, seq) */
	size_t n, cap;
	uint64_t seq;
};

void merge_init(struct merge_queue *q);
/* Copy a record in. */
void merge_push(struct merge_queue *q, uint64_t ts, int src,
		const void *data, uint32_t len);
/* The oldest record if it is older than before (free() it), else NULL. */
struct merge_ev *merge_pop(struct merge_queue *q, uint64_t before);
/* The oldest record's time, UINT64_MAX when empty. */
uint64_t merge_oldest(const struct merge_queue *q);
void merge_release(struct merge_queue *q);

#endif
