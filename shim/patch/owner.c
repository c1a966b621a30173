/* Whose jumps are in a process: site records, live owners, leftovers. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "owner.h"
#include "procstat.h"
#include "ptrace.h"
#include "rt_abi.h"

uint64_t owner_start_time(pid_t pid)
{
	char buf[1024];
	const char *f = procstat_read(pid, buf, sizeof(buf));
	unsigned long long start = 0;

	/* f: field 3 (state) on; 22 is starttime */
	if (!f || f[0] == 'Z' || f[0] == 'X')
		return 0;
	f--;
	for (int i = 3; f && i < 22; i++)
		f = strchr(f + 1, ' ');
	if (!f || sscanf(f + 1, "%llu", &start) != 1)
		return 0;
	return start ? start : 1;
}

bool owner_alive(uint32_t pid, uint64_t start)
{
	return pid && owner_start_time((pid_t)pid) == start;
}

pid_t owner_tracer(pid_t pid)
{
	char path[64], line[256];
	int tracer = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	fclose(f);
	return tracer;
}

/* One ubt memfd of the process, mapped into ubt. */
struct owner_memfd {
	dev_t dev;
	ino_t ino;
	char *base;
	uint64_t size;
};

/*
 * Every one of them: as many as killed ubts left (each a memfd, until a
 * later detach removes it), never a first few only; the one a restore
 * is for can come last in the process's address order.
 */
struct owner_set {
	struct owner_memfd *m;
	int n;
};

static void set_release(struct owner_set *s)
{
	for (int i = 0; i < s->n; i++)
		munmap(s->m[i].base, s->m[i].size);
	free(s->m);
	s->m = NULL;
	s->n = 0;
}

/* Map every ubt memfd of pid (through /proc/PID/map_files). */
static int set_load(pid_t pid, struct owner_set *s)
{
	struct pt_map *m;
	int n, err, cap = 0;

	s->n = 0;
	s->m = NULL;
	err = pt_maps(pid, &m, &n);
	if (err)
		return err;
	for (int i = 0; i < n; i++) {
		char path[96];
		struct stat st;
		void *base;
		int fd, k;

		if (!strstr(m[i].path, "/memfd:ubt"))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx",
			 (int)pid, (unsigned long long)m[i].start,
			 (unsigned long long)m[i].end);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) || st.st_size < RT_SHARED_OFF) {
			close(fd);
			continue;
		}
		for (k = 0; k < s->n && s->m[k].ino != st.st_ino; k++)
			;
		if (k < s->n) {
			close(fd);
			continue;
		}
		if (s->n == cap) {
			struct owner_memfd *more;

			cap = cap ? 2 * cap : 16;
			more = realloc(s->m, (size_t)cap * sizeof(*more));
			if (!more) {
				close(fd);
				free(m);
				set_release(s);
				return -ENOMEM;
			}
			s->m = more;
		}
		base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd, 0);
		close(fd);
		if (base == MAP_FAILED)
			continue;
		s->m[s->n++] = (struct owner_memfd){
			.dev = st.st_dev,
			.ino = st.st_ino,
			.base = base,
			.size = (uint64_t)st.st_size,
		};
	}
	free(m);
	return 0;
}

/*
 * The next live record at or after *pos in memfd f (16-byte steps over the
 * code slices), or NULL.  Records are the target's to scribble on: every
 * field is checked before use.
 */
static struct rt_site *next_site(const struct owner_memfd *f, uint64_t *pos)
{
	uint64_t end = RT_SHARED_OFF;

	if (*pos < RT_CODE_OFF)
		*pos = RT_CODE_OFF;
	for (; *pos + sizeof(struct rt_site) <= end; *pos += 16) {
		struct rt_site *r = (struct rt_site *)(f->base + *pos);

		if (r->magic != RT_SITE_MAGIC ||
		    r->sz != sizeof(struct rt_site) ||
		    r->state != RT_SITE_LIVE || r->len < 5 ||
		    r->len > sizeof(r->orig))
			continue;
		*pos += 16;
		return r;
	}
	return NULL;
}

/* Every site of f restored, as its ubt said (a current control block)? */
static bool owner_clean(const struct owner_memfd *f)
{
	const struct rt_ctl *ctl = (const struct rt_ctl *)f->base;

	return ctl->sz == sizeof(*ctl) && ctl->version == RT_ABI_VERSION &&
	       __atomic_load_n(&ctl->sites_clean, __ATOMIC_ACQUIRE) == 1;
}

