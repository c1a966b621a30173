/*
 * User mode, the facade: attach to a process (-p) or start a command (-c),
 * place the runtime, install probes as jumps to trampolines that call
 * native probe code, let the target run, read the per-thread data back,
 * detach leaving the original code.
 *
 *   u = user_attach_pid(pid, NULL, err, sizeof(err));  runtime placed
 *   user_install(u, &probe);  ...        prepared, the target runs (-p)
 *   user_resume(u);      jumps written in one stop of every thread, runs
 *   ... memfd_sum_u64(user_memfd(u), off, &v) ...
 *   user_detach(u); user_free(u);
 *
 * Probe code contract: see tramp.h.  It reaches its thread's block at
 * %fs:user_tls_offset(u); the map area starts at RT_BLK_MAP in the block.
 */
#ifndef UBT_USER_H
#define UBT_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memfd.h"

struct ubt_user;

struct user_opts {
	size_t sz;			/* sizeof(struct user_opts) */
	const char *runtime_path;	/* NULL: UBT_RUNTIME, build, install */
	struct memfd_layout layout;	/* all zero: memfd_layout_default() */
	bool fault_safe_reads;	/* probes use rt_probe_read (str, *ptr):
				 * install the chained SIGSEGV handler */
	bool task;		/* probes read comm, uid or gid: keep the
				 * threads' names and credentials up to date
				 * (user_comm.c) */
	bool children;		/* record in children it forks (as -c's;
				 * system-wide: every process is traced) */
	const char *near;	/* a module with return probes: the runtime
				 * goes within rel32 reach of its code */
	/* binaries (resolved paths) that will have sites: their code
	 * areas are mapped with the runtime, in the same stop */
	const char *const *modules;
	size_t nmodules;
};

enum user_probe_kind {
	USER_PROBE_ENTRY,
	USER_PROBE_RETURN,
};

struct user_probe {
	size_t sz;			/* sizeof(struct user_probe) */
	const char *binary;		/* path of the executable or library */
	const char *symbol;
	enum user_probe_kind kind;
	const void *code;		/* native code, tramp.h contract */
	size_t code_len;
	uint64_t offset;		/* from the symbol (entry probes) */
	/* entry probe inside a function whose code takes a struct pt_regs
	 * (tramp.h spec.regs): a USDT site */
	bool regs;
	/* the runtime's vfork hook: an entry "pop %reg" stays behind
	 * (patch_analyze_pop()) */
	bool pop_entry;
};

/*
 * A USDT site's semaphore (is-enabled counter, a u16) at addr in the
 * process: incremented by user_resume() with the jumps (every thread stopped),
 * decremented again by user_detach(). 0, or -errno with user_error().
 */
int user_semaphore_add(struct ubt_user *u, uint64_t addr);

/*
 * System-wide (sysw.c), every thread stopped after user_install(): the
 * kernel uprobe's int3 at addr, outside the jump written, replaced by
 * the file's byte orig (the kernel counted the process's hits so far,
 * user mode counts the rest); with keep, left there (another tracer
 * shares it: the kernel's programs of this ubt skip the site in the
 * process).  Either way a thread the kernel stopped past the entry
 * instruction goes on past the probe (counted there).  1 replaced, 2
 * kept, 0 none there, -errno.
 */
int user_unbreak(struct ubt_user *u, uint64_t addr, uint8_t orig, bool keep);
/*
 * Is a kernel probe at addr one whose hits run in user mode (an
 * installed site: its entry instruction, function start or offset)?
 */
bool user_site_at(const struct ubt_user *u, uint64_t addr);
/*
 * Is there a runtime to load (runtime_path, NULL: the default), checked
 * as rtpath.h says?  0, or -errno with why.
 */
int user_runtime_check(const char *runtime_path, char *why, size_t len);

/*
 * A process of another mount namespace (user_mntns.c).  Is pid in
 * another mount namespace than ubt, or of another root: 1, 0 or -errno.  Does it see itself
 * in a procfs at /proc in its root?  How the runtime reaches it: 0 by its
 * path (ubt's namespace and root), 1 by descriptor (another one, where
 * /proc/self/fd works), -ENOENT neither, other -errno.
 */
