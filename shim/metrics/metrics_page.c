/*
 * One scrape's page: every map read now (through the loop's maps
 * source: user-mode and kernel values merged as the exit printout merges
 * them), written in Prometheus's text format 0.0.4 or OpenMetrics 1.0,
 * then ubt's own series.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "output.h"
#include "types.h"
#include "util.h"
#include "metrics_int.h"

void mbuf_add(struct mbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = b->cap ? b->cap : 64;
		while (b->len + n + 1 > b->cap)
			b->cap *= 2;
		b->s = xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

void mbuf_adds(struct mbuf *b, const char *s)
{
	mbuf_add(b, s, strlen(s));
}

void mbuf_printf(struct mbuf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(tmp)) {
		mbuf_add(b, tmp, n);
		return;
	}
	{
		char *big = xcalloc(1, n + 1);

		va_start(ap, fmt);
		vsnprintf(big, n + 1, fmt, ap);
		va_end(ap);
		mbuf_add(b, big, n);
		free(big);
	}
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if none. */
static size_t metrics_utf8(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return len;
}

void mbuf_escape(struct mbuf *b, const char *s, size_t n, bool quote)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		size_t l = metrics_utf8(u + i, n - i);

		if (!l) {
			mbuf_adds(b, "\xef\xbf\xbd");	/* U+FFFD */
			i++;
			continue;
		}
		if (u[i] == '\\')
			mbuf_adds(b, "\\\\");
		else if (u[i] == '\n')
			mbuf_adds(b, "\\n");
		else if (u[i] == '"' && quote)
			mbuf_adds(b, "\\\"");
		else
			mbuf_add(b, s + i, l);
		i += l;
	}
}

/* ---- one map ------------------------------------------------------- */

struct metrics_scrape {
	struct metrics *m;
	struct mbuf *b;
	bool om;		/* OpenMetrics */
	uint64_t *dropped;	/* keys left out, by map */
	uint64_t *hits;		/* by probe index; ~0: not counted */
	/* MK_HIST_SUM maps, by map index: their series by label text,
	 * sorted (metrics_collect_sums()) */
	struct metrics_sums *sums;
};

struct metrics_sum {
	char *labels;
	char num[32];
};

struct metrics_sums {
	struct metrics_sum *v;
	size_t n;
};

/* An entry served: its label text ("key=\"a\"", no braces), its sort
 * weight. */
struct metrics_item {
	const void *key;
	const void *value;
	char *labels;
	uint64_t weight;
};

static int64_t metrics_avg(const struct type *t, const void *v)
{
	struct out_avg a;

	memcpy(&a, v, sizeof(a));
	if (!a.count)
		return 0;
	if (t->is_signed)
		return a.total / (int64_t)a.count;
	return (int64_t)((uint64_t)a.total / a.count);
}

static uint64_t metrics_weight(const struct type *t, const void *v)
{
	uint64_t w = 0, c;

	switch (t->kind) {
	case TY_HIST:
	case TY_LHIST:
		for (size_t i = 0; i < out_nbuckets(t); i++) {
			memcpy(&c, (const char *)v + i * 8, 8);
			w += c;
		}
		return w;
	case TY_AVG:
	case TY_STATS: {
		struct out_avg a;

		memcpy(&a, v, sizeof(a));
		return a.count;
	}
	default:
		memcpy(&w, v, t->size < 8 ? t->size : 8);
		return w;
	}
}

static int metrics_cmp_weight(const void *x, const void *y)
{
	const struct metrics_item *a = x, *b = y;

	return a->weight < b->weight ? 1 : a->weight > b->weight ? -1 : 0;
}

static uint64_t metrics_hash(const char *p)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return h;
}

/* Drop the items whose labels an earlier item has (*dropped counts
 * them); the number left. */
