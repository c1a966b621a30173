/*
 * How each map is served, decided once before the probes run: its metric
 * family name (prefix + the map's name, "@" alone "at"), its type by the
 * value (count() a counter; sum() a counter for an unsigned value, a
 * gauge for a signed one; min/max/avg and plain values gauges; stats() a
 * summary and an _avg gauge; hist/lhist histograms), its labels by the
 * key, and its HELP text from the probes that use it.  What cannot be
 * served is said once, here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "arena.h"
#include "ast.h"
#include "compile.h"
#include "hits.h"
#include "sema.h"
#include "types.h"
#include "util.h"
#include "metrics_int.h"

bool metrics_label_type(const struct type *t)
{
	switch (t->kind) {
	case TY_INT:
	case TY_BOOL:
	case TY_STRING:
	case TY_POINTER:
	case TY_ENUM:
	case TY_BUFFER:
	case TY_USYM:
	case TY_KSYM:
	case TY_USERNAME:
	case TY_INET:
	case TY_MAC:
	case TY_CGROUP_PATH:
	case TY_STRERROR:
	case TY_PROBE:
	case TY_SYSCALL_NAME:
	case TY_SIGNAL_NAME:
		return true;
	default:
		return false;
	}
}

/* Why a key cannot give labels, or NULL. */
static const char *metrics_key_why(const struct sema_map *sm)
{
	const struct type *k = sm->key;

	if (!k || !sm->nkeys)
		return NULL;
	if (sm->nkeys == 1 && k->kind != TY_TUPLE)
		return metrics_label_type(k) ? NULL : type_class(k);
	/* several keys, or one tuple or record (its fields name labels) */
	for (int i = 0; i < k->nfields; i++)
		if (!metrics_label_type(k->fields[i].type))
			return type_class(k->fields[i].type);
	return NULL;
}

/*
 * A record key's field names are its labels (metrics_label_name()): one
 * that Prometheus keeps for itself (__*), or that the family's own
 * samples use (le, quantile), cannot be.
 */
static const char *metrics_label_clash(const struct sema_map *sm)
{
	const struct type *k = sm->key;

	if (!k || k->kind != TY_TUPLE)
		return NULL;
	for (int i = 0; i < k->nfields; i++) {
		const char *n = k->fields[i].name;

		if (n && (!strncmp(n, "__", 2) || !strcmp(n, "le") ||
			  !strcmp(n, "quantile")))
			return n;
	}
	return NULL;
}

static enum metrics_kind metrics_kind_of(const struct type *v)
{
	switch (v ? v->kind : TY_NONE) {
	case TY_COUNT:
		return MK_COUNTER;
	case TY_SUM:
		return v->is_signed ? MK_GAUGE : MK_COUNTER;
	case TY_MIN:
	case TY_MAX:
	case TY_AVG:
	case TY_INT:
	case TY_BOOL:
	case TY_ENUM:
		return MK_GAUGE;
	case TY_STATS:
		return MK_SUMMARY;
	case TY_HIST:
	case TY_LHIST:
		return MK_HIST;
	default:
		return MK_SKIP;
	}
}

static const char *metrics_probe_name(struct compile *c, int i)
{
	struct sema_probe *sp = c->sema->probes[i];
	struct ast_node *p = sp ? sp->node : NULL;

	if (p && p->probe.aps && p->probe.aps->ap.raw)
		return p->probe.aps->ap.raw;
	return sp && sp->name ? sp->name : "probe";
}

static char *metrics_help(struct compile *c, const struct sema_map *sm)
{
	struct mbuf b = { 0 };
	int n = 0;

	mbuf_printf(&b, "%s: %s", sm->name, type_class(sm->value));
	if (sm->agg != FN_NONE)
		mbuf_adds(&b, "()");
	for (int i = 0; i < c->sema->nprobes && i < 64; i++) {
		if (!(sm->probes & (1ull << i)))
			continue;
		mbuf_printf(&b, "%s%s", n++ ? ", " : " in ",
			    metrics_probe_name(c, i));
	}
	return b.s ? b.s : xstrdup("");
}

/* The sample names a family uses, for the check that no two collide. */
static int metrics_names(const struct metrics_map *mm, const char **suf)
{
	switch (mm->kind) {
	case MK_COUNTER:
		suf[0] = "_total";
		return 1;
	case MK_GAUGE:
		suf[0] = "";
		return 1;
	case MK_SUMMARY:
	case MK_HIST:
		/* _count, _sum, the family itself; and _avg or _bucket */
		suf[0] = "_count";
		suf[1] = "_sum";
		suf[2] = "";
		suf[3] = mm->kind == MK_HIST ? "_bucket" : "_avg";
		return 4;
	default:
		return 0;
	}
}