/* Does process pid hold a descriptor of memfd f (its creator, alive)? */
static bool owner_holds(uint32_t pid, const struct owner_memfd *f)
{
	char path[64];
	struct dirent *e;
	bool held = false;
	DIR *d;

	if (!pid)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/fd", pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!held && (e = readdir(d))) {
		char fd[64 + sizeof(e->d_name) + 2];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(fd, sizeof(fd), "%s/%s", path, e->d_name);
		held = !stat(fd, &st) && st.st_ino == f->ino &&
		       st.st_dev == f->dev;
	}
	closedir(d);
	return held;
}

/*
 * A memfd its ubt left behind without a jump in place: a current control
 * block, no live site record, no child that shares it listed, and the
 * ubt that made it (ctl->tracer_pid) no longer holds it (it died before
 * it placed a jump, or a later ubt restored every one).  Nothing marked
 * it clean, so no detach would ever remove it: a killed worker's, one
 * per kill.
 */
static bool owner_abandoned(const struct owner_memfd *f, uint32_t except_pid)
{
	const struct rt_ctl *ctl = (const struct rt_ctl *)f->base;
	uint64_t pos = 0;

	if (ctl->sz != sizeof(*ctl) || ctl->version != RT_ABI_VERSION ||
	    ctl->children[0] || next_site(f, &pos))
		return false;
	return ctl->tracer_pid == except_pid ||
	       !owner_holds(ctl->tracer_pid, f);
}

int owner_scan(pid_t pid, struct owner_info *oi)
{
	struct owner_set s;
	int err;

	memset(oi, 0, sizeof(*oi));
	err = set_load(pid, &s);
	if (err)
		return err;
	oi->memfds = s.n;
	for (int i = 0; i < s.n; i++) {
		uint64_t pos = 0;
		struct rt_site *r;

		if (owner_clean(&s.m[i]))
			continue;
		if (owner_abandoned(&s.m[i], 0)) {
			oi->dead_memfds++;
			continue;
		}
		while ((r = next_site(&s.m[i], &pos))) {
			if (owner_alive(r->owner_pid, r->owner_start))
				oi->live_pid = r->owner_pid;
			else
				oi->dead_sites++;
		}
	}
	set_release(&s);
	return 0;
}

int owner_restore(struct pt *p, uint32_t except_pid)
{
	struct owner_set s;
	int err, restored = 0;

	err = set_load(p->pid, &s);
	if (err)
		return err;
	for (int i = 0; i < s.n; i++) {
		struct rt_ctl *ctl = (struct rt_ctl *)s.m[i].base;
		uint64_t pos = 0;
		struct rt_site *r;
		bool dead = false, left = false;

		if (owner_clean(&s.m[i]))
			continue;
		if (owner_abandoned(&s.m[i], except_pid)) {
			__atomic_store_n(&ctl->detached, 1, __ATOMIC_RELEASE);
			__atomic_store_n(&ctl->sites_clean, 1,
					 __ATOMIC_RELEASE);
			continue;
		}
		while ((r = next_site(&s.m[i], &pos))) {
			uint8_t cur[sizeof(r->orig)];

			if (r->owner_pid != except_pid &&
			    owner_alive(r->owner_pid, r->owner_start)) {
				left = true;
				continue;
			}
			dead = true;
			if (pt_read(p, r->addr, cur, r->len))
				continue;	/* unmapped since */
			if (!memcmp(cur, r->jmp, r->len)) {
				if (pt_write(p, r->addr, r->orig, r->len)) {
					left = true;
					continue;
				}
				restored++;
			}
			/* restored, or no longer its jump: not ours to undo */
			r->state = RT_SITE_DONE;
		}
		if (dead && ctl->version == RT_ABI_VERSION)
			__atomic_store_n(&ctl->detached, 1, __ATOMIC_RELEASE);
		/* another process mapping it may hold jumps still: only a
		 * memfd this process alone maps is marked */
		if (dead && !left && ctl->version == RT_ABI_VERSION &&
		    ctl->sz == sizeof(*ctl) && !ctl->children[0])
			__atomic_store_n(&ctl->sites_clean, 1,
					 __ATOMIC_RELEASE);
	}
	set_release(&s);
	return restored;
}

int owner_children(pid_t pid, uint32_t owner, pid_t *out, int max)
{
	struct owner_set s;
	int n = 0, err;

	err = set_load(pid, &s);
	if (err)
		return err;
	for (int i = 0; i < s.n; i++) {
		struct rt_ctl *ctl = (struct rt_ctl *)s.m[i].base;

		if (ctl->version != RT_ABI_VERSION ||
		    ctl->sz < offsetof(struct rt_ctl, children) +
				      sizeof(ctl->children) ||
		    ctl->tracer_pid != owner)
			continue;
		for (int k = 0; k < RT_MAX_CHILDREN && n < max; k++) {
			pid_t c = (pid_t)ctl->children[k];

			if (c > 0 && c != pid)
				out[n++] = c;
		}
	}
	set_release(&s);
	return n;
}
