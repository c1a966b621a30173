/*
 * The end of the -c command: whether it has exited, and stopping it when
 * ubt ends first, with every wait bounded.  A pidfd (pidfd_open(), -1 if
 * there is none) makes the checks immune to a reused pid and to SIGCHLD
 * being ignored (then the kernel reaps the child itself and waitpid()
 * never reports it).
 */
#ifndef UBT_CHILD_H
#define UBT_CHILD_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* After SIGTERM, how long the command has to exit before SIGKILL. */
#define CHILD_GRACE_MS 500

/*
 * Has child pid exited?  Reaps it if so (its wait status in *status when
 * known and status is not NULL; -1 when the kernel reaped it).  A pid
 * that is not (or no longer) our child counts as exited.
 */
bool child_gone(pid_t pid, int pidfd, int *status);

/*
 * Wait up to ms milliseconds for child pid to exit (child_gone()).
 * Returns true if it did.
 */
bool child_wait(pid_t pid, int pidfd, int ms, int *status);

/*
 * End child pid if it still runs: SIGTERM, CHILD_GRACE_MS to exit, then
 * SIGKILL (which also ends a stopped or traced child); reaped either way.
 * Returns false only if it could not be reaped even after SIGKILL (it is
 * then left to init).
 */
bool child_stop(pid_t pid, int pidfd);

/* SIGKILL now (a -c command that never ran), then reap it as above. */
bool child_kill(pid_t pid, int pidfd);

/*
 * Say on f how the command ended, from its wait status (-1: not known):
 * always when a signal that means a crash (SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE, SIGTRAP, SIGABRT, SIGSYS) killed it, since user mode changed
 * its code; with verbose, in every case.
 */
void child_report(FILE *f, pid_t pid, int status, bool verbose);
/*
 * The same for a -p process (status as exitwatch_status() gives it): a
 * death by any signal but SIGINT and SIGTERM is said without -v too, since
 * ubt's own exit status does not tell it.
 */
void child_report_pid(FILE *f, pid_t pid, int status, bool verbose);

/*
 * The -c command's words as bpftrace splits them: at every space, with
 * no quoting, escapes or expansion (a quote, '$' or '*' is part of its
 * word, as with bpftrace); runs of spaces count as one.  A NULL-ended
 * array in one allocation (free() it), or NULL if cmd has no word.
 */
char **child_split_cmd(const char *cmd);

/*
 * SIGCHLD ignored (inherited from whoever started ubt) makes the kernel
 * reap children and ptrace stops unwaitable: put the default back.
 */
void child_init(void);

#endif
