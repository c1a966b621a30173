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
#include <stdlib.h>
#include <string.h>
#include "patch.h"
#include "ptrace.h"
#include "util.h"
#include "user_int.h"

/*
 * Windows close to each other are read and written as one span (a
 * library's functions lie side by side: one pread and one pwrite of
 * /proc/PID/mem for hundreds of jumps, instead of one each); the bytes
 * between them are written back as read, with every thread stopped.
 */
#define COMMIT_GAP 256		/* bytes between two windows of a span */
#define COMMIT_SPAN 65536	/* bytes of a span at most */

struct span {
	uint64_t addr;
	size_t len;
	int first, n;		/* sites idx[first .. first + n) */
	uint8_t *buf;		/* the process's bytes, then the jumps */
	bool single;		/* unreadable whole: window by window */
};

static int by_addr(const void *a, const void *b, void *arg)
{
	const struct user_site *s = arg;
	uint64_t x = s[*(const int *)a].s.addr, y = s[*(const int *)b].s.addr;

	return x < y ? -1 : x > y;
}

/* Group the pending sites idx (sorted by address) into spans. */
static struct span *make_spans(struct ubt_user *u, const int *idx, int n,
			       int *nspans)
{
	struct span *sp = xcalloc((size_t)n + 1, sizeof(*sp));
	int m = 0;

	for (int k = 0; k < n; k++) {
		const struct patch_site *s = &u->sites[idx[k]].s;
		struct span *c = m ? &sp[m - 1] : NULL;

		if (c && s->addr >= c->addr + c->len &&
		    s->addr - (c->addr + c->len) <= COMMIT_GAP &&
		    s->addr + s->len - c->addr <= COMMIT_SPAN) {
			c->len = s->addr + s->len - c->addr;
			c->n++;
			continue;
		}
		sp[m++] = (struct span){ .addr = s->addr, .len = s->len,
					 .first = k, .n = 1 };
	}
	*nspans = m;
	return sp;
}

/* The process's bytes of each span (window by window if need be). */
static int read_spans(struct ubt_user *u, const int *idx, struct span *sp,
		      int m)
{
	for (int j = 0; j < m; j++) {
		struct span *c = &sp[j];

		c->buf = xmalloc(c->len);
		if (!pt_read(&u->pt, c->addr, c->buf, c->len))
			continue;
		c->single = true;	/* a hole between two windows */
		for (int k = c->first; k < c->first + c->n; k++) {
			const struct patch_site *s = &u->sites[idx[k]].s;
			int err = pt_read(&u->pt, s->addr,
					  c->buf + (s->addr - c->addr), s->len);

			if (err)
				return user_err(u, err,
						"read the code at %#llx",
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

static int check(struct ubt_user *u, const int *idx, int n,
		 const struct span *sp, int m)
{
	int err = 0;

	for (int j = 0; !err && j < m; j++)
		for (int k = sp[j].first; !err && k < sp[j].first + sp[j].n;
		     k++) {
			const struct user_site *us = &u->sites[idx[k]];

			/* another tracer's breakpoint came meanwhile */
			if (memcmp(sp[j].buf + (us->s.addr - sp[j].addr),
				   us->s.orig, us->s.len))
				err = user_err(u, -EBUSY, "the code at %#llx "
					       "changed while the probes were "
					       "prepared",
					       (unsigned long long)us->s.addr);
		}
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

/* The jumps into each span's bytes, and each span written. */
static int write_spans(struct ubt_user *u, const int *idx, struct span *sp,
		       int m)
{
	for (int j = 0; j < m; j++) {
		struct span *c = &sp[j];
		int err = 0;

		for (int k = c->first; k < c->first + c->n; k++) {
			const struct user_site *us = &u->sites[idx[k]];

			memcpy(c->buf + (us->s.addr - c->addr), us->jmp,
			       us->s.len);
		}
		if (!c->single)
			err = pt_write(&u->pt, c->addr, c->buf, c->len);
		for (int k = c->first; !err && k < c->first + c->n; k++) {
			struct user_site *us = &u->sites[idx[k]];

			if (c->single)
				err = pt_write(&u->pt, us->s.addr, us->jmp,
					       us->s.len);
			if (err)
				break;
			us->pending = false;
			us->installed = true;
			u->pause.jumps++;
		}
		if (err)
			return user_err(u, err, "write the jumps at %#llx",
					(unsigned long long)c->addr);
	}
	return 0;
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
	struct span *sp;
	int n = 0, m, err;

	for (int i = 0; i < u->nsites; i++)
		if (u->sites[i].pending)
			idx[n++] = i;
	qsort_r(idx, (size_t)n, sizeof(*idx), by_addr, u->sites);
	sp = make_spans(u, idx, n, &m);
	err = read_spans(u, idx, sp, m) ?: check(u, idx, n, sp, m);
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
	err = err ?: write_spans(u, idx, sp, m);
	err = err ?: bump_semaphores(u);
	u->pause.write = mono_ns() - t1;
	for (int j = 0; j < m; j++)
		free(sp[j].buf);
	free(sp);
	free(idx);
	return err;
}
