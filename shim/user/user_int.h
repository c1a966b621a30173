/*
 * State shared by the parts of user mode (shim/README): struct ubt_user,
 * created by user_attach.c, its runtime and memfd placed by user_inject.c,
 * its sites added by user_install.c, taken back by user_detach.c, moved to
 * a new image by user_exec.c, freed by user.c.
 */
#ifndef UBT_USER_INT_H
#define UBT_USER_INT_H

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "owner.h"
#include "patch.h"
#include "ptrace.h"
#include "rtpath.h"
#include "tramp.h"
#include "user.h"
#include "user_clock.h"
#include "util.h"

/* patched functions (the code areas fill first) */
#define USER_MAX_SITES 16384
#define USER_CRED_TPS 6		/* user_comm.c: set{,re,res}{u,g}id */

#define USER_SCRATCH_OFF 2048	/* in the control page, after struct rt_ctl */
/* its last 16 bytes: remote calls' "done" word (pt_done_word()) */
#define USER_DONE_OFF (RT_CTL_SIZE - 16)

#define USER_MAX_FUNC (1 << 20)

#define USER_2G (2ULL << 30)

#define USER_VA_END 0x7ffffffff000ULL	/* end of 47-bit user space */

struct user_slice {
	char path[PATH_MAX];	/* module */
	uint64_t target;	/* address in the target */
	uint64_t used;
};

struct user_site {
	struct patch_site s;
	int slice;
	uint64_t entry_code, ret_code;
	size_t entry_len, ret_len;	/* bytes of the probe code */
	uint8_t jmp[PATCH_MAX_WINDOW];	/* bytes written over the window */
	uint64_t tramp;
	struct patch_reloc r;
	uint64_t reloc_at;
	bool installed;		/* the jump is written */
	bool pending;		/* prepared: user_resume() writes it */
	uint64_t rec;		/* target address of its struct rt_site */
	uint64_t offset;	/* of the probe from the symbol */
	bool regs;		/* its entry code takes a struct pt_regs */
	int wrap;		/* a return site: its trampoline jumps to
				 * its own stub in the runtime (2), to
				 * rt_wrap_call with a rel32 (1) or through
				 * an address (-1) */
};

/*
 * The stop of every thread that writes the prepared jumps (user_commit.c):
 * how long, and its parts (ns).
 */
struct user_pause {
	uint64_t total;		/* the longest stop of a thread */
	uint64_t stop;		/* until every thread was stopped */
	uint64_t check;		/* windows and threads' rip checked */
	uint64_t write;		/* the jumps written, rips moved */
	uint64_t resume;	/* registers set, threads let go */
	int threads, jumps, moved;
	int holds;		/* threads let go while others were late */
	int retries;		/* ... and interrupted again */
};

/*
 * In the final stop a thread stopped this long while others are not yet
 * stopped runs again, and stops again with the late ones (ptrace.h).
 */
#define USER_HOLD_NS (500 * 1000ULL)
/* user_detach(): how long another tracer may hold the process (a second
 * ubt attaching) before the restore gives up on it */
#define USER_DETACH_WAIT_NS (5 * 1000000000ULL)

/* user_module_range()'s last answer */
struct user_range {
	bool valid;
	char path[PATH_MAX];
	uint64_t bias, lo, hi;
};

/* a killed worker's memfd descriptor in the target (user_strays.c) */
#define USER_STRAYS_MAX 64
struct user_stray {
	int fd;
	uint64_t ino;
	uint64_t ctl;	/* mapped: its control view there, else 0 */
};

