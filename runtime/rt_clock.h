/* The runtime's clock (rt_clock.c), for rt.c. */
#ifndef UBT_RT_CLOCK_H
#define UBT_RT_CLOCK_H

#include <stdint.h>

/* Find the vDSO's clock_gettime (once per rt_init()). */
void rt_clock_init(void);
/* CLOCK_MONOTONIC in ns: RT_FN_CLOCK_NS. */
uint64_t rt_clock_ns(void);

#endif
