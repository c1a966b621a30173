/*
 * Placing ubt in the target: remote syscalls, the shared memfd mapped in
 * the process, a control thread chosen, libc checked, the runtime loaded
 * with a remote dlopen() and its TLS reset.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <elf.h>
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "owner.h"
#include "patch.h"
#include "procstat.h"
#include "ptrace.h"
#include "rtpath.h"
#include "tramp.h"
#include "user.h"
#include "util.h"
#include "user_int.h"

/* The runtime to load: found and checked as rtpath.h says. */
int user_runtime_path(const struct user_opts *o, char *out, size_t len,
			char *why, size_t whylen)
{
	return rtpath_find(USER_FIELD(o, struct user_opts, runtime_path), out,
			   len, why, whylen);
}

/*
 * Where a module mapped from path lies in mappings m ([lo, hi)), and its
 * load bias given the ELF file's lowest p_vaddr and type.
 */
int user_module_in(const struct pt_map *m, int n, const char *path,
		   uint64_t min_vaddr, int is_dyn, uint64_t *bias,
		   uint64_t *lo, uint64_t *hi)
{
	uint64_t base = 0;

	*lo = UINT64_MAX;
	*hi = 0;
	for (int i = 0; i < n; i++) {
		if (strcmp(m[i].path, path))
			continue;
		if (m[i].start < *lo) {
			*lo = m[i].start;
			base = m[i].start - m[i].off;
		}
		if (m[i].end > *hi)
			*hi = m[i].end;
	}
	if (!*hi)
		return -ENOENT;
	*bias = is_dyn ? base - min_vaddr : 0;
	return 0;
}

/* The same in the target's mappings now. */
int user_module_maps(pid_t pid, const char *path, uint64_t min_vaddr,
		       int is_dyn, uint64_t *bias, uint64_t *lo, uint64_t *hi)
{
	struct pt_map *m;
	int n, err;

	err = pt_maps(pid, &m, &n);
	if (err)
		return err;
	err = user_module_in(m, n, path, min_vaddr, is_dyn, bias, lo, hi);
	free(m);
	return err;
}

/*
 * The last module's range is kept while probes are prepared (a wildcard
 * puts hundreds of sites in one library); user_resume() and a new image
 * forget it.
 */
int user_module_range(struct ubt_user *u, const char *path, uint64_t *bias,
			uint64_t *lo, uint64_t *hi)
{
	struct user_range *c = &u->range;
	uint64_t min_vaddr;
	int err, is_dyn;

	if (c->valid && !strcmp(c->path, path)) {
		*bias = c->bias;
		*lo = c->lo;
		*hi = c->hi;
		return 0;
	}
	err = patch_elf_base(path, &min_vaddr, &is_dyn);
	if (err)
		return err;
	err = user_module_maps(u->pid, path, min_vaddr, is_dyn, bias, lo, hi);
	if (err || strlen(path) >= sizeof(c->path))
		return err;
	*c = (struct user_range){ .valid = true, .bias = *bias, .lo = *lo,
				  .hi = *hi };
	strcpy(c->path, path);
	return 0;
}

/* A memfd made in the target (it owns it: no permission needed), ours too. */
int user_target_memfd(struct ubt_user *u, int *fd_out)
{
	struct user_regs_struct r;
	char path[64], nm[24];
	uint64_t name;
	int64_t ret;
	int fd, err;

	pt_regs(&u->pt, u->pt.ctl, &r);
	name = ((r.rsp - 4096) & ~15ULL);
	/* the worker's pid: once it is gone, a later ubt closes a descriptor
	 * it left unmapped (user_unmap.c) */
	snprintf(nm, sizeof(nm), "ubt.%d", (int)getpid());
	err = pt_write(&u->pt, name, nm, strlen(nm) + 1);
	if (err)
		return user_err(u, err, "cannot write the target's stack");
	/* MFD_EXEC (Linux 6.3): code areas map it executable */
	err = user_rsys(u, SYS_memfd_create, name, MFD_CLOEXEC | 0x10U, 0, 0, 0, 0,
		   &ret);
	if (err == -EINVAL)
		err = user_rsys(u, SYS_memfd_create, name, MFD_CLOEXEC, 0, 0, 0, 0,
			   &ret);
	if (err)
		return err;
	u->target_fd = ret;
	/* for tests (tests/README.md): dead before the memfd is mapped */
	if (getenv("UBT_TEST_DIE_AFTER_MEMFD"))
		kill(getpid(), SIGKILL);
	snprintf(path, sizeof(path), "/proc/%d/fd/%lld", u->pid,
		 (long long)ret);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return user_err(u, -errno, "open %s", path);
	*fd_out = fd;
	return 0;
}

