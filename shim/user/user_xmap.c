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
 * The detach unmaps it with the memfd (user_unmap.c) unless a thread may
 * still be in probe code; when no probe was installed yet and a table
 * cannot be mapped, run_xmap.c's fallback takes back the others
 * (user_xmap_remove_all()).  Each table is also recorded in the control
 * block (rt_ctl.xmap: its word's offset, its length), so that the ubt
 * that removes this session's memory after it was killed finds the
 * mappings too (RT_XMAP_MAX tables at most: more are refused, and
 * run_xmap.c's fallback keeps their probes in the kernel).
 *
 * UBT_TEST_XMAP_FAIL=N (tests/README.md) makes the N-th table's mapping
 * fail (0 or no number: every one's), after its fd went to the target.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <fcntl.h>

#include "user_int.h"

/* the control block leaves the done helper's words alone */
_Static_assert(sizeof(struct rt_ctl) <= USER_DONE_OFF,
	       "struct rt_ctl reaches the done helper's words");

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
	if (u->nxmaps == RT_XMAP_MAX)
		return user_err(u, -E2BIG, "more than %d maps shared with "
				"kernel probes", RT_XMAP_MAX);
	if (shared_off > UINT32_MAX || bytes > (uint64_t)UINT32_MAX << 12)
		return user_err(u, -EINVAL, "shared table out of range");
	fd = fcntl(map_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return user_err(u, -errno, "dup the shared table's fd");
	u->xmaps = xrealloc(u->xmaps, (u->nxmaps + 1) * sizeof(*u->xmaps));
	x = &u->xmaps[u->nxmaps++];
	*x = (struct user_xmap){ .fd = fd, .off = shared_off,
				 .len = (bytes + 4095) & ~4095ull };
	/* recorded before its mapping exists: a ubt killed in between
	 * leaves a word of 0, which the next one skips */
	u->m.ctl->xmap[u->nxmaps - 1] = (struct rt_xmap_rec){
		.off = (uint32_t)shared_off,
		.pages = (uint32_t)(x->len >> 12),
	};
	__atomic_store_n(&u->m.ctl->nxmaps, (uint32_t)u->nxmaps,
			 __ATOMIC_RELEASE);
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
	if (u->m.ctl)
		u->m.ctl->nxmaps = 0;
	return err;
}
