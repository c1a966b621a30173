/*
 * Who else uses a uprobe (sysw_int.h): the kernel's int3 at a site is
 * shared by every consumer of the uprobe on that file and offset, so a
 * process taken keeps it where anything but this ubt may count there.
 *
 * What can be seen: every process's perf events (BPF_TASK_FD_QUERY, as
 * `bpftool perf` does: the probe's file and offset), BPF links nobody
 * holds as a perf event (uprobe_multi, and perf-event links whose info
 * names file and offset, 6.6 on), and the uprobes of tracefs
 * (uprobe_events: perf probe -x, ftrace).  What cannot: a perf event
 * without a BPF program (perf record on the uprobe PMU), a perf-event
 * link that does not say what it is on (before 6.6), a consumer inside
 * the kernel.  The first two are counted as unknown: every site keeps its
 * int3.  The scan is a snapshot: a tracer that attaches after it puts its
 * int3 back itself (sysw.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include "sysw_int.h"
#include "util.h"

/* bpf_link_info as 6.6 on fill it (the installed headers may be older) */
#define SHARE_LINK_PERF_EVENT 7
#define SHARE_LINK_UPROBE_MULTI 12
#define SHARE_PERF_UPROBE 1
#define SHARE_PERF_URETPROBE 2

struct share_link_info {
	uint32_t type, id, prog_id, pad;
	union {
		struct {
			uint64_t path, offsets, ref_ctr_offsets, cookies;
			uint32_t path_size, count, flags, pid;
		} multi;
		struct {
			uint32_t type, pad;
			uint64_t file_name;
			uint32_t name_len, offset;
			uint64_t cookie, ref_ctr_offset;
		} perf;
		uint8_t raw[112];
	};
};

struct share_user {
	dev_t dev;
	ino_t ino;
	uint64_t off;
	bool any;		/* unknown: every site */
	char who[160];
};

static void share_add(struct sysw_share *sh, const struct stat *st,
		      uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void share_add(struct sysw_share *sh, const struct stat *st,
		      uint64_t off, const char *fmt, ...)
{
	struct share_user *u;
	va_list ap;

	sh->u = xrealloc(sh->u, (sh->n + 1) * sizeof(*sh->u));
	u = &sh->u[sh->n++];
	memset(u, 0, sizeof(*u));
	if (st) {
		u->dev = st->st_dev;
		u->ino = st->st_ino;
	}
	u->any = !st;
	u->off = off;
	va_start(ap, fmt);
	vsnprintf(u->who, sizeof(u->who), fmt, ap);
	va_end(ap);
}

const char *sysw_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, len - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		n = 0;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

/* A path as pid registered it (its root, its working directory). */
static int share_stat(pid_t pid, const char *name, struct stat *st)
{
	char path[PATH_MAX + 64];

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/%s/%s", (int)pid,
			 name[0] == '/' ? "root" : "cwd", name);
	else
		snprintf(path, sizeof(path), "%s", name);
	return stat(path, st) ? -errno : 0;
}

static void share_prog_seen(struct sysw_share *sh, uint32_t id)
{
	sh->progs = xrealloc(sh->progs, (sh->nprogs + 1) * sizeof(*sh->progs));
	sh->progs[sh->nprogs++] = id;
}

static bool share_prog_known(const struct sysw_share *sh, uint32_t id)
{
	for (int i = 0; i < sh->nprogs; i++)
		if (sh->progs[i] == id)
			return true;
	return false;
}

/* One perf event of pid (fd): a uprobe's file and offset, or unknown. */
static void share_perf_fd(struct sysw_share *sh, pid_t pid, int fd)
{
	char name[PATH_MAX], comm[32];
	__u32 len = sizeof(name), prog = 0, type = 0;
	__u64 off = 0, addr = 0;
	struct stat st;

	/* ENOENT: no BPF program on it (a BPF output buffer, a counter:
	 * what ubt cannot tell from a uprobe PMU event opened without BPF,
	 * which no common tool does: perf's uprobes are tracefs's) */
	if (bpf_task_fd_query(pid, fd, 0, name, &len, &prog, &type, &off,
			      &addr))
		return;
	sysw_comm(pid, comm, sizeof(comm));
	share_prog_seen(sh, prog);
	if (type != BPF_FD_TYPE_UPROBE && type != BPF_FD_TYPE_URETPROBE)
		return;
	name[sizeof(name) - 1] = 0;
	/* a path that finds no file now: not the file ubt probes (found by
	 * its path), unless renamed since (not followed) */
	if (!share_stat(pid, name, &st))
		share_add(sh, &st, off, "another tracer: pid %d (%s)",
			  (int)pid, comm);
}

/*
 * A link pid holds at fd: self's are this ubt's own, another's are
 * named by its holder (share_links()).
 */
