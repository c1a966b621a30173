/* User mode facade: attach, runtime placement, probe installation, detach. */
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

#define USER_MAX_SITES 256
#define USER_SCRATCH_OFF 2048	/* in the control page, after struct rt_ctl */
#define USER_MAX_FUNC (1 << 20)
#define USER_2G (2ULL << 30)
#define USER_VA_END 0x7ffffffff000ULL	/* end of 47-bit user space */

struct user_slice {
	char path[PATH_MAX];	/* module */
	uint64_t target;	/* address in the target */
	uint64_t used;
};

struct user_site {
	struct patch_site s;
	int slice;
	uint64_t entry_code, ret_code;
	uint8_t jmp[PATCH_MAX_WINDOW];	/* bytes written over the window */
	uint64_t tramp;
	struct patch_reloc r;
	uint64_t reloc_at;
	bool installed;		/* the jump is written */
	uint64_t rec;		/* target address of its struct rt_site */
	uint64_t offset;	/* of the probe from the symbol */
};

struct ubt_user {
	struct pt pt;
	pid_t pid;
	bool child, resumed, detached;
	struct memfd m;
	int64_t target_fd;
	uint64_t target_base;
	int64_t tls_offset;
	struct user_slice slices[RT_CODE_SLICES];
	int nslices;
	struct user_site *sites;
	int nsites;
	uint64_t stop_ns;	/* stopped so far (finished phases) */
	uint64_t stop_t0;	/* start of the current stop */
	bool released;		/* -p: running between attach and install */
	pid_t ctl_tid;		/* the thread that ran the remote calls */
	bool boosted;		/* ubt runs at nice -20 while it is stopped */
	int old_nice;
	bool pinned;		/* ubt runs on the control thread's CPU */
	cpu_set_t old_cpus;
	bool tls_pending;	/* threads' block pointers to reset */
	bool new_image;		/* it ran execve() while released */
	int moved;
	bool exited;
	int exit_status;
	char rt_path[PATH_MAX];
	uint64_t self_start;	/* ubt's start time, for site records */
	int leftovers;		/* a dead ubt's jumps removed at attach */
	int children;		/* forked children restored at detach */
	bool exec_hook;		/* libc's execve announces exec()s */
	uint32_t exec_seen;	/* the last ctl->exec_seq handled */
	int execs;		/* new images followed */
	uint32_t ev_block;	/* user_read_events(): the ring being read */
	uint64_t rt_init_vaddr;
	char libc[PATH_MAX];
	bool libc_ready;
	int libc_dyn;
	uint64_t libc_min_vaddr, libc_bias;
	uint64_t dlopen_vaddr, dlerror_vaddr, single_vaddr;
	char err[512];
};

/* A field of a sized struct from the caller, 0 if its sz stops before. */
#define USER_FIELD(p, type, f)                                         \
	((p) && (p)->sz >= offsetof(type, f) + sizeof((p)->f) ? (p)->f \
							       : 0)

