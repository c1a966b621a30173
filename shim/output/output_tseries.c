/*
 * tseries() maps (bpftrace v0.26) printed as v0.26 prints them: in text a
 * graph of the last num_intervals intervals per key, in JSON a list of
 * {"interval_start", "value"} per key (frontend/func_tseries.c).
 *
 * A key's buckets reduce to one value per epoch (avg: value / count); a
 * bucket whose cells were never written (epoch 0, as after zero()) counts
 * as the value 0 at epoch 0, as in v0.26. The series of every key ends at
 * the latest epoch of the whole map and starts num_intervals - 1 epochs
 * before, or at the key's first epoch in that range if later; epochs
 * without a value print as "-" in text and are left out in JSON. Keys
 * print in the order of their bytes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* qsort_r */
#endif
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "output.h"
#include "tseries.h"
#include "types.h"
#include "util.h"
#include "output_int.h"

#define TS_GRAPH_WIDTH 53
#define TS_PADDING 21

void tseries_cell_merge(const struct type *t, struct tseries_cell *a,
			const struct tseries_cell *b)
{
	if (!b->epoch || b->epoch < a->epoch)
		return;
	if (!a->epoch || b->epoch > a->epoch) {
		*a = *b;
		return;
	}
	switch (t->ts_agg) {
	case TSERIES_AVG:
		a->meta += b->meta;
		/* fall through */
	case TSERIES_SUM:
		a->value = (int64_t)((uint64_t)a->value + (uint64_t)b->value);
		break;
	case TSERIES_MIN:
	case TSERIES_MAX: {
		bool less = t->is_signed ? b->value < a->value :
					   (uint64_t)b->value <
						   (uint64_t)a->value;

		if (less == (t->ts_agg == TSERIES_MIN) && b->value != a->value)
			a->value = b->value;
		break;
	}
	default:		/* the later timestamp's value */
		if (b->meta > a->meta) {
			a->value = b->value;
			a->meta = b->meta;
		}
		break;
	}
}

/* One point of a series: its epoch and value; missing when !has. */
struct ts_point {
	uint64_t epoch;
	int64_t value;		/* u64 when the type is unsigned */
	bool has;
};

/* A key's values by epoch (at most num_intervals), sorted by epoch. */
struct ts_series {
	const struct out_entry *e;
	struct ts_point *pts;
	size_t n;
	uint64_t latest;
};

static int cmp_point(const void *pa, const void *pb)
{
	const struct ts_point *a = pa, *b = pb;

	return a->epoch < b->epoch ? -1 : a->epoch > b->epoch;
}

static void ts_reduce(const struct type *t, const struct out_entry *e,
		      struct ts_series *s)
{
	const struct out_tseries *b = e->value;
	size_t num = (size_t)t->ts_num;

	s->e = e;
	s->pts = xcalloc(num + 1, sizeof(*s->pts));
	s->n = 0;
	s->latest = 0;
	for (size_t i = 0; i < num; i++) {
		struct ts_point p = { .has = true };
		bool dup = false;

		if (!b[i].set)
			continue;
		if (b[i].cell.epoch) {
			p.epoch = b[i].cell.epoch;
			p.value = b[i].cell.value;
			if (t->ts_agg == TSERIES_AVG && b[i].cell.meta)
				p.value = t->is_signed ?
					p.value / (int64_t)b[i].cell.meta :
					(int64_t)((uint64_t)p.value /
						  b[i].cell.meta);
		}
		for (size_t j = 0; j < s->n; j++)
			dup |= s->pts[j].epoch == p.epoch;
		if (dup)
			continue;
		s->pts[s->n++] = p;
		if (p.epoch > s->latest)
			s->latest = p.epoch;
	}
	qsort(s->pts, s->n, sizeof(*s->pts), cmp_point);
}

/* The points printed for s in [first, last]: malloc'ed, count in *n. */
static struct ts_point *ts_range(const struct ts_series *s, uint64_t first,
				 uint64_t last, size_t *n)
{
	uint64_t start = last;
	struct ts_point *out;
	size_t k = 0, j = 0;

	for (size_t i = 0; i < s->n; i++)
		if (s->pts[i].epoch >= first && s->pts[i].epoch < start)
			start = s->pts[i].epoch;
	*n = 0;
	if (first > last)
		return NULL;
	out = xcalloc(last - start + 2, sizeof(*out));
	for (uint64_t ep = start;; ep++) {
		while (j < s->n && s->pts[j].epoch < ep)
			j++;
		out[k].epoch = ep;
		if (j < s->n && s->pts[j].epoch == ep)
			out[k] = s->pts[j];
		k++;
		if (ep == last)
			break;
	}
	*n = k;
	return out;
}

static bool ts_less(const struct type *t, int64_t a, int64_t b)
{
	return t->is_signed ? a < b : (uint64_t)a < (uint64_t)b;
}

