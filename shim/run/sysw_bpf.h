/*
 * The small BPF programs of system-wide user mode (sysw.h), written as
 * instructions: the first-hit report on each site, the return marks on
 * each uretprobe site, and the taken table's followers (fork, exec,
 * exit tracepoints).
 *
 * The taken table (codegen's CG_MAP_TAKEN): tgid -> the generation of its
 * take (u32, never 0; a child of a process taken has its parent's).  The
 * return marks (CG_MAP_RETMARK): {pid_tgid, the stack pointer the call
 * returns with} -> the generation of the process's take when the kernel
 * saw the call enter (codegen/cg.c cg_skip_taken() reads both).
 */
#ifndef UBT_SYSW_BPF_H
#define UBT_SYSW_BPF_H

#include <stddef.h>

/* slots of the lost counters (an array of u64, SYSW_LOST_N) */
enum {
	SYSW_LOST_CHILD,	/* a child not put in the taken table */
	SYSW_LOST_MARK,		/* a return mark not written */
	SYSW_LOST_N,
};

/*
 * The report: the first hit of each process not taken (taken_fd: -1 for
 * none) puts its tgid in seen_fd and in the ring.  A program fd, or
 * -errno.
 */
int sysw_bpf_report(int seen_fd, int ring_fd, int taken_fd);

/*
 * On a uretprobe's function entry: in a process taken, where the site is
 * patched (patched_fd: CG_MAP_PATCHED's layout), a mark for the call
 * (the kernel's uretprobe will see it return).  A program fd, or -errno.
 */
int sysw_bpf_mark(int taken_fd, int patched_fd, int marks_fd, int lost_fd);

/*
 * The taken table follows processes: a child a process taken forks
 * (fork, vfork, clone without CLONE_THREAD) goes in before it runs, a
 * process leaves at exec and when its last thread exits.  Loaded and
 * attached (perf events, their fds in fds[0..2]); 0, or -errno with why.
 */
#define SYSW_BPF_FOLLOWERS 3
int sysw_bpf_follow(int taken_fd, int lost_fd, int *fds, char *why,
		    size_t len);

#endif