struct ubt_user {
	struct pt pt;
	pid_t pid;
	bool child, resumed, detached;
	struct memfd m;
	int64_t target_fd;	/* the memfd in the target: open until
				 * the detach (user_unmap.c) */
	uint64_t target_base;
	uint64_t target_size;	/* bytes of its first view there */
	int unmapped;		/* user_unmap(): mappings removed */
	int strays;		/* killed workers' descriptors closed */
	struct user_stray stray[USER_STRAYS_MAX];	/* to close */
	int nstray;
	uint64_t stray_rt[4][2];	/* the runtime's code then */
	int stray_nrt;
	char unmap_why[320];	/* why they stay, or empty */
	char park_note[320];	/* wrapped calls parked there, or empty */
	int dead_unmapped;	/* user_unmap_dead(): dead ubts' mappings */
	char dead_why[320];	/* why those stay, or empty */
	int64_t tls_offset;
	struct user_slice slices[RT_CODE_SLICES];
	int nslices;
	struct user_site *sites;
	int nsites, sites_cap;
	struct user_range range;	/* kept while probes are prepared */
	/* USDT semaphores ubt incremented: decremented at detach */
	uint64_t *sems;
	int nsems;
	/* semaphores user_resume() increments (user_semaphore_add()) */
	uint64_t *sems_pend;
	int nsems_pend;
	uint64_t stop_ns;	/* stopped so far (finished phases) */
	uint64_t stop_t0;	/* start of the current stop */
	/* -p: the remote-call thread's stops, its calls, their system call
	 * stops and the longest call (ns), summed at each user_count_stop() */
	int ctl_stops, ctl_calls, ctl_call_stops;
	uint64_t ctl_call_max_ns;
	int ctl_call_max_at;	/* which call that was (1: the first) */
	bool ctl_call_max_done;	/* through the helper (ptrace_done.c) */
	struct user_pause pause;	/* the last stop of every thread */
	bool released;		/* -p: running between attach and install */
	pid_t ctl_tid;		/* the thread that ran the remote calls */
	bool boosted;		/* ubt runs at nice -20 while it is stopped */
	int old_nice;
	bool pinned;		/* ubt runs on the control thread's CPU */
	bool child_boosted;	/* -c: the command too, while it waits;
				 * -p: the thread of the remote calls */
	int child_nice;
	pid_t child_boost_id;	/* whose nice child_nice is (0: pid) */
	bool child_pinned;	/* -c: the command on ubt's CPU meanwhile */
	cpu_set_t child_cpus;
	bool rt;		/* SCHED_FIFO in the final stop (user_rt()) */
	int (*commit_fn)(struct ubt_user *u, void *ctx);	/* user_on_commit() */
	void *commit_ctx;
	/* user_on_restore() */
	void (*restore_fn)(struct ubt_user *u, void *ctx);
	void *restore_ctx;
	int old_policy;
	struct sched_param old_param;
	cpu_set_t old_cpus;
	bool tls_pending;	/* threads' block pointers to reset */
	bool new_image;		/* it ran execve() while released */
	int moved;
	bool exited;
	int exit_status;
	char rt_path[PATH_MAX];
	char rt_near[PATH_MAX];	/* user_opts.near, for every image */
	uint64_t self_start;	/* ubt's start time, for site records */
	int leftovers;		/* a dead ubt's jumps removed at attach */
	int children;		/* forked children restored at detach */
	bool exec_hook;		/* libc's execve announces exec()s */
	uint32_t exec_seen;	/* the last ctl->exec_seq handled */
	int execs;		/* new images followed */
	uint32_t ev_block;	/* user_read_events(): the ring being read */
	uint64_t rt_init_vaddr;
	char libc[PATH_MAX];
	bool libc_ready;
	pid_t libc_pid;		/* whose mappings named u->libc */
	int libc_dyn;
	uint64_t libc_min_vaddr, libc_bias;
	uint64_t dlopen_vaddr, dlerror_vaddr, single_vaddr;
	struct user_clock clk;
	/* user_comm.c: the task_rename program keeping comm up to date */
	bool comm_want;		/* a user-mode probe reads comm */
	int comm_map, comm_prog, comm_link;	/* -1: none */
	int cred_prog, cred_ev[USER_CRED_TPS];	/* likewise */
	bool comm_placed;	/* the target maps the table: it is live */
	uint64_t comm_at;	/* where, in the image it was last placed in */
	char comm_why[256];	/* why it is not live */
	char vf_why[512];	/* user_vfork.c: hooks not placed, why */
	/* user_vmwatch.c: a CLONE_VM child made after the attach (fds 0:
	 * none) */
	int vmw_map, vmw_ev;
	pid_t vm_child;		/* the first seen, 0: none */
	unsigned vm_children;
	/* the thread that announced one (rt_vfork.c) and waits, 0: none */
	pid_t vm_asked;
	char vmw_why[256];	/* why it is not watched */
	/* user_xmap.c: tables shared with kernel probes (placed again
	 * after an exec); user.c closes the fds */
	struct user_xmap {
		int fd;		/* ubt's duplicate of the map's fd */
		uint64_t off;	/* the word in the shared area */
		uint64_t len;	/* bytes mapped (pages) */
		uint64_t addr;	/* where, in the image it was last placed
				 * in; 0: not mapped */
	} *xmaps;
	int nxmaps;
	char err[512];
};