static int uerr(struct ubt_user *u, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int uerr(struct ubt_user *u, int err, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(u->err, sizeof(u->err), fmt, ap);
	va_end(ap);
	n = strlen(u->err);
	if (err)
		snprintf(u->err + n, sizeof(u->err) - n, ": %s",
			 strerror(-err));
	return err ? err : -EINVAL;
}

const char *user_error(const struct ubt_user *u)
{
	return u->err;
}

pid_t user_pid(const struct ubt_user *u)
{
	return u->pid;
}

int64_t user_tls_offset(const struct ubt_user *u)
{
	return u->tls_offset;
}

uint64_t user_stop_ns(const struct ubt_user *u)
{
	return u->stop_ns;
}

/* ptrace reaped the process's exit (a -c child): keep its status. */
static void user_note_exit(struct ubt_user *u)
{
	if (u->pt.exited && !u->exited) {
		u->exited = true;
		u->exit_status = u->pt.exit_status;
	}
}

int user_read_maps(struct ubt_user *u, uint64_t off, uint64_t len,
		   int (*cb)(const void *data, uint32_t block, void *arg),
		   void *arg)
{
	uint32_t n, i;
	void *buf;
	int err = 0;

	if (!u->m.base)
		return -EINVAL;
	if (off > u->m.l.map_size || len > u->m.l.map_size - off)
		return -ERANGE;
	n = memfd_nblocks_used(&u->m);
	buf = xmalloc(len ? len : 1);
	for (i = 0; i < n && !err; i++) {
		err = memfd_map_read(&u->m, i, off, buf, len);
		if (!err)
			err = cb(buf, i, arg);
	}
	free(buf);
	return err;
}

int user_read_events(struct ubt_user *u,
		     int (*cb)(uint32_t type, const void *data, uint32_t len,
			       void *arg),
		     void *arg)
{
	uint32_t n, i;
	int total = 0, err = 0, r;

	if (!u->m.base)
		return -EINVAL;
	n = memfd_nblocks_used(&u->m);
	for (i = 0; i < n; i++) {
		u->ev_block = i;
		r = memfd_ring_consume(&u->m, i, cb, arg);
		if (r >= 0)
			total += r;
		else if (!err)
			err = r;
	}
	return err ? err : total;
}

uint32_t user_event_block(const struct ubt_user *u)
{
	return u->ev_block;
}

uint64_t user_lost_events(const struct ubt_user *u)
{
	return u->m.base ? memfd_ring_dropped(&u->m) : 0;
}

uint64_t user_unrecorded_threads(const struct ubt_user *u)
{
	return u->m.ctl ? memfd_no_block(&u->m) : 0;
}

int user_leftovers(const struct ubt_user *u)
{
	return u->leftovers;
}

int user_moved_threads(const struct ubt_user *u)
{
	return u->moved;
}

struct memfd *user_memfd(struct ubt_user *u)
{
	return &u->m;
}

/* The runtime to load: found and checked as rtpath.h says. */
static int runtime_path(const struct user_opts *o, char *out, size_t len,
			char *why, size_t whylen)
{
	return rtpath_find(USER_FIELD(o, struct user_opts, runtime_path), out,
			   len, why, whylen);
}

/* Load bias of a module mapped from path in the target. */
/*
 * Where a module mapped from path lies in the target ([lo, hi)), and its
 * load bias given the ELF file's lowest p_vaddr and type.
 */
static int module_maps(pid_t pid, const char *path, uint64_t min_vaddr,
		       int is_dyn, uint64_t *bias, uint64_t *lo, uint64_t *hi)
{
	struct pt_map *m;
	uint64_t base = 0;
	int n, i, err;

	err = pt_maps(pid, &m, &n);
	if (err)
		return err;
	*lo = UINT64_MAX;
	*hi = 0;
	for (i = 0; i < n; i++) {
		if (strcmp(m[i].path, path))
			continue;
		if (m[i].start < *lo) {
			*lo = m[i].start;
			base = m[i].start - m[i].off;
		}
		if (m[i].end > *hi)
			*hi = m[i].end;
	}
	free(m);
	if (!*hi)
		return -ENOENT;
	*bias = is_dyn ? base - min_vaddr : 0;
	return 0;
}

static int module_range(struct ubt_user *u, const char *path, uint64_t *bias,
			uint64_t *lo, uint64_t *hi)
{
	uint64_t min_vaddr;
	int err, is_dyn;

	err = patch_elf_base(path, &min_vaddr, &is_dyn);
	if (err)
		return err;
	return module_maps(u->pid, path, min_vaddr, is_dyn, bias, lo, hi);
}

static int find_libc(struct ubt_user *u, char *path, size_t len)
{
	struct pt_map *m;
	int n, i, err;

	err = pt_maps(u->pid, &m, &n);
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

static int rsys(struct ubt_user *u, long nr, uint64_t a0, uint64_t a1,
		uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5,
		int64_t *ret)
{
	uint64_t args[6] = { a0, a1, a2, a3, a4, a5 };
	int err = pt_syscall(&u->pt, nr, args, ret);

	if (err) {
		uerr(u, 0, "%s", u->pt.err);
		return err;
	}
	if (*ret < 0 && *ret > -4096)
		return uerr(u, (int)*ret, "remote system call %ld", nr);
	return 0;
}

/* A memfd made in the target (it owns it: no permission needed), ours too. */
static int target_memfd(struct ubt_user *u, int *fd_out)
{
	struct user_regs_struct r;
	char path[64];
	uint64_t name;
	int64_t ret;
	int fd, err;

	pt_regs(&u->pt, u->pt.ctl, &r);
	name = ((r.rsp - 4096) & ~15ULL);
	err = pt_write(&u->pt, name, "ubt", 4);
	if (err)
		return uerr(u, err, "cannot write the target's stack");
	/* MFD_EXEC (Linux 6.3): code areas map it executable */
	err = rsys(u, SYS_memfd_create, name, MFD_CLOEXEC | 0x10U, 0, 0, 0, 0,
		   &ret);
	if (err == -EINVAL)
		err = rsys(u, SYS_memfd_create, name, MFD_CLOEXEC, 0, 0, 0, 0,
			   &ret);
	if (err)
		return err;
	u->target_fd = ret;
	snprintf(path, sizeof(path), "/proc/%d/fd/%lld", u->pid,
		 (long long)ret);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return uerr(u, -errno, "open %s", path);
	*fd_out = fd;
	return 0;
}

/* The target maps our memfd; it knows where. */
static int target_map(struct ubt_user *u)
{
	int64_t ret;
	int err;

	err = rsys(u, SYS_mmap, 0, u->m.size, PROT_READ | PROT_WRITE,
		   MAP_SHARED, (uint64_t)u->target_fd, 0, &ret);
	if (err)
		return err;
	u->target_base = (uint64_t)ret;
	u->m.pid = u->pid;	/* named if it corrupts the memfd */
	u->m.ctl->target_base = u->target_base;
	return 0;
}

static int place_memfd(struct ubt_user *u, const struct user_opts *o)
{
	struct memfd_layout l;
	int fd, err;

	if (USER_FIELD(o, struct user_opts, layout.nblocks))
		l = o->layout;
	else
		memfd_layout_default(&l);
	err = target_memfd(u, &fd);
	if (err)
		return err;
	if (ftruncate(fd, (off_t)memfd_layout_size(&l)) < 0) {
		err = -errno;
		close(fd);
		return uerr(u, err, "ftruncate memfd");
	}
	err = memfd_map(&u->m, fd, &l);
	if (err) {
		u->m.fd = -1;
		close(fd);
		return uerr(u, err, "mmap memfd");
	}
	err = target_map(u);
	if (err)
		return err;
	if (USER_FIELD(o, struct user_opts, fault_safe_reads))
		u->m.ctl->flags |= RT_CTL_FAULT_HANDLER;
	/* as the kernel's probes: a -c command's children, not -p's */
	if (u->child)
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
static pid_t blocked_thread(struct ubt_user *u)
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

		if (tid <= 0)
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
static void user_unseize(struct ubt_user *u)
{
	uint64_t sc = u->pt.syscall_insn;

	pt_detach(&u->pt);
	pt_release(&u->pt);
	pt_init(&u->pt);
	u->pt.syscall_insn = sc;
}

/* Pick the thread that runs the remote calls, letting the process run on
 * a little while no thread is at a safe point. */
static int choose_ctl(struct ubt_user *u)
{
	char link[64], exe[PATH_MAX];
	struct pt_map *m;
	int tries, n, i;
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/%d/exe", u->pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	if (len <= 0)
		return uerr(u, -ESRCH, "process exited during attach");
	exe[len] = 0;
	for (tries = 0; tries < 400; tries++) {
		if (pt_maps(u->pid, &m, &n))
			return uerr(u, -ESRCH, "process exited during attach");
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
				return uerr(u, -ESRCH,
					    "process exited during attach");
			continue;
		}
		if (pt_run_briefly(&u->pt, 250))
			return uerr(u, -ESRCH, "process exited during attach");
	}
	return uerr(u, -EAGAIN, "no thread reached a point where the runtime "
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
static int prepare_libc(struct ubt_user *u)
{
	uint64_t size, off;
	int err;

	if (u->libc_ready)
		return 0;
	err = find_libc(u, u->libc, sizeof(u->libc));
	if (err)
		return err;
	err = patch_elf_base(u->libc, &u->libc_min_vaddr, &u->libc_dyn);
	if (err)
		return uerr(u, err, "%s", u->libc);
	err = patch_find_symbol(u->libc, "dlopen", &u->dlopen_vaddr, &size,
				&off);
	if (err)
		err = patch_find_symbol(u->libc, "__libc_dlopen_mode",
					&u->dlopen_vaddr, &size, &off);
	if (err)
		return uerr(u, err, "%s: no dlopen", u->libc);
	if (patch_find_symbol(u->libc, "dlerror", &u->dlerror_vaddr, &size,
			      &off))
		u->dlerror_vaddr = 0;
	if (patch_find_object(u->libc, "__libc_single_threaded",
			      &u->single_vaddr, &size))
		u->single_vaddr = 0;
	u->libc_ready = true;
	return 0;
}

static int check_libc(struct ubt_user *u)
{
	struct user_regs_struct r;
	uint64_t lo, hi;
	uint8_t single = 1;
	char exe[64];
	int err;

	err = prepare_libc(u);
	if (err == -ENOENT && !u->libc_ready) {
		snprintf(exe, sizeof(exe), "/proc/%d/exe", u->pid);
		if (patch_elf_interp(exe) == 1)
			return uerr(u, 0, "libc is not loaded yet: the process "
					  "is still starting");
		return uerr(u, 0, "no libc in the process: a static "
				  "executable cannot load the runtime");
	}
	if (err)
		return err;
	err = module_maps(u->pid, u->libc, u->libc_min_vaddr, u->libc_dyn,
			  &u->libc_bias, &lo, &hi);
	if (err)
		return uerr(u, err, "%s: cannot find its mapping", u->libc);
	if (u->single_vaddr)
		pt_read(&u->pt, u->libc_bias + u->single_vaddr, &single, 1);
	if (!single && u->pt.nth == 1 && !pt_regs(&u->pt, 0, &r) &&
	    in_loader(u, r.rip))
		return uerr(u, 0, "libc is not initialized yet: the process "
				  "is still starting");
	return 0;
}

/* Forget blocks of an earlier attach in every thread (all stopped). */
static int reset_tls(struct ubt_user *u)
{
	int i, err;

	if (!u->tls_pending)
		return 0;
	for (i = 0; i < u->pt.nth; i++) {
		struct user_regs_struct r;
		uint64_t zero[2] = { 0, 0 };

		pt_regs(&u->pt, i, &r);
		err = pt_write(&u->pt, r.fs_base + (uint64_t)u->tls_offset,
			       zero, sizeof(zero));
		if (err)
			return uerr(u, err, "reset thread %d",
				    u->pt.th[i].tid);
	}
	u->tls_pending = false;
	return 0;
}

static int place_runtime(struct ubt_user *u, const struct user_opts *o)
{
	uint64_t args[6] = { 0 }, handle, l_addr, ret;
	uint64_t init_vaddr = u->rt_init_vaddr;
	const char *rt = u->rt_path;
	int err;

	strcpy(u->m.base + USER_SCRATCH_OFF, rt);
	args[0] = u->target_base + USER_SCRATCH_OFF;
	args[1] = RTLD_NOW;
	err = pt_call(&u->pt, u->libc_bias + u->dlopen_vaddr, args, &handle,
		      5000);
	if (err) {
		uerr(u, 0, "dlopen %s in the target: %s", rt, u->pt.err);
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
		return uerr(u, 0, "dlopen in the target failed: %s", text);
	}
	err = pt_read(&u->pt, handle, &l_addr, 8);
	if (err)
		return uerr(u, err, "read the runtime's link map");
	args[0] = u->target_base;
	args[1] = 0;
	err = pt_call(&u->pt, l_addr + init_vaddr, args, &ret, 2000);
	if (err)
		return uerr(u, 0, "rt_init in the target: %s", u->pt.err);
	if ((int64_t)ret <= -RT_ABI_MISMATCH &&
	    (int64_t)ret > -RT_ABI_MISMATCH - 0x10000)
		return uerr(u, 0,
			    "the runtime %s is ABI version %ld, this ubt needs %d",
			    u->rt_path, (long)(-(int64_t)ret - RT_ABI_MISMATCH),
			    RT_ABI_VERSION);
	u->tls_offset = (int64_t)ret;
	if (u->m.ctl->tls_offset != u->tls_offset ||
	    !u->m.ctl->fn[RT_FN_SLOW] || !u->m.ctl->fn[RT_FN_WRAP_ENTER] ||
	    !u->m.ctl->fn[RT_FN_WRAP_EXIT] || !u->m.ctl->fn[RT_FN_WRAP_CALL])
		return uerr(u, 0, "the runtime did not initialize");
	u->tls_pending = true;
	return u->pt.one ? 0 : reset_tls(u);
}

/*
 * Every thread stopped (the jumps are written now): forget the blocks of
 * an earlier attach in every thread first.  Nothing reads them before.
 */
static int user_stop_all(struct ubt_user *u)
{
	int err = pt_stop_all(&u->pt);

	if (err) {
		uerr(u, 0, "%s", u->pt.err);
		return err;
	}
	return reset_tls(u);
}

/* Find the runtime before touching the target. */
static int find_runtime(struct ubt_user *u, const struct user_opts *o)
{
	char why[sizeof(u->err)];
	uint64_t sz, off;
	int err;

	err = runtime_path(o, u->rt_path, sizeof(u->rt_path), why,
			   sizeof(why));
	if (err) {
		uerr(u, 0, "%s", why);
		return err;
	}
	if (strlen(u->rt_path) + 1 > RT_CTL_SIZE - USER_SCRATCH_OFF)
		return uerr(u, -ENAMETOOLONG, "%s", u->rt_path);
	err = patch_find_symbol(u->rt_path, "rt_init", &u->rt_init_vaddr, &sz,
				&off);
	if (err)
		return uerr(u, err, "runtime %s", u->rt_path);
	return 0;
}

/*
 * Did an operation fail because the process went away?  An exiting process
 * fails reads and writes of its memory before it turns into a zombie: give
 * it a moment.
 */
static bool process_gone(struct ubt_user *u, int e)
{
	int i;

	if (u->exited)
		return true;
	for (i = 0; i < 20; i++) {
		if (pt_gone(u->pid))
			return true;
		if (e != -EIO && e != -ESRCH && e != -EFAULT)
			return false;
		usleep(1000);
	}
	return false;
}

/*
 * While the target waits for ubt, ubt should not wait long for a CPU
 * behind other processes: it runs at nice -20 until the target runs
 * again (not real-time: the work done meanwhile is not bounded).
 * Nothing happens without the right.
 */
static void user_boost(struct ubt_user *u)
{
	if (u->boosted)
		return;
	errno = 0;
	u->old_nice = getpriority(PRIO_PROCESS, 0);
	if (errno || setpriority(PRIO_PROCESS, 0, -20))
		return;
	u->boosted = true;
}

static void user_unboost(struct ubt_user *u)
{
	if (u->pinned)
		sched_setaffinity(0, sizeof(u->old_cpus), &u->old_cpus);
	u->pinned = false;
	if (!u->boosted)
		return;
	setpriority(PRIO_PROCESS, 0, u->old_nice);
	u->boosted = false;
}

/*
 * Run ubt on the CPU thread tid runs on, when that thread is an ordinary
 * (not real-time) one: the remote calls then go back and forth between
 * the two on one CPU, without waking another (on a virtual machine a CPU
 * left idle can take a millisecond to wake up again).
 */
static void user_follow(struct ubt_user *u, pid_t tid)
{
	char path[64], buf[1024], *f;
	int fd, i, cpu = -1, policy = -1;
	cpu_set_t set;
	ssize_t n;

	if (u->pinned)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", u->pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	f = strrchr(buf, ')');
	/* fields from 3 (state) on; 39 is processor, 41 policy */
	for (i = 2; f && i <= 41; i++) {
		f = strchr(f + 1, ' ');
		if (f && i + 1 == 39)
			cpu = atoi(f + 1);
		if (f && i + 1 == 41)
			policy = atoi(f + 1);
	}
	if (cpu < 0 || cpu >= CPU_SETSIZE ||
	    (policy != SCHED_OTHER && policy != SCHED_BATCH &&
	     policy != SCHED_IDLE) ||
	    sched_getaffinity(0, sizeof(u->old_cpus), &u->old_cpus) ||
	    !CPU_ISSET(cpu, &u->old_cpus))
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	u->pinned = !sched_setaffinity(0, sizeof(set), &set);
}

/*
 * Add the stop that ends now: from when the first thread stopped (-p), or
 * from the start of the attach (-c: stopped from its first instruction).
 */
static void user_count_stop(struct ubt_user *u)
{
	uint64_t t0 = u->stop_t0;

	if (!u->child && u->pt.stop_start_ns > t0)
		t0 = u->pt.stop_start_ns;
	u->stop_ns += mono_ns() - t0 - u->pt.released_ns;
}

/*
 * -p: stop only thread tid (0: none known) for the remote calls, else
 * every thread.  The stop starts here.
 */
static int seize(struct ubt_user *u, pid_t tid)
{
	user_boost(u);
	user_follow(u, tid ?: u->pid);
	u->stop_t0 = mono_ns();
	if (tid && !pt_seize_thread(&u->pt, u->pid, tid))
		return 0;
	if (tid)	/* it exited meanwhile */
		user_unseize(u);
	return pt_seize(&u->pt, u->pid);
}

/*
 * -p: the runtime is in place; let the target run while ubt does what
 * does not need it stopped (loading BPF, building the probes' code).
 * Only writing the jumps needs every thread stopped: user_restop().
 */
static void user_release(struct ubt_user *u)
{
	uint64_t sc = u->pt.syscall_insn;

	if (u->pt.ctl >= 0 && u->pt.ctl < u->pt.nth)
		u->ctl_tid = u->pt.th[u->pt.ctl].tid;
	pt_detach(&u->pt);
	user_note_exit(u);
	user_count_stop(u);
	user_unboost(u);
	pt_release(&u->pt);
	pt_init(&u->pt);
	u->pt.syscall_insn = sc;	/* libc and the vdso stay */
	u->released = true;
}

/*
 * Stop the target again: one thread for remote calls only, or (all) every
 * thread at once, since the jumps are to be written: a spinning thread
 * takes a while to notice the interrupt, and a thread stopped first waits
 * for the others (so they are interrupted together, not one after another).
 */
static int user_restop(struct ubt_user *u, bool all)
{
	uint8_t head[offsetof(struct rt_ctl, fn)];
	int err;

	if (u->new_image) {
		uerr(u, 0, "pid %d ran execve() during attach", u->pid);
		return -ESTALE;
	}
	if (!u->released)
		return 0;
	err = seize(u, all ? 0 : blocked_thread(u) ?: u->ctl_tid);
	if (err) {
		user_note_exit(u);
		uerr(u, 0, "cannot stop pid %d again: %s", u->pid, u->pt.err);
		return err;
	}
	/* an execve() meanwhile: a new image, without the memfd */
	if (pt_read(&u->pt, u->target_base, head, sizeof(head)) ||
	    memcmp(head, u->m.base, sizeof(head))) {
		user_release(u);
		u->new_image = true;
		uerr(u, 0, "pid %d ran execve() during attach", u->pid);
		return -ESTALE;
	}
	u->released = false;
	return 0;
}

/*
 * Jumps of other ubt processes: a live one owns the runtime here (one
 * runtime serves one tracer: refuse); a dead one's leftovers go before
 * the runtime is set up again, with every thread stopped (their probe
 * code would write into the new session's blocks).
 */
static int check_owners(struct ubt_user *u)
{
	struct owner_info oi;
	int n;

	if (owner_scan(u->pid, &oi) || (!oi.live_pid && !oi.dead_sites))
		return 0;
	if (oi.live_pid)
		return uerr(u, -EBUSY, "another ubt (pid %u) runs probes in "
				       "this process",
			    oi.live_pid);
	if (u->pt.one && pt_stop_all(&u->pt))
		return uerr(u, 0, "%s", u->pt.err);
	n = owner_restore(&u->pt, 0);
	if (n < 0)
		return uerr(u, n, "remove a dead ubt's jumps");
	u->leftovers = n;
	return 0;
}

static struct ubt_user *attach(struct ubt_user *u, const struct user_opts *o,
			   char *err, size_t errlen)
{
	int e = choose_ctl(u);

	u->self_start = owner_start_time(getpid());
	e = e ?: check_owners(u);
	e = e ?: check_libc(u);
	e = e ?: place_memfd(u, o);
	e = e ?: place_runtime(u, o);
	if (!e)
		return u;
	if (u->target_fd > 0) {
		char keep[sizeof(u->err)];
		int64_t ret;

		memcpy(keep, u->err, sizeof(keep));
		if (u->target_base)
			rsys(u, SYS_munmap, u->target_base, u->m.size, 0, 0,
			     0, 0, &ret);
		rsys(u, SYS_close, (uint64_t)u->target_fd, 0, 0, 0, 0, 0,
		     &ret);
		memcpy(u->err, keep, sizeof(keep));
	}
	pt_detach(&u->pt);
	if (u->child) {
		kill(u->pid, SIGKILL);
		waitpid(u->pid, NULL, 0);
	}
	if (!u->child && process_gone(u, e))
		snprintf(err, errlen, "cannot attach to pid %d: process exited "
				      "during attach", u->pid);
	else if (u->child)
		snprintf(err, errlen, "%s", u->err);
	else
		snprintf(err, errlen, "cannot attach to pid %d: %s", u->pid,
			 u->err);
	user_free(u);
	return NULL;
}

struct ubt_user *user_attach_pid(pid_t pid, const struct user_opts *o,
			     char *err, size_t errlen)
{
	struct ubt_user *u = xcalloc(1, sizeof(*u));

	u->m.fd = -1;
	pt_init(&u->pt);
	u->pid = pid;
	prepare_libc(u);	/* the ELF work, before stopping the target */
	if (find_runtime(u, o)) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", pid,
			 u->err);
		free(u);
		return NULL;
	}
	if (seize(u, blocked_thread(u) ?: pid)) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", pid,
			 u->pt.err);
		user_unboost(u);
		pt_release(&u->pt);
		free(u);
		return NULL;
	}
	u = attach(u, o, err, errlen);
	if (u)
		user_release(u);
	return u;
}

