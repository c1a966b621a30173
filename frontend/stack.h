/*
 * ustack/kstack values: the type carries the frame limit and the print
 * mode (types.h has no fields of its own for them: nelems holds the
 * limit, hist_bits the mode), so that codegen sizes the stack map and the
 * shim prints each value as its call asked.
 */
#ifndef UBT_STACK_H
#define UBT_STACK_H

#include "types.h"

#define STACK_DEFAULT_LIMIT 127	/* bpftrace's, and the kernel's
				 * perf_event_max_stack default */
#define STACK_MAX_LIMIT 1024

enum stack_mode {
	STACK_MODE_BPFTRACE,	/* "        sym+off" lines */
	STACK_MODE_PERF,	/* "\taddr sym+off (module)" lines */
	STACK_MODE_RAW,		/* "addr" lines, hex, no symbols */
};

static inline int stack_limit(const struct type *t)
{
	return t->nelems ? (int)t->nelems : STACK_DEFAULT_LIMIT;
}

static inline enum stack_mode stack_mode(const struct type *t)
{
	return (enum stack_mode)t->hist_bits;
}

static inline void stack_type_set(struct type *t, int limit,
				  enum stack_mode mode)
{
	t->nelems = limit;
	t->hist_bits = mode;
}

#endif
