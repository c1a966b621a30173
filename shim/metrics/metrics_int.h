/*
 * Shared by the parts of shim/metrics/ (README): struct metrics, owned by
 * metrics.c (the endpoint); metrics_plan.c fills its plan of each map,
 * metrics_page.c writes a page from it.
 */
#ifndef UBT_METRICS_INT_H
#define UBT_METRICS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "metrics.h"

struct type;
struct MHD_Daemon;

/* A growable page. */
struct mbuf {
	char *s;
	size_t len, cap;
};

void mbuf_add(struct mbuf *b, const char *s, size_t n);
void mbuf_adds(struct mbuf *b, const char *s);
void __attribute__((format(printf, 2, 3)))
mbuf_printf(struct mbuf *b, const char *fmt, ...);
/* A label value or HELP text, escaped as the format requires (quote:
 * a label value, '"' escaped too); invalid UTF-8 becomes U+FFFD. */
void mbuf_escape(struct mbuf *b, const char *s, size_t n, bool quote);

enum metrics_kind {
	MK_SKIP,	/* not served (said at start) */
	MK_COUNTER,	/* count(), sum() of an unsigned value */
	MK_GAUGE,	/* sum() of a signed value, min, max, avg, values */
	MK_SUMMARY,	/* stats(): _count, _sum; and <name>_avg, a gauge */
	MK_HIST,	/* hist(), lhist() */
	MK_HITS,	/* a probe's hits (frontend/hits.c): ubt's own series */
	MK_HIST_SUM,	/* @X_sum = sum() beside @X = hist(): X's _sum */
};

/* How one map is served, decided once (metrics_plan()). */
struct metrics_map {
	const char *name;	/* "@x" */
	char *family;		/* "ubt_x" */
	char *help;
	enum metrics_kind kind;
	/* hist/lhist: the bucket indexes served (lo..hi), widened as
	 * buckets fill and never narrowed, so a series never vanishes */
	bool seen;
	uint64_t lo, hi;
	int probe;		/* MK_HITS: the probe whose hits it counts */
	int sum_map;		/* MK_HIST: its MK_HIST_SUM map, or -1 */
	uint64_t dropped;	/* series left out, over every page so far */
};

struct metrics {
	struct MHD_Daemon *d;
	int lfd;		/* the listening socket */
	int port;
	char *prefix;
	uint64_t max_keys;
	struct metrics_map *maps;
	int nmaps;
	const char **probes;	/* probe names, by probe index */
	const char **where;	/* "user", "kernel", "both" */
	int nprobes;
	metrics_maps_fn maps_fn;
	void *maps_ctx;
	metrics_self_fn self_fn;
	void *self_ctx;
	uint64_t scrapes;
	bool has_sums;		/* a map is some histogram's _sum */
};

/* A page for one scrape (malloc'd, *len bytes): every map read now. */
char *metrics_page(struct metrics *m, bool openmetrics, size_t *len);

/* Can a value of type t (a key, or a tuple key's field) be a label? */
bool metrics_label_type(const struct type *t);

#endif
