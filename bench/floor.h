/* The floor of a probe on this CPU: see bench/floor.c. */
#ifndef UBT_BENCH_FLOOR_H
#define UBT_BENCH_FLOOR_H

/* bench_nop's code, jumping to the least trampoline of each shape once
 * bench_floor_init() patched them (before it, plain bench_nop). */
void bench_floor_jmp(void);
void bench_floor_call(void);
void bench_floor_tsc(void);
/* Not patched: two clock_gettime(CLOCK_MONOTONIC) through the vDSO, their
 * difference added to the counter (nsecs in user mode where the TSC is
 * not the kernel's clock). */
void bench_floor_vdso(void);
/* Patch them all (the process's own code): 0, or -errno (said on stderr). */
int bench_floor_init(void);

#endif