static size_t metrics_dedup(struct metrics_item *it, size_t n,
			    uint64_t *dropped)
{
	size_t nh = 16, w = 0;
	size_t *h;

	while (nh < 2 * n)
		nh *= 2;
	h = xcalloc(nh, sizeof(*h));
	for (size_t i = 0; i < n; i++) {
		size_t j = metrics_hash(it[i].labels) & (nh - 1);
		bool dup = false;

		while (h[j]) {
			if (!strcmp(it[h[j] - 1].labels, it[i].labels)) {
				dup = true;
				break;
			}
			j = (j + 1) & (nh - 1);
		}
		if (dup) {
			free(it[i].labels);
			(*dropped)++;
			continue;
		}
		it[w] = it[i];
		h[j] = ++w;
	}
	free(h);
	return w;
}

/* The label text of a key, or NULL when it does not print. */
static char *metrics_labels(const struct out_map *om, const struct out *o,
			    const void *key)
{
	const struct type *kt = om->key_type;
	struct mbuf b = { 0 };
	bool fields;

	if (!kt)
		return xstrdup("");
	/* several keys, a tuple or a record: a label per field */
	fields = om->nkeys > 1 || kt->kind == TY_TUPLE;
	for (int i = 0; i < (fields ? kt->nfields : 1); i++) {
		const struct type *ft = fields ? kt->fields[i].type : kt;
		const char *p = (const char *)key +
				(fields ? kt->fields[i].offset : 0);
		const char *name = fields ? kt->fields[i].name : NULL;
		char *s = out_key_string(o, ft, p);

		if (!s) {
			free(b.s);
			return NULL;
		}
		if (name)	/* a record's field (metrics_plan.c) */
			mbuf_printf(&b, "%s%s=\"", i ? "," : "", name);
		else if (fields)
			mbuf_printf(&b, "%skey%d=\"", i ? "," : "", i);
		else
			mbuf_adds(&b, "key=\"");
		mbuf_escape(&b, s, strlen(s), true);
		mbuf_adds(&b, "\"");
		free(s);
	}
	return b.s ? b.s : xstrdup("");
}

/* name{labels[,extra]} value */
static void metrics_sample(struct mbuf *b, const char *family,
			   const char *suffix, const char *labels,
			   const char *extra, const char *value)
{
	bool any = (labels && *labels) || extra;

	mbuf_adds(b, family);
	mbuf_adds(b, suffix);
	if (any) {
		mbuf_adds(b, "{");
		if (labels && *labels)
			mbuf_adds(b, labels);
		if (extra)
			mbuf_printf(b, "%s%s", labels && *labels ? "," : "",
				    extra);
		mbuf_adds(b, "}");
	}
	mbuf_printf(b, " %s\n", value);
}

static void metrics_header(struct metrics_scrape *s, const char *family,
			   const char *suffix, const char *type,
			   const char *help)
{
	struct mbuf *b = s->b;
	/* text 0.0.4 names a counter by its sample name (_total) */
	const char *suf = s->om ? "" : suffix;

	mbuf_printf(b, "# HELP %s%s ", family, suf);
	mbuf_escape(b, help, strlen(help), false);
	mbuf_printf(b, "\n# TYPE %s%s %s\n", family, suf, type);
}

static void metrics_num(char *buf, size_t n, bool sgn, uint64_t v)
{
	if (sgn)
		snprintf(buf, n, "%" PRId64, (int64_t)v);
	else
		snprintf(buf, n, "%" PRIu64, v);
}

/*
 * The largest integer of bucket i (hist: out_hist_index(), lhist:
 * out_lhist_index()); false for the last bucket (+Inf only).
 */
