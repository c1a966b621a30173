/*
 * Per-compilation arena: AST nodes, types and strings are allocated here
 * and freed all at once with arena_release().
 */
#ifndef UBT_ARENA_H
#define UBT_ARENA_H

#include <stdarg.h>
#include <stddef.h>

struct arena_chunk;

struct arena {
	struct arena_chunk *head;
};

void arena_init(struct arena *a);
void arena_release(struct arena *a);
/* Zeroed, 16-byte aligned memory; aborts on out-of-memory. */
void *arena_alloc(struct arena *a, size_t n);
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_printf(struct arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
char *arena_vprintf(struct arena *a, const char *fmt, va_list ap);

#endif
