/*
 * State shared by the parts of the combined run (shim/README): struct run,
 * owned by run.c (the loop), read and changed by run_maps.c (maps of both
 * sides), run_events.c (events in time order) and run_user.c (user-mode
 * attach and install).
 */
#ifndef UBT_RUN_INT_H
#define UBT_RUN_INT_H

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
#include "place.h"
#include "probes.h"
#include "run.h"
#include "sema.h"
#include "signals.h"
#include "sysw.h"
#include "user.h"
#include "util.h"

/* ---- kernel and user mode together -------------------------------- */

/*
 * Per thread, a power of two: with printf events 1 MiB (32768 records of
 * two integers, RUN_POLL_MS at 3M events/s per thread; pages are touched
 * only as far as the ring is used), else 64 KiB.
 */
#define RUN_RING_SIZE (64 * 1024)

#define RUN_RING_SIZE_EVENTS (1024 * 1024)

/*
 * What ubt keeps for a keyless aggregation of user-mode probes (FIXED and
 * ARRAY native maps). The owning thread increments its values with plain
 * read-modify-writes (incq %fs:...), so ubt never stores over an additive
 * value: a store between the owner's load and store would be undone.
 * clear() and zero() take a baseline instead (base := current, per block)
 * and the value read is current - base. Only min/max values (and a sum's
 * presence word) are reset by stores, which a racing update may undo.
 */
struct run_agg {
	uint64_t *base;		/* nwords per block, nblocks blocks */
	uint32_t nblocks, nwords;
	bool zeroed;		/* FIXED: zero() kept the value: present */
	bool *present;		/* ARRAY: buckets zero() kept */
};

struct run {
	struct compile *c;
	const struct run_opts *o;
	const struct run_decision *d;
	struct cg_object *kobj, *nobj;
	struct cg_object merged;	/* kernel object + native events */
	struct kernel *k;
	struct ubt_user *u;
	/*
	 * Every process user-mode probes run in: r->u alone (-p, -c), or
	 * each process taken system-wide (sysw.c), kept after it exits for
	 * its data.  run_for_each_user() makes each in turn r->u, its
	 * blocks numbered from r->ubase in the merged numbering.
	 */
	struct ubt_user **fleet;
	int nfleet;
	uint32_t ubase;
	bool sysw;		/* system-wide (no -p/-c): sysw.c */
	struct sysw *sw;
	struct sysw_unseen *unseen;	/* sysw_unseen.c, before the attach */
	char near[PATH_MAX];	/* user_opts.near: the first return probe's
				 * module */
	const char **mods;	/* user_opts.modules (run_user.c) */
	size_t nmods;
	/* sysw.c: after the sites of an image a process exec'd were
	 * placed, err their result (a hook: sysw.c calls run_user.c, not
	 * the other way); returns the run's error */
	int (*exec_installed)(struct run *r, int err);
	pid_t cpid;		/* -c child */
	bool reaped;		/* it exited and was reaped: */
	int status;		/* its wait status, -1 if not known */
	int pidfd;		/* -p, -c: readable once the process exits */
	uint64_t lost;		/* user-ring losses reported */
	/*
	 * printf events of the user rings whose arguments print as they are
	 * (integers, strings): formatted here straight into the output, one
	 * flush per drained batch (by native event id; NULL .text: through
	 * kernel_handle_event(), which flushes per event)
	 */
	struct fmt_string *ufmts;
	struct out uout;
	struct run_agg *agg;	/* by kernel map index */
	/* run_xmap.c: probes built standby, by probe index (NULL: none),
	 * or why there are none */
	const bool *xstandby;
	const char *xno_standby;
	/* run_fallback.c: -p/-c, the user-mode probes built standby for
	 * the kernel too (NULL: none); kfell: they run there now */
	const bool *kstandby;
	bool kfell;
	int64_t ev_block;	/* the block of the user event being handled,
				 * -1 for the kernel's */
	int64_t queued_block;	/* the block a queued user event came from
				 * (merged events), -1: the one just read */
	/*
	 * Kernel and user-mode probes both print at run time: every record
	 * ends in a time stamp (cg.h enum cg_event_time) and the records of
	 * both sides go through a queue, printed in time order (merge.h);
	 * CG_TIME_NONE: each side prints as it is read
	 */
	enum cg_event_time etime;
	struct merge_clock clock;	/* CG_TIME_TSC: user-side stamps */
	struct merge_queue q;
	bool stopped;		/* an exit() was read: probes stopped */
	uint64_t ustart;	/* mono_ns() before the user probes ran */
};

