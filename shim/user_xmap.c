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
 * The mapping stays in the target after ubt leaves, like the code areas.
 */
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

static int user_xmap_place(struct ubt_user *u, const struct user_xmap *x)
{
	uint64_t *word = user_xmap_word(u, x);
	int64_t tfd = -1, addr = 0, ret;
	int err;

	if (!word)
		return user_err(u, -EINVAL, "shared table word out of range");
	__atomic_store_n(word, 0, __ATOMIC_RELEASE);
	err = user_comm_send(u, x->fd, &tfd);
	err = err ?: user_rsys(u, SYS_mmap, 0, x->len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, (uint64_t)tfd, 0, &addr);
	if (tfd >= 0)
		user_rsys(u, SYS_close, (uint64_t)tfd, 0, 0, 0, 0, 0, &ret);
	if (err)
		return err;
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