int user_mntns_other(pid_t pid);
bool user_mntns_proc(pid_t pid);
int user_mntns_by_fd(pid_t pid);

/* Seize every thread of pid and place the runtime; NULL, err set, on error. */
struct ubt_user *user_attach_pid(pid_t pid, const struct user_opts *o,
			     char *err, size_t errlen);
/* Start argv stopped before main and place the runtime. */
struct ubt_user *user_attach_cmd(char *const argv[], const struct user_opts *o,
			     char *err, size_t errlen);

/*
 * Can binary:symbol be patched?  0 yes; -EINVAL no, with the reason;
 * other -errno when the binary or symbol cannot be read.
 */
int user_site_check(const char *binary, const char *symbol, char *reason,
		    size_t len);
/* The same for a probe at symbol+offset. */
/*
 * Does the function's entry instruction stay in place before the probe,
 * as at a site inside a function (one that sets flags and cannot run
 * twice, such as lock add to memory)?  Then no return probe or sarg there.
 */
int user_site_entry_stays(const char *binary, const char *symbol);
int user_site_check_at(const char *binary, const char *symbol,
		       uint64_t offset, char *reason, size_t len);
/*
 * The same for a probe that reads the entry registers reads (PATCH_REG_*
 * of patch.h): refused also when the entry instruction left in place
 * changes one of them.  *clobbers (may be NULL): the registers it changes
 * and PATCH_CLOBBERS_TAIL for a short function's tail (for -v).
 */
int user_site_check_reads(const char *binary, const char *symbol,
			  uint64_t offset, uint32_t reads, uint32_t *clobbers,
			  char *reason, size_t len);
/*
 * The bytes a patch at symbol+offset replaces, as offsets from the
 * symbol: [*lo, *hi). 0, or an error as user_site_check_at()'s.
 */
int user_site_span(const char *binary, const char *symbol, uint64_t offset,
		   uint64_t *lo, uint64_t *hi);

/*
 * Can user mode run in process pid at all?  0 yes; -EBUSY, with the
 * reason, when another tracer holds ptrace on it or another live ubt has
 * its probes there.
 */
int user_process_check(pid_t pid, char *reason, size_t len);
/*
 * Claim process pid for this ubt's user mode, until ubt (and its guard)
 * ends: 0; -EBUSY, with the reason, when another ubt holds the claim (it
 * plans or runs user mode there: this one's probes go to the kernel).
 */
int user_claim(pid_t pid, char *reason, size_t len);
/*
 * Are the bytes of binary:symbol+offset in process pid the file's (but
 * for other tracers' breakpoints on the entry instruction, and a dead
 * ubt's jumps, which the attach removes)?  0 yes (or nothing to tell);
 * -EBUSY with the reason.
 */
int user_site_check_live(pid_t pid, const char *binary, const char *symbol,
			 uint64_t offset, char *reason, size_t len);
/*
 * The process's mappings user_site_check_live() read are kept for the
 * next sites (a wildcard gives hundreds in one library): forgotten here,
 * before the sites of each probe are weighed.
 */
void user_site_live_forget(void);

/*
 * While the target is stopped: map the BPF array map_fd (bytes long, a
 * table kernel probes share: codegen/cg_xmap.h) into it, read-write, and
 * write its address at shared_off of the memfd's shared area, where
 * native probe code finds it (user_xmap.c).  -errno, user_error() why.
 */
int user_xmap_add(struct ubt_user *u, int map_fd, uint64_t shared_off,
		  uint64_t bytes);
/*
 * Before any probe is installed: unmap every table user_xmap_add() mapped
 * into the target and forget them all (their words 0).  0 or -errno.
 */
int user_xmap_remove_all(struct ubt_user *u);
/*
 * Prepare a probe (code area, code, trampoline) while the target runs
 * (-p) or waits at its entry (-c); user_resume() writes its jump.  -errno,
 * user_error() why.
 */