/* Blocks of one process in the merged numbering (same layout in all). */
#define run_fleet_stride(r) (user_memfd((r)->fleet[0])->l.nblocks)

#define run_for_each_user(r, i)                                             \
	for (int i = 0;                                                     \
	     i < (r)->nfleet &&                                             \
	     ((r)->u = (r)->fleet[i],                                       \
	      (r)->ubase = (uint32_t)i * run_fleet_stride(r), 1);           \
	     i++)

/*
 * What may run inside a run_for_each_user() loop (a map read or hook from
 * an event being printed) keeps the caller's r->u and r->ubase.
 */
struct run_user_cursor {
	struct ubt_user *u;
	uint32_t ubase;
};

#define run_user_keep(r)                                                    \
	((struct run_user_cursor){ .u = (r)->u, .ubase = (r)->ubase })
#define run_user_back(r, c) ((r)->u = (c).u, (r)->ubase = (c).ubase)

/* Add u to the fleet (the -p/-c process, or one taken system-wide). */
void run_fleet_add(struct run *r, struct ubt_user *u);

/* The events of both objects in one table: native ids follow the kernel's. */
void run_merge_events(struct run *r);

const struct native_map *run_native_map(const struct run *r, int map);

/* ubt's own description of a shared table (never the memfd's header) */
#define run_shtab_of(nm)                                                    \
	((struct memfd_shtab){ .off = (nm)->off,                            \
			       .nslots = (nm)->nslots,                      \
			       .key_size = (nm)->key_size,                  \
			       .val_size = (nm)->val_size,                  \
			       .max_probe = (nm)->max_probe,                \
			       .max_keys = (nm)->max_keys })

/* run_slot.c: per-thread slots (shim/place/place_slot.c) placed in
 * r->u's control block, read back as (tid, value), noted by -v */
int run_slot_place(struct run *r);
int run_slot_read(struct run *r, const struct native_map *nm,
		  kernel_entry_fn fn, void *ctx);
void run_slot_note(const struct cg_object *nobj, FILE *f);

/* kernel_map_read() through the run: the kernel's values and the user's. */
int run_map_source(void *ctx, int map, kernel_entry_fn fn, void *fctx);

/*
 * clear(), zero() and a user-mode probe's delete() of a map user-mode
 * probes write, from events of either side (kernel_set_map_hook(); the
 * kernel's map was done by then): ubt empties or zeroes the map's shared
 * table, or every thread's values, itself, in the order of the events
 * of the probe's side, as bpftrace does it asynchronously. A delete()
 * already removed the key from its own thread's table (which the thread
 * may have filled again since): the others only, asynchronously.
 */
void run_map_hook(void *ctx, int kind, int map, const void *key);

int run_user_drain(struct run *r);

/*
 * Time stamps when a kernel probe other than BEGIN/END and a user-mode
 * probe both send events; the user side reads the time-stamp counter
 * when it is a clock, else (or with UBT_NO_TSC set, for tests) the
 * clock_gettime syscall.
 */
enum cg_event_time run_event_time(const struct run *r);

/* Every event comes from a call run_event_call() knows. */
void run_check_events(const struct cg_object *obj);

/* run_limits.c: BPFTRACE_MAX_PROBES and BPFTRACE_MAX_BPF_PROGS before
 * any code is generated; 0, or -E2BIG with bpftrace's message printed. */
int run_check_limits(struct compile *c);

/* A record of the kernel's ring, into the queue. */
int run_kernel_take(void *ctx, const void *data, size_t size);

/*
 * One round: the time, then every source read, then everything older
 * than the time less the slack printed in order (all: everything).
 * Returns the number of records read.
 */
int run_merge_round(struct run *r, bool all);

/* Write one u64 of the globals into the template and every block. */
void run_set_global(struct run *r, uint64_t off, uint64_t v);
/* The same in r->u only. */
void run_set_global_one(struct run *r, uint64_t off, uint64_t v);

int run_user_attach(struct run *r);
/* The options each process's user side is attached with. */
void run_user_opts(struct run *r, struct user_opts *uo);
/* r->u just attached: its tables placed, its globals set. */
int run_user_prepare(struct run *r);

