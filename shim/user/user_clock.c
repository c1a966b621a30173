/*
 * nsecs in user-mode probes at the cost of one rdtsc: ubt keeps, in the
 * control block, a linear map from the time-stamp counter to the kernel's
 * CLOCK_MONOTONIC (rt_abi.h, clk_*), which probe code applies inline
 * (codegen/irb_native_helper.c, nat_clock()); no call, no system call.
 *
 * Only where the counter is a clock (merge_tsc_usable(): tsc is the
 * kernel's clocksource, constant and nonstop; UBT_NO_TSC unset).
 * Elsewhere clk_mult stays 0 and probes read the vDSO (RT_FN_CLOCK_NS).
 *
 * The map is a segment (tsc0, ns0, ns per tick) that ubt renews every
 * USER_CLOCK_EVERY_NS from pairs (rdtsc, clock_gettime()) it reads
 * itself (merge.h's merge_clock: the tightest of a few tries, the slope
 * over pairs 10 to 20 s apart, following NTP's frequency corrections).
 * A new segment starts where the old one is at that moment, so that
 * nsecs never steps back, as the kernel's clock never does; its slope is
 * the measured one, corrected so that the error e the old segment had
 * gained is gone USER_CLOCK_SLEW_NS later (slope * (1 - e / SLEW)), as
 * NTP slews.  The error is the slope's error times the time since the
 * last pair: a few ns on the first segments (slopes measured over tens of
 * ms), less later; an error above USER_CLOCK_STEP_NS (a suspended
 * machine, a first segment) is stepped instead.  tests/unit-merge checks
 * that converted reads lie between clock_gettime() reads and around
 * bpf_ktime_get_ns() within a microsecond.
 *
 * The first pair is taken when the memfd is placed; the first segment is
 * written once USER_CLOCK_FIRST_NS have passed (by then the probes are
 * built), so that its slope is measured over that long; until then
 * probes read the vDSO.
 */
#include "merge.h"
#include "user_clock.h"
#include "user_int.h"

#define USER_CLOCK_FIRST_NS 20000000ull	/* 20 ms */
#define USER_CLOCK_EVERY_NS 50000000ull	/* 50 ms */
#define USER_CLOCK_SLEW_NS 100000000.0	/* 100 ms */
#define USER_CLOCK_STEP_NS 1000000	/* 1 ms */
#define USER_CLOCK_SHIFT RT_CLK_SHIFT	/* probe code's constant */

uint64_t user_clock_at(const struct user_clock *k, uint64_t tsc)
{
	__int128 d = (__int128)(int64_t)(tsc - k->tsc0) * k->mult;

	return k->ns0 + (uint64_t)(int64_t)(d >> USER_CLOCK_SHIFT);
}

void user_clock_begin(struct user_clock *k)
{
	memset(k, 0, sizeof(*k));
	k->usable = merge_tsc_usable();
	if (k->usable)
		merge_clock_init(&k->mc);
}

/* Write the segment into the control block under its sequence count. */
static void user_clock_write(struct user_clock *k, struct rt_ctl *ctl)
{
	k->seq += 2;
	__atomic_store_n(&ctl->clk_seq, k->seq - 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&ctl->clk_tsc0, k->tsc0, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->clk_ns0, k->ns0, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->clk_mult, k->mult, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->clk_shift, USER_CLOCK_SHIFT, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->clk_seq, k->seq, __ATOMIC_RELEASE);
	k->writes++;
}

void user_clock_update(struct user_clock *k, struct rt_ctl *ctl)
{
	uint64_t now = mono_ns(), ns, tsc;
	double rate;
	int64_t err;
	bool fresh;

	if (!k->usable || !ctl)
		return;
	fresh = k->ctl != ctl;	/* none yet, or a new memfd (exec) */
	if (!fresh && now - k->last < USER_CLOCK_EVERY_NS)
		return;
	if (now - k->mc.ns0 < USER_CLOCK_FIRST_NS)
		return;
	ns = merge_clock_sample(&k->mc);
	tsc = k->mc.tsc1;
	rate = k->mc.ns_per_tick;
	if (!(rate > 0 && rate < 1000))
		return;
	err = k->mult ? (int64_t)(user_clock_at(k, tsc) - ns) : 0;
	if (fresh || !k->mult || err > USER_CLOCK_STEP_NS ||
	    err < -USER_CLOCK_STEP_NS) {
		k->ns0 = ns;
	} else {
		k->ns0 = user_clock_at(k, tsc);
		rate *= 1.0 - (double)err / USER_CLOCK_SLEW_NS;
	}
	k->tsc0 = tsc;
	k->mult = (uint64_t)(rate * (double)(1ull << USER_CLOCK_SHIFT) + 0.5);
	k->ctl = ctl;
	k->last = now;
	k->err = err;
	user_clock_write(k, ctl);
}

void user_clock_tick(struct ubt_user *u)
{
	if (u)
		user_clock_update(&u->clk, u->m.ctl);
}

bool user_clock_tsc(const struct ubt_user *u)
{
	return u && u->clk.usable;
}