/*
 * The target maps our memfd; it knows where.  share: the remote calls of
 * this stop go through its done word from then on (ptrace_done.c: the
 * mprotect already); attach() forgets it at the end of the stop.
 */
int user_target_map(struct ubt_user *u, bool share)
{
	int64_t ret;
	int err;

	/* the head and the first chunk of blocks: the runtime maps more
	 * chunks as threads take blocks (runtime/rt_chunk.c) */
	u->target_size = memfd_target_size(&u->m);
	err = user_rsys(u, SYS_mmap, 0, u->target_size, PROT_READ | PROT_WRITE,
		   MAP_SHARED, (uint64_t)u->target_fd, 0, &ret);
	if (err)
		return err;
	u->target_base = (uint64_t)ret;
	u->m.ctl->chunk_blocks = memfd_chunk_blocks(&u->m);
	u->m.ctl->target_fd = (int32_t)u->target_fd;
	if (share)
		pt_done_word(&u->pt, u->target_base + USER_DONE_OFF,
			     (volatile uint32_t *)(u->m.base + USER_DONE_OFF));
	/*
	 * The code slices are mapped r-x elsewhere (user_install.c): no
	 * writable alias of them in the target, where a stray write could
	 * plant code (ubt writes them through its own view).  Not a hole
	 * either: the range stays reserved, inaccessible.
	 */
	err = user_rsys(u, SYS_mprotect, u->target_base + RT_CODE_OFF,
			(uint64_t)RT_CODE_SLICE * RT_CODE_SLICES, PROT_NONE, 0,
			0, 0, &ret);
	if (err)
		return err;
	u->m.pid = u->pid;	/* named if it corrupts the memfd */
	u->m.ctl->target_base = u->target_base;
	return 0;
}

int user_place_memfd(struct ubt_user *u, const struct user_opts *o)
{
	struct memfd_layout l;
	int fd, err;

	if (USER_FIELD(o, struct user_opts, layout.nblocks))
		l = o->layout;
	else
		memfd_layout_default(&l);
	err = user_target_memfd(u, &fd);
	if (err)
		return err;
	if (ftruncate(fd, (off_t)memfd_layout_size(&l)) < 0) {
		err = -errno;
		close(fd);
		return user_err(u, err, "ftruncate memfd");
	}
	err = memfd_map(&u->m, fd, &l);
	if (err) {
		u->m.fd = -1;
		close(fd);
		return user_err(u, err, "mmap memfd");
	}
	err = user_target_map(u, true);
	if (err)
		return err;
	if (USER_FIELD(o, struct user_opts, fault_safe_reads))
		u->m.ctl->flags |= RT_CTL_FAULT_HANDLER;
	/* as the kernel's probes: a -c command's children, not -p's */
	if (u->child || (USER_FIELD(o, struct user_opts, children) &&
			 o->children))
		u->m.ctl->flags |= RT_CTL_CHILDREN;
	return 0;
}

/* Is the thread's rip inside the dynamic loader's mappings? */
static bool in_loader(struct ubt_user *u, uint64_t rip)
{
	struct pt_map *m;
	bool in = false;
	int n, i;

	if (pt_maps(u->pid, &m, &n))
		return false;
	for (i = 0; i < n; i++)
		if (rip >= m[i].start && rip < m[i].end &&
		    strstr(m[i].path, "/ld-linux"))
			in = true;
	free(m);
	return in;
}

/*
 * Is thread i at a point where a remote dlopen is safe?  The dlopen runs on
 * its stack and calls malloc: a thread stopped inside malloc (or inside the
 * dynamic loader) would have it re-entered.  Safe: blocked in a system
 * call other than the memory ones malloc makes, outside the loader; or
 * running code of the executable itself, or of the vdso (clock_gettime
 * and the like take no lock).
 */