static void share_link_fd(struct sysw_share *sh, pid_t pid, int fd,
			  bool own)
{
	char path[64], line[128];
	unsigned int id = 0;
	FILE *f;

	/* its fdinfo: "link_id:\tN" */
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f) && !id)
		if (sscanf(line, "link_id: %u", &id) != 1)
			id = 0;
	if (f)
		fclose(f);
	if (!id)
		return;
	sh->own = xrealloc(sh->own, (sh->nown + 1) * sizeof(*sh->own));
	sh->holder = xrealloc(sh->holder, (sh->nown + 1) * sizeof(*sh->holder));
	sh->own[sh->nown] = id;
	sh->holder[sh->nown++] = own ? 0 : pid;
}

/*
 * Every process's perf events but self's (this ubt's own kernel probes,
 * which skip the processes taken); the links self holds noted as its own.
 */
static void share_procs(struct sysw_share *sh, pid_t self)
{
	DIR *d = opendir("/proc");
	struct dirent *p;

	while (d && (p = readdir(d))) {
		char path[64], link[64];
		pid_t pid = (pid_t)atoi(p->d_name);
		struct dirent *f;
		DIR *fds;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
		fds = opendir(path);
		while (fds && (f = readdir(fds))) {
			ssize_t n = readlinkat(dirfd(fds), f->d_name, link,
					       sizeof(link) - 1);

			if (n <= 0)
				continue;
			link[n] = 0;
			if (!strcmp(link, "anon_inode:bpf_link"))
				share_link_fd(sh, pid, atoi(f->d_name),
					      pid == self);
			else if (pid != self &&
				 !strcmp(link, "anon_inode:[perf_event]"))
				share_perf_fd(sh, pid, atoi(f->d_name));
		}
		if (fds)
			closedir(fds);
	}
	if (d)
		closedir(d);
}

/* Who holds link id: 0 this ubt, a pid, -1 nobody seen (pinned). */
static pid_t share_holder(const struct sysw_share *sh, uint32_t id)
{
	for (int i = 0; i < sh->nown; i++)
		if (sh->own[i] == id)
			return sh->holder[i];
	return -1;
}

/* "another tracer: pid N (comm)" or "another tracer: KIND link ID" */
static void share_who(const struct sysw_share *sh, uint32_t id,
		      const char *kind, char *buf, size_t len)
{
	pid_t pid = share_holder(sh, id);
	char comm[32];

	if (pid > 0) {
		sysw_comm(pid, comm, sizeof(comm));
		snprintf(buf, len, "another tracer: pid %d (%s)", (int)pid,
			 comm);
	} else {
		snprintf(buf, len, "another tracer: %s link %u (pinned)", kind,
			 id);
	}
}

static void share_multi(struct sysw_share *sh, int fd,
			const struct share_link_info *first)
{
	struct share_link_info li;
	uint32_t len = sizeof(li), n = first->multi.count;
	char path[PATH_MAX];
	uint64_t *offs;
	struct stat st;

	if (!n)
		return;
	offs = xcalloc(n, sizeof(*offs));
	memset(&li, 0, sizeof(li));
	li.multi.path = (uint64_t)(uintptr_t)path;
	li.multi.path_size = sizeof(path);
	li.multi.offsets = (uint64_t)(uintptr_t)offs;
	li.multi.count = n;
	if (bpf_obj_get_info_by_fd(fd, &li, &len)) {
		share_add(sh, NULL, 0, "another tracer (perhaps): uprobe_multi "
			  "link %u, which ubt cannot read", first->id);
	} else if (!share_stat(0, path, &st)) {	/* else deleted */
		char who[96];

		share_who(sh, first->id, "uprobe_multi", who, sizeof(who));
		for (uint32_t i = 0; i < n && i < li.multi.count; i++)
			share_add(sh, &st, offs[i], "%s", who);
	}
	free(offs);
}

static void share_perf_link(struct sysw_share *sh, int fd,
			    const struct share_link_info *first)
{
	struct share_link_info li;
	uint32_t len = sizeof(li);
	char name[PATH_MAX];
	struct stat st;

	if (first->perf.type == 0) {
		/* the kernel does not say (before 6.6): unknown, unless
		 * its program is on a perf event some process holds,
		 * seen there */
		if (!share_prog_known(sh, first->prog_id))
			share_add(sh, NULL, 0, "another tracer (perhaps): perf-event "
				  "link %u, which the kernel does not "
				  "describe (program %u)",
				  first->id, first->prog_id);
		return;
	}
	if (first->perf.type != SHARE_PERF_UPROBE &&
	    first->perf.type != SHARE_PERF_URETPROBE)
		return;
	memset(&li, 0, sizeof(li));
	li.perf.file_name = (uint64_t)(uintptr_t)name;
	li.perf.name_len = sizeof(name);
	if (bpf_obj_get_info_by_fd(fd, &li, &len))
		share_add(sh, NULL, 0, "another tracer (perhaps): perf-event "
			  "link %u on a uprobe ubt cannot read", first->id);
	else if (!share_stat(0, name, &st)) {
		char who[96];

		share_who(sh, first->id, "perf-event", who, sizeof(who));
		share_add(sh, &st, li.perf.offset, "%s", who);
	}
}

