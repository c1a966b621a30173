/*
 * Shared by the parts of ptrace (shim/README): ptrace.c (threads
 * seized, spawned, followed across exec, detached), ptrace_stop.c (every
 * thread stopped, none held long; let go) and ptrace_call.c (memory,
 * registers, remote syscalls and calls).
 */
#ifndef UBT_PTRACE_INT_H
#define UBT_PTRACE_INT_H

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ptrace.h"
#include "util.h"

int pt_fail(struct pt *p, int err, const char *fmt, ...);

/* ptrace_stop.c: the list of threads (p->th) */
struct pt_thread *pt_find_thread(struct pt *p, pid_t tid);
struct pt_thread *pt_add_thread(struct pt *p, pid_t tid);
void pt_drop_thread(struct pt *p, pid_t tid);

int pt_list_tasks(struct pt *p, pid_t pid, int *added);

/*
 * Wait until thread t is in a ptrace stop (nohang: 1 if it is not yet).
 * Follows clones (new threads are added).  -ESRCH if it died (dropped).
 */
int pt_wait_stop(struct pt *p, struct pt_thread *t, bool nohang);

/*
 * ptrace_stop.c.  Wait for every thread to stop, taking each stop as it
 * comes (the time of the first one is when the process stopped), sleeping
 * until SIGCHLD; with p->hold_ns none held long while others are late, and
 * with p->hold_fail -EAGAIN (p->err set) rather than waiting for a late one
 * with the others held.
 */
int pt_stop_threads(struct pt *p);
/*
 * Detach every thread but the one at index keep (-1: none), each as soon
 * as it is stopped (the others interrupted): none waits for another.  The
 * kept one ends as the only one, at index 0 (p->ctl).
 */
int pt_let_go(struct pt *p, int keep);

/*
 * ptrace_stub.c: remote system calls and calls through a stub in the
 * target that puts the thread back by itself should ubt die meanwhile.
 */
/*
 * The stub's page in the target: mapped once, found again later.  When
 * it is not there yet and the vdso has room, the stub goes into the
 * vdso's spare bytes first (p->stub_boot set, *a the page's mmap to make
 * through it, then pt_stub_boot_end() with its result, 0 if it failed).
 */
int pt_stub_place(struct pt *p, uint64_t a[6]);
int pt_stub_boot_end(struct pt *p, uint64_t page);
/* UBT_TEST_DIE_IN_MMAP=1: the worker dies here (tests/README.md). */
void pt_test_die_in_mmap(void);
/* The control thread's registers *r to enter the stub with, its data
 * written: system call nr (call false) or a call of fn, arguments a. */
int pt_stub_enter(struct pt *p, bool call, uint64_t fn, const uint64_t a[6],
		  struct user_regs_struct *r);
/* The stub's data words (its D_ enum), the helper's after them. */
#define PT_STUB_WORDS 26
/*
 * ptrace_done.c: a call that runs without system call stops, through a
 * helper at PT_DONE_OFF in the stub's page that says "done" in a word
 * shared with ubt (pt_done_word()) and waits there to be stopped.
 */
#define PT_DONE_OFF 0x800
#define PT_RAWSYS_OFF (PT_DONE_OFF + 0x90)
bool pt_done_usable(const struct pt *p);
int pt_done_enter(struct pt *p, uint64_t fn, const uint64_t a[6],
		  struct user_regs_struct *r);
/* The same for system call nr, made by the helper's own code (libc's
 * errno untouched): a system call without system call stops. */
int pt_done_syscall(struct pt *p, long nr, const uint64_t a[6],
		    struct user_regs_struct *r);
bool pt_done_seen(const struct pt *p);
uint64_t pt_done_result(const struct pt *p);
void pt_done_sleep(struct pt *p, long ns);
int pt_done_stop(struct pt *p, struct user_regs_struct *r);
/* At a system call stop with registers r: the stub's end (result %rdi)? */
bool pt_stub_done(const struct pt *p, const struct user_regs_struct *r);
/* The control thread, stopped by ubt (at a fault's signal stop: fault),
 * gets its own registers back. */
int pt_settle(struct pt *p, bool fault);

/*
 * Wait for the control thread's interrupt stop (PTRACE_EVENT_STOP, after
 * a PTRACE_INTERRUPT), letting it run on through other stops (a signal's
 * kept for later); 0 or -errno (-ESRCH: it is gone).
 */
int pt_event_stop(struct pt *p);
/* Registers in as the kernel lets a thread go on from a stop (a system
 * call it was in restarted). */
void pt_resume_regs(const struct user_regs_struct *in,
		    struct user_regs_struct *out);

#endif