struct ubt_user *user_attach_cmd(char *const argv[], const struct user_opts *o,
			     char *err, size_t errlen)
{
	struct ubt_user *u = xcalloc(1, sizeof(*u));

	u->m.fd = -1;
	pt_init(&u->pt);
	u->child = true;
	if (find_runtime(u, o)) {
		snprintf(err, errlen, "%s", u->err);
		free(u);
		return NULL;
	}
	u->stop_t0 = mono_ns();
	if (pt_spawn(&u->pt, argv)) {
		snprintf(err, errlen, "%s", u->pt.err);
		pt_release(&u->pt);
		free(u);
		return NULL;
	}
	u->pid = u->pt.pid;
	return attach(u, o, err, errlen);
}

int user_site_check(const char *binary, const char *symbol, char *reason,
		    size_t len)
{
	return user_site_check_at(binary, symbol, 0, reason, len);
}

int user_site_check_at(const char *binary, const char *symbol,
		       uint64_t offset, char *reason, size_t len)
{
	uint64_t vaddr, size, off;
	struct patch_site s;
	uint8_t *code;
	int fd, err;

	err = patch_find_symbol(binary, symbol, &vaddr, &size, &off);
	if (err) {
		snprintf(reason, len, "%s: no function %s", binary, symbol);
		return err;
	}
	if (size > USER_MAX_FUNC)
		size = USER_MAX_FUNC;
	code = xmalloc(size ? size : 1);
	fd = open(binary, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || pread(fd, code, size, (off_t)off) != (ssize_t)size) {
		err = fd < 0 ? -errno : -EIO;
		snprintf(reason, len, "%s: cannot read %s", binary, symbol);
	} else {
		err = patch_analyze(code, size, vaddr, offset, &s);
		snprintf(reason, len, "%s", err ? s.reason : "");
	}
	if (fd >= 0)
		close(fd);
	free(code);
	return err;
}

