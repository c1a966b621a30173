/*
 * System-wide user mode (no -p/-c): user-mode probes run in every
 * process of the probed binaries that hits one of them after ubt
 * started (and, with --all-processes, in those already running too).
 *
 * Every probe also runs in the kernel, attached first: a process runs it
 * there until it is taken.  A small BPF program on each user-mode site
 * reports the first hit of each process; ubt then attaches to it as -p
 * does (run_user.c), patches the sites with every thread stopped (the
 * kernel's int3 goes under the jump: the kernel counted the hits so far,
 * user mode counts the rest), and lets it run.  One merged output: the
 * processes taken are the run's fleet (run_int.h).
 */
#ifndef UBT_SYSW_H
#define UBT_SYSW_H

#include <stdbool.h>

struct run;
struct sysw_unseen;

/*
 * Before the kernel's probes are attached: the user-mode sites whose
 * uprobe a consumer sysw_share.c cannot name uses (sysw_unseen.c), kept
 * in the run for sysw_start().
 */
struct sysw_unseen *sysw_unseen_look(struct run *r);

/*
 * After the kernel's probes are attached: load and attach the first-hit
 * reports.  0, or -errno with a message (the probes then stay in the
 * kernel).
 */
int sysw_start(struct run *r);
/* Take the processes reported since; follow their exec()s. */
void sysw_poll(struct run *r);
/* Detach from every process taken (their code restored), free it all. */
void sysw_stop(struct run *r);

#endif