int user_install(struct ubt_user *u, const struct user_probe *p);
/* Let the target run (ubt detaches from it until user_detach). */
int user_resume(struct ubt_user *u);
/*
 * fn(u, ctx) runs inside user_resume()'s stop: every thread stopped, the
 * jumps written, before any thread runs on; its error is user_resume()'s
 * (the target still runs on).  System-wide mode takes the kernel's int3s
 * beside the jumps out there (sysw.c).
 */
void user_on_commit(struct ubt_user *u,
		    int (*fn)(struct ubt_user *u, void *ctx), void *ctx);
/*
 * fn(u, ctx) runs inside user_detach()'s stop of a running target: every
 * thread (and a CLONE_VM child) stopped, every patched byte the file's
 * again, before any thread runs on; the runtime is told to stop producing
 * events only then.  The run moves the probes to the kernel there
 * (run/run_fallback.c): not a hit lost or counted twice.
 */
void user_on_restore(struct ubt_user *u,
		     void (*fn)(struct ubt_user *u, void *ctx), void *ctx);
/*
 * Stop the target again, restore every patched byte exactly, tell the
 * runtime to stop producing output, let the target run on.  0 also when
 * the target has already exited.
 */
int user_detach(struct ubt_user *u);
void user_free(struct ubt_user *u);
/*
 * When the process exited while ubt was attached and ptrace collected its
 * wait status (so waitpid() on a -c child no longer can): true, *status.
 */
bool user_exit_status(const struct ubt_user *u, int *status);

const char *user_error(const struct ubt_user *u);
pid_t user_pid(const struct ubt_user *u);
int64_t user_tls_offset(const struct ubt_user *u);
/*
 * How long the target was stopped by attach + install + resume (not
 * counting time the other threads ran while a remote dlopen waited).
 */
uint64_t user_stop_ns(const struct ubt_user *u);
/*
 * The stop of every thread that wrote the jumps (the attach pause), and
 * its parts, as text for -v; 0 when there was none.
 */
int user_pause_text(const struct ubt_user *u, char *buf, size_t len);
/* -v: the stops of the thread that ran the remote calls and their calls;
 * 0 when there were none */
int user_ctl_text(const struct ubt_user *u, char *buf, size_t len);
/* Has user_resume() let the target run? */
bool user_resumed(const struct ubt_user *u);
/*
 * -p: did the target run execve() since the attach placed the runtime
 * (the control block no longer where it was mapped)?  A process that is
 * gone has no new image: false.
 */
bool user_image_changed(struct ubt_user *u);
/*
 * Read one map back: cb(data, block, arg) with a copy of bytes
 * [off, off + len) of the map area of every thread block in use (bounds
 * checked), to be merged as bpftrace merges per-CPU values.
 */
int user_read_maps(struct ubt_user *u, uint64_t off, uint64_t len,
		   int (*cb)(const void *data, uint32_t block, void *arg),
		   void *arg);
/*
 * Consume the output rings of every thread block: cb(type, data, len, arg)
 * per event, in order within a thread.  The number of events, or -errno
 * of the first malformed ring (the others are still read).
 */
int user_read_events(struct ubt_user *u,
		     int (*cb)(uint32_t type, const void *data, uint32_t len,
			       void *arg),
		     void *arg);
/* In user_read_events()'s callback: the thread block of the event. */
uint32_t user_event_block(const struct ubt_user *u);
/* Events dropped because a ring was full (bpftrace's lost events). */
uint64_t user_lost_events(const struct ubt_user *u);
/*
 * Threads that found no free block (more threads than layout.nblocks
 * have hit a probe; blocks of exited threads are kept for their data):
 * their hits were not recorded.
 */
uint64_t user_unrecorded_threads(const struct ubt_user *u);
/*
 * Stop pid, write back the original bytes of every jump of the dead ubt
 * process owner (and of any other dead one), idle their runtimes, let it
 * run on.  The number of jumps removed, or -errno with err set.
 */
int user_restore_dead(pid_t pid, uint32_t owner, char *err, size_t len);
/*
 * execve(): the runtime's hook on libc's execve announces an exec (the
 * target stopped while installing: after the probes).  0, or -errno with
 * the reason: exec()s then go unfollowed.
 */
