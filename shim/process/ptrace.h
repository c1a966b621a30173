/*
 * ptrace plumbing for user mode: stop every thread of a process (seize +
 * interrupt, new threads followed), start a command stopped at its entry
 * point, run system calls and function calls inside the target, read and
 * write its memory, detach.  ubt is attached only while it changes the
 * target: between attach and detach the target runs untraced, so a killed
 * ubt leaves it running.
 */
#ifndef UBT_PTRACE_H
#define UBT_PTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <sys/user.h>

struct pt_thread {
	pid_t tid;
	int pending_sig;	/* signal to deliver on detach */
	bool stopped;
	bool have_regs;
	bool released;		/* let go again, others late (hold) */
	bool group_stop;	/* reported a group stop (SIGSTOP...) */
	uint64_t late_at;	/* UBT_TEST_STOP_LATE: interrupted then */
	uint64_t stop_ns;	/* CLOCK_MONOTONIC: when ubt saw it stop */
	struct user_regs_struct regs;	/* as found, then as to restore */
};

struct pt {
	pid_t pid;
	struct pt_thread *th;
	int nth, cap;
	int ctl;		/* index of the thread running remote calls */
	uint64_t syscall_insn;	/* address of a syscall instruction */
	uint64_t stub;		/* the remote call stub's page (ptrace_stub.c) */
	uint64_t stub_boot;	/* its copy in the vdso's spare bytes, for
				 * the page's own mmap, or 0 */
	int memfd;		/* /proc/PID/mem */
	bool child;		/* started by pt_spawn */
	/* pt_spawn: the command's nice value, when renice (ubt's own is
	 * raised while it waits for the command to reach its entry) */
	bool renice;
	int nice;
	bool one;		/* only the control thread is seized */
	bool exited;		/* the process exited while we waited: */
	int exit_status;	/* its wait status (reaped if our child) */
	uint64_t stop_start_ns;	/* CLOCK_MONOTONIC: the first thread stopped */
	bool others_running;	/* released during a long remote call */
	struct timespec released_at;
	uint64_t released_ns;	/* time the other threads ran meanwhile */
	/*
	 * Stopping every thread (pt_seize(), pt_stop_all()): a thread
	 * stopped longer than hold_ns (0: no limit) while others are still
	 * on their way runs again, and is interrupted again once they are
	 * stopped; held_ns is the longest such stop, holds their number,
	 * retries the times they were interrupted again (ptrace_stop.c).
	 * hold_fail: an attach gives up (-EAGAIN) when the threads do not
	 * come together, rather than wait with the others held.
	 */
	uint64_t hold_ns;
	uint64_t held_ns;
	int holds, retries;
	bool hold_fail;
	int lates;		/* threads made late (UBT_TEST_STOP_LATE) */
	char err[256];		/* why the last call failed */
	/* remote calls run (ptrace_call.c): how many, their system call
	 * stops, the longest one's time (ns), which one it was (1: the
	 * first) and whether it ran through the helper (ptrace_done.c) */
	int calls, call_stops, call_max_at;
	bool call_max_done;
	uint64_t call_max_ns;
	/* pt_call_near(): the mmap to place, while the call runs */
	uint64_t near_len, near_at;
	/*
	 * pt_done_word(): a word shared with the target (its address there,
	 * and here), through which calls end without system call stops
	 * (ptrace_done.c); done_call while such a call runs; done_page the
	 * stub's page whose helper is checked.
	 */
	uint64_t done_at;
	volatile uint32_t *done;
	bool done_call;
	uint64_t done_page;
};

struct pt_map {
	uint64_t start, end, off;
	char perms[5];
	char path[256];
};

void pt_init(struct pt *p);
/* Seize and stop every thread of pid.  -errno with p->err set. */
int pt_seize(struct pt *p, pid_t pid);
/*
 * Seize and stop only thread tid of pid, as the control thread: enough for
 * remote calls while the other threads run on.  pt_stop_all() stops the
 * others when every thread must be stopped.
 */
