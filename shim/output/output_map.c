/*
 * Maps printed as bpftrace prints them: entries sorted by value or key,
 * count/sum/min/max/avg/stats/hist/lhist values, text and JSON, all maps
 * at exit in name order.
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
#include "hits.h"
#include "output.h"
#include "types.h"
#include "util.h"
#include "compat.h"
#include "output_int.h"

/* ---- maps ---- */

enum map_class {
	MC_VALUE,	/* count, sum, min, max, integers: sorted by value */
	MC_AVG,		/* avg: sorted by average */
	MC_STATS,	/* stats: sorted by average */
	MC_HIST,	/* hist, lhist: sorted by total */
	MC_KEY,		/* everything else: sorted by key */
};

static enum map_class map_class(const struct type *t)
{
	switch (t->kind) {
	case TY_COUNT:
	case TY_SUM:
	case TY_MIN:
	case TY_MAX:
	case TY_INT:
	case TY_BOOL:
	case TY_POINTER:
	case TY_ENUM:
		return MC_VALUE;
	case TY_AVG:
		return MC_AVG;
	case TY_STATS:
		return MC_STATS;
	case TY_HIST:
	case TY_LHIST:
		return MC_HIST;
	default:
		return MC_KEY;
	}
}

/* The number a value-sorted entry sorts and prints by (bits of s64 or
 * u64 as the type is signed). */