/* user_vmwatch.c: the watch on task_newtask, started (0) or why not;
 * stopped (user_free()) */
int user_vmwatch_start(struct ubt_user *u);
void user_vmwatch_stop(struct ubt_user *u);
/* user_check.c: another process in pid's memory (kcmp), or 0 */
pid_t user_vm_sharer(pid_t pid);

/* A field of a sized struct from the caller, 0 if its sz stops before. */
#define USER_FIELD(p, type, f)                                         \
	((p) && (p)->sz >= offsetof(type, f) + sizeof((p)->f) ? (p)->f \
							       : 0)

int user_err(struct ubt_user *u, int err, const char *fmt, ...);

/* ptrace reaped the process's exit (a -c child): keep its status. */
void user_note_exit(struct ubt_user *u);

/* The runtime to load: found and checked as rtpath.h says. */
int user_runtime_path(const struct user_opts *o, char *out, size_t len,
			char *why, size_t whylen);

/*
 * Where a module mapped from path lies in mappings m, or in the target
 * now ([lo, hi)), and its load bias given the ELF file's lowest p_vaddr
 * and type.
 */
int user_module_in(const struct pt_map *m, int n, const char *path,
		   uint64_t min_vaddr, int is_dyn, uint64_t *bias,
		   uint64_t *lo, uint64_t *hi);
int user_module_maps(pid_t pid, const char *path, uint64_t min_vaddr,
		       int is_dyn, uint64_t *bias, uint64_t *lo, uint64_t *hi);

/* The path of the libc mapped in pid (-ENOENT: none). */
int user_find_libc(pid_t pid, char *path, size_t len);

/*
 * Does a thread of pid hold the dynamic loader's lock (user_ldlock.c)?
 * 1 (its tid in *owner), 0 no, -errno when the locks cannot be found.
 */
int user_ldlock_held(pid_t pid, pid_t *owner);
/* the same, waiting up to ms for it to be let go */
#define USER_LDLOCK_WAIT_MS 2000
int user_ldlock_wait(pid_t pid, int ms, pid_t *owner);
/* UBT_TEST_LDLOCK_LATE: 1 no look at the decision, 2 nor before the call */
int user_ldlock_late(void);
/* thread tid of pid owns one of them (a remote call stopped inside) */
bool user_ldlock_owns(pid_t pid, pid_t tid);

int user_module_range(struct ubt_user *u, const char *path, uint64_t *bias,
			uint64_t *lo, uint64_t *hi);

/* A remote system call in the process of pt (u's target, or a child). */
int user_rsys_in(struct ubt_user *u, struct pt *pt, long nr,
		 const uint64_t args[6], int64_t *ret);
int user_rsys(struct ubt_user *u, long nr, uint64_t a0, uint64_t a1,
		uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5,
		int64_t *ret);

/* A memfd made in the target (it owns it: no permission needed), ours too. */
int user_target_memfd(struct ubt_user *u, int *fd_out);

/* The target maps our memfd; it knows where. */
int user_target_map(struct ubt_user *u, bool share);