static int site_compare(const struct patch_site *s, const uint8_t *code,
			const uint8_t *mem, char *reason, size_t len);
static uint8_t *read_file_code(const char *path, uint64_t off,
			       uint64_t size);

int user_process_check(pid_t pid, char *reason, size_t len)
{
	struct owner_info oi;
	pid_t tracer = owner_tracer(pid);

	if (tracer) {
		snprintf(reason, len, "pid %d is traced by pid %d (a debugger "
			 "or tracer holds ptrace)", (int)pid, (int)tracer);
		return -EBUSY;
	}
	if (!owner_scan(pid, &oi) && oi.live_pid) {
		snprintf(reason, len, "another ubt (pid %u) runs probes in "
			 "pid %d", oi.live_pid, (int)pid);
		return -EBUSY;
	}
	return 0;
}

int user_site_check_live(pid_t pid, const char *binary, const char *symbol,
			 uint64_t offset, char *reason, size_t len)
{
	uint64_t vaddr, size, off, min_vaddr, bias, lo, hi, n;
	uint8_t mem[PATCH_MAX_WINDOW + 32], *code;
	char path[PATH_MAX], memf[64];
	struct owner_info oi;
	struct patch_site s;
	int fd, err, is_dyn;

	if (!realpath(binary, path) ||
	    patch_find_symbol(path, symbol, &vaddr, &size, &off) ||
	    patch_elf_base(path, &min_vaddr, &is_dyn) ||
	    module_maps(pid, path, min_vaddr, is_dyn, &bias, &lo, &hi))
		return 0;	/* not for this check to say */
	if (size > USER_MAX_FUNC)
		size = USER_MAX_FUNC;
	code = read_file_code(path, off, size);
	if (!code)
		return 0;
	err = patch_analyze(code, size, bias + vaddr, offset, &s);
	n = s.addr + s.len - (bias + vaddr);
	snprintf(memf, sizeof(memf), "/proc/%d/mem", (int)pid);
	fd = err || n > sizeof(mem) ? -1 : open(memf, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, mem, n, (off_t)(bias + vaddr)) == (ssize_t)n)
		err = site_compare(&s, code, mem, reason, len);
	else
		err = 0;
	if (fd >= 0)
		close(fd);
	free(code);
	/* a dead ubt's jump: removed at attach */
	if (err && !owner_scan(pid, &oi) && oi.dead_sites && !oi.live_pid)
		err = 0;
	return err;
}