static bool ctl_safe(struct ubt_user *u, const struct pt_map *m, int n,
		     const char *exe, int i)
{
	struct user_regs_struct r;
	bool in_exe = false, in_ld = false;
	long nr;
	int k;

	if (pt_regs(&u->pt, i, &r))
		return false;
	for (k = 0; k < n; k++) {
		if (r.rip < m[k].start || r.rip >= m[k].end)
			continue;
		in_exe = !strcmp(m[k].path, exe) ||
			 !strcmp(m[k].path, "[vdso]");
		in_ld = strstr(m[k].path, "/ld-linux") != NULL;
	}
	nr = (long)r.orig_rax;
	if (nr >= 0)
		return !in_ld && nr != SYS_mmap && nr != SYS_munmap &&
		       nr != SYS_mremap && nr != SYS_brk &&
		       nr != SYS_mprotect && nr != SYS_madvise;
	return in_exe;
}

/*
 * A thread blocked in a system call where a remote dlopen is safe (as in
 * ctl_safe()), found in /proc without stopping anything: then only that
 * thread stops while the runtime is placed.  0 if there is none.
 */
pid_t user_blocked_thread(struct ubt_user *u)
{
	char path[96], buf[512];
	struct dirent *de;
	struct pt_map *m;
	pid_t found = 0;
	int n, k;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", u->pid);
	d = opendir(path);
	if (!d)
		return 0;
	if (pt_maps(u->pid, &m, &n)) {
		closedir(d);
		return 0;
	}
	while (!found && (de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		unsigned long long pc;
		ssize_t len;
		long nr;
		int fd;

		if (tid <= 0 || procstat_io_worker(tid))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall",
			 u->pid, tid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = 0;
		/* "nr a1 a2 a3 a4 a5 a6 sp pc"; "running" or "-1 sp pc" */
		if (sscanf(buf, "%ld %*s %*s %*s %*s %*s %*s %*s %llx", &nr,
			   &pc) != 2 ||
		    nr < 0 || nr == SYS_mmap || nr == SYS_munmap ||
		    nr == SYS_mremap || nr == SYS_brk || nr == SYS_mprotect ||
		    nr == SYS_madvise)
			continue;
		found = tid;
		for (k = 0; k < n; k++)
			if (pc >= m[k].start && pc < m[k].end &&
			    strstr(m[k].path, "/ld-linux"))
				found = 0;
	}
	free(m);
	closedir(d);
	return found;
}

/* Thread i of /proc/PID/task (readdir order), 0 if there is none. */
static pid_t nth_thread(struct ubt_user *u, int i)
{
	struct dirent *de;
	char path[64];
	pid_t tid = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", u->pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (atoi(de->d_name) > 0 && !i--) {
			tid = (pid_t)atoi(de->d_name);
			break;
		}
	closedir(d);
	return tid;
}

/* Let go of whatever is seized (the libc and vdso findings stay). */
void user_unseize(struct ubt_user *u)
{
	uint64_t sc = u->pt.syscall_insn;

	pt_detach(&u->pt);
	pt_release(&u->pt);
	pt_init(&u->pt);
	u->pt.syscall_insn = sc;
}

/* Pick the thread that runs the remote calls, letting the process run on
 * a little while no thread is at a safe point. */
int user_choose_ctl(struct ubt_user *u)
{
	char link[64], exe[PATH_MAX];
	struct pt_map *m;
	int tries, n, i;
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/%d/exe", u->pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	if (len <= 0)
		return user_err(u, -ESRCH, "process exited during attach");
	exe[len] = 0;
	for (tries = 0; tries < 400; tries++) {
		if (pt_maps(u->pid, &m, &n))
			return user_err(u, -ESRCH, "process exited during attach");
		for (i = 0; i < u->pt.nth; i++)
			if (ctl_safe(u, m, n, exe, i))
				break;
		free(m);
		if (i < u->pt.nth) {
			u->pt.ctl = i;
			return 0;
		}
		if (u->pt.one) {
			/* not at a safe point: the next thread alone */
			pid_t tid = u->pt.th[0].tid;
			pid_t next = tries < 4 ? nth_thread(u, tries + 1) : 0;

			user_unseize(u);
			if (next && next != tid &&
			    !pt_seize_thread(&u->pt, u->pid, next))
				continue;
			user_unseize(u);
			/* then every thread, as long as it takes */
			if (pt_seize(&u->pt, u->pid))
				return user_err(u, -ESRCH,
					    "process exited during attach");
			continue;
		}
		if (pt_run_briefly(&u->pt, 250))
			return user_err(u, -ESRCH, "process exited during attach");
	}
	return user_err(u, -EAGAIN, "no thread reached a point where the runtime "
				"can be loaded safely");
}