static bool metrics_bucket_le(const struct type *t, uint64_t i, char *buf,
			      size_t n)
{
	if (t->kind == TY_LHIST) {
		int64_t nb = (t->lhist_max - t->lhist_min) / t->lhist_step;

		if ((int64_t)i > nb)
			return false;
		snprintf(buf, n, "%" PRId64,
			 t->lhist_min + (int64_t)i * t->lhist_step - 1);
		return true;
	}
	{
		int k = t->hist_bits;
		uint64_t pk = 1ull << k, j, l, hi;

		if (i == 0) {
			snprintf(buf, n, "-1");
			return true;
		}
		if (i == 1) {
			snprintf(buf, n, "0");
			return true;
		}
		if (i <= pk) {	/* one bucket per value v = i - 1 */
			snprintf(buf, n, "%" PRIu64, i - 1);
			return true;
		}
		j = (i - 1 - pk) % pk;
		l = (i - 1 - pk) / pk + k;
		if (l >= 64)
			return false;
		/* [(pk + j) << (l - k), (pk + j + 1) << (l - k)) */
		if (l == 63 && j == pk - 1)
			hi = UINT64_MAX;
		else
			hi = ((pk + j + 1) << (l - k)) - 1;
		snprintf(buf, n, "%" PRIu64, hi);
		return true;
	}
}

static int metrics_sum_cmp(const void *a, const void *b)
{
	return strcmp(((const struct metrics_sum *)a)->labels,
		      ((const struct metrics_sum *)b)->labels);
}

/* The _sum of a histogram's series (its labels), NULL when not kept. */
static const char *metrics_sum_for(struct metrics_scrape *s,
				   const struct metrics_map *mm,
				   const char *labels)
{
	struct metrics_sums *ss;
	struct metrics_sum key = { .labels = (char *)labels }, *f;

	if (mm->sum_map < 0 || !s->sums)
		return NULL;
	ss = &s->sums[mm->sum_map];
	f = ss->n ? bsearch(&key, ss->v, ss->n, sizeof(*ss->v),
			    metrics_sum_cmp) :
		    NULL;
	return f ? f->num : NULL;
}

static void metrics_hist(struct metrics_scrape *s, struct metrics_map *mm,
			 const struct type *t, struct metrics_item *it,
			 size_t n)
{
	size_t nb = out_nbuckets(t);
	char le[48], num[32];

	/* widen the buckets served to every non-empty one */
	for (size_t e = 0; e < n; e++)
		for (size_t i = 0; i < nb; i++) {
			uint64_t c;

			memcpy(&c, (const char *)it[e].value + i * 8, 8);
			if (!c)
				continue;
			if (!mm->seen || i < mm->lo)
				mm->lo = i;
			if (!mm->seen || i > mm->hi)
				mm->hi = i;
			mm->seen = true;
		}
	metrics_header(s, mm->family, "", "histogram", mm->help);
	for (size_t e = 0; e < n; e++) {
		const uint64_t *v = it[e].value;
		const char *sum;
		uint64_t cum = 0;

		for (size_t i = 0; i < mm->lo && i < nb; i++)
			cum += v[i];
		for (size_t i = mm->lo; mm->seen && i <= mm->hi && i < nb;
		     i++) {
			char extra[64];

			cum += v[i];
			if (!metrics_bucket_le(t, i, le, sizeof(le)))
				continue;
			snprintf(extra, sizeof(extra), "le=\"%s\"", le);
			metrics_num(num, sizeof(num), false, cum);
			metrics_sample(s->b, mm->family, "_bucket",
				       it[e].labels, extra, num);
		}
		for (size_t i = mm->seen ? mm->hi + 1 : 0; i < nb; i++)
			cum += v[i];
		metrics_num(num, sizeof(num), false, cum);
		metrics_sample(s->b, mm->family, "_bucket", it[e].labels,
			       "le=\"+Inf\"", num);
		/* OpenMetrics: _count only beside a _sum, which hist()
		 * does not keep: the program's @X_sum, where it has one */
		sum = metrics_sum_for(s, mm, it[e].labels);
		if (!s->om || sum)
			metrics_sample(s->b, mm->family, "_count",
				       it[e].labels, NULL, num);
		if (sum)
			metrics_sample(s->b, mm->family, "_sum", it[e].labels,
				       NULL, sum);
	}
}

static void metrics_values(struct metrics_scrape *s,
			   const struct metrics_map *mm, const struct type *t,
			   struct metrics_item *it, size_t n)
{
	bool counter = mm->kind == MK_COUNTER;
	char num[32], avg_help[512];

