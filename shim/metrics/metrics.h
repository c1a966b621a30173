/*
 * --metrics [ADDR:]PORT: the program's maps served live to Prometheus
 * (shim/metrics/README).  An HTTP endpoint (libmicrohttpd, no thread of
 * its own: the run loop serves it between its other work, so a scrape
 * reads the maps exactly as print() does, never at the same time as the
 * loop changes them) answers GET/HEAD /metrics in Prometheus's text
 * exposition format, or OpenMetrics when the scraper's Accept asks for it.
 *
 * The loops (kernel/kernel.c, run/run.c) hand it their maps through
 * metrics_set_maps() and their own numbers through metrics_set_self();
 * nothing here calls up into them.
 */
#ifndef UBT_METRICS_H
#define UBT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct compile;
struct out;
struct out_map;
struct metrics;

#define METRICS_DEFAULT_MAX_KEYS 10000
#define METRICS_DEFAULT_PREFIX "ubt_"

struct metrics_opts {
	size_t sz;		/* sizeof(struct metrics_opts) */
	const char *listen;	/* [ADDR:]PORT; ADDR defaults to 127.0.0.1 */
	const char *prefix;	/* NULL: METRICS_DEFAULT_PREFIX */
	uint64_t max_keys;	/* per map; 0: METRICS_DEFAULT_MAX_KEYS */
};

/*
 * Check [ADDR:]PORT: 0, or -EINVAL with *why set to the reason (a
 * static string).  For the command line, before anything runs.
 */
int metrics_parse_listen(const char *spec, const char **why);
/* A metric-name prefix: [a-zA-Z_][a-zA-Z0-9_]* or empty. */
bool metrics_prefix_ok(const char *prefix);

/*
 * Bind and listen on o->listen: 0, or -errno after "ubt: cannot serve
 * metrics on ADDR:PORT: why" on stderr.  Nothing is served until a loop
 * calls metrics_poll().
 */
int metrics_open(const struct metrics_opts *o, struct metrics **out);
/* Close the endpoint (open connections are closed). NULL: nothing. */
void metrics_free(struct metrics *m);
/* The port it listens on (a PORT of 0 chose one). */
int metrics_port(const struct metrics *m);

/*
 * Decide for every map of c (after sema) how it is served; say once on
 * stderr which maps cannot be (a key that cannot be a label, a value
 * that is not a number, a name taken twice).  where[i]: probe i runs in
 * "user", "kernel" or "both" (NULL: every probe "kernel").
 */
void metrics_plan(struct metrics *m, struct compile *c,
		  const char *const *where);

/*
 * The maps, read when a scrape comes: fn calls each() once for every map
 * index 0..n-1 of c's sema maps, with its entries merged as the exit
 * printout merges them, and the struct out whose resolver prints its keys.
 */
typedef int (*metrics_each_fn)(void *ectx, int map, const struct out_map *om,
			       const struct out *o);
typedef int (*metrics_maps_fn)(void *ctx, metrics_each_fn each, void *ectx);
void metrics_set_maps(struct metrics *m, metrics_maps_fn fn, void *ctx);

/* ubt's own numbers at a scrape. */
struct metrics_self {
	uint64_t events_lost;		/* both sides */
	uint64_t *updates_dropped;	/* by map index (NULL: none) */
	bool have_taken;		/* processes user mode runs in */
	uint64_t processes_taken;
};

typedef void (*metrics_self_fn)(void *ctx, struct metrics_self *s);
void metrics_set_self(struct metrics *m, metrics_self_fn fn, void *ctx);

/* What the loop waits on for requests (an epoll fd), -1 when none. */
int metrics_fd(const struct metrics *m);
/* Serve what is pending, never waiting.  NULL: nothing. */
void metrics_poll(struct metrics *m);

#endif