/* A free range for a code slice within +-2 GiB of [lo, hi). */
static int find_gap(struct ubt_user *u, uint64_t lo, uint64_t hi, uint64_t *at)
{
	uint64_t best = 0, best_span = UINT64_MAX, prev_end = 0x10000;
	struct pt_map *m;
	int n, i, err;

	err = pt_maps(u->pid, &m, &n);
	if (err)
		return err;
	for (i = 0; i <= n; i++) {
		uint64_t gs = prev_end;
		uint64_t ge = i < n ? m[i].start : USER_VA_END;
		uint64_t c, span;

		if (ge > USER_VA_END)
			ge = USER_VA_END;
		if (i > 0 && !strcmp(m[i - 1].path, "[heap]"))
			gs += 256ULL << 20;	/* leave the heap room */
		if (i < n)
			prev_end = m[i].end;
		if (ge <= gs || ge - gs < RT_CODE_SLICE)
			continue;
		c = ge <= lo ? ge - RT_CODE_SLICE : gs;
		span = (c + RT_CODE_SLICE > hi ? c + RT_CODE_SLICE : hi) -
		       (c < lo ? c : lo);
		if (span < best_span) {
			best_span = span;
			best = c;
		}
	}
	free(m);
	if (!best || best_span >= USER_2G - (1 << 20))
		return -ENOSPC;
	*at = best;
	return 0;
}