int pt_seize_thread(struct pt *p, pid_t pid, pid_t tid);
/* After pt_seize_thread: seize and stop every other thread too. */
int pt_stop_all(struct pt *p);
/* Start argv[0] (PATH searched) stopped at its ELF entry point. */
int pt_spawn(struct pt *p, char *const argv[]);
/*
 * Follow thread tid of pid into the execve() it is about to make: seize
 * it (it runs on), call go(arg) (which lets it go on into execve()), wait
 * for the exec, run the new image's loader up to its entry point and
 * leave it stopped there, as pt_spawn() leaves a command.  -ETIMEDOUT
 * (and detached) when no exec comes within timeout_ms.
 */
int pt_follow_exec(struct pt *p, pid_t pid, pid_t tid,
		   void (*go)(void *), void *arg, int timeout_ms);
/* Resume every thread and detach; registers of the control thread restored. */
int pt_detach(struct pt *p);
/* Resume and detach every thread but the control thread. */
void pt_detach_others(struct pt *p);
void pt_release(struct pt *p);

/*
 * Open /proc/PID/mem of pid for p unless p has it open: pt_read() and
 * pt_write() of a process not stopped, seized or not (memory no thread
 * runs yet, such as a slot ubt has still to point a jump at).  A root
 * ubt needs no stop for it; the handle goes at the next pt_detach() or
 * pt_release().
 */
int pt_mem_open(struct pt *p, pid_t pid);

int pt_read(struct pt *p, uint64_t addr, void *buf, size_t n);
int pt_write(struct pt *p, uint64_t addr, const void *buf, size_t n);

/* A system call in the control thread; *ret is the raw return value. */
int pt_syscall(struct pt *p, long nr, const uint64_t args[6], int64_t *ret);
/* Call fn(args...) in the control thread; -ETIMEDOUT after timeout_ms. */
int pt_call(struct pt *p, uint64_t fn, const uint64_t args[6], uint64_t *ret,
	    int timeout_ms);
/*
 * After pt_call() returned -ETIMEDOUT: let the control thread go on with
 * the same call from where it stopped, until it returns (*ret) or
 * timeout_ms more pass (-ETIMEDOUT again).
 */
int pt_call_more(struct pt *p, uint64_t *ret, int timeout_ms);
/*
 * From now on (local NULL: no more), pt_call() ends without system call
 * stops through a 16-byte word shared with the target: at address at
 * there, local here (ptrace_done.c).  Only while that mapping stays.
 */
void pt_done_word(struct pt *p, uint64_t at, volatile uint32_t *local);

/*
 * pt_call() of a loader (dlopen): the first mmap of len bytes, at no
 * address, from a file at offset 0 (the loader reserving the object's
 * span) gets at as its address hint (no MAP_FIXED: the kernel places it
 * elsewhere when that range is taken).  The control thread runs from
 * system call to system call until that mmap.
 */
int pt_call_near(struct pt *p, uint64_t fn, const uint64_t args[6],
		 uint64_t *ret, int timeout_ms, uint64_t len, uint64_t at);

/* Let every thread run for usec, then stop them all again. */
int pt_run_briefly(struct pt *p, unsigned int usec);

/* Registers of thread i (the values it resumes with). */
int pt_regs(struct pt *p, int i, struct user_regs_struct *r);
int pt_set_regs(struct pt *p, int i, const struct user_regs_struct *r);

/*
 * ptrace(SEIZE) of thread tid of pid failed with EPERM: 1 if the thread is
 * exiting (zombie, dead or gone), 0 if another tracer holds it, 2 if this
 * process does already, -1 if neither shows.
 */
int pt_thread_exiting(pid_t pid, pid_t tid);

/* Has pid exited (no such process, or a zombie)? */
bool pt_gone(pid_t pid);

/* /proc/PID/maps, parsed; free(*out) after use. */
int pt_maps(pid_t pid, struct pt_map **out, int *n);
/*
 * Keep pid's mappings from one pt_maps() to the next (0: keep none), for a
 * process that runs nothing meanwhile but ubt's remote calls, which
 * forget them (pt_maps_forget()): a -c command at its entry point.
 */
void pt_maps_keep(pid_t pid);
void pt_maps_forget(void);

#endif
