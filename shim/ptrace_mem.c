/*
 * A stopped process's memory through /proc/PID/mem, the registers ubt
 * keeps for its stopped threads, and its mappings.  Below both ptrace.c
 * and ptrace_call.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <string.h>
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
	return 0;
}

int pt_maps(pid_t pid, struct pt_map **out, int *n)
{
	char path[64], line[512];
	struct pt_map *m = NULL;
	int cnt = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct pt_map e = { 0 };
		unsigned long long s, en, off;
		int pos = 0;

		if (sscanf(line, "%llx-%llx %4s %llx %*s %*s %n", &s, &en,
			   e.perms, &off, &pos) < 4)
			continue;
		e.start = s;
		e.end = en;
		e.off = off;
		if (pos > 0) {
			snprintf(e.path, sizeof(e.path), "%s", line + pos);
			e.path[strcspn(e.path, "\n")] = 0;
		}
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			m = xrealloc(m, cap * sizeof(*m));
		}
		m[cnt++] = e;
	}
	fclose(f);
	*out = m;
	*n = cnt;
	return 0;
}