static int get_slice(struct ubt_user *u, const char *path, uint64_t lo,
		     uint64_t hi)
{
	struct user_slice *sl;
	uint64_t at;
	int64_t ret;
	int i, err;

	for (i = 0; i < u->nslices; i++)
		if (!strcmp(u->slices[i].path, path))
			return i;
	if (u->nslices == RT_CODE_SLICES)
		return uerr(u, -ENOSPC, "too many patched modules");
	err = find_gap(u, lo, hi, &at);
	if (err)
		return uerr(u, err, "no room for code within 2 GiB of %s",
			    path);
	err = rsys(u, SYS_mmap, at, RT_CODE_SLICE, PROT_READ | PROT_EXEC,
		   MAP_SHARED | MAP_FIXED_NOREPLACE, (uint64_t)u->target_fd,
		   memfd_code_off((unsigned int)u->nslices), &ret);
	if (err)
		return err;
	if ((uint64_t)ret != at)
		return uerr(u, -EEXIST, "code area for %s", path);
	sl = &u->slices[u->nslices];
	snprintf(sl->path, sizeof(sl->path), "%s", path);
	sl->target = at;
	sl->used = 0;
	return u->nslices++;
}

/* Copy bytes into slice i; their address in the target. */
static uint64_t slice_put(struct ubt_user *u, int i, const void *b, size_t n)
{
	struct user_slice *sl = &u->slices[i];
	uint8_t *base = memfd_code(&u->m, (unsigned int)i);
	uint64_t at = (sl->used + 15) & ~15ULL;

	if (at + n > RT_CODE_SLICE)
		return 0;
	memcpy(base + at, b, n);
	sl->used = at + n;
	return sl->target + at;
}

/* ubt's view of the record at target address at in slice i */
static struct rt_site *slice_record(struct ubt_user *u, int i, uint64_t at)
{
	return (struct rt_site *)((char *)memfd_code(&u->m, (unsigned int)i) +
				  (at - u->slices[i].target));
}

static int move_threads(struct ubt_user *u, struct user_site *us)
{
	int i;

	for (i = 0; i < u->pt.nth; i++) {
		struct user_regs_struct r;
		uint64_t to;

		pt_regs(&u->pt, i, &r);
		if (r.rip <= us->s.addr || r.rip >= us->s.addr + us->s.len)
			continue;
		to = patch_move_rip(&us->s, &us->r, us->reloc_at, r.rip);
		if (!to)
			return uerr(u, 0, "thread %d stopped inside an "
					  "instruction of the patch window",
				    u->pt.th[i].tid);
		r.rip = to;
		pt_set_regs(&u->pt, i, &r);
		u->moved++;
	}
	return 0;
}

/*
 * The process's bytes of a site (mem: from s->func to the end of the
 * window) against the file's (code, from s->func), from the instruction
 * left in place before the jump on: the window must be the file's
 * exactly; on that instruction's first byte another tracer's int3 may
 * stand (it is left alone: the trampoline runs the file's instruction).
 * What lies before it is not ubt's to check.  0, or -EBUSY with the
 * reason.
 */
static int site_compare(const struct patch_site *s, const uint8_t *code,
			const uint8_t *mem, char *reason, size_t len)
{
	uint64_t pre = s->addr - s->func, kept = s->kept - s->func, i;

	for (i = kept; i < pre + s->len; i++) {
		if (mem[i] == code[i])
			continue;
		if (i == kept && mem[i] == 0xcc)
			continue;	/* another tracer's breakpoint */
		snprintf(reason, len,
			 "the code at +%#llx is not the file's (%s): another "
			 "program changed it",
			 (unsigned long long)i,
			 mem[i] == 0xcc ? "a breakpoint" :
			 i == pre && mem[i] == 0xe9 ? "a jump" : "modified");
		return -EBUSY;
	}
	return 0;
}

/* bytes [off, off + size) of a file into a new buffer */
static uint8_t *read_file_code(const char *path, uint64_t off, uint64_t size)
{
	uint8_t *code = xmalloc(size ? size : 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || pread(fd, code, size, (off_t)off) != (ssize_t)size) {
		if (fd >= 0)
			close(fd);
		free(code);
		errno = EIO;
		return NULL;
	}
	close(fd);
	return code;
}

