/*
 * Shared by the two parts of placement (shim/README): place_body.c (what a
 * probe body needs that only the kernel has) and place.c (where the
 * probe's sites are, and the decision).
 */
#ifndef UBT_PLACE_INT_H
#define UBT_PLACE_INT_H

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>
#include "ast.h"
#include "cg.h"
#include "child.h"
#include "exitwatch.h"
#include "format.h"
#include "guard.h"
#include "kernel.h"
#include "merge.h"
#include "native.h"
#include "output.h"
#include "probes.h"
#include "run.h"
#include "sema.h"
#include "user.h"
#include "util.h"
#include "run_int.h"

/* ---- what a probe body needs --------------------------------------- */

/*
 * Maps that something other than an aggregation statement or print()
 * touches: a user-mode probe must not aggregate into them, since those
 * reads and writes would see one side only.
 */
struct place_scan {
	struct compile *c;
	bool *plain;		/* by sema map id */
	bool *shared;		/* by sema map id: an ordinary map user mode
				 * holds (place_scan_shared()) */
	bool *aggread;		/* by sema map id: an aggregation read
				 * as a value somewhere */
	bool *aggiter;		/* by sema map id: an aggregation
				 * iterated (for, len()) somewhere */
	const char *why;	/* the first thing user mode lacks */
	/* the probe being scanned: every attach point a uprobe at a
	 * function's entry (entry), or a uretprobe (ret) */
	bool entry, ret;
	/* the target is in another PID namespace: why (place_pidns.c);
	 * children: its forked children record (-c) */
	const char *pidns;
	bool children;
};

/* place_site.c: the -c command's executable, resolved through PATH */
bool place_cmd_exe(const char *cmd, char *out, size_t len);
/* place_static.c: why the -p process or the -c command cannot run
 * user-mode probes, since it has no libc (a static executable), or NULL */
const char *place_static_why(struct compile *c, const struct run_opts *o);

/* place_pidns.c: why pid's probes that read pid, tid or ppid need the
 * kernel (another PID namespace than ubt's), or NULL */
const char *place_pidns_why(struct compile *c, pid_t pid);
/* why builtin b needs the kernel in s's target, or NULL */
const char *place_pidns_builtin(const struct place_scan *s,
				enum sema_builtin b);

/*
 * Maps that are not aggregations, used only by reads, assignments,
 * delete(), has_key(), clear(), zero(), print(), for and len(): user-mode
 * probes keep them in one table shared by all threads, which native code
 * iterates slot by slot (RT_FN_SHTAB_NEXT).
 */
int place_scan_shared(struct ast_node *n, void *ctx);

int place_scan_plain(struct ast_node *n, void *ctx);

int place_scan_body(struct ast_node *n, void *ctx);

/* place_xmap.c: by sema map id, NULL when the map may live in a table
 * user-mode and kernel probes share (codegen/cg_xmap.h), else why not */
const char **place_xmap_scan(struct compile *c, bool syswide);

/* Why map m is not shared (for a message), NULL for an aggregation. */
static inline const char *place_xmap_note(const char *const *xwhy, int m)
{
	return xwhy && xwhy[m] && strcmp(xwhy[m], "an aggregation") ?
		       xwhy[m] : NULL;
}

uint64_t *place_side_use(struct compile *c);

/* ---- where the probe's sites are (place_site.c) --------------------- */

/*
 * Weigh every site of probe p into d (d->sites, each RUN_USER or
 * RUN_KERNEL with its reason); returns the reason the whole probe runs in
 * the kernel (not a uprobe, no -p/-c, an attach point that does not
 * resolve), else NULL, d->where not set yet (place_settle()).
 */
const char *place_sites(struct compile *c, const struct run_opts *o,
			struct ast_node *p, struct run_decision *d);

/*
 * The registers of the entry state probe p reads (PATCH_REG_* of patch.h;
 * none for a probe of uretprobes only, the argument registers for a usdt
 * attach point): place_reads.c.
 */
uint32_t place_entry_reads(struct ast_node *p);

/* The whole probe in the kernel, for why: every site with it. */
void place_all_kernel(struct run_decision *d, const char *why);

/* d->where and d->why from its sites. */
void place_settle(struct compile *c, struct run_decision *d);

/*
 * A user site on a function that also has a kernel site (the kernel would
 * put its breakpoint on our jump; at the entry only system-wide, where
 * taking a process loses kernel uprobes' later hits in it), or that another probe shares when one
 * of them reads sarg (one trampoline call, the wrong stack): to the
 * kernel. Returns whether a site moved (d[0..n) settled again).
 */
bool place_site_conflicts(struct compile *c, struct run_decision *d, int n,
			  bool syswide);

#endif
