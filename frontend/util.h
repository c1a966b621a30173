/* Small shared helpers: BUG(), array sizes, likely/unlikely. */
#ifndef UBT_UTIL_H
#define UBT_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* An internal invariant was broken: a bug in ubt, never in the user's input. */
#define BUG(...)                                                           \
	do {                                                               \
		fprintf(stderr, "ubt: BUG at %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, "" __VA_ARGS__);                           \
		fputc('\n', stderr);                                       \
		abort();                                                   \
	} while (0)
#define BUG_ON(cond)                                    \
	do {                                            \
		if (cond)                               \
			BUG("%s", #cond);               \
	} while (0)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* CLOCK_MONOTONIC in nanoseconds (bpf_ktime_get_ns()'s clock) */
uint64_t mono_ns(void);

#endif