/*
 * Find libc and its dlopen, and make sure libc is initialized: a process
 * caught while the dynamic loader still runs (libc mapped, not set up) must
 * not get a dlopen.  glibc sets __libc_single_threaded during its early
 * initialization; it is still 0 only before that, or once threads exist.
 */
/*
 * Read what ubt needs from the target's libc (its path from the target's
 * maps, then the ELF file), before stopping the target when possible.
 */
/* The ELF work on the libc at path (u->libc afterwards). */
static int libc_elf(struct ubt_user *u, const char *path)
{
	uint64_t size, off;
	int err;

	u->libc_ready = false;
	snprintf(u->libc, sizeof(u->libc), "%s", path);
	err = patch_elf_base(u->libc, &u->libc_min_vaddr, &u->libc_dyn);
	if (err)
		return user_err(u, err, "%s", u->libc);
	err = patch_find_symbol(u->libc, "dlopen", &u->dlopen_vaddr, &size,
				&off);
	if (err)
		err = patch_find_symbol(u->libc, "__libc_dlopen_mode",
					&u->dlopen_vaddr, &size, &off);
	if (err)
		return user_err(u, err, "%s: no dlopen", u->libc);
	if (patch_find_symbol(u->libc, "dlerror", &u->dlerror_vaddr, &size,
			      &off))
		u->dlerror_vaddr = 0;
	if (patch_find_object(u->libc, "__libc_single_threaded",
			      &u->single_vaddr, &size))
		u->single_vaddr = 0;
	/* the exec hook's function, read here (before a -c command
	 * starts, before a -p process stops) and kept (patch_memo.h) */
	patch_find_symbol(u->libc, "execve", &size, &size, &off);
	u->libc_ready = true;
	return 0;
}

int user_prepare_libc(struct ubt_user *u)
{
	char path[PATH_MAX];
	int err;

	if (u->libc_ready && u->libc_pid == u->pid)
		return 0;
	err = user_find_libc(u->pid, path, sizeof(path));
	if (err) {
		u->libc_ready = false;	/* not ubt's either */
		return err;
	}
	/* the one read before the command started, if it is the same */
	if (!u->libc_ready || strcmp(path, u->libc))
		err = libc_elf(u, path);
	if (!err)
		u->libc_pid = u->pid;
	return err;
}

void user_prepare_libc_self(struct ubt_user *u)
{
	char path[PATH_MAX];

	if (!user_find_libc(getpid(), path, sizeof(path)) && !libc_elf(u, path))
		u->libc_pid = getpid();
}

int user_check_libc(struct ubt_user *u)
{
	struct user_regs_struct r;
	uint64_t lo, hi;
	uint8_t single = 1;
	char exe[64];
	int err;

	err = user_prepare_libc(u);
	if (err == -ENOENT && !u->libc_ready) {
		snprintf(exe, sizeof(exe), "/proc/%d/exe", u->pid);
		if (patch_elf_interp(exe) == 1)
			return user_err(u, 0, "libc is not loaded yet: the process "
					  "is still starting");
		return user_err(u, 0, "no libc in the process: a static "
				  "executable cannot load the runtime");
	}
	if (err)
		return err;
	err = user_module_maps(u->pid, u->libc, u->libc_min_vaddr, u->libc_dyn,
			  &u->libc_bias, &lo, &hi);
	if (err)
		return user_err(u, err, "%s: cannot find its mapping", u->libc);
	if (u->single_vaddr)
		pt_read(&u->pt, u->libc_bias + u->single_vaddr, &single, 1);
	if (!single && u->pt.nth == 1 && !pt_regs(&u->pt, 0, &r) &&
	    in_loader(u, r.rip))
		return user_err(u, 0, "libc is not initialized yet: the process "
				  "is still starting");
	return 0;
}

