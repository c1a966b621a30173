/*
 * One output stream from the kernel's ring and the user rings, in time
 * order: the time-stamp counter as CLOCK_MONOTONIC, and a queue by time
 * (merge.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "merge.h"
#include "util.h"

/* ---- the clock ----------------------------------------------------- */

bool merge_tsc_usable(void)
{
	const char *force = getenv("UBT_NO_TSC");
	char line[4096];
	bool constant = false, nonstop = false;
	FILE *f;

	/* the fallback on any machine: both paths are tested everywhere */
	if (force && *force && strcmp(force, "0"))
		return false;
	/* the kernel's own clock runs on it: synchronised across CPUs */
	f = fopen("/sys/devices/system/clocksource/clocksource0/"
		  "current_clocksource", "r");
	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f) || strcmp(line, "tsc\n")) {
		fclose(f);
		return false;
	}
	fclose(f);
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
}

uint64_t merge_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return (uint64_t)hi << 32 | lo;
}

/* A pair read as close together as a few tries allow. */
static void merge_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 8; i++) {
		uint64_t a = merge_rdtsc(), t = mono_ns();
		uint64_t b = merge_rdtsc();

		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = t;
		}
	}
}

static void merge_slope(struct merge_clock *c)
{
	if (c->tsc1 > c->tsc0 && c->ns1 > c->ns0)
		c->ns_per_tick = (double)(c->ns1 - c->ns0) /
				 (double)(c->tsc1 - c->tsc0);
}

void merge_clock_init(struct merge_clock *c)
{
	uint64_t until;

	memset(c, 0, sizeof(*c));
	merge_pair(&c->tsc0, &c->ns0);
	/* a first slope, 0.5 ms long; each round's anchor refines it */
	until = c->ns0 + 500000;
	while (mono_ns() < until)
		;
	merge_pair(&c->tsc1, &c->ns1);
	c->ns_per_tick = 1.0;
	merge_slope(c);
}

uint64_t merge_clock_sample(struct merge_clock *c)
{
	uint64_t tsc, ns;

	merge_pair(&tsc, &ns);
	if (c->mid && ns - c->ns0 >= 2 * MERGE_REBASE_NS) {
		c->tsc0 = c->tscm;
		c->ns0 = c->nsm;
		c->mid = false;
	}
	if (!c->mid && ns - c->ns0 >= MERGE_REBASE_NS) {
		c->tscm = tsc;
		c->nsm = ns;
		c->mid = true;
	}
	c->tsc1 = tsc;
	c->ns1 = ns;
	merge_slope(c);
	return ns;
}

uint64_t merge_clock_ns(const struct merge_clock *c, uint64_t tsc)
{
	double d = (double)(int64_t)(tsc - c->tsc1) * c->ns_per_tick;

	/* a target's garbage stays a time, far off */
	if (d <= -(double)c->ns1)
		return 0;
	if (d >= 0x1p62)
		return (uint64_t)1 << 62;
	return c->ns1 + (int64_t)d;
}

/* ---- the queue ----------------------------------------------------- */

static bool merge_before(const struct merge_ev *a, const struct merge_ev *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->seq < b->seq);
}

void merge_init(struct merge_queue *q)
{
	memset(q, 0, sizeof(*q));
}

void merge_push(struct merge_queue *q, uint64_t ts, int src,
		const void *data, uint32_t len)
{
	struct merge_ev *e = xmalloc(sizeof(*e) + len);
	size_t i;

	e->ts = ts;
	e->seq = q->seq++;
	e->len = len;
	e->src = src;
	memcpy(e->data, data, len);
	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 256;
		q->heap = xrealloc(q->heap, q->cap * sizeof(*q->heap));
	}
	/* sift up */
	for (i = q->n++; i > 0; i = (i - 1) / 2) {
		struct merge_ev *p = q->heap[(i - 1) / 2];

		if (!merge_before(e, p))
			break;
		q->heap[i] = p;
	}
	q->heap[i] = e;
}

uint64_t merge_oldest(const struct merge_queue *q)
{
	return q->n ? q->heap[0]->ts : UINT64_MAX;
}

struct merge_ev *merge_pop(struct merge_queue *q, uint64_t before)
{
	struct merge_ev *top, *last;
	size_t i = 0;

	if (!q->n || q->heap[0]->ts >= before)
		return NULL;
	top = q->heap[0];
	last = q->heap[--q->n];
	/* sift down */
	for (;;) {
		size_t l = 2 * i + 1, m = l;

		if (l >= q->n)
			break;
		if (l + 1 < q->n && merge_before(q->heap[l + 1], q->heap[l]))
			m = l + 1;
		if (!merge_before(q->heap[m], last))
			break;
		q->heap[i] = q->heap[m];
		i = m;
	}
	if (q->n)
		q->heap[i] = last;
	return top;
}

void merge_release(struct merge_queue *q)
{
	for (size_t i = 0; i < q->n; i++)
		free(q->heap[i]);
	free(q->heap);
	memset(q, 0, sizeof(*q));
}
