/*
 * Internal to system-wide user mode: sysw.c (reports, takes, the fleet)
 * and sysw_taken.c (the taken table, the sites patched, the return marks
 * and the programs that keep them).
 */
#ifndef UBT_SYSW_INT_H
#define UBT_SYSW_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "sysw_bpf.h"

struct run;

/* What the kernel's int3s out and the take in found (sysw_commit()). */
struct sysw_unbreak {
	struct run *r;
	int err;
	char why[PATH_MAX + 32];
	int taken_err;		/* sysw_taken_in()'s */
	int patched;		/* and its sites patched */
	char taken_why[128];
	bool exec;		/* a new image (sysw_installed()): said here */
	int kept;		/* sites whose int3 stays: shared */
	char kept_why[600];	/* the first few, for -v */
	char lost_why[PATH_MAX + 64];	/* a return site's shared int3 out */
};

/*
 * The other consumers of uprobes found by the last scan (sysw_share.c):
 * a site whose uprobe anything but this ubt uses keeps the kernel's
 * int3 in a process taken.
 */
/* sysw_unseen.c: sites a fresh mapping of their file showed an int3 at */
struct sysw_unseen {
	struct {
		dev_t dev;
		ino_t ino;
		uint64_t off;
	} *at;
	int n;
};

void sysw_unseen_free(struct sysw_unseen *u);

struct sysw_share {
	struct share_user *u;
	int n;
	const struct sysw_unseen *pre;	/* the run's (sysw_unseen.c), kept */
	uint32_t *progs;	/* programs seen on other processes' perf events */
	int nprogs;
	uint32_t *own;		/* the links processes hold, */
	pid_t *holder;		/* by whom (0: this ubt) */
	int nown;
	bool scanned;
};

/* pid's comm into buf ("" if gone): buf. */
const char *sysw_comm(pid_t pid, char *buf, size_t len);

/* Look again at every process's perf events, the links, tracefs. */
void sysw_share_scan(struct sysw_share *sh, pid_t self);
/*
 * Who else uses the uprobe at file offset off of bin (the first found,
 * as -v says it), or NULL: nobody ubt can see.
 */
const char *sysw_share_user(const struct sysw_share *sh, const char *bin,
			    uint64_t off);
void sysw_share_free(struct sysw_share *sh);

struct sysw {
	int seen_fd, ring_fd, prog_fd;
	int taken_fd;		/* CG_MAP_TAKEN in the kernel object, or -1 */
	int marks_fd;		/* CG_MAP_RETMARK there, or -1 */
	int patched_fd;		/* CG_MAP_PATCHED there, or sysw's own */
	int mark_fd;		/* the return marks' program, or -1 */
	int lost_fd;		/* SYSW_LOST_N counters, or -1 */
	int follow[SYSW_BPF_FOLLOWERS];	/* the taken table's followers */
	uint32_t gen;		/* the last take's generation */
	bool own_patched;	/* patched_fd is sysw's to close */
	struct sysw_unbreak exec_ub;	/* an exec's commit hook */
	/* the keys each generation put in the sites patched, until no
	 * process of the taken table has it (sysw_taken_sweep()) */
	struct sysw_gen *gens;
	int ngens;
	struct ring_buffer *rb;
	int *pfds;		/* one perf event per site */
	int npfds;
	int uprobe_type;
	pid_t *todo;		/* reported, not handled yet */
	int ntodo;
	uint64_t ubt_start;	/* the ubt the user started (clock ticks) */
	pid_t ubt_pid;		/* and its pid */
	/* every process reported (in the seen table), by start time: a
	 * pid whose process is gone leaves the table, so that a new
	 * process with that pid reports again */
	pid_t *known;
	uint64_t *kstart;
	int nknown;
	uint64_t swept;		/* mono_ns() of the last sweep */
	struct sysw_breaks *breaks;	/* by fleet index */
	int failed;		/* sites whose report could not attach */
	int why;		/* the first one's errno */
	int unmarked;		/* uretprobe sites without the mark program */
	int unmarked_why;
	/* the processes at the start, with their executables
	 * (sysw_execd.c), by pid */
	struct sysw_exe *exes;
	int nexes;
	struct sysw_share share;	/* the last scan (sysw_share.c) */
	uint64_t scan_ns;	/* the scans before takes, for -v */
	int nscans;
};

/* Note every process's executable now (sysw_start()). */
void sysw_execd_note(struct sysw *s);
/*
 * Has pid (started at start, before ubt) exec'd another executable since
 * sysw_execd_note()?  Then it is new to ubt.
 */
bool sysw_execd_since(const struct sysw *s, pid_t pid, uint64_t start);
void sysw_execd_free(struct sysw *s);

/*
 * After the kernel's probes are loaded, before any process is taken:
 * the followers and the return marks' program loaded, the tables found
 * (said when one is missing).
 */
void sysw_taken_load(struct run *r, struct sysw *s);
/*
 * r->u, stopped with its jumps written, into the taken table with a new
 * generation and its patched sites (*n of them).  0, or -errno with why.
 */
int sysw_taken_in(struct run *r, int *n, char *why, size_t len);
void sysw_taken_out(struct sysw *s, pid_t pid);
/*
 * The sites patched of the generations no process in the taken table
 * has any more (their processes and children exited or exec'd): out.
 */
void sysw_taken_sweep(struct sysw *s);
/* At the end: what the programs could not write (said), and with -v the
 * processes still in the taken table. */
void sysw_taken_lost(const struct sysw *s);
void sysw_taken_note(const struct sysw *s);
void sysw_taken_free(struct sysw *s);

#endif