	metrics_header(s, mm->family, counter ? "_total" : "",
		       counter ? "counter" : mm->kind == MK_SUMMARY ?
				 "summary" : "gauge", mm->help);
	for (size_t e = 0; e < n; e++) {
		const void *v = it[e].value;

		switch (t->kind) {
		case TY_MIN:
		case TY_MAX: {
			struct out_minmax x;

			memcpy(&x, v, sizeof(x));
			if (!x.set)
				continue;
			metrics_num(num, sizeof(num), t->is_signed, x.value);
			break;
		}
		case TY_AVG:
			metrics_num(num, sizeof(num), true, metrics_avg(t, v));
			break;
		case TY_STATS: {
			struct out_avg a;

			memcpy(&a, v, sizeof(a));
			metrics_num(num, sizeof(num), false, a.count);
			metrics_sample(s->b, mm->family, "_count",
				       it[e].labels, NULL, num);
			metrics_num(num, sizeof(num), t->is_signed, a.total);
			metrics_sample(s->b, mm->family, "_sum", it[e].labels,
				       NULL, num);
			continue;
		}
		case TY_COUNT:
		case TY_SUM: {
			uint64_t x;

			memcpy(&x, v, 8);
			metrics_num(num, sizeof(num), t->is_signed, x);
			break;
		}
		default: {
			uint64_t x = 0;

			memcpy(&x, v, t->size < 8 ? t->size : 8);
			if (t->is_signed && t->size < 8 &&
			    (x >> (8 * t->size - 1)) & 1)
				x |= ~0ull << (8 * t->size);
			metrics_num(num, sizeof(num), t->is_signed, x);
			break;
		}
		}
		metrics_sample(s->b, mm->family, counter ? "_total" : "",
			       it[e].labels, NULL, num);
	}
	if (mm->kind != MK_SUMMARY)
		return;
	/* stats(): the average as the printout shows it, a gauge */
	snprintf(avg_help, sizeof(avg_help), "the average of %s",
		 mm->help);
	{
		char fam[256];

		snprintf(fam, sizeof(fam), "%s_avg", mm->family);
		metrics_header(s, fam, "", "gauge", avg_help);
		for (size_t e = 0; e < n; e++) {
			struct out_avg a;

			memcpy(&a, it[e].value, sizeof(a));
			metrics_num(num, sizeof(num), true,
				    metrics_avg(t, it[e].value));
			if (a.count)
				metrics_sample(s->b, fam, "", it[e].labels,
					       NULL, num);
		}
	}
}

/* Before the page: the series of each histogram's @X_sum. */
static int metrics_collect_sums(void *ectx, int map, const struct out_map *om,
				const struct out *o)
{
	struct metrics_scrape *s = ectx;
	struct metrics_sums *ss;
	bool sgn = om->value_type && om->value_type->is_signed;

	if (map < 0 || map >= s->m->nmaps ||
	    s->m->maps[map].kind != MK_HIST_SUM)
		return 0;
	ss = &s->sums[map];
	ss->v = xcalloc(om->nentries + 1, sizeof(*ss->v));
	for (size_t i = 0; i < om->nentries; i++) {
		char *l = metrics_labels(om, o, om->entries[i].key);
		uint64_t x;

		if (!l)
			continue;
		memcpy(&x, om->entries[i].value, sizeof(x));
		ss->v[ss->n].labels = l;
		metrics_num(ss->v[ss->n].num, sizeof(ss->v[ss->n].num), sgn,
			    x);
		ss->n++;
	}
	qsort(ss->v, ss->n, sizeof(*ss->v), metrics_sum_cmp);
	return 0;
}