int user_install(struct ubt_user *u, const struct user_probe *p)
{
	uint64_t vaddr, size, off, bias, lo, hi, addr, code_at;
	uint64_t tramp, reloc_at, rec;
	uint8_t jmp[PATCH_MAX_WINDOW];
	struct user_site *us = NULL;
	struct rt_site *site;
	struct patch_reloc r;
	struct tramp_spec spec;
	char path[PATH_MAX];
	uint8_t buf[1024];
	int i, err, sl, n;

	uint64_t offset = USER_FIELD(p, struct user_probe, offset);

	if (u->resumed)
		return uerr(u, -EBUSY, "probes are installed before resuming");
	if (p->sz < offsetof(struct user_probe, code_len) + sizeof(size_t))
		return uerr(u, -EINVAL, "struct user_probe too small");
	if (!realpath(p->binary, path))
		return uerr(u, -errno, "%s", p->binary);
	err = patch_find_symbol(path, p->symbol, &vaddr, &size, &off);
	if (err == -ENOENT) {
		uerr(u, 0, "%s: no function %s", path, p->symbol);
		return err;
	}
	if (err)
		return uerr(u, err, "%s: no function %s", path, p->symbol);
	err = module_range(u, path, &bias, &lo, &hi);
	if (err)
		return uerr(u, err, "%s is not mapped in pid %d", path, u->pid);
	addr = bias + vaddr;
	if (offset && p->kind == USER_PROBE_RETURN)
		return uerr(u, 0, "a return probe has no offset");
	err = user_restop(u, true);	/* the ELF work above ran meanwhile */
	if (err)
		return err;
	for (i = 0; i < u->nsites; i++)
		if (u->sites[i].s.func == addr &&
		    u->sites[i].offset == offset)
			us = &u->sites[i];
	if (!us) {
		struct patch_site s;
		uint8_t *code;

		uint8_t mem[PATCH_MAX_WINDOW + 32];
		char why[160];

		if (size > USER_MAX_FUNC)
			size = USER_MAX_FUNC;
		/* the file's code: the process's may hold others' int3 */
		code = read_file_code(path, off, size);
		if (!code)
			return uerr(u, -EIO, "%s: cannot read %s", path,
				    p->symbol);
		if (patch_analyze(code, size, addr, offset, &s))
			err = -EINVAL;
		if (!err && s.addr + s.len - addr > sizeof(mem))
			err = uerr(u, -EINVAL, "%s: window too far in",
				   p->symbol);
		if (!err)
			err = pt_read(&u->pt, addr, mem,
				      s.addr + s.len - addr);
		/* our own sites in the function read back as the file's */
		for (i = 0; !err && i < u->nsites; i++) {
			const struct patch_site *o = &u->sites[i].s;

			if (o->func == addr && u->sites[i].installed &&
			    o->addr + o->len <= s.addr + s.len)
				memcpy(mem + (o->addr - addr), o->orig,
				       o->len);
		}
		if (!err && site_compare(&s, code, mem, why, sizeof(why)))
			err = uerr(u, -EBUSY, "%s: %s", p->symbol, why);
		free(code);
		if (err == -EINVAL && s.reason[0])
			return uerr(u, 0, "%s", s.reason);
		if (err == -EBUSY)
			return err;
		for (i = 0; i < u->nsites; i++) {
			const struct patch_site *o = &u->sites[i].s;

			if (o->func == addr && s.addr < o->addr + o->len &&
			    o->addr < s.addr + s.len)
				return uerr(u, 0, "the patch window overlaps "
						  "another probe's");
		}
		if (err)
			return uerr(u, err, "read %s in pid %d", p->symbol,
				    u->pid);
		if (u->nsites == USER_MAX_SITES)
			return uerr(u, -ENOSPC, "too many patched functions");
		if (!u->sites)
			u->sites = xcalloc(USER_MAX_SITES, sizeof(*u->sites));
		us = &u->sites[u->nsites];
		memset(us, 0, sizeof(*us));
		us->s = s;
		us->offset = offset;
		sl = get_slice(u, path, lo, hi);
		if (sl < 0)
			return sl;
		us->slice = sl;
		u->nsites++;
	}
	code_at = slice_put(u, us->slice, p->code, p->code_len);
	if (!code_at)
		return uerr(u, -ENOSPC, "code area full");
	rec = slice_put(u, us->slice, (const uint8_t[RT_SITE_HDR]){ 0 },
			RT_SITE_HDR);
	if (!rec)
		return uerr(u, -ENOSPC, "code area full");
	spec = (struct tramp_spec){
		.at = rec + RT_SITE_HDR,
		.tls_offset = u->tls_offset,
		.fn_slow = u->m.ctl->fn[RT_FN_SLOW],
		.fn_enter = u->m.ctl->fn[RT_FN_WRAP_ENTER],
		.fn_exit = u->m.ctl->fn[RT_FN_WRAP_EXIT],
		.fn_call = u->m.ctl->fn[RT_FN_WRAP_CALL],
		.entry_code = p->kind == USER_PROBE_ENTRY ? code_at
							  : us->entry_code,
		.ret_code = p->kind == USER_PROBE_RETURN ? code_at
							 : us->ret_code,
	};
	n = tramp_build(&spec, &us->s, buf, sizeof(buf), &reloc_at, &r);
	if (n < 0)
		return uerr(u, n, "trampoline for %s%s%s", p->symbol,
			    us->s.reason[0] ? ": " : "", us->s.reason);
	tramp = slice_put(u, us->slice, buf, (size_t)n);
	if (tramp != spec.at)
		return uerr(u, -ENOSPC, "code area full");
	patch_jump_bytes(&us->s, tramp, jmp);
	/* the record first: a jump is never there without it */
	site = slice_record(u, us->slice, rec);
	*site = (struct rt_site){
		.magic = RT_SITE_MAGIC,
		.sz = sizeof(struct rt_site),
		.state = RT_SITE_LIVE,
		.addr = us->s.addr,
		.len = us->s.len,
		.owner_pid = (uint32_t)getpid(),
		.owner_start = u->self_start,
	};
	memcpy(site->orig, us->s.orig, us->s.len);
	memcpy(site->jmp, jmp, us->s.len);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	err = user_stop_all(u);	/* the others ran until now */
	if (err)
		return err;
	err = pt_write(&u->pt, us->s.addr, jmp, us->s.len);
	if (err)
		return uerr(u, err, "write the jump at %s", p->symbol);
	if (us->rec)	/* the site's previous trampoline */
		slice_record(u, us->slice, us->rec)->state = RT_SITE_DONE;
	us->rec = rec;
	/* the site now runs the new trampoline */
	us->entry_code = spec.entry_code;
	us->ret_code = spec.ret_code;
	us->tramp = tramp;
	us->reloc_at = reloc_at;
	us->r = r;
	memcpy(us->jmp, jmp, us->s.len);
	us->installed = true;
	return move_threads(u, us);
}

int user_resume(struct ubt_user *u)
{
	int64_t ret;
	int err;

	if (u->resumed)
		return 0;
	err = user_restop(u, false);	/* no probe was installed */
	if (err) {
		u->resumed = true;
		return err;
	}
	pt_detach_others(&u->pt);	/* they need not wait for the close */
	err = rsys(u, SYS_close, (uint64_t)u->target_fd, 0, 0, 0, 0, 0, &ret);
	err = pt_detach(&u->pt) ?: err;	/* never leave it stopped */
	user_note_exit(u);
	u->resumed = true;
	user_count_stop(u);
	user_unboost(u);
	return err ? uerr(u, err, "resume pid %d", u->pid) : 0;
}

/* Is our memfd still mapped where we put it (no exec since)? */
static bool still_ours(struct ubt_user *u, pid_t pid)
{
	struct pt_map *m;
	bool found = false;
	int n, i;

	if (pt_maps(pid, &m, &n))
		return false;
	for (i = 0; i < n; i++)
		if (m[i].start == u->target_base &&
		    strstr(m[i].path, "/memfd:ubt"))
			found = true;
	free(m);
	return found;
}

/*
 * Put back the original bytes of every site in the process p has stopped
 * (the target, or a child it forked: the same addresses), only bytes that
 * are still ours: another tracer's int3 placed over the jump since then
 * stays, over the original instruction it expects.  The target's own
 * restore (child false) marks the sites and their records done.
 */
static int restore_sites_in(struct ubt_user *u, struct pt *pt, bool child)
{
	int i, err = 0;

	if (!still_ours(u, pt->pid))
		return 0;	/* the process ran execve(): a new image */

	for (i = 0; i < u->nsites; i++) {
		struct user_site *us = &u->sites[i];
		uint8_t cur[PATCH_MAX_WINDOW];

		if (child ? !us->rec : !us->installed)
			continue;	/* never written, or restored */
		if (pt_read(pt, us->s.addr, cur, us->s.len)) {
			err = uerr(u, -EIO, "read the code at %#llx in pid %d",
				   (unsigned long long)us->s.addr, pt->pid);
			continue;
		}
		for (uint32_t k = 0; k < us->s.len; k++)
			if (cur[k] == us->jmp[k])
				cur[k] = us->s.orig[k];
		if (pt_write(pt, us->s.addr, cur, us->s.len)) {
			err = uerr(u, -EIO, "restore the code at %#llx in "
					    "pid %d",
				   (unsigned long long)us->s.addr, pt->pid);
			continue;
		}
		if (child)
			continue;
		us->installed = false;
		slice_record(u, us->slice, us->rec)->state = RT_SITE_DONE;
	}
	return err;
}

