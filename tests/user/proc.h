/*
 * Test helpers shared by the user-mode tests: start a target with pipes on
 * its stdin and stdout, and read its output line by line.
 */
#ifndef UBT_TEST_PROC_H
#define UBT_TEST_PROC_H

#include <stddef.h>
#include <sys/types.h>

struct proc {
	pid_t pid;
	int in, out;	/* the target's stdin (write end), stdout (read end) */
};

/* fork + execv argv[0]; 0, or -1 when the pipes cannot be made. */
int spawn(struct proc *p, char *const argv[]);
/* One line without its '\n' (60 s at most); 0, or -1 on EOF/timeout/empty. */
int read_line(int fd, char *buf, size_t len);

#endif
