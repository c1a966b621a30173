/*
 * Whether a site can be patched (user_site_check*()): the function
 * decoded from the file, and its bytes in the process compared with the
 * file (another tracer's int3, a leftover jump of ubt).
 */
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
#include <sys/stat.h>
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

int user_site_check(const char *binary, const char *symbol, char *reason,
		    size_t len)
{
	return user_site_check_at(binary, symbol, 0, reason, len);
}

/*
 * The last site analyzed, kept: placement asks about the same site
 * several times in a row (what the probe reads, the patch window, the
 * entry instruction), and each answer opened the file, read the function
 * and decoded it.  Kept while the file is the same (device, inode, size,
 * modification time).
 */
static struct {
	char *binary, *symbol;
	uint64_t offset;
	struct stat st;
	int err;
	char reason[256];
	struct patch_site s;
	uint64_t func;
	uint8_t *code;		/* the function's bytes (and its padding) */
} user_last;

static bool user_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* user_site_check_at(), the window in *s (function-relative via *vaddr) */
static int user_site_analyze_now(const char *binary, const char *symbol,
				 uint64_t offset, char *reason, size_t len,
				 struct patch_site *ps, uint64_t *func,
				 uint8_t **codep)
{
	uint64_t vaddr, size, off, room = 0;
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
	/* a short function: the padding after it (patch_analyze_room()) */
	if (!offset && size < PATCH_ROOM_BELOW)
		patch_find_room(binary, vaddr, size, &room);
	code = xmalloc(size + room ? size + room : 1);
	fd = open(binary, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || pread(fd, code, size + room, (off_t)off) !=
			      (ssize_t)(size + room)) {
		err = fd < 0 ? -errno : -EIO;
		snprintf(reason, len, "%s: cannot read %s", binary, symbol);
	} else {
		err = patch_analyze_room(code, size, room, vaddr, offset, &s);
		snprintf(reason, len, "%s", err ? s.reason : "");
	}
	if (fd >= 0)
		close(fd);
	if (!err) {
		*ps = s;
		*func = vaddr;
	}
	if (codep && !err)
		*codep = code;
	else
		free(code);
	return err;
}

static int user_site_analyze(const char *binary, const char *symbol,
			     uint64_t offset, char *reason, size_t len,
			     struct patch_site *ps, uint64_t *func,
			     const uint8_t **code)
{
	struct patch_site s;
	struct stat st;
	uint64_t f;

	if (code)
		*code = NULL;
	if (stat(binary, &st))
		return user_site_analyze_now(binary, symbol, offset, reason,
					     len, ps ? ps : &s,
					     func ? func : &f, NULL);
	if (!user_last.binary || strcmp(user_last.binary, binary) ||
	    strcmp(user_last.symbol, symbol) || user_last.offset != offset ||
	    !user_same_file(&user_last.st, &st)) {
		free(user_last.binary);
		free(user_last.symbol);
		free(user_last.code);
		user_last.code = NULL;
		user_last.binary = xstrdup(binary);
		user_last.symbol = xstrdup(symbol);
		user_last.offset = offset;
		user_last.st = st;
		user_last.err = user_site_analyze_now(
			binary, symbol, offset, user_last.reason,
			sizeof(user_last.reason), &user_last.s,
			&user_last.func, &user_last.code);
	}
	snprintf(reason, len, "%s", user_last.reason);
	if (!user_last.err && ps) {
		*ps = user_last.s;
		*func = user_last.func;
	}
	if (code)
		*code = user_last.code;
	return user_last.err;
}

int user_site_check_at(const char *binary, const char *symbol,
		       uint64_t offset, char *reason, size_t len)
{
	return user_site_analyze(binary, symbol, offset, reason, len, NULL,
				 NULL, NULL);
}