/* v0.26's distance(a, b): a - b as a signed number */
static int64_t ts_dist(const struct type *t, int64_t a, int64_t b)
{
	if (t->is_signed)
		return a - b;
	if ((uint64_t)a > (uint64_t)b)
		return (int64_t)((uint64_t)a - (uint64_t)b);
	return -(int64_t)((uint64_t)b - (uint64_t)a);
}

static void sb_ts_number(struct sb *b, const struct type *t, int64_t v)
{
	if (t->is_signed)
		sb_printf(b, "%" PRId64, v);
	else
		sb_printf(b, "%" PRIu64, (uint64_t)v);
}

/* "%H:%M:%S" in local time, then the fraction of the unit (digits) */
static void sb_ts_time(struct sb *b, uint64_t ns, int digits)
{
	time_t sec = (time_t)(ns / 1000000000);
	uint64_t frac = ns % 1000000000;
	struct tm tm;
	char buf[64];

	localtime_r(&sec, &tm);
	strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
	sb_adds(b, buf);
	if (digits == 3)
		sb_printf(b, ".%03" PRIu64, frac / 1000000);
	else if (digits == 6)
		sb_printf(b, ".%06" PRIu64, frac / 1000);
	else if (digits == 9)
		sb_printf(b, ".%09" PRIu64, frac);
}

static void sb_pad(struct sb *b, size_t n)
{
	while (n--)
		sb_addc(b, ' ');
}

/* The min and max line: min left in TS_PADDING, max right in the rest. */
static void sb_ts_bounds(struct sb *b, const struct type *t, bool has,
			 int64_t min, int64_t max)
{
	struct sb x = { 0 };

	if (has)
		sb_ts_number(&x, t, min);
	else
		sb_adds(&x, "null");
	sb_add(b, x.s, x.len);
	sb_pad(b, x.len < TS_PADDING ? TS_PADDING - x.len : 0);
	x.len = 0;
	if (has)
		sb_ts_number(&x, t, max);
	else
		sb_adds(&x, "null");
	sb_pad(b, x.len < TS_GRAPH_WIDTH - TS_PADDING ?
			  TS_GRAPH_WIDTH - TS_PADDING - x.len : 0);
	sb_add(b, x.s, x.len);
	sb_addc(b, '\n');
	sb_release(&x);
}

static void sb_ts_graph(struct sb *b, const struct type *t,
			const struct ts_point *p, size_t n)
{
	static const char *const units[] = { "", ".ms", ".μs", ".ns" };
	uint64_t interval, iv;
	int64_t min, max;
	bool has;
	int zero = 0, unit, digits;
	size_t tsz, fmtlen;
	char line[TS_GRAPH_WIDTH + 1];

	if (!n) {
		sb_adds(b, "<no data>");
		return;
	}
	min = max = p[0].value;
	has = p[0].has;
	for (size_t i = 0; i < n; i++) {
		if (!p[i].has)
			continue;
		if (!has) {
			min = max = p[i].value;
			has = true;
		}
		if (ts_less(t, p[i].value, min))
			min = p[i].value;
		if (ts_less(t, max, p[i].value))
			max = p[i].value;
	}
	/* v0.26 starts from the first point, which always has a value
	 * unless none has: then both print as "null" */
	has = p[0].has;
	if (has && min == max) {
		/* room on both sides, where the type has it */
		if (t->is_signed ? min > INT64_MIN : (uint64_t)min > 0)
			min--;
		if (t->is_signed ? max < INT64_MAX :
				   (uint64_t)max < UINT64_MAX)
			max++;
	}
	iv = (uint64_t)t->ts_interval;
	interval = (p[n - 1].epoch - p[0].epoch) * iv / (n > 1 ? n - 1 : 1);
	unit = interval >= 1000000000 ? 0 : interval >= 1000000 ? 1 :
	       interval >= 1000 ? 2 : 3;
	digits = unit * 3;
	tsz = 8 + (unit ? 1 + (size_t)digits : 0);
	sb_pad(b, tsz + 1);
	sb_ts_bounds(b, t, has, min, max);
	sb_adds(b, "hh:mm:ss");
	sb_adds(b, units[unit]);
	fmtlen = 8 + strlen(units[unit]);
	sb_pad(b, fmtlen < tsz + 1 ? tsz + 1 - fmtlen : 0);
	sb_addc(b, '|');
	for (int i = 0; i < TS_GRAPH_WIDTH - 2; i++)
		sb_addc(b, '_');
	sb_adds(b, "|\n");
	/* a '.' column at 0 when the range spans it */
	if (has && t->is_signed && min < 0 && max > 0)
		zero = (int)((float)TS_GRAPH_WIDTH *
			     (float)ts_dist(t, min, 0) /
			     (float)ts_dist(t, min, max));
	for (size_t i = 0; i < n; i++) {
		memset(line, ' ', TS_GRAPH_WIDTH);
		line[TS_GRAPH_WIDTH] = '\0';
		line[0] = '|';
		line[TS_GRAPH_WIDTH - 1] = '|';
		if (zero > 0)
			line[zero] = '.';
		sb_ts_time(b, p[i].epoch * iv, digits);
		sb_addc(b, ' ');
		if (p[i].has) {
			int off = TS_GRAPH_WIDTH / 2;

			if (min != max)
				off = (int)((float)(TS_GRAPH_WIDTH - 1) *
					    (float)ts_dist(t, min, p[i].value) /
					    (float)ts_dist(t, min, max));
			if (off < 0)
				off = 0;
			if (off > TS_GRAPH_WIDTH - 1)
				off = TS_GRAPH_WIDTH - 1;
			line[off] = '*';
			sb_adds(b, line);
			sb_addc(b, ' ');
			sb_ts_number(b, t, p[i].value);
		} else {
			sb_adds(b, line);
			sb_adds(b, " -");
		}
		sb_addc(b, '\n');
	}
	sb_pad(b, tsz);
	sb_addc(b, ' ');
	sb_addc(b, 'v');
	for (int i = 0; i < TS_GRAPH_WIDTH - 2; i++)
		sb_addc(b, '_');
	sb_adds(b, "v\n");
	sb_pad(b, tsz + 1);
	sb_ts_bounds(b, t, has, min, max);
}