/* Every thread's block pointer zeroed (all stopped): 0 or -errno. */
int user_zero_tls_in(struct ubt_user *u, struct pt *pt)
{
	uint64_t zero[2] = { 0, 0 };
	int err;

	for (int i = 0; i < pt->nth; i++) {
		struct user_regs_struct r;

		pt_regs(pt, i, &r);
		err = pt_write(pt, r.fs_base + (uint64_t)u->tls_offset, zero,
			       sizeof(zero));
		if (err)
			return user_err(u, err, "reset thread %d",
					pt->th[i].tid);
	}
	return 0;
}

int user_zero_tls(struct ubt_user *u)
{
	return user_zero_tls_in(u, &u->pt);
}

/* Forget blocks of an earlier attach in every thread (all stopped). */
int user_reset_tls(struct ubt_user *u)
{
	int err;

	if (!u->tls_pending)
		return 0;
	err = user_zero_tls(u);
	if (!err)
		u->tls_pending = false;
	return err;
}

/*
 * The length of the loader's first mmap of the ELF file at path (glibc's
 * dl-map-segments.h: the last PT_LOAD's end, unrounded, minus the first's
 * page), or 0.
 */
static uint64_t runtime_span(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint64_t lo = UINT64_MAX, end = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    eh.e_phentsize != sizeof(ph) || eh.e_phnum > 64) {
		close(fd);
		return 0;
	}
	for (int i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
		    sizeof(ph)) {
			lo = UINT64_MAX;
			break;
		}
		if (ph.p_type != PT_LOAD)
			continue;
		if (lo == UINT64_MAX)
			lo = ph.p_vaddr & ~4095ULL;
		end = ph.p_vaddr + ph.p_memsz;
	}
	close(fd);
	return lo == UINT64_MAX || end <= lo ? 0 : end - lo;
}

#define USER_NEAR_GAP (64ULL << 20)	/* room left for code slices */
#define USER_NEAR_STEP (16ULL << 20)

/*
 * Where to ask the loader to put the runtime (len bytes): below the
 * module u->rt_near, past the room find_gap() gives its code slice, in
 * a range free with a megabyte around it, so that the module's
 * trampolines reach rt_wrap_call with a rel32 (tramp.c); 0 for nowhere.
 * Below: above a module, its heap grows (brk).
 */
static uint64_t runtime_near(struct ubt_user *u, uint64_t len)
{
	uint64_t bias, lo, hi, c, found = 0;
	struct pt_map *m;
	int n;

	/* UBT_RUNTIME_FAR: where dlopen() puts it (tests: both paths) */
	if (!u->rt_near[0] || !len || getenv("UBT_RUNTIME_FAR") ||
	    user_module_range(u, u->rt_near, &bias, &lo, &hi) ||
	    lo < USER_2G / 2 || pt_maps(u->pid, &m, &n))
		return 0;
	for (c = (lo - USER_NEAR_GAP - len) & ~((2ULL << 20) - 1);
	     c > lo - USER_2G / 2 && !found; c -= USER_NEAR_STEP) {
		uint64_t a = c - (1 << 20), b = c + len + (1 << 20);
		int i;

		for (i = 0; i < n; i++)
			if (m[i].start < b && m[i].end > a)
				break;
		if (i == n)
			found = c;
	}
	free(m);
	return found;
}

/*
 * No remote dlopen() while a thread holds the loader's lock: it would
 * wait on it.  With every thread stopped, let them run a little and look
 * again (a control thread chosen anew), for a bounded time; with one
 * stopped, the others run anyway.
 */
static int ldlock_free(struct ubt_user *u)
{
	int held, tries = USER_LDLOCK_WAIT_MS / 20;
	pid_t owner;

	if (user_ldlock_late() >= 2)
		return 0;
	while ((held = user_ldlock_held(u->pid, &owner)) > 0 && tries-- > 0) {
		if (u->pt.one) {
			usleep(20000);
			pt_maps_forget();	/* the others ran */
			continue;
		}
		pt_maps_forget();	/* the others run now */
		if (pt_run_briefly(&u->pt, 20000) || user_choose_ctl(u))
			return user_err(u, -ESRCH, "process exited during attach");
	}
	if (held <= 0)
		return 0;
	return user_err(u, -EBUSY, "thread %d holds the dynamic loader's lock "
			       "(in dlopen(), dlclose() or a dl_iterate_phdr() "
			       "callback) for more than %d ms: the runtime "
			       "cannot be loaded without waiting on it",
		    (int)owner, USER_LDLOCK_WAIT_MS);
}