int user_install_exec_hook(struct ubt_user *u);
/*
 * The vfork guard (user_vfork.c), placed with the exec hook: CLONE_VM
 * children that make their parent wait (posix_spawn, vfork, clone) take
 * blocks of their own.  user_vfork_note(): the functions left without it,
 * and why, or NULL.
 */
void user_install_vfork_hooks(struct ubt_user *u);
const char *user_vfork_note(const struct ubt_user *u);

/*
 * A child made by clone(CLONE_VM) without CLONE_THREAD or CLONE_VFORK
 * since the attach (user_vmwatch.c): the first one's pid (*n: how many),
 * or 0.  It runs on the per-thread block of the thread that made it: the
 * run cannot go on in user mode.  user_vmwatch_note(): why such
 * children are not watched, or NULL.
 */
pid_t user_vm_child(struct ubt_user *u, unsigned *n);
/*
 * A thread of the target about to make such a child with libc's clone()
 * (runtime/rt_vfork.c): its tid, or 0.  It waits until the detach (a
 * hand-over) before the child exists: the child never runs user-mode
 * probes, the detach leaves ubt's memory in the process (the thread
 * waits inside it).
 */
pid_t user_vm_asked(struct ubt_user *u);
const char *user_vmwatch_note(const struct ubt_user *u);
/* Has a thread announced an execve() that ubt has not handled yet? */
bool user_exec_pending(const struct ubt_user *u);
/*
 * Handle it: follow the target into its new image and leave it stopped
 * at its entry point with the runtime placed and the maps as they were
 * (1: install the probes again, then user_resume()); 0 when there is
 * nothing to follow (another process's exec, or one that failed);
 * -errno, with the reason, when the new image could not be prepared (it
 * runs on without probes).
 */
int user_follow_exec(struct ubt_user *u);
/* New images followed so far. */
int user_execs(const struct ubt_user *u);
/* Children the target forked while patched, restored at detach. */
int user_children(const struct ubt_user *u);
/* Jumps of a ubt that died, removed at attach (its leftovers). */
int user_leftovers(const struct ubt_user *u);
/* Their mappings taken out at attach, and why some stay ("" if none do). */
int user_dead_unmapped(const struct ubt_user *u);
const char *user_dead_why(const struct ubt_user *u);
/*
 * After user_detach(): how many of ubt's mappings it took out of the
 * process, and why they stay when they do ("" when they do not).
 */
int user_unmapped(const struct ubt_user *u);
/* and how many descriptors of killed workers' unmapped memfds it closed */
int user_strays(const struct ubt_user *u);
const char *user_unmap_why(const struct ubt_user *u);
/* Wrapped calls in progress parked at the detach ("" if none were). */
const char *user_park_note(const struct ubt_user *u);
/* Threads moved out of a patch window into its relocated copy. */
int user_moved_threads(const struct ubt_user *u);
/* Return sites whose trampolines jump to their own stub in the runtime
 * (stub), to its rt_wrap_call with a rel32 (near) or through an address
 * (far): the runtime's placement (user_inject.c), its stubs left. */
void user_wraps(const struct ubt_user *u, int *stub, int *near, int *far);
struct memfd *user_memfd(struct ubt_user *u);
/*
 * nsecs in user-mode probes from the time-stamp counter (user_clock.c):
 * renew the counter-to-ns map in the control block when it is due (call
 * it often: at resume and in the run loop).  user_clock_tsc(): is the
 * counter used (else probes read the vDSO)?
 */
void user_clock_tick(struct ubt_user *u);
bool user_clock_tsc(const struct ubt_user *u);
/*
 * comm, uid and gid in user-mode probes (user_opts.task): NULL when the
 * threads' names and credentials are kept up to date (user_comm.c) or
 * none is read, else why comm reads prctl() at every hit and uid and gid
 * stay as each thread first read them.
 */
const char *user_comm_note(const struct ubt_user *u);
bool user_comm_live(const struct ubt_user *u);

#endif
