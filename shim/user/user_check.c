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

/* user_site_check_at(), the window in *s (function-relative via *vaddr) */
static int user_site_analyze(const char *binary, const char *symbol,
			     uint64_t offset, char *reason, size_t len,
			     struct patch_site *ps, uint64_t *func)
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
	free(code);
	if (!err && ps) {
		*ps = s;
		*func = vaddr;
	}
	return err;
}

int user_site_check_at(const char *binary, const char *symbol,
		       uint64_t offset, char *reason, size_t len)
{
	return user_site_analyze(binary, symbol, offset, reason, len, NULL,
				 NULL);
}

int user_site_check_reads(const char *binary, const char *symbol,
			  uint64_t offset, uint32_t reads, uint32_t *clobbers,
			  char *reason, size_t len)
{
	struct patch_site s;
	uint64_t func;
	int err = user_site_analyze(binary, symbol, offset, reason, len, &s,
				    &func);

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
				  &s, &func) && s.mid;
}

int user_site_span(const char *binary, const char *symbol, uint64_t offset,
		   uint64_t *lo, uint64_t *hi)
{
	struct patch_site s;
	uint64_t func;
	char reason[128];
	int err = user_site_analyze(binary, symbol, offset, reason,
				    sizeof(reason), &s, &func);

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
static pid_t user_vm_sharer(pid_t pid)
{
	DIR *dir = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	if (!dir)
		return 0;
	while (!found && (e = readdir(dir))) {
		pid_t other = (pid_t)atoi(e->d_name);

		if (other <= 0 || other == pid)
			continue;
		/* KCMP_VM: 0 when both have the same mm */
		if (syscall(SYS_kcmp, pid, other, 1, 0, 0) == 0)
			found = other;
		else if (errno == ENOSYS)
			break;
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

int user_site_check_live(pid_t pid, const char *binary, const char *symbol,
			 uint64_t offset, char *reason, size_t len)
{
	uint64_t vaddr, size, off, min_vaddr, bias, lo, hi, n, room = 0;
	uint8_t mem[PATCH_MAX_WINDOW + 32], *code;
	char path[PATH_MAX], memf[64];
	struct owner_info oi;
	struct patch_site s;
	int fd, err, is_dyn;

	if (!realpath(binary, path) ||
	    patch_find_symbol(path, symbol, &vaddr, &size, &off) ||
	    patch_elf_base(path, &min_vaddr, &is_dyn) ||
	    user_module_maps(pid, path, min_vaddr, is_dyn, &bias, &lo, &hi))
		return 0;	/* not for this check to say */
	if (size > USER_MAX_FUNC)
		size = USER_MAX_FUNC;
	if (!offset && size < PATCH_ROOM_BELOW)
		patch_find_room(path, vaddr, size, &room);
	code = user_read_file_code(path, off, size + room);
	if (!code)
		return 0;
	err = patch_analyze_room(code, size, room, bias + vaddr, offset, &s);
	n = s.addr + s.len - (bias + vaddr);
	snprintf(memf, sizeof(memf), "/proc/%d/mem", (int)pid);
	fd = err || n > sizeof(mem) ? -1 : open(memf, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, mem, n, (off_t)(bias + vaddr)) == (ssize_t)n)
		err = user_site_compare(&s, code, mem, reason, len);
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
