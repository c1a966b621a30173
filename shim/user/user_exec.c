#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "owner.h"
#include "patch.h"
#include "ptrace.h"
#include "rtpath.h"
#include "tramp.h"
#include "user.h"
#include "util.h"
#include "user_int.h"

/* ---- execve(): the probes follow the process into its new image ---- */

static void exec_ack(void *arg)
{
	struct ubt_user *u = arg;

	__atomic_store_n(&u->m.ctl->exec_ack, u->exec_seen, __ATOMIC_RELEASE);
	syscall(SYS_futex, &u->m.ctl->exec_ack, 1 /* FUTEX_WAKE */,
		INT32_MAX, NULL, NULL, 0);
}

int user_install_exec_hook(struct ubt_user *u)
{
	uint8_t stub[14] = { 0xff, 0x25, 0, 0, 0, 0 };	/* jmp *0(%rip) */
	uint64_t fn = u->m.ctl->fn[RT_FN_EXEC_HOOK];
	uint64_t vaddr, size, off, bias, lo, hi;
	int err;

	u->exec_hook = false;
	user_install_vfork_hooks(u);	/* libc's other hooks, with it */
	if (!fn || !u->libc[0])
		return user_err(u, -ENOENT, "no runtime exec hook");
	if (patch_find_symbol(u->libc, "execve", &vaddr, &size, &off) ||
	    user_module_range(u, u->libc, &bias, &lo, &hi))
		return user_err(u, -ENOENT, "%s: no execve", u->libc);
	for (int i = 0; i < u->nsites; i++)
		if (u->sites[i].s.func == bias + vaddr)
			return user_err(u, -EBUSY, "a probe of the program is on "
					       "execve");
	memcpy(stub + 6, &fn, 8);
	err = user_install(u, &(struct user_probe){
		.sz = sizeof(struct user_probe),
		.binary = u->libc,
		.symbol = "execve",
		.kind = USER_PROBE_ENTRY,
		.code = stub,
		.code_len = sizeof(stub),
	});
	u->exec_hook = !err;
	return err;
}

bool user_exec_pending(const struct ubt_user *u)
{
	return u->m.ctl && __atomic_load_n(&u->m.ctl->exec_seq,
					   __ATOMIC_ACQUIRE) != u->exec_seen;
}

/*
 * The new image has no memfd: a new one, made in it, takes over ours in
 * place (the same content, ubt's mapping at the same address: every map
 * block, ring and counter so far stays as it is).
 */
static int move_memfd(struct ubt_user *u)
{
	uint64_t done = 0;
	int fd, err;

	err = user_target_memfd(u, &fd);
	if (err)
		return err;
	if (ftruncate(fd, (off_t)u->m.size) < 0) {
		err = -errno;
		close(fd);
		return user_err(u, err, "ftruncate memfd");
	}
	/* only what was ever written: the rest of the memfd is holes */
	while (done < u->m.size) {
		off_t data = lseek(u->m.fd, (off_t)done, SEEK_DATA);
		off_t hole = data < 0 ? -1 : lseek(u->m.fd, data, SEEK_HOLE);
		ssize_t n;

		if (data < 0 || hole < 0 || (uint64_t)hole > u->m.size)
			break;	/* ENXIO: no data after done */
		n = pwrite(fd, u->m.base + data, (size_t)(hole - data), data);
		if (n != hole - data) {
			close(fd);
			return user_err(u, -EIO, "copy the memfd");
		}
		done = (uint64_t)hole;
	}
	if (mmap(u->m.base, u->m.size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, 0) != u->m.base) {
		err = -errno;
		close(fd);
		return user_err(u, err, "mmap memfd");
	}
	close(u->m.fd);
	u->m.fd = fd;
	return user_target_map(u, false);
}

int user_follow_exec(struct ubt_user *u)
{
	uint32_t seq = __atomic_load_n(&u->m.ctl->exec_seq, __ATOMIC_ACQUIRE);
	pid_t pid = (pid_t)u->m.ctl->exec_pid;
	pid_t tid = (pid_t)u->m.ctl->exec_tid;
	struct pt pt;
	int err;

	u->exec_seen = seq;
	if (pid != u->pid || tid <= 0) {
		exec_ack(u);	/* a child's exec: not followed */
		return 0;
	}
	if (!u->resumed || u->detached)
		return user_err(u, -EINVAL, "not running");
	err = pt_follow_exec(&pt, pid, tid, exec_ack, u, 2000);
	if (err) {
		user_err(u, 0, "%s", pt.err);
		pt_release(&pt);
		return err == -ETIMEDOUT ? 0 : err;
	}
	/* the old image is gone, and its sites, slices and libc with it */
	pt_release(&u->pt);
	u->pt = pt;
	u->nsites = 0;
	u->nsems = 0;	/* the old image's */
	u->nslices = 0;
	u->range.valid = false;
	u->libc_ready = false;
	u->exec_hook = false;
	u->resumed = u->released = u->new_image = false;
	u->stop_t0 = u->pt.stop_start_ns ?: mono_ns();
	u->execs++;
	err = user_choose_ctl(u);
	err = err ?: user_check_libc(u);
	err = err ?: move_memfd(u);
	err = err ?: user_place_runtime(u, NULL);
	if (!err && u->comm_want)
		user_comm_try(u);
	err = err ?: user_xmap_place_all(u);
	if (err) {
		/* let it run unprobed rather than leave it stopped */
		pt_detach(&u->pt);
		u->resumed = true;
		return err;
	}
	return 1;
}

int user_execs(const struct ubt_user *u)
{
	return u->execs;
}

int user_children(const struct ubt_user *u)
{
	return u->children;
}