static int metrics_one_map(void *ectx, int map, const struct out_map *om,
			   const struct out *o)
{
	struct metrics_scrape *s = ectx;
	struct metrics_map *mm;
	struct metrics_item *it;
	size_t n = 0;

	if (map < 0 || map >= s->m->nmaps)
		return 0;
	mm = &s->m->maps[map];
	if (mm->kind == MK_SKIP || mm->kind == MK_HIST_SUM)
		return 0;
	if (mm->kind == MK_HITS) {
		uint64_t v = 0;

		if (om->nentries && om->entries[0].value)
			memcpy(&v, om->entries[0].value, sizeof(v));
		if (mm->probe < s->m->nprobes)
			s->hits[mm->probe] = v;
		return 0;
	}
	it = xcalloc(om->nentries + 1, sizeof(*it));
	for (size_t i = 0; i < om->nentries; i++) {
		char *l = metrics_labels(om, o, om->entries[i].key);

		if (!l) {
			s->dropped[map]++;
			continue;
		}
		it[n++] = (struct metrics_item){
			.key = om->entries[i].key,
			.value = om->entries[i].value,
			.labels = l,
			.weight = metrics_weight(om->value_type,
						 om->entries[i].value),
		};
	}
	/* over the limit: the keys of the largest values stay */
	if (n > s->m->max_keys) {
		qsort(it, n, sizeof(*it), metrics_cmp_weight);
		for (size_t i = s->m->max_keys; i < n; i++)
			free(it[i].labels);
		s->dropped[map] += n - s->m->max_keys;
		n = s->m->max_keys;
	}
	/* keys whose text is the same (one series each): the first stays */
	n = metrics_dedup(it, n, &s->dropped[map]);
	/* a keyless count() or sum() prints 0 before its first hit: a
	 * counter from 0, so that rate() sees the first increase */
	if (!n && mm->kind == MK_COUNTER && !om->key_type) {
		static const uint64_t zero[2];

		it[n++] = (struct metrics_item){ .value = zero,
						 .labels = xstrdup("") };
	}
	if (mm->kind == MK_HIST)
		metrics_hist(s, mm, om->value_type, it, n);
	else
		metrics_values(s, mm, om->value_type, it, n);
	for (size_t i = 0; i < n; i++)
		free(it[i].labels);
	free(it);
	return 0;
}

/* ---- ubt's own series ---------------------------------------------- */

