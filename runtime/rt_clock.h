/* The runtime's clock (rt_clock.c), for rt.c. */
#ifndef UBT_RT_CLOCK_H
#define UBT_RT_CLOCK_H

#include <stdint.h>

/*
 * Find the vDSO's clock_gettime (once per rt_init()): at vdso (ubt read
 * it from the target's auxiliary vector), or 0: read that here.
 */
void rt_clock_init(uint64_t vdso);
/* CLOCK_MONOTONIC in ns: RT_FN_CLOCK_NS. */
uint64_t rt_clock_ns(void);

#endif
