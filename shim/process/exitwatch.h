/*
 * How a -p process ended (shim/process/exitwatch.c): ubt is not its parent, so a
 * BPF program on sched_process_exit keeps its exit code.
 */
#ifndef UBT_EXITWATCH_H
#define UBT_EXITWATCH_H

#include <stdbool.h>
#include <sys/types.h>

struct exitwatch;

/* Watch pid's end; NULL if the program cannot be loaded. */
struct exitwatch *exitwatch_start(pid_t pid);
/* Once it ended: true and its wait status (as waitpid() gives it). */
bool exitwatch_status(struct exitwatch *w, int *status);
void exitwatch_free(struct exitwatch *w);

#endif
