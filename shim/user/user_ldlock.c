/*
 * Is the target's dynamic loader locked?  A remote dlopen() takes
 * _dl_load_lock, then _dl_load_write_lock; if a thread of the target
 * holds either (inside dlopen() or dlclose(), or in a dl_iterate_phdr()
 * callback for as long as the callback runs), the remote call blocks, and
 * abandoning it would leave the lock held for ever (the next dlopen()
 * deadlocks, exit hangs in _dl_fini).  So ubt looks first: where the locks
 * are comes from libc's code (patch_ldlock_find()), checked in the process
 * (the slot points into ld.so, both mutexes are recursive ones), and each
 * is read from /proc/PID/mem: its lock word and owner.
 *
 * For tests (tests/README.md), UBT_TEST_LDLOCK_LATE=1 skips the look at
 * the decision (as if the lock were taken after it), =2 the one before
 * the remote call too (as if taken while the call starts).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "patch.h"
#include "ptrace.h"
#include "user.h"
#include "user_int.h"

/* glibc's struct __pthread_mutex_s on x86-64: the fields read here */
struct ld_mutex {
	int lock;
	unsigned int count;
	int owner;
	unsigned int nusers;
	int kind;
	int rest[5];
};

#define LD_MUTEX_RECURSIVE 1	/* PTHREAD_MUTEX_RECURSIVE_NP */

/* patch_ldlock_find() of the last libc asked about */
static struct {
	char path[PATH_MAX];
	int err;
	uint64_t slot;
	int64_t off;
} found;

static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

int user_find_libc(pid_t pid, char *path, size_t len)
{
	struct pt_map *m;
	int n, i, err;

	err = pt_maps(pid, &m, &n);
	if (err)
		return err;
	err = -ENOENT;
	for (i = 0; i < n; i++) {
		const char *b = strrchr(m[i].path, '/');

		if (b && (!strncmp(b, "/libc.so", 8) ||
			  !strncmp(b, "/libc-", 6))) {
			snprintf(path, len, "%s", m[i].path);
			err = 0;
			break;
		}
	}
	free(m);
	return err;
}

/* Is addr inside a mapping of the dynamic loader (ld-*.so*) of pid? */
static bool in_ldso(pid_t pid, uint64_t addr)
{
	struct pt_map *m;
	bool in = false;
	int n;

	if (pt_maps(pid, &m, &n))
		return false;
	for (int i = 0; i < n; i++) {
		const char *b = strrchr(m[i].path, '/');

		if (addr >= m[i].start && addr < m[i].end && b &&
		    !strncmp(b, "/ld-", 4))
			in = true;
	}
	free(m);
	return in;
}

/* The load bias of libc (a shared object) in pid. */
static int libc_bias(pid_t pid, const char *libc, uint64_t min_vaddr,
		     uint64_t *bias)
{
	uint64_t lo = UINT64_MAX;
	struct pt_map *m;
	int n;

	if (pt_maps(pid, &m, &n))
		return -ESRCH;
	for (int i = 0; i < n; i++)
		if (!strcmp(m[i].path, libc) && m[i].start < lo) {
			lo = m[i].start;
			*bias = m[i].start - m[i].off - min_vaddr;
		}
	free(m);
	return lo == UINT64_MAX ? -ENOENT : 0;
}

/* Both locks of pid: _dl_load_lock, then _dl_load_write_lock. */
static int read_locks(pid_t pid, struct ld_mutex mx[2])
{
	uint64_t min_vaddr, bias, rg;
	char libc[PATH_MAX];
	int err, is_dyn;

	err = user_find_libc(pid, libc, sizeof(libc));
	if (err)
		return err;
	if (strcmp(found.path, libc)) {
		snprintf(found.path, sizeof(found.path), "%s", libc);
		found.err = patch_ldlock_find(libc, &found.slot, &found.off);
	}
	if (found.err)
		return found.err;
	err = patch_elf_base(libc, &min_vaddr, &is_dyn);
	err = err ?: libc_bias(pid, libc, min_vaddr, &bias);
	err = err ?: read_mem(pid, bias + found.slot, &rg, sizeof(rg));
	if (err)
		return err;
	if (!rg || !in_ldso(pid, rg + (uint64_t)found.off))
		return -ENOENT;
	err = read_mem(pid, rg + (uint64_t)found.off - sizeof(mx[0]), mx,
		       2 * sizeof(mx[0]));
	if (err)
		return err;
	for (int i = 0; i < 2; i++)
		if ((mx[i].kind & 0x7f) != LD_MUTEX_RECURSIVE)
			return -ENOENT;
	return 0;
}

int user_ldlock_held(pid_t pid, pid_t *owner)
{
	struct ld_mutex mx[2];
	int err;

	*owner = 0;
	err = read_locks(pid, mx);
	if (err)
		return err;
	for (int i = 0; i < 2; i++)
		if (mx[i].lock || mx[i].owner) {
			*owner = mx[i].owner;
			return 1;
		}
	return 0;
}

bool user_ldlock_owns(pid_t pid, pid_t tid)
{
	struct ld_mutex mx[2];

	return !read_locks(pid, mx) &&
	       (mx[0].owner == tid || mx[1].owner == tid);
}

int user_ldlock_late(void)
{
	const char *v = getenv("UBT_TEST_LDLOCK_LATE");

	return v ? atoi(v) : 0;
}

int user_ldlock_wait(pid_t pid, int ms, pid_t *owner)
{
	struct timespec t0, t;
	int held;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		held = user_ldlock_held(pid, owner);
		if (held <= 0)
			return held;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
			    (t.tv_nsec - t0.tv_nsec) / 1000000 >=
		    ms)
			return held;
		usleep(20000);
	}
}