/* ubt's own families (metrics_page.c): a map may not take their names. */
static const char *const metrics_own[] = {
	"ubt_probe_mode",
	"ubt_probe_hits_total",
	"ubt_metrics_series_dropped_total",
	"ubt_events_lost_total",
	"ubt_map_updates_dropped_total",
	"ubt_processes_taken_total",
	"ubt_metrics_scrape_duration_seconds",
	"ubt_metrics_keys_dropped",
	"ubt_metrics_scrapes_total",
};

static bool metrics_taken(const struct metrics *m, int upto, const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(metrics_own); i++)
		if (!strcmp(name, metrics_own[i]))
			return true;
	for (int i = 0; i < upto; i++) {
		const struct metrics_map *o = &m->maps[i];
		const char *suf[4];
		int n = metrics_names(o, suf);

		for (int j = 0; j < n; j++) {
			size_t fl = strlen(o->family);

			if (!strncmp(name, o->family, fl) &&
			    !strcmp(name + fl, suf[j]))
				return true;
		}
	}
	return false;
}

/*
 * A histogram's _sum, where the program keeps it: @X_sum = sum(v) with
 * the keys of @X = hist(v) (or lhist).  That map then serves as X's
 * _sum (and, in OpenMetrics, lets X have a _count), not on its own.
 * The index of X for map j, or -1.
 */
static int metrics_sum_of(const struct sema_program *sp, int j)
{
	const struct sema_map *x = sp->maps[j];

	if (x->agg != FN_SUM)
		return -1;
	for (int i = 0; i < sp->nmaps; i++) {
		const struct sema_map *h = sp->maps[i];
		size_t hl = strlen(h->name);

		if ((h->agg == FN_HIST || h->agg == FN_LHIST) &&
		    !strncmp(x->name, h->name, hl) &&
		    !strcmp(x->name + hl, "_sum") && x->nkeys == h->nkeys &&
		    (!h->key || (x->key && type_equal(h->key, x->key))))
			return i;
	}
	return -1;
}

void metrics_plan(struct metrics *m, struct compile *c,
		  const char *const *where)
{
	struct sema_program *sp = c->sema;

	if (!m)
		return;
	m->nmaps = sp->nmaps;
	m->maps = xcalloc(sp->nmaps + 1, sizeof(*m->maps));
	m->nprobes = sp->nprobes;
	m->probes = xcalloc(sp->nprobes + 1, sizeof(*m->probes));
	m->where = xcalloc(sp->nprobes + 1, sizeof(*m->where));
	for (int i = 0; i < sp->nprobes; i++) {
		const char *name = metrics_probe_name(c, i);
		int same = 0;

		/* a label per probe: the second "uprobe:x:f" is "...#2" */
		for (int j = 0; j < i; j++)
			same += !strcmp(metrics_probe_name(c, j), name);
		m->probes[i] = same ? arena_printf(&c->arena, "%s#%d", name,
						   same + 1) :
				      name;
		m->where[i] = where && where[i] ? where[i] : "kernel";
	}
	for (int i = 0; i < sp->nmaps; i++)
		m->maps[i].sum_map = -1;
	for (int i = 0; i < sp->nmaps; i++) {
		const struct sema_map *sm = sp->maps[i];
		struct metrics_map *mm = &m->maps[i];
		const char *why = NULL, *suf[4];
		struct mbuf b = { 0 };
		int n, h;

		mm->name = sm->name;
		mm->probe = hits_probe_of(sm->name);
		if (mm->probe >= 0) {
			mm->kind = MK_HITS;
			mm->family = xstrdup("ubt_probe_hits");
			mm->help = xstrdup("");
			continue;
		}
		mbuf_printf(&b, "%s%s", m->prefix,
			    sm->name[1] ? sm->name + 1 : "at");
		mm->family = b.s;
		mm->help = metrics_help(c, sm);
		mm->kind = metrics_kind_of(sm->value);
		if ((h = metrics_sum_of(sp, i)) >= 0) {
			mm->kind = MK_HIST_SUM;
			m->maps[h].sum_map = i;
			m->has_sums = true;
			continue;
		}
		if (mm->kind == MK_SKIP) {
			why = "its values are not numbers";
		} else if ((why = metrics_key_why(sm))) {
			fprintf(stderr, "WARNING: --metrics: map %s is not "
				"served: a %s key cannot be a label\n",
				sm->name, why);
			mm->kind = MK_SKIP;
			continue;
		} else if ((why = metrics_label_clash(sm))) {
			fprintf(stderr, "WARNING: --metrics: map %s is not "
				"served: its key's field %s cannot name a "
				"label\n", sm->name, why);
			mm->kind = MK_SKIP;
			continue;
		}
		n = metrics_names(mm, suf);
		for (int j = 0; !why && j < n; j++) {
			char name[256];

			snprintf(name, sizeof(name), "%s%s", mm->family,
				 suf[j]);
			if (metrics_taken(m, i, name))
				why = "its metric name is taken";
		}
		if (why) {
			fprintf(stderr, "WARNING: --metrics: map %s is not "
				"served: %s (%s)\n", sm->name, why,
				mm->family);
			mm->kind = MK_SKIP;
		}
	}
}
