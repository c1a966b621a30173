/*
 * The growable string every part of output formats into (output_int.h).
 * Below all of them: it calls nothing of output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "output_int.h"

static void sb_grow(struct sb *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return;
	while (b->len + n + 1 > b->cap)
		b->cap = b->cap ? b->cap * 2 : 128;
	b->s = xrealloc(b->s, b->cap);
}

void sb_add(struct sb *b, const char *s, size_t n)
{
	sb_grow(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void sb_addc(struct sb *b, char c)
{
	sb_add(b, &c, 1);
}

void sb_adds(struct sb *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void sb_vprintf(struct sb *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n;

	sb_grow(b, 64);
	va_copy(aq, ap);
	n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, aq);
	va_end(aq);
	if (n < 0) {
		b->s[b->len] = '\0';
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		sb_grow(b, n);
		vsnprintf(b->s + b->len, n + 1, fmt, ap);
	}
	b->len += n;
}

void __attribute__((format(printf, 2, 3)))
sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(b, fmt, ap);
	va_end(ap);
}

void sb_release(struct sb *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}
