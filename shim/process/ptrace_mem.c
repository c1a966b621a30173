/*
 * A stopped process's memory through /proc/PID/mem, the registers ubt
 * keeps for its stopped threads, and its mappings.  Below both ptrace.c
 * and ptrace_call.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>
#include "ptrace.h"
#include "util.h"

int pt_read(struct pt *p, uint64_t addr, void *buf, size_t n)
{
	ssize_t r = pread(p->memfd, buf, n, (off_t)addr);

	if (r == (ssize_t)n)
		return 0;
	return r < 0 ? -errno : -EIO;
}

int pt_write(struct pt *p, uint64_t addr, const void *buf, size_t n)
{
	ssize_t r = pwrite(p->memfd, buf, n, (off_t)addr);

	if (r == (ssize_t)n)
		return 0;
	return r < 0 ? -errno : -EIO;
}

int pt_regs(struct pt *p, int i, struct user_regs_struct *r)
{
	if (i < 0 || i >= p->nth || !p->th[i].have_regs)
		return -EINVAL;
	*r = p->th[i].regs;
	return 0;
}

int pt_set_regs(struct pt *p, int i, const struct user_regs_struct *r)
{
	if (i < 0 || i >= p->nth || !p->th[i].have_regs)
		return -EINVAL;
	p->th[i].regs = *r;
	/*
	 * Into the thread at once, not only at the detach: a worker killed
	 * after writing the jumps must not leave a thread in a window.
	 */
	if (p->th[i].stopped)
		ptrace(PTRACE_SETREGS, p->th[i].tid, 0, r);
	return 0;
}

/*
 * The whole of /proc/PID/maps, read with large reads: the kernel walks the
 * mappings again for every read, and stdio's 4 KiB ones made a read of a
 * small process's maps cost three times one read (~180 us against ~60 on
 * the development machine), eleven of them while a -c command waits at
 * its entry point.  NUL-terminated, malloc'ed; NULL with errno.
 */
static char *read_maps(pid_t pid)
{
	size_t len = 0, cap = 65536;
	char path[64], *buf;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = xmalloc(cap);
	for (;;) {
		if (cap - len < 4096) {
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	if (r < 0) {
		int e = errno;

		close(fd);
		free(buf);
		errno = e;
		return NULL;
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

/* pt_maps_keep()'s process and its mappings as last read */
static pid_t maps_pid;
static struct pt_map *maps_kept;
static int maps_nkept;

void pt_maps_forget(void)
{
	free(maps_kept);
	maps_kept = NULL;
	maps_nkept = 0;
}

void pt_maps_keep(pid_t pid)
{
	pt_maps_forget();
	maps_pid = pid;
}

static struct pt_map *maps_copy(const struct pt_map *m, int n)
{
	struct pt_map *c = xmalloc((n ? n : 1) * sizeof(*c));

	if (n)
		memcpy(c, m, n * sizeof(*c));
	return c;
}

int pt_maps(pid_t pid, struct pt_map **out, int *n)
{
	struct pt_map *m = NULL;
	int cnt = 0, cap = 0;
	char *buf, *line, *next;

	if (pid && pid == maps_pid && maps_kept) {
		*out = maps_copy(maps_kept, maps_nkept);
		*n = maps_nkept;
		return 0;
	}
	buf = read_maps(pid);
	if (!buf)
		return -errno;
	for (line = buf; *line; line = next) {
		struct pt_map e = { 0 };
		unsigned long long s, en, off;
		int pos = 0;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		else
			next = line + strlen(line);
		if (sscanf(line, "%llx-%llx %4s %llx %*s %*s %n", &s, &en,
			   e.perms, &off, &pos) < 4)
			continue;
		e.start = s;
		e.end = en;
		e.off = off;
		if (pos > 0)
			snprintf(e.path, sizeof(e.path), "%s", line + pos);
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			m = xrealloc(m, cap * sizeof(*m));
		}
		m[cnt++] = e;
	}
	free(buf);
	if (pid && pid == maps_pid) {
		pt_maps_forget();
		maps_kept = maps_copy(m, cnt);
		maps_nkept = cnt;
	}
	*out = m;
	*n = cnt;
	return 0;
}