/* Install every user-mode program at each of its matches. */
/*
 * Install every user-mode probe; again: in a new image the target exec'd,
 * where a probe whose binary is not there has no site (as in the kernel):
 * said with -v, not an error.
 */
int run_user_install(struct run *r, int *nprobes, bool again);

/*
 * The target announced an execve() (runtime/rt_abi.h RT_FN_EXEC_HOOK):
 * follow it, place the probes again in the new image before it runs.
 */
void run_follow_exec(struct run *r);
/*
 * Let the target run with its probes (user_resume()), once; -v says how
 * long it was stopped.  0, or -errno after an error message.
 */
int run_user_go(struct run *r);
/*
 * After BEGIN: install every user-mode probe, libc's hooks, and with -p
 * let the target run (run_user_go()).  A -p target that ran execve()
 * during the attach (an exec storm) is attached to again, up to
 * RUN_EXEC_RETRIES times.  0, or -errno after an error message.
 */
#define RUN_EXEC_RETRIES 50
int run_user_setup(struct run *r, int *nprobes);

/*
 * cb(binary, file offset, semaphore offset, a return probe's) for every
 * user-mode site (system-wide).
 */
void run_user_sites(struct run *r,
		    void (*cb)(const char *bin, uint64_t file_off,
			       uint64_t sem_off, bool ret, void *ctx),
		    void *ctx);

/* The address in process pid of file offset off of bin (resolved). */
int run_target_addr(pid_t pid, const char *bin, uint64_t off,
		    uint64_t *addr);

bool run_target_gone(struct run *r);

/*
 * After a failed ptrace operation: has the target exited?  A killed
 * process fails them before it is a zombie: give it up to 100 ms.
 */
bool run_target_exited(struct run *r);

/* What user mode could not record, said once at exit. */
void run_user_warnings(struct run *r);
/* A CLONE_VM child made since the attach: said, true (the run ends). */
bool run_user_vm_child(struct run *r);
/* Updates of map `map` r->u's tables refused (full), all threads. */
uint64_t run_user_map_full(struct run *r, int map);
/* Inserts into map `map` dropped at the tables' insert lock. */
uint64_t run_user_map_lockdrop(struct run *r, int map);

/* run_fallback.c: -p/-c in the default mode, by probe index, every
 * user-mode probe's BPF program built standby (NULL: cannot be) */
bool *run_fallback_standby(struct compile *c, const struct run_opts *o,
			   const struct run_decision *d);
/* Can the user side still move to the kernel? */
bool run_fallback_ready(const struct run *r);
/*
 * The user side detached (nothing written yet, or restored), its probes'
 * standby programs to be attached instead; what: why, said on stderr.
 * 0, or -errno (r->u kept) after a message.
 */
int run_fallback(struct run *r, const char *what);
/*
 * A CLONE_VM child of the running target (user_vmwatch.c): its user-mode
 * probes handed over to the kernel in one stop (warned, -v says how).
 * 0 (the run goes on), or -errno after a message (the run ends).
 */
int run_fallback_child(struct run *r, pid_t child, unsigned nchildren);
/* A map a user-mode probe uses that is not an aggregation (NULL: none):
 * it keeps state a hand-over would lose. */
const char *run_fallback_state(const struct run *r);
/* Why the user side of this run cannot move to the kernel. */
const char *run_fallback_why_not(const struct run *r);

/* run_metrics.c: --metrics served from the combined loop (the maps
 * through run_map_source(), as the exit printout reads them) */
void run_metrics_start(struct run *r);
void run_metrics_stop(struct run *r);

/* run_xmap.c: maps user-mode and kernel probes share (codegen/cg_xmap.h):
 * -v's note, their tables placed in the target (after kernel_load(),
 * before the sites), the updates they dropped (*bad: not believed) */
void run_xmap_note(const struct cg_object *kobj, FILE *f);
/* The user-mode probes that run in the kernel instead when the target
 * cannot map a table (their BPF programs built standby: cg_opts.standby),
 * by probe index; NULL when that cannot be (*why: the reason) */
bool *run_xmap_standby(struct compile *c, const struct run_decision *d,
		       const bool *xmaps, const char **why);
/* Place the tables, or turn to the standby programs: 0 or -errno */
int run_xmap_place(struct run *r);
uint64_t run_xmap_dropped(struct run *r, int map, bool *bad);
/* ... and the updates that found no slot, said once at exit */
void run_xmap_warnings(struct run *r);

#endif
