/*
 * Which processes were running before ubt, with the image they had then:
 * a process forked before ubt but exec'd after it (a shell's child that
 * then runs the probed binary) started before ubt yet is new to it, and
 * is taken as a process started after ubt (sysw.c sysw_before()).
 *
 * At sysw_start() every process's executable (device and inode of
 * /proc/PID/exe) is noted with its start time; a process whose start
 * time says "before ubt" but whose executable is no longer the one
 * noted has exec'd since.  A process that exec'd its own binary again
 * looks unchanged, and stays "before ubt", as before.
 */
#include <dirent.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/stat.h>
#include "owner.h"
#include "sysw_int.h"
#include "util.h"

struct sysw_exe {
	pid_t pid;
	uint64_t start;
	dev_t dev;
	ino_t ino;
};

static int sysw_exe_stat(pid_t pid, struct stat *st)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return stat(path, st);
}

static int sysw_exe_cmp(const void *a, const void *b)
{
	const struct sysw_exe *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

void sysw_execd_note(struct sysw *s)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t cap = 0;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		struct stat st;
		uint64_t start;

		if (*end || pid <= 0 || sysw_exe_stat((pid_t)pid, &st))
			continue;
		start = owner_start_time((pid_t)pid);
		if (!start)
			continue;
		if ((size_t)s->nexes == cap) {
			cap = cap ? 2 * cap : 256;
			s->exes = xrealloc(s->exes, cap * sizeof(*s->exes));
		}
		s->exes[s->nexes++] = (struct sysw_exe){
			.pid = (pid_t)pid, .start = start,
			.dev = st.st_dev, .ino = st.st_ino,
		};
	}
	closedir(d);
	if (s->nexes)
		qsort(s->exes, s->nexes, sizeof(*s->exes), sysw_exe_cmp);
}

bool sysw_execd_since(const struct sysw *s, pid_t pid, uint64_t start)
{
	struct sysw_exe key = { .pid = pid }, *x;
	struct stat st;

	if (!s->nexes)
		return false;
	x = bsearch(&key, s->exes, s->nexes, sizeof(*s->exes), sysw_exe_cmp);
	if (!x || x->start != start || sysw_exe_stat(pid, &st))
		return false;
	return st.st_dev != x->dev || st.st_ino != x->ino;
}

void sysw_execd_free(struct sysw *s)
{
	free(s->exes);
	s->exes = NULL;
	s->nexes = 0;
}
