/*
 * Whose jumps are in a process: every site ubt patches has a record
 * (struct rt_site, runtime/rt_abi.h) right before its trampoline, naming
 * the ubt process that placed it (pid and start time).  From the
 * process's /proc entries alone, without stopping it, ubt finds the code
 * slices of every ubt memfd mapped there, reads the records and tells
 *   - a live owner: another ubt runs probes in this process (user mode is
 *     then not possible here: one runtime serves one tracer);
 *   - leftovers: jumps of a ubt that died; owner_restore() writes the
 *     original bytes back where a jump is still in place (every thread
 *     stopped) and idles that runtime (no more events).
 */
#ifndef UBT_OWNER_H
#define UBT_OWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pt;

/* Start time of a process (clock ticks after boot); 0 if it is gone. */
uint64_t owner_start_time(pid_t pid);
/* Is the process pid with that start time still there? */
bool owner_alive(uint32_t pid, uint64_t start);

struct owner_info {
	uint32_t live_pid;	/* a live ubt with jumps here, or 0 */
	int dead_sites;		/* live jumps of dead ubt processes */
	int memfds;		/* ubt memfds mapped in the process */
	int dead_memfds;	/* dead ubts' without a jump, not yet
				 * marked clean (owner_restore() does) */
};

/* Look at pid's ubt memfds (no stop).  0, or -errno. */
int owner_scan(pid_t pid, struct owner_info *oi);

/*
 * With every thread of the process stopped in p: put back the original
 * bytes of every jump whose owner is dead (where the bytes are still the
 * jump), mark those records done, and tell those runtimes to stop
 * producing events.  Owner except_pid (a ubt known to be dead, or 0) also
 * counts as dead.  Every memfd left with no jump of a live ubt is marked
 * clean, for the next detach to unmap (shim/user/user_unmap.c).  The
 * number of sites restored, or -errno.
 */
int owner_restore(struct pt *p, uint32_t except_pid);

/*
 * The children (pids) that the runtime of ubt process owner listed in
 * pid's memfd: forked while patched.  How many, or -errno.
 */
int owner_children(pid_t pid, uint32_t owner, pid_t *out, int max);

/*
 * Is another tracer (a debugger, strace, a ubt in the middle of an
 * attach) ptrace-attached to pid?  Its pid, or 0.
 */
pid_t owner_tracer(pid_t pid);

#endif
