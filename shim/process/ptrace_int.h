/*
 * Shared by the two parts of ptrace (shim/README): ptrace.c (threads
 * seized, stopped, spawned, followed across exec, detached) and
 * ptrace_call.c (memory, registers, remote syscalls and calls).
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

void pt_drop_thread(struct pt *p, pid_t tid);

int pt_list_tasks(struct pt *p, pid_t pid, int *added);

/*
 * Wait for every thread to stop, taking each stop as it comes (the time
 * of the first one is when the process stopped), sleeping until SIGCHLD.
 */
int pt_stop_threads(struct pt *p);

#endif