static uint64_t entry_number(const struct type *t, const void *v)
{
	switch (t->kind) {
	case TY_COUNT:
	case TY_SUM:
		return out_load_int(v, 8, false);
	case TY_MIN:
	case TY_MAX: {
		struct out_minmax mm;

		memcpy(&mm, v, sizeof(mm));
		return (uint64_t)mm.value;
	}
	case TY_AVG:
	case TY_STATS: {
		struct out_avg a;

		memcpy(&a, v, sizeof(a));
		if (!a.count)
			return 0;
		if (t->is_signed)
			return (uint64_t)(a.total / (int64_t)a.count);
		return (uint64_t)a.total / a.count;
	}
	case TY_HIST:
	case TY_LHIST: {
		size_t n = out_nbuckets(t);
		uint64_t sum = 0, c;

		for (size_t i = 0; i < n; i++) {
			memcpy(&c, (const char *)v + i * 8, 8);
			sum += c;
		}
		return sum;
	}
	default:
		return out_load_int(v, t->size, out_type_signed(t));
	}
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_number(const struct type *t, uint64_t a, uint64_t b)
{
	if (out_type_signed(t) && t->kind != TY_HIST && t->kind != TY_LHIST)
		return (int64_t)a < (int64_t)b ? -1 : (int64_t)a > (int64_t)b;
	return cmp_u64(a, b);
}

/* bpftrace's key order: integers as u64, strings bytewise, tuples
 * element by element. */
static int cmp_value(const struct type *t, const void *a, const void *b)
{
	if (out_is_int_kind(t))
		return cmp_u64(out_load_int(a, t->size, out_type_signed(t)),
			       out_load_int(b, t->size, out_type_signed(t)));
	if (t->kind == TY_TUPLE) {
		for (int i = 0; i < t->nfields; i++) {
			size_t off = t->fields[i].offset;
			int c = cmp_value(t->fields[i].type,
					  (const char *)a + off,
					  (const char *)b + off);

			if (c)
				return c;
		}
		return 0;
	}
	return memcmp(a, b, t->size);
}

struct sort_item {
	const struct out_entry *e;
	uint64_t number;
	size_t index;
};

struct sort_ctx {
	const struct out_map *m;
	enum map_class mc;
};

static int cmp_items(const void *pa, const void *pb, void *pctx)
{
	const struct sort_item *a = pa, *b = pb;
	const struct sort_ctx *ctx = pctx;
	const struct out_map *m = ctx->m;
	int c = 0;

	if (ctx->mc != MC_KEY)
		c = cmp_number(m->value_type, a->number, b->number);
	if (!c && m->key_type) {
		if (ctx->mc == MC_HIST)
			c = memcmp(a->e->key, b->e->key, m->key_type->size);
		else
			c = cmp_value(m->key_type, a->e->key, b->e->key);
	}
	if (!c)
		c = cmp_u64(a->index, b->index);
	return c;
}

static struct sort_item *sort_entries(const struct out_map *m,
				      enum map_class mc)
{
	struct sort_item *items = xcalloc(m->nentries + 1, sizeof(*items));
	struct sort_ctx ctx = { .m = m, .mc = mc };

	for (size_t i = 0; i < m->nentries; i++) {
		items[i].e = &m->entries[i];
		items[i].index = i;
		if (mc != MC_KEY)
			items[i].number = entry_number(m->value_type,
						       m->entries[i].value);
	}
	qsort_r(items, m->nentries, sizeof(*items), cmp_items, &ctx);
	return items;
}

static uint64_t div_number(const struct type *t, uint64_t v, uint64_t div)
{
	if (out_type_signed(t))
		return (uint64_t)((int64_t)v / (int64_t)div);
	return v / div;
}

static void sb_number(struct sb *b, const struct type *t, uint64_t v)
{
	if (t->kind == TY_BOOL && compat_has(COMPAT_BOOL))
		sb_adds(b, v ? "true" : "false");
	else if (out_type_signed(t))
		sb_printf(b, "%" PRId64, (int64_t)v);
	else
		sb_printf(b, "%" PRIu64, v);
}

static int sb_map_entry_text(const struct out *o, struct sb *b,
			     const struct out_map *m,
			     enum map_class mc, const struct sort_item *it,
			     uint64_t div)
{
	const struct type *vt = m->value_type;
	int err;

	sb_adds(b, m->name);
	if (m->key_type) {
		sb_addc(b, '[');
		err = sb_key(o, b, m, it->e->key, false);
		if (err)
			return err;
		sb_addc(b, ']');
	}
	/* 0.17 leaves a space after a histogram's "@x:" */
	sb_adds(b, mc == MC_HIST && compat_has(COMPAT_HIST_HEADER) ?
		   ":" : ": ");
	switch (mc) {
	case MC_VALUE:
	case MC_AVG:
		if (vt->kind == TY_POINTER && compat_has(COMPAT_POINTER_HEX))
			sb_printf(b, "0x%" PRIx64, it->number / div);
		else if (mc == MC_VALUE && div == 1 &&
			 out_enum_name(vt, it->number))
			sb_adds(b, out_enum_name(vt, it->number));
		else
			sb_number(b, vt, div_number(vt, it->number, div));
		sb_addc(b, '\n');
		return 0;
	case MC_STATS: {
		struct out_avg a;

		memcpy(&a, it->e->value, sizeof(a));
		if (compat_has(COMPAT_STATS_RECORD))
			sb_printf(b, "{ .count = %" PRIu64 ", .average = ",
				  a.count);
		else
			sb_printf(b, "count %" PRIu64 ", average ", a.count);
		sb_number(b, vt, it->number);
		sb_adds(b, compat_has(COMPAT_STATS_RECORD) ? ", .total = " :
			   ", total ");
		sb_number(b, vt, (uint64_t)a.total);
		if (compat_has(COMPAT_STATS_RECORD))
			sb_adds(b, " }");
		sb_addc(b, '\n');
		return 0;
	}
	case MC_HIST:
		sb_addc(b, '\n');
		sb_hist_text(b, vt, it->e->value, div);
		sb_addc(b, '\n');
		return 0;
	case MC_KEY:
		err = sb_value(o, b, vt, it->e->value, VS_TEXT);
		if (err)
			return err;
		sb_addc(b, '\n');
		return 0;
	}
	BUG("bad map class");
}

static int sb_map_value_json(const struct out *o, struct sb *b,
			     const struct out_map *m,
			     enum map_class mc, const struct sort_item *it,
			     uint64_t div)
{
	const struct type *vt = m->value_type;

	switch (mc) {
	case MC_VALUE:
	case MC_AVG:
		sb_number(b, vt, div_number(vt, it->number, div));
		return 0;
	case MC_STATS: {
		struct out_avg a;

		memcpy(&a, it->e->value, sizeof(a));
		sb_printf(b, "{\"count\": %" PRIu64 ", \"average\": ",
			  a.count);
		sb_number(b, vt, it->number);
		sb_adds(b, ", \"total\": ");
		sb_number(b, vt, (uint64_t)a.total);
		sb_addc(b, '}');
		return 0;
	}
	case MC_HIST:
		sb_hist_json(b, vt, it->e->value, div);
		return 0;
	case MC_KEY:
		return sb_value(o, b, vt, it->e->value, VS_JSON);
	}
	BUG("bad map class");
}

static const char *json_map_type(enum map_class mc)
{
	switch (mc) {
	case MC_AVG:
	case MC_STATS:
		return "stats";
	case MC_HIST:
		return "hist";
	default:
		return "map";
	}
}

static int map_to_sb(const struct out *o, struct sb *b,
		     const struct out_map *m, bool json, uint64_t top,
		     uint64_t div)
{
	enum map_class mc = map_class(m->value_type);
	struct sort_item *items;
	size_t first = 0;
	int err = 0;

	if (m->value_type->kind == TY_TSERIES)
		return sb_tseries_map(o, b, m, json);
	if (!div)
		div = 1;
	if (mc == MC_STATS)
		div = 1;	/* bpftrace ignores top and div for stats */
	if (mc == MC_STATS)
		top = 0;
	if (!m->nentries && !m->key_type && m->value_type->kind == TY_COUNT &&
	    !compat_has(COMPAT_EMPTY_COUNT)) {
		/* bpftrace 0.17 shows a keyless count() as 0 when unset */
		static const uint64_t zero_count;
		struct out_entry e = { .value = &zero_count };
		struct out_map one = *m;

		one.entries = &e;
		one.nentries = 1;
		return map_to_sb(o, b, &one, json, top, div);
	}
	if (!m->nentries) {
		/* the empty line(s) bpftrace prints for an empty map */
		if (!json)
			sb_adds(b, mc == MC_AVG || mc == MC_STATS ? "\n\n" :
				"\n");
		return 0;
	}
	items = sort_entries(m, mc);
	if (top && m->nentries > top)
		first = m->nentries - top;
	if (json) {
		sb_printf(b, "{\"type\": \"%s\", \"data\": {",
			  json_map_type(mc));
		sb_json_string(b, m->name, strlen(m->name));
		sb_adds(b, ": ");
		if (m->key_type)
			sb_addc(b, '{');
	}
	for (size_t i = first; i < m->nentries && !err; i++) {
		if (!json) {
			err = sb_map_entry_text(o, b, m, mc, &items[i], div);
			continue;
		}
		if (m->key_type) {
			struct sb k = { 0 };

			if (i > first)
				sb_adds(b, ", ");
			err = sb_key(o, &k, m, items[i].e->key, true);
			if (!err)
				sb_json_string(b, k.s ? k.s : "", k.len);
			sb_release(&k);
			if (err)
				break;
			sb_adds(b, ": ");
		}
		err = sb_map_value_json(o, b, m, mc, &items[i], div);
		if (!m->key_type)
			break;
	}
	if (!err) {
		if (json)
			sb_adds(b, m->key_type ? "}}}\n" : "}}\n");
		else if (mc == MC_AVG || mc == MC_STATS)
			sb_addc(b, '\n');
	}
	free(items);
	return err;
}

int out_print_map(struct out *o, const struct out_map *m, uint64_t top,
		  uint64_t div)
{
	struct sb b = { 0 };
	int err = map_to_sb(o, &b, m, o->format == OUT_JSON, top, div);

	if (!err && b.len)
		fwrite(b.s, 1, b.len, o->f);
	sb_release(&b);
	return err;
}

static int cmp_map_names(const void *pa, const void *pb)
{
	const struct out_map *const *a = pa, *const *b = pb;

	return strcmp((*a)->name, (*b)->name);
}

int out_print_maps_at_exit(struct out *o, const struct out_map *const *maps,
			   int nmaps)
{
	fputs("\n\n", o->f);
	return out_print_maps(o, maps, nmaps);
}

int out_print_maps(struct out *o, const struct out_map *const *maps,
		   int nmaps)
{
	const struct out_map **sorted;
	int err = 0;

	if (nmaps <= 0)
		return 0;
	sorted = xcalloc(nmaps, sizeof(*sorted));
	memcpy(sorted, maps, nmaps * sizeof(*sorted));
	qsort(sorted, nmaps, sizeof(*sorted), cmp_map_names);
	for (int i = 0; i < nmaps; i++) {
		int e;

		/* --metrics' own counts of hits (frontend/hits.c) */
		if (hits_map_hidden(sorted[i]->name))
			continue;
		e = out_print_map(o, sorted[i], 0, 0);

		if (e && !err)
			err = e;
	}
	free(sorted);
	return err;
}