int user_place_memfd(struct ubt_user *u, const struct user_opts *o);

/*
 * At the detach, every site restored and every thread stopped: the
 * memfd's mappings and descriptor taken out of the target, with an
 * earlier session's left there, unless a thread may still use them
 * (then u->unmap_why says which and why).  user_unmap.c.
 */
int user_unmap(struct ubt_user *u);
/*
 * The same in a child the target forked during the session (pt: every
 * thread of it stopped, its sites restored), which inherited the
 * mappings, the descriptor and the BPF maps' mappings at bpf[0..nbpf);
 * why (len bytes) says which thread keeps them, or is empty.
 */
int user_unmap_child(struct ubt_user *u, struct pt *pt, const uint64_t *bpf,
		     int nbpf, char *why, size_t len);
/*
 * At an attach, every thread stopped, dead ubts' jumps just removed
 * (owner_restore()): the mappings of their memfds whose sites are all
 * restored, their comm tables and descriptors taken out of the target,
 * unless a thread may still use them (u->dead_why says which and why;
 * the code stays read-only-executable).  user_unmap.c.
 */
int user_unmap_dead(struct ubt_user *u);
/*
 * The descriptors of killed workers' memfds in the target (not own's,
 * the inode of this session's): those no mapping uses, and (mapped) those
 * mapped with their control view; listed while it runs; closed with
 * every thread stopped if each is still that memfd (a mapped one only if
 * the runtime no longer uses it): how many.  user_strays.c.
 */
void user_strays_find(struct ubt_user *u, uint64_t own, bool mapped);
int user_strays_close(struct ubt_user *u);

/*
 * A thread blocked in a system call where a remote dlopen is safe (as in
 * ctl_safe()), found in /proc without stopping anything: then only that
 * thread stops while the runtime is placed.  0 if there is none.
 */
pid_t user_blocked_thread(struct ubt_user *u);

/* Let go of whatever is seized (the libc and vdso findings stay). */
void user_unseize(struct ubt_user *u);

/* Pick the thread that runs the remote calls, letting the process run on
 * a little while no thread is at a safe point. */
int user_choose_ctl(struct ubt_user *u);

/*
 * Find libc and its dlopen, and make sure libc is initialized: a process
 * caught while the dynamic loader still runs (libc mapped, not set up) must
 * not get a dlopen.  glibc sets __libc_single_threaded during its early
 * initialization; it is still 0 only before that, or once threads exist.
 */
/*
 * Read what ubt needs from the target's libc (its path from the target's
 * maps, then the ELF file), before stopping the target when possible.
 */
int user_prepare_libc(struct ubt_user *u);

/*
 * -c: the same ELF work on the libc ubt runs with, before the command
 * starts: most commands map that one (user_prepare_libc() checks).
 */
void user_prepare_libc_self(struct ubt_user *u);

int user_check_libc(struct ubt_user *u);

/* Forget blocks of an earlier attach in every thread (all stopped). */
int user_reset_tls(struct ubt_user *u);
/* every thread's block pointer zeroed (all stopped) */
int user_zero_tls(struct ubt_user *u);
/* the same for the threads of pt (u's target, or a child) */
int user_zero_tls_in(struct ubt_user *u, struct pt *pt);

int user_place_runtime(struct ubt_user *u, const struct user_opts *o);

/*
 * Every thread stopped (the jumps are written now): forget the blocks of
 * an earlier attach in every thread first.  Nothing reads them before.
 */
int user_stop_all(struct ubt_user *u);

/*
 * Did an operation fail because the process went away?  An exiting process
 * fails reads and writes of its memory before it turns into a zombie: give
 * it a moment.
 */
bool user_process_gone(struct ubt_user *u, int e);

void user_unboost(struct ubt_user *u);