int user_site_check_reads(const char *binary, const char *symbol,
			  uint64_t offset, uint32_t reads, uint32_t *clobbers,
			  char *reason, size_t len)
{
	struct patch_site s;
	uint64_t func;
	int err = user_site_analyze(binary, symbol, offset, reason, len, &s,
				    &func, NULL);

	if (clobbers)
		*clobbers = err ? 0 : s.clobbers |
					      (s.tail ? PATCH_CLOBBERS_TAIL : 0);
	if (!err && patch_site_sees(&s, reads)) {
		snprintf(reason, len, "%s", s.reason);
		err = -EINVAL;
	}
	return err;
}

int user_site_entry_stays(const char *binary, const char *symbol)
{
	struct patch_site s;
	uint64_t func;
	char reason[128];

	return !user_site_analyze(binary, symbol, 0, reason, sizeof(reason),
				  &s, &func, NULL) && s.mid;
}

int user_site_span(const char *binary, const char *symbol, uint64_t offset,
		   uint64_t *lo, uint64_t *hi)
{
	struct patch_site s;
	uint64_t func;
	char reason[128];
	int err = user_site_analyze(binary, symbol, offset, reason,
				    sizeof(reason), &s, &func, NULL);

	if (!err) {
		*lo = s.addr - func;
		*hi = *lo + s.len;
	}
	return err;
}

/*
 * The highest seccomp mode of pid's threads ("Seccomp:" in each
 * /proc/PID/task/TID/status: 0 none, 1 strict, 2 filter), and one such
 * thread in *tid; -errno when none could be read.
 */
static int user_seccomp_mode(pid_t pid, pid_t *tid)
{
	char path[320], line[128];
	struct dirent *e;
	int mode = -ENOENT;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((e = readdir(dir))) {
		FILE *f;
		int m;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status",
			 (int)pid, e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Seccomp: %d", &m) == 1) {
				if (m > mode) {
					mode = m;
					*tid = (pid_t)atoi(e->d_name);
				}
				break;
			}
		fclose(f);
	}
	closedir(dir);
	return mode;
}

/*
 * Another process in pid's memory (kcmp(KCMP_VM)): a child made with
 * CLONE_VM but not CLONE_THREAD (clone() without CLONE_VFORK, or a raw
 * clone system call) runs beside it with the thread pointer of the thread
 * that made it, so on the same per-thread block.  Its pid, or 0 (none, or
 * no kcmp).
 */
pid_t user_vm_sharer(pid_t pid)
{
	DIR *dir;
	struct dirent *e;
	pid_t found = 0;
	char path[64], exe[16];

	/* no memory (gone, a zombie): kcmp would find the kernel's
	 * threads, which have none either, "sharing" it */
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (readlink(path, exe, sizeof(exe)) < 0)
		return 0;
	dir = opendir("/proc");
	if (!dir)
		return 0;
	while (!found && (e = readdir(dir))) {
		pid_t other = (pid_t)atoi(e->d_name);

		if (other <= 0 || other == pid)
			continue;
		/* KCMP_VM: 0 when both have the same mm; a kernel thread
		 * (no exe) matches a process that has just exited */
		if (syscall(SYS_kcmp, pid, other, 1, 0, 0) == 0) {
			char opath[64];

			snprintf(opath, sizeof(opath), "/proc/%d/exe",
				 (int)other);
			if (readlink(opath, exe, sizeof(exe)) >= 0 &&
			    readlink(path, exe, sizeof(exe)) >= 0)
				found = other;
		} else if (errno == ENOSYS) {
			break;
		}
	}
	closedir(dir);
	return found;
}

