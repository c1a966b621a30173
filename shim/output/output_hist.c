/*
 * hist() and lhist(): bucket indices, bounds with K/M/G suffixes, the
 * rows from the first to the last non-zero bucket with a 52-wide bar,
 * and their JSON.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* qsort_r, fwrite_unlocked */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "arena.h"
#include "format.h"
#include "output.h"
#include "types.h"
#include "util.h"
#include "output_int.h"

/* ---- histograms ---- */

uint64_t out_hist_index(int64_t v, int bits)
{
	uint64_t k = bits, l;

	if (v < 0)
		return 0;
	if (v == 0)
		return 1;
	l = 63 - __builtin_clzll((uint64_t)v);
	if (l < k)
		return 1 + (uint64_t)v;
	return 1 + (1ull << k) + (l - k) * (1ull << k) +
	       (((uint64_t)v >> (l - k)) - (1ull << k));
}

uint64_t out_lhist_index(int64_t v, int64_t min, int64_t max, int64_t step)
{
	if (v < min)
		return 0;
	if (v >= max)
		return 1 + (uint64_t)((max - min) / step);
	return 1 + (uint64_t)((v - min) / step);
}

size_t out_nbuckets(const struct type *t)
{
	if (!t)
		return 0;
	if (t->kind == TY_HIST)
		return ((size_t)1 << t->hist_bits) * (64 - t->hist_bits) + 1;
	if (t->kind == TY_LHIST && t->lhist_step > 0)
		return (size_t)((t->lhist_max - t->lhist_min) /
				t->lhist_step) + 2;
	return 0;
}

/* A bucket bound: 1024-multiples with a suffix, like bpftrace. */
static void sb_bound_u(struct sb *b, uint64_t u)
{
	static const char suffix[] = "KMGTPE";
	int s = 0;

	while (u && s < 6 && u % 1024 == 0) {
		u /= 1024;
		s++;
	}
	if (s)
		sb_printf(b, "%" PRIu64 "%c", u, suffix[s - 1]);
	else
		sb_printf(b, "%" PRIu64, u);
}

static void sb_bound(struct sb *b, int64_t v)
{
	if (v < 0)
		sb_printf(b, "%" PRId64, v);
	else
		sb_bound_u(b, (uint64_t)v);
}

/* Bucket i as [lo, hi]: has_lo/has_hi false for the open ends. */
struct bucket {
	bool has_lo, has_hi;
	int64_t lo, hi;		/* inclusive */
	uint64_t hi_excl;	/* exclusive high bound (hist labels) */
};

static void hist_bucket(const struct type *t, size_t i, struct bucket *bk)
{
	memset(bk, 0, sizeof(*bk));
	if (t->kind == TY_LHIST) {
		size_t nb = out_nbuckets(t) - 2;

		if (i == 0) {
			bk->has_hi = true;
			bk->hi = t->lhist_min - 1;
		} else if (i == nb + 1) {
			bk->has_lo = true;
			bk->lo = t->lhist_max;
		} else {
			bk->has_lo = bk->has_hi = true;
			bk->lo = t->lhist_min +
				 (int64_t)(i - 1) * t->lhist_step;
			bk->hi = bk->lo + t->lhist_step - 1;
		}
		bk->hi_excl = (uint64_t)bk->hi + 1;
		return;
	}
	if (i == 0) {
		bk->has_hi = true;
		bk->hi = -1;
		bk->hi_excl = 0;
		return;
	}
	bk->has_lo = bk->has_hi = true;
	if (i == 1) {
		bk->lo = bk->hi = 0;
		bk->hi_excl = 1;
		return;
	}
	{
		uint64_t k = t->hist_bits, n = 1ull << k, j = i - 1;
		uint64_t lo, width;

		if (j < n) {	/* one value per bucket */
			lo = j;
			width = 1;
		} else {
			uint64_t l = (j - n) / n + k, sub = (j - n) % n;

			width = 1ull << (l - k);
			lo = (1ull << l) + sub * width;
		}
		bk->lo = (int64_t)lo;
		bk->hi_excl = lo + width;
		bk->hi = (int64_t)(bk->hi_excl - 1);
	}
}

static void sb_bucket_label(struct sb *b, const struct type *t, size_t i)
{
	struct bucket bk;

	hist_bucket(t, i, &bk);
	if (!bk.has_lo) {
		sb_adds(b, "(..., ");
		if (t->kind == TY_LHIST)
			sb_bound(b, t->lhist_min);
		else
			sb_adds(b, "0");
		sb_adds(b, ")");
	} else if (!bk.has_hi) {
		sb_adds(b, "[");
		sb_bound(b, bk.lo);
		sb_adds(b, ", ...)");
	} else if (t->kind == TY_HIST && bk.hi == bk.lo) {
		sb_adds(b, "[");
		sb_bound(b, bk.lo);
		sb_adds(b, "]");
	} else {
		sb_adds(b, "[");
		sb_bound(b, bk.lo);
		sb_adds(b, ", ");
		if (t->kind == TY_LHIST)
			sb_bound(b, bk.hi + 1);
		else
			sb_bound_u(b, bk.hi_excl);
		sb_adds(b, ")");
	}
}

static bool bucket_range(const uint64_t *c, size_t n, size_t *first,
			 size_t *last)
{
	size_t i;

	for (i = 0; i < n && !c[i]; i++)
		;
	if (i == n)
		return false;
	*first = i;
	for (i = n; i > *first && !c[i - 1]; i--)
		;
	*last = i - 1;
	return true;
}

void sb_hist_text(struct sb *b, const struct type *t,
			 const uint64_t *c, uint64_t div)
{
	size_t n = out_nbuckets(t), first, last;
	uint64_t max = 0;

	if (!bucket_range(c, n, &first, &last))
		return;
	for (size_t i = first; i <= last; i++)
		if (c[i] > max)
			max = c[i];
	for (size_t i = first; i <= last; i++) {
		struct sb label = { 0 };
		uint64_t bar = max ? c[i] * OUT_BAR_WIDTH / max : 0;
		size_t j;

		sb_bucket_label(&label, t, i);
		sb_printf(b, "%-16s%8" PRIu64 " |", label.s, c[i] / div);
		for (j = 0; j < OUT_BAR_WIDTH; j++)
			sb_addc(b, j < bar ? '@' : ' ');
		sb_adds(b, "|\n");
		sb_release(&label);
	}
}

void sb_hist_json(struct sb *b, const struct type *t,
			 const uint64_t *c, uint64_t div)
{
	size_t n = out_nbuckets(t), first, last;

	sb_addc(b, '[');
	if (bucket_range(c, n, &first, &last)) {
		for (size_t i = first; i <= last; i++) {
			struct bucket bk;

			hist_bucket(t, i, &bk);
			if (i > first)
				sb_adds(b, ", ");
			sb_addc(b, '{');
			if (bk.has_lo)
				sb_printf(b, "\"min\": %" PRId64 ", ", bk.lo);
			if (bk.has_hi)
				sb_printf(b, "\"max\": %" PRId64 ", ", bk.hi);
			sb_printf(b, "\"count\": %" PRIu64 "}", c[i] / div);
		}
	}
	sb_addc(b, ']');
}