/*
 * user_comm.c, where comm_want: user_comm_prepare() makes the comm table
 * and loads and attaches its programs (before the target stops: reading
 * the kernel's BTF takes ~16 ms); user_comm_place() maps the table in the
 * stopped target (again after an exec); 0 or -errno (comm then reads
 * prctl at every hit).  The _try forms keep
 * u->err and note the failure in u->comm_why.  user_comm_stop(): close.
 */
int user_comm_prepare(struct ubt_user *u);
int user_comm_place(struct ubt_user *u);
void user_comm_stop(struct ubt_user *u);
/* Hand fd to the stopped target over a unix socket: its number there. */
int user_comm_send(struct ubt_user *u, int fd, int64_t *tfd);
/* user_xmap.c: map the shared tables again (a new image). */
int user_xmap_place_all(struct ubt_user *u);
void user_comm_try_prepare(struct ubt_user *u);
void user_comm_try(struct ubt_user *u);


/*
 * Add the stop that ends now: from when the first thread stopped (-p), or
 * from the start of the attach (-c: stopped from its first instruction).
 */
void user_count_stop(struct ubt_user *u);

/*
 * user_stop.c: seize the target (tid first when not 0, else the
 * process's threads), ubt boosted while they wait; 0 or -errno with
 * u->pt.err.
 */
int user_seize(struct ubt_user *u, pid_t tid);

/*
 * -c: before the command starts, ubt runs at nice -20, so that it sees at
 * once the command reach its entry point (the command keeps ubt's value).
 */
void user_hold_spawn(struct ubt_user *u);

/*
 * -c: the command waits at its entry point from here: ubt and the command
 * run at nice -20 on ubt's CPU until it runs (user_unhold()).
 */
void user_hold(struct ubt_user *u);

/* -c: the command's own priority and CPUs back (before it runs; also from
 * user_unboost()). */
void user_unhold(struct ubt_user *u);

/*
 * Stop the target again: one thread for remote calls only, or (all) every
 * thread at once, since the jumps are to be written: a spinning thread
 * takes a while to notice the interrupt, and a thread stopped first waits
 * for the others (so they are interrupted together, not one after another).
 */
int user_restop(struct ubt_user *u, bool all);

/*
 * -p: let the target run again after a stop of one thread (the remote
 * calls of the attach, or a code area mapped): ptrace lets it go.
 */
void user_release(struct ubt_user *u);

/* ubt's thread SCHED_FIFO (on) for the final stop, or back (off). */
void user_rt(struct ubt_user *u, bool on);

/*
 * Read the target's memory while it runs (no thread need be stopped).
 */
int user_peek(struct ubt_user *u, uint64_t addr, void *buf, size_t n);

/*
 * Every thread stopped (user_stop_all() done): check the prepared sites
 * (the process's bytes still the original ones, no thread inside an
 * instruction of a window), then write every jump, move the threads out
 * of the windows, and increment the pending semaphores.  Nothing is
 * written when a check fails.  Fills u->pause's counts.
 */
int user_commit(struct ubt_user *u);

/*
 * A code slice near module path (resolved), mapped now if it has none:
 * with the runtime, in the stop that places it.  0 also when the module
 * is not mapped.
 */
int user_prepare_slice(struct ubt_user *u, const char *path);

/* ubt's view of the record at target address at in slice i */
struct rt_site *user_slice_record(struct ubt_user *u, int i, uint64_t at);
/* the same in whichever slice holds it, or NULL */
struct rt_site *user_record(struct ubt_user *u, uint64_t at);

/*
 * The process's bytes of a site (mem: from s->func to the end of the
 * window) against the file's (code, from s->func).  The window must be
 * the file's exactly; before it (endbr64, the entry instruction) another
 * tracer's int3 may stand on an instruction's first byte: it is left
 * alone, and the trampoline runs the file's instruction.  0, or -EBUSY
 * with the reason.
 */
int user_site_compare(const struct patch_site *s, const uint8_t *code,
			const uint8_t *mem, char *reason, size_t len);

/* bytes [off, off + size) of a file into a new buffer */
uint8_t *user_read_file_code(const char *path, uint64_t off, uint64_t size);

#endif