/* "1970-01-01 00:00:00.500000000": UTC, nanoseconds */
static void sb_ts_json_time(struct sb *b, uint64_t ns)
{
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;
	char buf[64];

	gmtime_r(&sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
	sb_printf(b, "%s.%09" PRIu64, buf, ns % 1000000000);
}

static void sb_ts_json(struct sb *b, const struct type *t,
		       const struct ts_point *p, size_t n)
{
	bool first = true;

	sb_addc(b, '[');
	for (size_t i = 0; i < n; i++) {
		if (!p[i].has)
			continue;
		if (!first)
			sb_addc(b, ',');
		first = false;
		sb_adds(b, "{\"interval_start\":\"");
		sb_ts_json_time(b, p[i].epoch * (uint64_t)t->ts_interval);
		sb_adds(b, "\",\"value\":");
		sb_ts_number(b, t, p[i].value);
		sb_addc(b, '}');
	}
	sb_addc(b, ']');
}

static int cmp_series_key(const void *pa, const void *pb, void *ctx)
{
	const struct ts_series *a = pa, *b = pb;
	const struct out_map *m = ctx;

	return memcmp(a->e->key, b->e->key, m->key_type->size);
}

int sb_tseries_map(const struct out *o, struct sb *b, const struct out_map *m,
		   bool json)
{
	const struct type *t = m->value_type;
	struct ts_series *s;
	uint64_t last = 0, first;
	int err = 0;

	if (!m->nentries)
		return 0;	/* v0.26 prints nothing for an empty map */
	s = xcalloc(m->nentries, sizeof(*s));
	for (size_t i = 0; i < m->nentries; i++) {
		ts_reduce(t, &m->entries[i], &s[i]);
		if (s[i].latest > last)
			last = s[i].latest;
	}
	first = last - (uint64_t)t->ts_num + 1;
	if (m->key_type)
		qsort_r(s, m->nentries, sizeof(*s), cmp_series_key,
			(void *)m);
	if (json) {
		sb_adds(b, "{\"type\": \"tseries\", \"data\": {");
		sb_json_string(b, m->name, strlen(m->name));
		sb_adds(b, ": ");
		if (m->key_type)
			sb_addc(b, '{');
	}
	for (size_t i = 0; i < m->nentries && !err; i++) {
		size_t n;
		struct ts_point *p = ts_range(&s[i], first, last, &n);
		struct sb k = { 0 };

		if (m->key_type)
			err = sb_key(o, &k, m, s[i].e->key, json);
		if (!err && json) {
			if (m->key_type) {
				if (i)
					sb_adds(b, ", ");
				sb_json_string(b, k.s ? k.s : "", k.len);
				sb_adds(b, ": ");
			}
			sb_ts_json(b, t, p, n);
		} else if (!err) {
			sb_adds(b, m->name);
			if (m->key_type) {
				sb_addc(b, '[');
				sb_add(b, k.s ? k.s : "", k.len);
				sb_addc(b, ']');
			}
			sb_adds(b, ":\n");
			sb_ts_graph(b, t, p, n);
			sb_addc(b, '\n');
		}
		sb_release(&k);
		free(p);
		if (!m->key_type)
			break;
	}
	if (json && !err)
		sb_adds(b, m->key_type ? "}}}\n" : "}}\n");
	for (size_t i = 0; i < m->nentries; i++)
		free(s[i].pts);
	free(s);
	return err;
}
