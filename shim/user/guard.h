/*
 * The guard (shim/user/guard.c): the process the user started waits while a
 * forked worker traces, so that killing ubt never leaves a target in the
 * middle of a change.  guard_start() returns in the worker only.
 */
#ifndef UBT_GUARD_H
#define UBT_GUARD_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

/* what the worker gets when the guard dies */
#define GUARD_ORPHAN_SIG (SIGRTMIN + 2)

/*
 * Fork; the parent becomes the guard of target (a -p pid, or 0 until
 * guard_target() names it) and never returns.  In the worker, on_orphan
 * runs (in a signal handler) when the guard dies.  0, or -errno.
 */
int guard_start(pid_t target, void (*on_orphan)(void));
/* The worker: the process the guard restores if the worker dies. */
void guard_target(pid_t pid);
/* The worker: has the guard (the ubt the user started) died? */
bool guard_orphaned(void);

#endif