int user_process_check(pid_t pid, char *reason, size_t len)
{
	struct owner_info oi;
	pid_t tracer = owner_tracer(pid), tid = 0;
	int sc = user_seccomp_mode(pid, &tid);

	/*
	 * A seccomp filter (or strict mode) may kill or trap the system
	 * calls the injection and the runtime make (memfd_create, mmap,
	 * gettid, prctl, ...): decided before anything is written into it.
	 */
	if (sc > 0) {
		snprintf(reason, len, "pid %d runs under seccomp (%s mode in "
			 "thread %d, \"Seccomp: %d\" in /proc/%d/task/%d/"
			 "status): the system calls user mode makes could "
			 "kill it", (int)pid, sc == 1 ? "strict" : "filter",
			 (int)tid, sc, (int)pid, (int)tid);
		return -EPERM;
	}

	tid = user_vm_sharer(pid);
	if (tid) {
		snprintf(reason, len, "pid %d shares the memory of pid %d "
			 "(clone(CLONE_VM) without CLONE_VFORK): it runs on the "
			 "thread pointer, so on the per-thread blocks, of the "
			 "thread that made it", (int)tid, (int)pid);
		return -EBUSY;
	}
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
	/* the remote dlopen() would wait on it: not even started */
	if (!user_ldlock_late() &&
	    user_ldlock_wait(pid, USER_LDLOCK_WAIT_MS, &tid) > 0) {
		snprintf(reason, len, "thread %d of pid %d holds the dynamic "
			 "loader's lock (in dlopen(), dlclose() or a "
			 "dl_iterate_phdr() callback) for more than %d ms: the "
			 "runtime cannot be loaded without waiting on it",
			 (int)tid, (int)pid, USER_LDLOCK_WAIT_MS);
		return -EBUSY;
	}
	return 0;
}

/* The mappings of the process user_site_check_live() last read. */
static struct {
	pid_t pid;
	struct pt_map *m;
	int n;
	int mem;		/* its /proc/PID/mem, or -1 */
} user_live = { .mem = -1 };

void user_site_live_forget(void)
{
	free(user_live.m);
	if (user_live.mem >= 0)
		close(user_live.mem);
	user_live.m = NULL;
	user_live.n = 0;
	user_live.pid = 0;
	user_live.mem = -1;
}

/* n bytes at addr in pid (user_live_module() asked about it first) */
static int user_live_read(pid_t pid, uint8_t *buf, size_t n, uint64_t addr)
{
	char memf[64];

	if (user_live.pid != pid)
		return -ESRCH;
	if (user_live.mem < 0) {
		snprintf(memf, sizeof(memf), "/proc/%d/mem", (int)pid);
		user_live.mem = open(memf, O_RDONLY | O_CLOEXEC);
		if (user_live.mem < 0)
			return -errno;
	}
	return pread(user_live.mem, buf, n, (off_t)addr) == (ssize_t)n ?
		       0 : -EIO;
}

static int user_live_module(pid_t pid, const char *path, uint64_t min_vaddr,
			    int is_dyn, uint64_t *bias, uint64_t *lo,
			    uint64_t *hi)
{
	if (user_live.pid != pid || !user_live.m) {
		user_site_live_forget();
		if (pt_maps(pid, &user_live.m, &user_live.n))
			return -ENOENT;
		user_live.pid = pid;
	}
	return user_module_in(user_live.m, user_live.n, path, min_vaddr,
			      is_dyn, bias, lo, hi);
}

int user_site_check_live(pid_t pid, const char *binary, const char *symbol,
			 uint64_t offset, char *reason, size_t len)
{
	uint64_t func, min_vaddr, bias, lo, hi, n;
	uint8_t mem[PATCH_MAX_WINDOW + 32];
	char path[PATH_MAX], why[256];
	const uint8_t *code;
	struct owner_info oi;
	struct patch_site s;
	int err, is_dyn;

	if (!realpath(binary, path) ||
	    patch_elf_base(path, &min_vaddr, &is_dyn) ||
	    user_live_module(pid, path, min_vaddr, is_dyn, &bias, &lo, &hi) ||
	    user_site_analyze(binary, symbol, offset, why, sizeof(why), &s,
			      &func, &code) || !code)
		return 0;	/* not for this check to say */
	n = s.addr + s.len - func;
	if (n > sizeof(mem) || user_live_read(pid, mem, n, bias + func))
		return 0;
	err = user_site_compare(&s, code, mem, reason, len);
	/* a dead ubt's jump: removed at attach */
	if (err && !owner_scan(pid, &oi) && oi.dead_sites && !oi.live_pid)
		err = 0;
	return err;
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
int user_site_compare(const struct patch_site *s, const uint8_t *code,
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
uint8_t *user_read_file_code(const char *path, uint64_t off, uint64_t size)
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
