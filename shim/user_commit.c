/*
 * The one stop of every thread that an attach needs (user_resume()):
 * everything else (code areas, probe code, trampolines, site records) was
 * placed while the target ran (user_install()); here only what must not
 * race with the target's threads: the windows checked, no thread inside
 * one, every jump written, the threads moved out, the semaphores
 * incremented.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include "patch.h"
#include "ptrace.h"
#include "util.h"
#include "user_int.h"

#define COMMIT_IOV 512		/* windows read per process_vm_readv() */

/*
 * cur[k] = the process's bytes of window k of the pending sites (idx):
 * one process_vm_readv() per COMMIT_IOV windows, /proc/PID/mem for a
 * window it cannot read (a page without read permission).
 */
static int read_windows(struct ubt_user *u, const int *idx, int n,
			uint8_t (*cur)[PATCH_MAX_WINDOW])
{
	struct iovec l[COMMIT_IOV], r[COMMIT_IOV];

	for (int k0 = 0; k0 < n; k0 += COMMIT_IOV) {
		int m = n - k0 < COMMIT_IOV ? n - k0 : COMMIT_IOV;
		size_t want = 0;
		ssize_t got;

		for (int k = 0; k < m; k++) {
			const struct patch_site *s = &u->sites[idx[k0 + k]].s;

			l[k] = (struct iovec){ cur[k0 + k], s->len };
			r[k] = (struct iovec){ (void *)(uintptr_t)s->addr,
					       s->len };
			want += s->len;
		}
		got = process_vm_readv(u->pid, l, (unsigned long)m, r,
				       (unsigned long)m, 0);
		if (got == (ssize_t)want)
			continue;
		for (int k = 0; k < m; k++) {
			const struct patch_site *s = &u->sites[idx[k0 + k]].s;
			int err = pt_read(&u->pt, s->addr, cur[k0 + k], s->len);

			if (err)
				return user_err(u, err, "read the code at %#llx",
						(unsigned long long)s->addr);
		}
	}
	return 0;
}

/*
 * Where thread i must go so that no window of the pending sites holds
 * it: its rip, or the same instruction in a relocated copy; 0 when it
 * stands inside an instruction of a window.
 */
static uint64_t thread_to(struct ubt_user *u, const int *idx, int n,
			  uint64_t rip)
{
	for (int k = 0; k < n; k++) {
		const struct user_site *us = &u->sites[idx[k]];

		if (rip <= us->s.addr || rip >= us->s.addr + us->s.len)
			continue;
		return patch_move_rip(&us->s, &us->r, us->reloc_at, rip);
	}
	return rip;
}

static int check(struct ubt_user *u, const int *idx, int n)
{
	uint8_t (*cur)[PATCH_MAX_WINDOW] = xcalloc((size_t)n + 1,
						   sizeof(*cur));
	int err = read_windows(u, idx, n, cur);

	for (int k = 0; !err && k < n; k++) {
		const struct user_site *us = &u->sites[idx[k]];

		/* another tracer's breakpoint came meanwhile: not ours */
		if (memcmp(cur[k], us->s.orig, us->s.len))
			err = user_err(u, -EBUSY, "the code at %#llx changed "
				       "while the probes were prepared",
				       (unsigned long long)us->s.addr);
	}
	free(cur);
	for (int i = 0; !err && i < u->pt.nth; i++) {
		struct user_regs_struct r;

		if (pt_regs(&u->pt, i, &r))
			continue;
		if (!thread_to(u, idx, n, r.rip))
			err = user_err(u, -EAGAIN, "thread %d stopped inside "
				       "an instruction of a patch window",
				       u->pt.th[i].tid);
	}
	return err;
}

static int bump_semaphores(struct ubt_user *u)
{
	for (int i = 0; i < u->nsems_pend; i++) {
		uint64_t addr = u->sems_pend[i];
		uint16_t v;
		int err;

		err = pt_read(&u->pt, addr, &v, sizeof(v));
		if (err)
			return user_err(u, err, "read the semaphore at %#llx",
					(unsigned long long)addr);
		if (v == UINT16_MAX)
			return user_err(u, -EOVERFLOW, "the semaphore at "
					"%#llx is at its maximum",
					(unsigned long long)addr);
		v++;
		err = pt_write(&u->pt, addr, &v, sizeof(v));
		if (err)
			return user_err(u, err, "write the semaphore at %#llx",
					(unsigned long long)addr);
		u->sems = xrealloc(u->sems, (u->nsems + 1) * sizeof(*u->sems));
		u->sems[u->nsems++] = addr;
	}
	u->nsems_pend = 0;
	return 0;
}

int user_commit(struct ubt_user *u)
{
	int *idx = xcalloc((size_t)u->nsites + 1, sizeof(*idx));
	uint64_t t0 = mono_ns(), t1;
	int n = 0, err;

	for (int i = 0; i < u->nsites; i++)
		if (u->sites[i].pending)
			idx[n++] = i;
	err = check(u, idx, n);
	t1 = mono_ns();
	u->pause.check = t1 - t0;
	/*
	 * Checked above: every thread in a window has its place in the
	 * relocated copy, which runs as the window does whether or not the
	 * jump gets written (so the moves come first).
	 */
	for (int i = 0; !err && i < u->pt.nth; i++) {
		struct user_regs_struct r;
		uint64_t to;

		if (pt_regs(&u->pt, i, &r))
			continue;
		to = thread_to(u, idx, n, r.rip);
		if (to == r.rip)
			continue;
		r.rip = to;
		pt_set_regs(&u->pt, i, &r);
		u->moved++;
		u->pause.moved++;
	}
	for (int k = 0; !err && k < n; k++) {
		struct user_site *us = &u->sites[idx[k]];

		err = pt_write(&u->pt, us->s.addr, us->jmp, us->s.len);
		if (err) {
			user_err(u, err, "write the jump at %#llx",
				 (unsigned long long)us->s.addr);
			break;
		}
		us->pending = false;
		us->installed = true;
		u->pause.jumps++;
	}
	err = err ?: bump_semaphores(u);
	u->pause.write = mono_ns() - t1;
	free(idx);
	return err;
}