static void metrics_self_series(struct metrics_scrape *s, double secs)
{
	struct metrics *m = s->m;
	struct metrics_self self = { 0 };
	struct mbuf *b = s->b;
	char num[64];

	if (m->self_fn)
		m->self_fn(m->self_ctx, &self);
	metrics_header(s, "ubt_probe_mode", "", "gauge",
		       "where each probe runs: user (inside the process) or "
		       "kernel, or both");
	for (int i = 0; i < m->nprobes; i++) {
		mbuf_adds(b, "ubt_probe_mode{probe=\"");
		mbuf_escape(b, m->probes[i], strlen(m->probes[i]), true);
		mbuf_printf(b, "\",mode=\"%s\"} 1\n", m->where[i]);
	}
	metrics_header(s, "ubt_probe_hits", "_total", "counter",
		       "times each probe fired, before its filter (BEGIN and "
		       "END leave it out)");
	for (int i = 0; i < m->nprobes; i++) {
		if (s->hits[i] == UINT64_MAX)
			continue;
		mbuf_adds(b, "ubt_probe_hits_total{probe=\"");
		mbuf_escape(b, m->probes[i], strlen(m->probes[i]), true);
		mbuf_printf(b, "\"} %" PRIu64 "\n", s->hits[i]);
	}
	metrics_header(s, "ubt_events_lost", "_total", "counter",
		       "events dropped by full rings, kernel and user mode");
	mbuf_printf(b, "ubt_events_lost_total %" PRIu64 "\n",
		    self.events_lost);
	metrics_header(s, "ubt_map_updates_dropped", "_total", "counter",
		       "map updates that found the map full");
	for (int i = 0; i < m->nmaps; i++) {
		if (m->maps[i].kind == MK_HITS)
			continue;
		mbuf_adds(b, "ubt_map_updates_dropped_total{map=\"");
		mbuf_escape(b, m->maps[i].name, strlen(m->maps[i].name), true);
		mbuf_printf(b, "\"} %" PRIu64 "\n",
			    self.updates_dropped ? self.updates_dropped[i] :
						   0);
	}
	free(self.updates_dropped);
	if (self.have_taken) {
		metrics_header(s, "ubt_processes_taken", "_total", "counter",
			       "processes user-mode probes were placed in");
		mbuf_printf(b, "ubt_processes_taken_total %" PRIu64 "\n",
			    self.processes_taken);
	}
	metrics_header(s, "ubt_metrics_keys_dropped", "", "gauge",
		       "keys of a map left out of this page (over "
		       "--metrics-max-keys, or the same label text twice)");
	for (int i = 0; i < m->nmaps; i++) {
		if (m->maps[i].kind == MK_SKIP ||
		    m->maps[i].kind == MK_HITS ||
		    m->maps[i].kind == MK_HIST_SUM)
			continue;
		mbuf_adds(b, "ubt_metrics_keys_dropped{map=\"");
		mbuf_escape(b, m->maps[i].name, strlen(m->maps[i].name), true);
		mbuf_printf(b, "\"} %" PRIu64 "\n", s->dropped[i]);
	}
	metrics_header(s, "ubt_metrics_series_dropped", "_total", "counter",
		       "series left out of the pages so far, summed over "
		       "pages (ubt_metrics_keys_dropped added up)");
	for (int i = 0; i < m->nmaps; i++) {
		if (m->maps[i].kind == MK_SKIP ||
		    m->maps[i].kind == MK_HITS ||
		    m->maps[i].kind == MK_HIST_SUM)
			continue;
		m->maps[i].dropped += s->dropped[i];
		mbuf_adds(b, "ubt_metrics_series_dropped_total{map=\"");
		mbuf_escape(b, m->maps[i].name, strlen(m->maps[i].name), true);
		mbuf_printf(b, "\"} %" PRIu64 "\n", m->maps[i].dropped);
	}
	metrics_header(s, "ubt_metrics_scrapes", "_total", "counter",
		       "pages served");
	mbuf_printf(b, "ubt_metrics_scrapes_total %" PRIu64 "\n", m->scrapes);
	metrics_header(s, "ubt_metrics_scrape_duration_seconds", "", "gauge",
		       "time taken to read the maps for this page");
	snprintf(num, sizeof(num), "%.9f", secs);
	mbuf_printf(b, "ubt_metrics_scrape_duration_seconds %s\n", num);
}

char *metrics_page(struct metrics *m, bool openmetrics, size_t *len)
{
	struct mbuf b = { 0 };
	struct metrics_scrape s = { .m = m, .b = &b, .om = openmetrics };
	uint64_t t0 = mono_ns();

	s.dropped = xcalloc(m->nmaps + 1, sizeof(*s.dropped));
	s.hits = xcalloc(m->nprobes + 1, sizeof(*s.hits));
	for (int i = 0; i < m->nprobes; i++)
		s.hits[i] = UINT64_MAX;
	for (int i = 0; i < m->nmaps; i++)
		if (m->maps[i].kind == MK_HITS && m->maps[i].probe < m->nprobes)
			s.hits[m->maps[i].probe] = 0;
	m->scrapes++;
	if (m->maps_fn && m->has_sums) {
		s.sums = xcalloc(m->nmaps + 1, sizeof(*s.sums));
		m->maps_fn(m->maps_ctx, metrics_collect_sums, &s);
	}
	if (m->maps_fn)
		m->maps_fn(m->maps_ctx, metrics_one_map, &s);
	metrics_self_series(&s, (mono_ns() - t0) / 1e9);
	if (openmetrics)
		mbuf_adds(&b, "# EOF\n");
	free(s.dropped);
	free(s.hits);
	for (int i = 0; s.sums && i < m->nmaps; i++) {
		for (size_t j = 0; j < s.sums[i].n; j++)
			free(s.sums[i].v[j].labels);
		free(s.sums[i].v);
	}
	free(s.sums);
	*len = b.len;
	return b.s;
}