/* Every BPF link in the system but self's: the uprobes' ones. */
static void share_links(struct sysw_share *sh)
{
	uint32_t id = 0;

	while (!bpf_link_get_next_id(id, &id)) {
		struct share_link_info li;
		uint32_t len = sizeof(li);
		int fd;

		if (!share_holder(sh, id))
			continue;
		fd = bpf_link_get_fd_by_id(id);
		if (fd < 0)
			continue;
		memset(&li, 0, sizeof(li));
		if (!bpf_obj_get_info_by_fd(fd, &li, &len)) {
			if (li.type == SHARE_LINK_UPROBE_MULTI)
				share_multi(sh, fd, &li);
			else if (li.type == SHARE_LINK_PERF_EVENT &&
				 !share_prog_known(sh, li.prog_id))
				share_perf_link(sh, fd, &li);
		}
		close(fd);
	}
}

static const char *share_tracefs(void)
{
	return access("/sys/kernel/tracing/uprobe_events", R_OK) ?
		       "/sys/kernel/debug/tracing" :
		       "/sys/kernel/tracing";
}

/*
 * tracefs's uprobes ("p:GROUP/NAME PATH:0xOFF[(0xREF)] ARGS"): enabled
 * there or not (perf opens them without enabling them), each one holds
 * or may hold the uprobe.
 */
static void share_uprobe_events(struct sysw_share *sh)
{
	char path[PATH_MAX], line[PATH_MAX + 256], en_path[PATH_MAX + 320];
	const char *tfs = share_tracefs();
	FILE *f;

	snprintf(path, sizeof(path), "%s/uprobe_events", tfs);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *ev = line + 2, *file, *colon, *end;
		unsigned long long off;
		struct stat st;
		char en = '0';
		int fd;

		if ((line[0] != 'p' && line[0] != 'r') || line[1] != ':')
			continue;
		file = strchr(ev, ' ');
		if (!file)
			continue;
		*file++ = 0;
		file[strcspn(file, " \n")] = 0;
		colon = strrchr(file, ':');
		if (!colon)
			continue;
		*colon = 0;
		off = strtoull(colon + 1, &end, 0);
		snprintf(en_path, sizeof(en_path), "%s/events/%s/enable", tfs,
			 ev);
		fd = open(en_path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (read(fd, &en, 1) != 1)
				en = '0';
			close(fd);
		}
		if (!share_stat(0, file, &st))
			share_add(sh, &st, off, "another tracer: uprobe_events %s (%s)",
				  ev,
				  en == '1' ? "enabled" :
					      "defined: perf may use it");
	}
	if (f)
		fclose(f);
}

/*
 * A consumer inside the kernel is not seen; SystemTap's modules
 * (stap_*) register uprobes so: while one is loaded, every site keeps
 * its int3.
 */
static void share_modules(struct sysw_share *sh)
{
	FILE *f = fopen("/proc/modules", "re");
	char line[512];

	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, " \n")] = 0;
		if (!strncmp(line, "stap_", 5)) {
			share_add(sh, NULL, 0, "another tracer (perhaps): the "
				  "kernel module %s (SystemTap)", line);
			break;
		}
	}
	if (f)
		fclose(f);
}

void sysw_share_scan(struct sysw_share *sh, pid_t self)
{
	const struct sysw_unseen *pre = sh->pre;

	sysw_share_free(sh);
	sh->pre = pre;
	share_procs(sh, self);
	share_links(sh);
	share_uprobe_events(sh);
	share_modules(sh);
	for (int i = 0; pre && i < pre->n; i++) {
		struct stat st = { .st_dev = pre->at[i].dev,
				   .st_ino = pre->at[i].ino };

		share_add(sh, &st, pre->at[i].off, "a uprobe consumer ubt "
			  "cannot name (the site's int3 was in a new mapping "
			  "of the file before ubt's own probes: a perf event "
			  "without BPF, or the kernel's own)");
	}
	sh->scanned = true;
}

const char *sysw_share_user(const struct sysw_share *sh, const char *bin,
			    uint64_t off)
{
	struct stat st;

	if (!sh->scanned)
		return "nobody looked for other tracers";
	if (stat(bin, &st))
		return "its file cannot be found again";
	for (int i = 0; i < sh->n; i++)
		if (sh->u[i].any ||
		    (sh->u[i].dev == st.st_dev && sh->u[i].ino == st.st_ino &&
		     sh->u[i].off == off))
			return sh->u[i].who;
	return NULL;
}

void sysw_share_free(struct sysw_share *sh)
{
	free(sh->u);
	free(sh->progs);
	free(sh->own);
	free(sh->holder);
	memset(sh, 0, sizeof(*sh));
}
