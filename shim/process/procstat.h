/*
 * /proc/PID/stat, read once: what follows the command's ")" (the state
 * letter first, then field 4 on), safe against any command name; and one
 * entry of /proc/PID/auxv.
 */
#ifndef UBT_PROCSTAT_H
#define UBT_PROCSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Fill buf (len bytes) and return the text after ") ", or NULL when the
 * process is gone or the file unreadable. */
const char *procstat_read(pid_t pid, char *buf, size_t len);

/*
 * Is thread tid an io_uring worker of its process (PF_IO_WORKER in the
 * flags, field 9: iou-wrk-*, iou-sqp-*)?  It runs kernel code only: never
 * stopped, moved or used for a remote call (it cannot run user code).
 */
bool procstat_io_worker(pid_t tid);

/* The state letter ('R', 'S', 'T', 'Z', ...), 0 if unknown. */
char procstat_state(pid_t pid);

/* How many threads the process has (field 20), 0 if unknown. */
int procstat_threads(pid_t pid);

/* The value of entry type (AT_ENTRY, AT_SYSINFO_EHDR, ...) of the
 * process's auxiliary vector, 0 when absent or unreadable. */
uint64_t procstat_auxv(pid_t pid, uint64_t type);

#endif
