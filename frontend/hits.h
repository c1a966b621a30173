/*
 * --metrics: each probe's hits counted in a map of ubt's own
 * (frontend/hits.c).
 */
#ifndef UBT_HITS_H
#define UBT_HITS_H

#include <stdbool.h>

struct compile;

/*
 * Give every probe but BEGIN/END a keyless count() of its hits, counted
 * before its filter (c->count_hits; compile_frontend() calls it between
 * parsing and the semantic passes).  0, or -EINVAL with a diagnostic
 * when the program names a map of ours.
 */
int hits_add(struct compile *c);
/* Is this one of those maps (left out of every printout)?  False for
 * every name until hits_add() ran: without --metrics they are the
 * program's own. */
bool hits_map_hidden(const char *name);
/* The probe index whose hits the map counts, or -1. */
int hits_probe_of(const char *name);

#endif
