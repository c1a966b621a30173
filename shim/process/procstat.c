/* /proc/PID/stat and /proc/PID/auxv (procstat.h). */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procstat.h"

const char *procstat_read(pid_t pid, char *buf, size_t len)
{
	char path[64];
	const char *p;
	ssize_t n;
	int fd;

	if (len < 2)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	p = strrchr(buf, ')');	/* the command may hold anything */
	return p && p[1] == ' ' && p[2] ? p + 2 : NULL;
}

char procstat_state(pid_t pid)
{
	char buf[512];
	const char *p = procstat_read(pid, buf, sizeof(buf));

	return p ? p[0] : 0;
}

bool procstat_io_worker(pid_t tid)
{
	char buf[512];
	const char *p = procstat_read(tid, buf, sizeof(buf));
	unsigned int flags;

	/* field 9, flags: PF_IO_WORKER (0x10) */
	return p && sscanf(p, "%*c %*d %*d %*d %*d %*d %u", &flags) == 1 &&
	       (flags & 0x10);
}

int procstat_threads(pid_t pid)
{
	char buf[512];
	const char *p = procstat_read(pid, buf, sizeof(buf));
	int n;

	/* field 20, num_threads: fields 4 to 19 skipped after the state */
	if (!p || sscanf(p, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			    "%*s %*s %*s %*s %*s %*s %d", &n) != 1)
		return 0;
	return n;
}

uint64_t procstat_auxv(pid_t pid, uint64_t type)
{
	Elf64_auxv_t a;
	uint64_t v = 0;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, &a, sizeof(a)) == sizeof(a) && a.a_type != AT_NULL)
		if (a.a_type == type)
			v = a.a_un.a_val;
	close(fd);
	return v;
}
