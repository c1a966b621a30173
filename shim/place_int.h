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
};

/*
 * Maps that are not aggregations, used only by reads, assignments,
 * delete(), has_key(), clear(), zero(), print(), for and len(): user-mode
 * probes keep them in one table shared by all threads, which native code
 * iterates slot by slot (RT_FN_SHTAB_NEXT).
 */
int place_scan_shared(struct ast_node *n, void *ctx);

int place_scan_plain(struct ast_node *n, void *ctx);

int place_scan_body(struct ast_node *n, void *ctx);

uint64_t *place_side_use(struct compile *c);

#endif