#define USER_DLOPEN_MORE_MS 60000

/*
 * The remote dlopen() did not return in time.  Stopped inside the
 * loader's lock, it cannot be abandoned (the lock would stay held for
 * ever): the other threads run meanwhile, so it waits for whoever holds
 * the other lock, as long as that takes within a bound.
 */
static int dlopen_finish(struct ubt_user *u, uint64_t *handle)
{
	pid_t ctl = u->pt.th[u->pt.ctl].tid;
	int err = -ETIMEDOUT, waited = 0;

	while (err == -ETIMEDOUT && waited < USER_DLOPEN_MORE_MS &&
	       user_ldlock_owns(u->pid, ctl)) {
		if (!waited)
			fprintf(stderr, "ubt: pid %d: the runtime's dlopen() "
				"waits for the dynamic loader's lock; waiting "
				"for it (left now, the lock would stay "
				"held)\n", (int)u->pid);
		err = pt_call_more(&u->pt, handle, 5000);
		waited += 5000;
	}
	if (err == -ETIMEDOUT && user_ldlock_owns(u->pid, ctl))
		fprintf(stderr, "ubt: pid %d: thread %d is left inside dlopen() "
			"holding the dynamic loader's lock\n", (int)u->pid,
			(int)ctl);
	return err;
}

/*
 * The name the target's dlopen() gets, in the scratch area: the
 * runtime's path in ubt's mount namespace; in another one the runtime's
 * descriptor, handed over (user_mntns.c), as "/proc/self/fd/N", with N
 * in *tfd (else -1) for the caller to close there.
 */
static int runtime_name(struct ubt_user *u, int64_t *tfd)
{
	char *name = (char *)u->m.base + USER_SCRATCH_OFF;
	int by_fd = user_mntns_by_fd(u->pid), fd, err;
	struct stat a, b;

	*tfd = -1;
	if (!by_fd) {
		strcpy(name, u->rt_path);
		return 0;
	}
	if (by_fd == -ENOENT)
		return user_err(u, 0, "pid %d has another root (mount "
				"namespace or chroot) without a /proc of its "
				"own: the runtime is not loaded there by its "
				"path", (int)u->pid);
	if (by_fd < 0)
		return user_err(u, by_fd, "pid %d: its mount namespace",
				(int)u->pid);
	fd = open(u->rt_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return user_err(u, -errno, "open %s", u->rt_path);
	/* the file rtpath_find() checked (a root-owned path) */
	if (fstat(fd, &a) || stat(u->rt_path, &b) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino || !S_ISREG(a.st_mode)) {
		close(fd);
		return user_err(u, 0, "%s changed while opened",
				u->rt_path);
	}
	err = user_comm_send(u, fd, tfd);
	close(fd);
	if (err)
		return err;
	snprintf(name, USER_DONE_OFF - USER_SCRATCH_OFF, "/proc/self/fd/%lld",
		 (long long)*tfd);
	return 0;
}

/*
 * Is the object the target's loader returned ubt's runtime?  The loader
 * gives back an object already loaded under the same name without
 * opening the file again (a runtime of another build that an earlier ubt
 * loaded from that path, an earlier session's "/proc/self/fd/N"), and
 * rt_init's offset is this file's.  Its first page as mapped (ELF
 * header, program headers, the build id, the dynamic symbols: nothing the
 * loader writes) must be the file's.
 */
static int runtime_same(struct ubt_user *u, uint64_t l_addr)
{
	uint8_t file[4096], mem[4096];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)file;
	uint64_t len = 0, vaddr = 0;
	ssize_t n;
	int fd;

	fd = open(u->rt_path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : pread(fd, file, sizeof(file), 0);
	if (fd >= 0)
		close(fd);
	if (n < (ssize_t)sizeof(*eh) || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) >
	    (uint64_t)n)
		return user_err(u, -EINVAL, "%s: cannot read its headers",
				u->rt_path);
	for (int i = 0; i < eh->e_phnum && !len; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(file + eh->e_phoff) + i;

		if (ph->p_type == PT_LOAD && !ph->p_offset) {
			vaddr = ph->p_vaddr;
			len = ph->p_filesz < (uint64_t)n ? ph->p_filesz :
							    (uint64_t)n;
		}
	}
	if (!len || pt_read(&u->pt, l_addr + vaddr, mem, len) ||
	    memcmp(mem, file, len))
		return user_err(u, 0, "the runtime the loader of pid %d "
				"gave back is not %s (another build, loaded "
				"by an earlier ubt under the same name)",
				(int)u->pid, u->rt_path);
	return 0;
}