static int restore_sites(struct ubt_user *u)
{
	return restore_sites_in(u, &u->pt, false);
}

/*
 * Children the target forked while patched carry the jumps too (the
 * runtime lists them in ctl->children): restore each that still maps our
 * memfd, once the target is restored (it forks no patched child since);
 * passes until no new child shows up, since children fork too.
 */
static int restore_children(struct ubt_user *u)
{
	pid_t done[RT_MAX_CHILDREN * 4];
	int ndone = 0, err = 0;
	bool again = true;

	for (int pass = 0; again && pass < 4; pass++) {
		again = false;
		for (int i = 0; i < RT_MAX_CHILDREN; i++) {
			pid_t c = (pid_t)__atomic_load_n(&u->m.ctl->children[i],
							 __ATOMIC_ACQUIRE);
			struct pt pt;
			int k;

			if (c <= 0 || c == u->pid)
				continue;
			for (k = 0; k < ndone && done[k] != c; k++)
				;
			if (k < ndone || ndone == (int)(sizeof(done) /
						       sizeof(done[0])))
				continue;
			done[ndone++] = c;
			again = true;
			if (pt_gone(c) || !still_ours(u, c))
				continue;
			pt_init(&pt);
			if (!pt_seize(&pt, c)) {
				int e = restore_sites_in(u, &pt, true);

				if (e && !pt_gone(c))
					err = e;
				pt_detach(&pt);
			}
			pt_release(&pt);
		}
	}
	u->children = ndone;
	return err;
}

static int detach_target(struct ubt_user *u)
{
	int err;

	u->detached = true;
	__atomic_store_n(&u->m.ctl->detached, 1, __ATOMIC_RELEASE);
	if (!u->resumed) {
		/* still stopped: restore, then let it go */
		err = user_restop(u, false);
		if (err) {
			u->resumed = true;
			return process_gone(u, err) || u->new_image ? 0
								    : err;
		}
		err = u->nsites ? user_stop_all(u) : 0;
		err = err ?: restore_sites(u);
		return user_resume(u) ?: err;
	}
	if (!u->nsites)
		return 0;
	pt_release(&u->pt);
	pt_init(&u->pt);
	err = pt_seize(&u->pt, u->pid);
	if (err) {
		user_note_exit(u);
		if (process_gone(u, err))
			return 0;	/* gone: nothing left to restore */
		return uerr(u, 0, "cannot stop pid %d to restore its code: %s",
			    u->pid, u->pt.err);
	}
	err = restore_sites(u);
	pt_detach(&u->pt);
	user_note_exit(u);
	if (err && process_gone(u, -EIO))
		err = 0;	/* it exited meanwhile */
	return err;
}

int user_detach(struct ubt_user *u)
{
	int err;

	if (u->detached || !u->m.ctl)
		return 0;
	err = detach_target(u);
	if (u->nsites) {
		int e = restore_children(u);

		if (!err && e)
			err = e;
	}
	return err;
}

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
	if (!fn || !u->libc[0])
		return uerr(u, -ENOENT, "no runtime exec hook");
	if (patch_find_symbol(u->libc, "execve", &vaddr, &size, &off) ||
	    module_range(u, u->libc, &bias, &lo, &hi))
		return uerr(u, -ENOENT, "%s: no execve", u->libc);
	for (int i = 0; i < u->nsites; i++)
		if (u->sites[i].s.func == bias + vaddr)
			return uerr(u, -EBUSY, "a probe of the program is on "
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

	err = target_memfd(u, &fd);
	if (err)
		return err;
	if (ftruncate(fd, (off_t)u->m.size) < 0) {
		err = -errno;
		close(fd);
		return uerr(u, err, "ftruncate memfd");
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
			return uerr(u, -EIO, "copy the memfd");
		}
		done = (uint64_t)hole;
	}
	if (mmap(u->m.base, u->m.size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, 0) != u->m.base) {
		err = -errno;
		close(fd);
		return uerr(u, err, "mmap memfd");
	}
	close(u->m.fd);
	u->m.fd = fd;
	return target_map(u);
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
		return uerr(u, -EINVAL, "not running");
	err = pt_follow_exec(&pt, pid, tid, exec_ack, u, 2000);
	if (err) {
		uerr(u, 0, "%s", pt.err);
		pt_release(&pt);
		return err == -ETIMEDOUT ? 0 : err;
	}
	/* the old image is gone, and its sites, slices and libc with it */
	pt_release(&u->pt);
	u->pt = pt;
	u->nsites = 0;
	u->nslices = 0;
	u->libc_ready = false;
	u->exec_hook = false;
	u->resumed = u->released = u->new_image = false;
	u->stop_t0 = mono_ns();
	u->execs++;
	err = choose_ctl(u);
	err = err ?: check_libc(u);
	err = err ?: move_memfd(u);
	err = err ?: place_runtime(u, NULL);
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

static int restore_dead_one(pid_t pid, uint32_t owner, char *err, size_t len)
{
	struct pt pt;
	int n;

	pt_init(&pt);
	if (pt_seize(&pt, pid)) {
		snprintf(err, len, "%s", pt.err);
		pt_release(&pt);
		return -ESRCH;
	}
	n = owner_restore(&pt, owner);
	pt_detach(&pt);
	pt_release(&pt);
	if (n < 0)
		snprintf(err, len, "%s", strerror(-n));
	return n;
}

int user_restore_dead(pid_t pid, uint32_t owner, char *err, size_t len)
{
	pid_t kids[RT_MAX_CHILDREN];
	int n, k;

	/* the children first: they are listed in the target's memfd */
	k = owner_children(pid, owner, kids, RT_MAX_CHILDREN);
	for (int i = 0; i < k; i++)
		if (!pt_gone(kids[i]))
			restore_dead_one(kids[i], owner, err, len);
	n = restore_dead_one(pid, owner, err, len);
	return n;
}

bool user_exit_status(const struct ubt_user *u, int *status)
{
	if (u->exited)
		*status = u->exit_status;
	return u->exited;
}

void user_free(struct ubt_user *u)
{
	if (!u)
		return;
	user_unboost(u);
	pt_release(&u->pt);
	memfd_release(&u->m);
	free(u->sites);
	free(u);
}
