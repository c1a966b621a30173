/*
 * The consumers of a uprobe that sysw_share.c cannot name: a perf event
 * opened on the uprobe PMU without a BPF program (the kernel describes
 * none: BPF_TASK_FD_QUERY wants a program, fdinfo shows no type), a
 * consumer inside the kernel (a module's uprobe_register()).  What does
 * show them: the kernel writes a uprobe's int3 into every new mapping of
 * its file whose process its consumers' filters take, so a private
 * executable mapping of the file, made here, has an int3 at each site
 * that such a consumer (system-wide, or without a filter) uses, where
 * the file's bytes (read, not mapped: the page cache has no int3) have
 * none.  That is looked at once, before this ubt's own kernel probes are
 * attached (after that the int3 could be its own): those sites keep the
 * kernel's int3 in a process taken, as sysw_share.c's do.
 *
 * Not seen: a consumer that arrives later (its int3 comes back in the
 * processes taken by itself, the return marks and skips keep the counts
 * exact, but a process taken after its arrival loses its int3 at a site
 * only ubt was seen on), and a perf event bound to one process (its
 * filter takes that process only: in a process taken its int3 cannot be
 * told from this ubt's own).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run_int.h"
#include "sysw_int.h"
#include "util.h"

struct unseen_look {
	struct sysw_unseen *u;
	char bin[PATH_MAX];	/* the file mapped now */
	struct stat st;
	uint8_t *map;
	size_t len;
	int fd;
};

static void unseen_unmap(struct unseen_look *l)
{
	if (l->map)
		munmap(l->map, l->len);
	if (l->fd >= 0)
		close(l->fd);
	l->map = NULL;
	l->fd = -1;
	l->bin[0] = 0;
}

static void unseen_site(const char *bin, uint64_t file_off, uint64_t sem_off,
			bool ret, void *ctx)
{
	struct unseen_look *l = ctx;
	struct sysw_unseen *u = l->u;
	uint8_t file;

	(void)sem_off;
	(void)ret;
	if (strcmp(bin, l->bin)) {
		unseen_unmap(l);
		snprintf(l->bin, sizeof(l->bin), "%s", bin);
		l->fd = open(bin, O_RDONLY | O_CLOEXEC);
		if (l->fd < 0 || fstat(l->fd, &l->st) || !l->st.st_size)
			return;
		l->len = (size_t)l->st.st_size;
		l->map = mmap(NULL, l->len, PROT_READ | PROT_EXEC, MAP_PRIVATE,
			      l->fd, 0);
		if (l->map == MAP_FAILED)
			l->map = NULL;
	}
	if (!l->map || file_off >= l->len ||
	    pread(l->fd, &file, 1, (off_t)file_off) != 1 ||
	    l->map[file_off] != 0xcc || file == 0xcc)
		return;
	u->at = xrealloc(u->at, (u->n + 1) * sizeof(*u->at));
	u->at[u->n].dev = l->st.st_dev;
	u->at[u->n].ino = l->st.st_ino;
	u->at[u->n].off = file_off;
	u->n++;
}

struct sysw_unseen *sysw_unseen_look(struct run *r)
{
	struct sysw_unseen *u = xcalloc(1, sizeof(*u));
	struct unseen_look l = { .u = u, .fd = -1 };

	run_user_sites(r, unseen_site, &l);
	unseen_unmap(&l);
	return u;
}

void sysw_unseen_free(struct sysw_unseen *u)
{
	if (u)
		free(u->at);
	free(u);
}