int user_place_runtime(struct ubt_user *u, const struct user_opts *o)
{
	uint64_t args[6] = { 0 }, handle, l_addr, ret;
	uint64_t init_vaddr = u->rt_init_vaddr;
	const char *rt = u->rt_path;
	int64_t tfd, r;
	uint64_t len, at;
	int err;

	if (USER_FIELD(o, struct user_opts, near))
		snprintf(u->rt_near, sizeof(u->rt_near), "%s", o->near);
	len = runtime_span(rt);
	at = runtime_near(u, len);
	err = ldlock_free(u);
	err = err ?: runtime_name(u, &tfd);
	if (err)
		return err;
	args[0] = u->target_base + USER_SCRATCH_OFF;
	args[1] = RTLD_NOW;
	err = pt_call_near(&u->pt, u->libc_bias + u->dlopen_vaddr, args,
			   &handle, 5000, at ? len : 0, at);
	if (err == -ETIMEDOUT)
		err = dlopen_finish(u, &handle);
	/* the loader closed its own descriptor: the one handed over goes */
	if (tfd >= 0 && err != -ETIMEDOUT)
		user_rsys(u, SYS_close, (uint64_t)tfd, 0, 0, 0, 0, 0, &r);
	if (err) {
		user_err(u, 0, "dlopen %s in the target: %s", rt, u->pt.err);
		return err;
	}
	if (!handle) {
		char text[256] = "unknown error";
		uint64_t msg = 0;

		if (u->dlerror_vaddr &&
		    !pt_call(&u->pt, u->libc_bias + u->dlerror_vaddr, args,
			     &msg, 1000) &&
		    msg && !pt_read(&u->pt, msg, text, sizeof(text) - 1))
			text[sizeof(text) - 1] = 0;
		return user_err(u, 0, "dlopen in the target failed: %s", text);
	}
	err = pt_read(&u->pt, handle, &l_addr, 8);
	if (err)
		return user_err(u, err, "read the runtime's link map");
	err = runtime_same(u, l_addr);
	if (err)
		return err;
	args[0] = u->target_base;
	/* the vDSO, where rt_init() looks its clock up, without the system
	 * calls (and stops) of reading its own auxv */
	args[1] = procstat_auxv(u->pid, AT_SYSINFO_EHDR);
	args[2] = ~args[1];
	err = pt_call(&u->pt, l_addr + init_vaddr, args, &ret, 2000);
	if (err)
		return user_err(u, 0, "rt_init in the target: %s", u->pt.err);
	if ((int64_t)ret <= -RT_ABI_MISMATCH &&
	    (int64_t)ret > -RT_ABI_MISMATCH - 0x10000)
		return user_err(u, 0,
			    "the runtime %s is ABI version %ld, this ubt needs %d",
			    u->rt_path, (long)(-(int64_t)ret - RT_ABI_MISMATCH),
			    RT_ABI_VERSION);
	u->tls_offset = (int64_t)ret;
	if (u->m.ctl->tls_offset != u->tls_offset ||
	    !u->m.ctl->fn[RT_FN_SLOW] || !u->m.ctl->fn[RT_FN_WRAP_ENTER] ||
	    !u->m.ctl->fn[RT_FN_WRAP_EXIT] || !u->m.ctl->fn[RT_FN_WRAP_CALL])
		return user_err(u, 0, "the runtime did not initialize");
	u->tls_pending = true;
	return u->pt.one ? 0 : user_reset_tls(u);
}
