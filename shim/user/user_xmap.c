/*
 * The tables user-mode and kernel probes share (codegen/cg_xmap.h) mapped
 * into the traced process: the BPF array's fd goes to the stopped target
 * as user_comm.c's table does (SCM_RIGHTS over a unix socket), a remote
 * mmap maps it read-write and shared (the kernel's map memory itself:
 * what one side stores the other loads), the fd is closed again, and the
 * mapping's address goes into the map's word of the memfd's shared area,
 * where native probe code loads it (release: the mapping is there before
 * any probe sees the address).  Until then, or when a new image could
 * not map it again, the word is 0 and probe code leaves the table alone.
 * The mapping stays in the target after ubt leaves, like the code areas
 * (a thread may still be in probe code then; the mapping keeps the BPF
 * array alive), except when no probe was installed yet: when a table
 * cannot be mapped, run_xmap.c's fallback takes back the others
 * (user_xmap_remove_all()).
 *
 * UBT_TEST_XMAP_FAIL=N (tests/README.md) makes the N-th table's mapping
 * fail (0 or no number: every one's), after its fd went to the target.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <fcntl.h>

#include "user_int.h"

static uint64_t *user_xmap_word(struct ubt_user *u, const struct user_xmap *x)
{
	if (x->off > u->m.l.shared_size || u->m.l.shared_size - x->off < 8)
		return NULL;
	return (uint64_t *)(u->m.base + RT_SHARED_OFF + x->off);
}

/* A test's injected failure of table x's mapping (UBT_TEST_XMAP_FAIL). */
static bool user_xmap_fail(struct ubt_user *u, const struct user_xmap *x)
{
	const char *v = getenv("UBT_TEST_XMAP_FAIL");
	long n;

	if (!v)
		return false;
	n = strtol(v, NULL, 10);
	return n <= 0 || n == x - u->xmaps + 1;
}

static int user_xmap_place(struct ubt_user *u, struct user_xmap *x)
{
	uint64_t *word = user_xmap_word(u, x);
	int64_t tfd = -1, addr = 0, ret;
	int err;

	if (!word)
		return user_err(u, -EINVAL, "shared table word out of range");
	__atomic_store_n(word, 0, __ATOMIC_RELEASE);
	err = user_comm_send(u, x->fd, &tfd);
	if (!err && user_xmap_fail(u, x))
		err = user_err(u, -EPERM, "UBT_TEST_XMAP_FAIL is set");
	err = err ?: user_rsys(u, SYS_mmap, 0, x->len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, (uint64_t)tfd, 0, &addr);
	if (tfd >= 0)
		user_rsys(u, SYS_close, (uint64_t)tfd, 0, 0, 0, 0, 0, &ret);
	if (err)
		return err;
	x->addr = (uint64_t)addr;
	__atomic_store_n(word, (uint64_t)addr, __ATOMIC_RELEASE);
	return 0;
}

int user_xmap_add(struct ubt_user *u, int map_fd, uint64_t shared_off,
		  uint64_t bytes)
{
	struct user_xmap *x;
	int fd, err;

	/* -p: the target ran on since the attach; stop it again (the
	 * sites' install keeps it stopped) */
	err = user_restop(u, false);
	if (err)
		return err;
	fd = fcntl(map_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return user_err(u, -errno, "dup the shared table's fd");
	u->xmaps = xrealloc(u->xmaps, (u->nxmaps + 1) * sizeof(*u->xmaps));
	x = &u->xmaps[u->nxmaps++];
	*x = (struct user_xmap){ .fd = fd, .off = shared_off,
				 .len = (bytes + 4095) & ~4095ull };
	return user_xmap_place(u, x);
}

int user_xmap_place_all(struct ubt_user *u)
{
	int err = 0;

	for (int i = 0; i < u->nxmaps; i++)
		err = err ?: user_xmap_place(u, &u->xmaps[i]);
	return err;
}

int user_xmap_remove_all(struct ubt_user *u)
{
	int err = 0;
	int64_t ret;

	for (int i = 0; i < u->nxmaps; i++) {
		struct user_xmap *x = &u->xmaps[i];
		uint64_t *word = user_xmap_word(u, x);

		if (word)
			__atomic_store_n(word, 0, __ATOMIC_RELEASE);
		if (x->addr)
			err = err ?: user_rsys(u, SYS_munmap, x->addr, x->len,
					       0, 0, 0, 0, &ret);
		close(x->fd);
	}
	free(u->xmaps);
	u->xmaps = NULL;
	u->nxmaps = 0;
	return err;
}
