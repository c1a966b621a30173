/*
 * Placement (shim/README): where each probe runs, and why. run_decide()
 * (run.h) makes the decision; these are what the run loop also needs of
 * what placement learnt about a program.
 */
#ifndef UBT_PLACE_H
#define UBT_PLACE_H

#include <stdbool.h>
#include <sys/types.h>

#include "compile.h"
#include "sema.h"

struct probes_match;

/* An aggregation map (count, sum, hist, ...): user mode may hold it. */
bool place_agg_map(const struct sema_map *sm);

/*
 * By sema map id: ordinary maps only ever used as @m[tid], which user mode
 * keeps per thread (no atomics); in c->arena.
 */
bool *place_thread_maps(struct compile *c);

/*
 * By sema map id: the ordinary maps that user-mode and kernel probes
 * (decisions d) both use and that live in a table both sides map
 * (codegen/cg_xmap.h, shim/place/place_xmap.c); in c->arena.
 */
struct run_decision;
bool *place_xmap_maps(struct compile *c, const struct run_decision *d,
		      bool syswide);

/*
 * By sema map id: the maps of place_thread_maps() that user mode keeps in
 * a slot of each thread's block instead (shim/place/place_slot.c: only
 * ever @m[tid], an integer value, every probe using it in user mode);
 * in c->arena.
 */
bool *place_slot_maps(struct compile *c, const struct run_decision *d,
		      bool syswide);

/*
 * System-wide user mode (d: the decisions): why a process taken cannot
 * run the user-mode probes, which read pid, tid or ppid, since it is in
 * another PID namespace (shim/place/place_pidns.c); NULL when it can.
 */
const char *place_pidns_syswide(struct compile *c,
				const struct run_decision *d, pid_t pid);

/*
 * Why pid, in another mount namespace, cannot load ubt's runtime by its
 * path there (another file, or none, sits at it), or NULL
 * (shim/place/place_mntns.c).
 */
struct run_opts;
const char *place_mntns_why(struct compile *c, const struct run_opts *o,
			    pid_t pid);

/*
 * Why pid cannot load the runtime since it runs a static executable
 * (shim/place/place_static.c), or NULL.
 */
const char *place_static_pid(struct compile *c, pid_t pid);

/* "uprobe:/bin/x:f" of probe p, for -v and --dry-run; in c->arena. */
const char *place_probe_name(struct compile *c, struct ast_node *p);

/*
 * The function holding USDT site m (its symbol, the site's offset in it);
 * 0, or -ENOENT when no function symbol holds it. Names in a.
 */
int place_usdt_func(struct arena *a, const struct probes_match *m,
		    const char **func, uint64_t *off);

#endif
