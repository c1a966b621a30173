/*
 * What ubt leaves in the target when it detaches: nothing it does not
 * need.  Once every site is restored, with every thread stopped, ubt's
 * memfd mappings (the control view and its PROT_NONE guard over the code
 * range, the chunks of blocks the runtime mapped, the code slices), and
 * those of earlier sessions whose sites are all restored, are unmapped
 * (with the BPF maps each session mapped there: shared tables, comm;
 * an earlier one's found through its control block) and the memfd's
 * descriptor in the target closed, unless a thread may
 * still use them:
 *  - its rip in a code slice or in the runtime;
 *  - an address in a code slice on its stack, near its stack pointer (a
 *    trampoline or probe code interrupted by a signal, or calling out);
 *  - a wrapped call in progress (its block's shadow stack not empty);
 *  - its block lent to a vfork child (runtime/rt_vfork.c).
 * The threads run a moment and are looked at again, a few times; if one
 * is still inside, everything stays (the code read-only-executable, as
 * it was), -v says so, and the next ubt's detach removes it.
 *
 * A wrapped call in progress (this session's) does not keep it: it is
 * parked (user_park.c).
 *
 * Before the unmap, the runtime (which stays loaded: the next ubt's
 * dlopen() finds it) forgets the memfd: its pointer to the control block
 * (ctl->ctl_at) and every thread's block pointer are cleared, as
 * user_reset_tls() does at an attach.
 *
 * The same at an attach, for dead sessions only (user_unmap_dead()):
 * when both processes of a ubt are killed, no detach of theirs comes,
 * and when every session is killed none ever would.  In the stop where
 * the attach restored their jumps (owner_restore(), every thread held),
 * the memory of each dead session whose sites are all restored goes
 * under the same conditions, looked at once (a later ubt tries again),
 * and only when their runtime is the one this ubt loads and no other
 * process shares the memory; with it the BPF maps that session mapped
 * (its comm table, the tables it shared with kernel probes: rt_ctl).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "user_unmap.h"

#define UNMAP_TRIES 10		/* looks, the threads running between */
#define UNMAP_RUN_US 20000

static void um_free(struct um *s)
{
	free(s->slots);
	free(s->m);
	free(s);
}

/* Every ubt memfd mapping of pid, and the runtime's executable ones. */
static int um_load(struct ubt_user *u, struct um *s)
{
	char path[64], line[PATH_MAX + 128];
	FILE *f;

	s->n = 0;
	s->nrt = 0;
	s->nbpf = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)s->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, ino;
		char perms[8];
		int at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %llu %n", &lo, &hi,
			   perms, &off, &ino, &at) < 5 || !at)
			continue;
		line[strcspn(line, "\n")] = 0;
		/* its .bss past the file's pages: anonymous, right after */
		if (s->rt_end && lo == s->rt_end && !line[at])
			s->rt_end = hi;
		if (u->rt_path[0] && !strcmp(line + at, u->rt_path)) {
			if (!s->rt_start || lo < s->rt_start)
				s->rt_start = lo;
			if (hi > s->rt_end)
				s->rt_end = hi;
		}
		if (perms[2] == 'x' && u->rt_path[0] &&
		    !strcmp(line + at, u->rt_path) && s->nrt < 4) {
			s->rt_lo[s->nrt] = lo;
			s->rt_hi[s->nrt++] = hi;
		}
		if (!strcmp(line + at, "anon_inode:bpf-map") &&
		    s->nbpf < UNMAP_MAX) {
			s->bpf_lo[s->nbpf] = lo;
			s->bpf_hi[s->nbpf++] = hi;
		}
		if (!strstr(line + at, "/memfd:ubt"))
			continue;
		if (s->n == s->cap) {
			struct um_map *more;
			int cap = s->cap ? 2 * s->cap : 64;

			more = realloc(s->m, (size_t)cap * sizeof(*more));
			if (!more) {
				fclose(f);
				return -ENOMEM;
			}
			s->m = more;
			s->cap = cap;
		}
		s->m[s->n++] = (struct um_map){ .start = lo, .end = hi,
						.off = off, .ino = ino,
						.x = perms[2] == 'x' };
	}
	fclose(f);
	return 0;
}

/*
 * May the mappings of memfd ino go?  Ours (every site restored), or an
 * earlier session's whose control block says every site is restored.
 */
static bool um_removable(struct ubt_user *u, const struct um *s, uint64_t ino,
			 uint64_t own, int *fd)
{
	struct rt_ctl c;

	*fd = -1;
	if (ino == own)
		return true;
	for (int i = 0; i < s->n; i++) {
		if (s->m[i].ino != ino || s->m[i].off ||
		    s->m[i].end - s->m[i].start < sizeof(c))
			continue;
		if (pt_read(s->pt, s->m[i].start, &c, sizeof(c)))
			return false;
		*fd = c.target_fd;	/* a killed ubt's: checked before use */
		return c.sz == sizeof(c) && c.version == RT_ABI_VERSION &&
		       c.sites_clean == 1;
	}
	return false;	/* no control view: not one ubt maps */
}

/* The mappings, those that must stay marked gone (not looked at). */
static int um_scan(struct ubt_user *u, struct um *s, uint64_t own)
{
	int err = um_load(u, s);

	for (int i = 0; !err && i < s->n; i++)
		s->m[i].gone = !um_removable(u, s, s->m[i].ino, own,
					     &s->m[i].fd);
	return err;
}

/* Why thread i may still need the memfd (NULL: it does not). */
static const char *um_inside(struct ubt_user *u, struct um *s, int i,
			     const struct pt_map *pm, int npm)
{
	struct user_regs_struct r;
	uint64_t tls[5] = { 0 };

	if (pt_regs(s->pt, i, &r))
		return "its registers cannot be read";
	if (um_code(s, r.rip) || um_runtime(s, r.rip))
		return "it runs ubt's code";
	if (s->tls_offset &&
	    !pt_read(s->pt, r.fs_base + (uint64_t)s->tls_offset, tls,
		     sizeof(tls))) {
		uint64_t top = 0;

		/* struct rt_tls: self, noblock, vf_self, vf_noblock, vf_ret */
		if (tls[4])
			return "its block is lent to a vfork child";
		if (tls[0] && !pt_read(s->pt, tls[0] + RT_BLK_SHADOW_TOP, &top,
				       sizeof(top)) && top) {
			const char *why = um_plan(s, s->pt->th[i].tid, r.rsp,
						  tls[0], top);

			if (why)
				return why;
		}
	}
	if (um_stack_holds(u, s, r.rsp, um_stack_end(pm, npm, r.rsp)))
		return "its stack holds an address in ubt's code (a wrapped "
		       "call or an interrupted probe)";
	return NULL;
}

/* A thread that may still need the mappings, after a few looks. */
static const char *um_wait(struct ubt_user *u, struct um *s, pid_t *tid,
			   bool *ran)
{
	const char *why = NULL;
	struct pt_map *pm;
	int npm;

	for (int t = 0; t < s->tries; t++) {
		if (pt_maps(s->pid, &pm, &npm))
			return "its mappings cannot be read";
		why = NULL;
		s->npark = 0;
		for (int i = 0; i < s->pt->nth && !why; i++) {
			why = um_inside(u, s, i, pm, npm);
			*tid = s->pt->th[i].tid;
		}
		free(pm);
		if (!why || t + 1 == s->tries)
			break;
		*ran = true;
		if (pt_run_briefly(s->pt, UNMAP_RUN_US))
			break;
	}
	return why;
}

/* The runtime forgets the memfd: its control pointer, the threads' blocks. */
static int um_forget(struct ubt_user *u, const struct um *s)
{
	uint64_t zero[2] = { 0, 0 }, at = u->m.ctl->ctl_at;
	int err;

	/* the memfd is the target's to scribble on: only in the runtime */
	if (at && (at < s->rt_start || at + 8 > s->rt_end))
		return user_err(u, -EINVAL, "the runtime's pointer is said to "
				"be at %#" PRIx64 ", outside the runtime", at);
	if (at) {
		err = pt_write(s->pt, at, zero, 8);
		if (err)
			return user_err(u, err, "clear the runtime's pointer");
	}
	/*
	 * No wrapped call is in progress (no return address into the
	 * runtime on any stack): the return probes' stubs are free again
	 * for the next session (they are used by one session only while
	 * such a call may come back to one).
	 */
	at = u->m.ctl->fn[RT_FN_WRAP_STUB_NEXT];
	if (at >= s->rt_start && at + 4 <= s->rt_end) {
		err = pt_write(s->pt, at, zero, 4);
		if (err)
			return user_err(u, err, "free the runtime's stubs");
	}
	return u->tls_offset ? user_zero_tls_in(u, s->pt) : 0;
}

/*
 * The mapping of a BPF map ubt placed at addr (a table shared with kernel
 * probes, user_xmap.c, or the comm table, user_comm.c), unmapped if it
 * is still there (and, len not 0, is len bytes long: a dead session's,
 * whose address was read from its memfd).
 */
static int um_bpf(struct ubt_user *u, const struct um *s, uint64_t addr,
		  uint64_t len)
{
	int64_t ret;
	int err;

	for (int i = 0; addr && i < s->nbpf; i++) {
		if (s->bpf_lo[i] != addr)
			continue;
		if (len && s->bpf_hi[i] - addr != len)
			return 0;
		err = um_sys(u, s, SYS_munmap, addr, s->bpf_hi[i] - addr, 0, 0,
				0, 0, &ret);
		if (!err && !s->child)
			u->unmapped++;
		return err;
	}
	return 0;
}

/* The target's address of byte off of memfd ino, 0 if not mapped. */
static uint64_t um_addr_of(const struct um *s, uint64_t ino, uint64_t off)
{
	for (int i = 0; i < s->n; i++)
		if (s->m[i].ino == ino && !s->m[i].x && off >= s->m[i].off &&
		    off - s->m[i].off < s->m[i].end - s->m[i].start)
			return s->m[i].start + off - s->m[i].off;
	return 0;
}

/*
 * The BPF maps an earlier session, whose control block c (of memfd ino)
 * is, mapped into the target: its comm table, and the tables it shared
 * with kernel probes (rt_ctl.xmap; each one's address in its word of the
 * shared area).  Only a BPF map's mapping that starts at that address,
 * of the recorded length for a table, goes: the memfd is the target's
 * to scribble on.
 */
static int um_view_bpf(struct ubt_user *u, const struct um *s,
		       const struct rt_ctl *c, uint64_t ino)
{
	uint32_t n = c->nxmaps < RT_XMAP_MAX ? c->nxmaps : RT_XMAP_MAX;
	int err = c->comm_tab ? um_bpf(u, s, c->comm_tab, 0) : 0;

	for (uint32_t i = 0; !err && i < n; i++) {
		uint64_t at = um_addr_of(s, ino, RT_SHARED_OFF +
					 (uint64_t)c->xmap[i].off), addr = 0;

		if (!c->xmap[i].pages || !at || at & 7 ||
		    pt_read(s->pt, at, &addr, sizeof(addr)) || !addr)
			continue;
		err = um_bpf(u, s, addr, (uint64_t)c->xmap[i].pages << 12);
	}
	return err;
}

/*
 * The BPF maps of the earlier sessions (not own) whose memory goes with
 * this session's at its detach.
 */
static int um_old_bpf(struct ubt_user *u, struct um *s, uint64_t own)
{
	int err = 0;

	for (int i = 0; !err && i < s->n; i++) {
		struct rt_ctl c;

		if (s->m[i].gone || s->m[i].off || s->m[i].ino == own ||
		    s->m[i].end - s->m[i].start < sizeof(c) ||
		    pt_read(s->pt, s->m[i].start, &c, sizeof(c)) ||
		    c.sz != sizeof(c) || c.version != RT_ABI_VERSION)
			continue;
		err = um_view_bpf(u, s, &c, s->m[i].ino);
	}
	return err;
}

/* Is the target's descriptor target_fd still the memfd (inode own)? */
static bool um_fd_is(const struct um *s, int fd, uint64_t ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)s->pid, fd);
	return fd > 0 && !stat(path, &st) && (uint64_t)st.st_ino == ino;
}

/*
 * The descriptor of an earlier session's memfd, left open when its ubt
 * was killed, closed when it still is that memfd's.
 */
static void um_close_old(struct ubt_user *u, struct um *s, uint64_t own)
{
	int64_t ret;

	for (int i = 0; i < s->n; i++)
		if (!s->m[i].gone && s->m[i].ino != own &&
		    um_fd_is(s, s->m[i].fd, s->m[i].ino))
			um_sys(u, s, SYS_close, (uint64_t)s->m[i].fd, 0, 0, 0,
				  0, 0, &ret);
}

/*
 * Unmap every mapping not marked gone, counting them in *count (if
 * given): the control views (offset 0) last.  A ubt killed midway
 * leaves each memfd it has not finished with its control view still
 * mapped, so the next ubt still knows it for ubt's and removes the rest;
 * a memfd with its view gone and a code area left would be nobody's.
 */
static int um_unmap(struct ubt_user *u, struct um *s, int *count)
{
	int64_t ret;
	int err = 0;

	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; !err && i < s->n; i++) {
			if (s->m[i].gone || (s->m[i].off == 0) != (pass == 1))
				continue;
			err = um_sys(u, s, SYS_munmap, s->m[i].start,
				     s->m[i].end - s->m[i].start, 0, 0, 0, 0,
				     &ret);
			if (!err && count)
				(*count)++;
		}
	return err;
}

/* The runtime's address fn[k] of this session, 0 unless in the runtime. */
static uint64_t um_rt_fn(struct ubt_user *u, const struct um *s, int k)
{
	uint64_t a = u->m.ctl->fn[k];

	return a >= s->rt_start && a + 8 <= s->rt_end ? a : 0;
}

/*
 * The unmap in the process of pt (every thread stopped): the target, or
 * (child) a child it forked during the session, which inherited the
 * mappings, the descriptor and the BPF maps' mappings at bpf[0..nbpf).
 * 0 and why empty when every mapping went; why says which thread keeps
 * them otherwise.
 */
static int um_run(struct ubt_user *u, struct pt *pt, bool child,
		  const uint64_t *bpf, int nbpf, char *why_out, size_t len)
{
	int64_t fd = child ? u->m.ctl->target_fd : u->target_fd, ret;
	struct stat st;
	const char *why;
	uint64_t own;
	pid_t tid = 0;
	bool ran = false;
	struct um *s;
	int err;

	why_out[0] = 0;
	if (!u->target_base || u->m.fd < 0 || fstat(u->m.fd, &st))
		return 0;
	own = (uint64_t)st.st_ino;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->pt = pt;
	s->pid = pt->pid;
	s->child = child;
	s->tls_offset = u->tls_offset;
	s->tries = UNMAP_TRIES;
	if (um_scan(u, s, own)) {
		um_free(s);
		return 0;	/* gone */
	}
	if (!child && !getenv("UBT_NO_PARK")) {
		s->wrap_ret = um_rt_fn(u, s, RT_FN_WRAP_RET);
		s->stubs = um_rt_fn(u, s, RT_FN_WRAP_STUBS);
		s->park_tab = um_rt_fn(u, s, RT_FN_PARKED);
		if (s->wrap_ret && s->stubs && s->park_tab)
			s->park_ret = um_rt_fn(u, s, RT_FN_WRAP_PARKED);
		s->plan = s->park_ret != 0;
		s->only_own = true;
		for (int i = 0; i < s->n; i++)
			s->only_own = s->only_own && s->m[i].ino == own;
	}
	/* nothing maps more chunks now: the descriptor goes either way */
	if (fd > 0 && um_fd_is(s, (int)fd, own) &&
	    !um_sys(u, s, SYS_close, (uint64_t)fd, 0, 0, 0, 0, 0, &ret) &&
	    !child)
		u->target_fd = -1;
	why = um_wait(u, s, &tid, &ran);
	/* a thread that ran on out of the runtime may have mapped a chunk */
	if (!why && ran && um_scan(u, s, own))
		why = "its mappings cannot be read";
	if (!why && s->npark) {
		bool moved;

		err = um_park(u, s, &moved);
		/* the mappings again: a parked page split one */
		if (moved && um_scan(u, s, own))
			why = "its mappings cannot be read";
		else if (!moved)
			why = err == -ENOSPC ? "wrapped calls in progress, no "
			      "room to park them" : "wrapped calls in progress "
			      "could not be parked";
	}
	if (why) {
		snprintf(why_out, len, "pid %d: ubt's memory stays mapped in "
			 "the process (its code read-only-executable) for the "
			 "next ubt to remove: thread %d may still use it (%s)",
			 (int)s->pid, (int)tid, why);
		um_free(s);
		return 0;
	}
	err = um_forget(u, s) ?: um_old_bpf(u, s, own) ?:
	      um_unmap(u, s, child ? NULL : &u->unmapped);
	/* parked calls of earlier sessions that have returned since */
	if (!err && !s->npark)
		err = um_reclaim(u, s, &u->unmapped);
	if (!err)
		um_close_old(u, s, own);
	/* killed workers' unmapped memfds (user_strays.c), found now that
	 * those unmapped above are gone too */
	if (!err && !child) {
		user_strays_find(u, own, false);
		user_strays_close(u);
	}
	for (int i = 0; !err && i < nbpf; i++)
		err = um_bpf(u, s, bpf[i], 0);
	um_free(s);
	return err;
}

int user_unmap(struct ubt_user *u)
{
	uint64_t *bpf = xcalloc((size_t)u->nxmaps + 1, sizeof(*bpf));
	int n = 0, err;

	u->unmapped = 0;
	u->park_note[0] = 0;
	for (int i = 0; i < u->nxmaps; i++)
		bpf[n++] = u->xmaps[i].addr;
	bpf[n++] = u->comm_at;
	err = um_run(u, &u->pt, false, bpf, n, u->unmap_why,
		     sizeof(u->unmap_why));
	free(bpf);
	if (err || u->unmap_why[0])
		return err;
	for (int i = 0; i < u->nxmaps; i++)
		u->xmaps[i].addr = 0;
	u->comm_at = 0;
	return 0;
}

int user_unmap_child(struct ubt_user *u, struct pt *pt, const uint64_t *bpf,
		     int nbpf, char *why, size_t len)
{
	return um_run(u, pt, true, bpf, nbpf, why, len);
}

/*
 * Dead sessions' memory, at an attach (user_unmap_dead()).  Each
 * control view of a memfd that may go (its sites all restored,
 * owner_restore() said so) names where its runtime keeps its pointer to
 * it and which %fs offset holds the threads' blocks: the runtime must be
 * this ubt's (its pointer inside it), and one offset for all, else they
 * stay.  NULL when they may go.
 */
static const char *um_dead_views(struct um *s)
{
	int64_t tls = 0;

	for (int i = 0; i < s->n; i++) {
		struct rt_ctl c;

		if (s->m[i].gone || s->m[i].off)
			continue;
		if (pt_read(s->pt, s->m[i].start, &c, sizeof(c)))
			return "a control view cannot be read";
		if (c.ctl_at && (c.ctl_at < s->rt_start ||
				 c.ctl_at + 8 > s->rt_end))
			return "their runtime is not the one this ubt loads";
		if (c.tls_offset && tls && c.tls_offset != tls)
			return "their runtimes' thread offsets differ";
		if (c.tls_offset)
			tls = c.tls_offset;
	}
	/* set only here: um_inside() reads the blocks through it */
	s->tls_offset = tls;
	return NULL;
}

/*
 * The runtime forgets them (every thread stopped, none inside): its
 * pointer to the control block, the stubs' allocation (no wrapped call
 * in progress), every thread's block pointer; and the comm tables those
 * sessions mapped go.  As um_forget() for this session's own.
 */
static int um_dead_forget(struct ubt_user *u, struct um *s)
{
	uint64_t zero[2] = { 0, 0 };
	int err = 0;

	for (int i = 0; !err && i < s->n; i++) {
		struct rt_ctl c;
		uint64_t stub;

		if (s->m[i].gone || s->m[i].off ||
		    pt_read(s->pt, s->m[i].start, &c, sizeof(c)))
			continue;
		if (c.ctl_at)
			err = pt_write(s->pt, c.ctl_at, zero, 8);
		stub = c.fn[RT_FN_WRAP_STUB_NEXT];
		if (!err && stub >= s->rt_start && stub + 4 <= s->rt_end)
			err = pt_write(s->pt, stub, zero, 4);
		if (!err)
			err = um_view_bpf(u, s, &c, s->m[i].ino);
	}
	for (int i = 0; !err && s->tls_offset && i < s->pt->nth; i++) {
		struct user_regs_struct r;

		err = pt_regs(s->pt, i, &r) ?:
		      pt_write(s->pt, r.fs_base + (uint64_t)s->tls_offset,
			       zero, sizeof(zero));
	}
	return err;
}

int user_unmap_dead(struct ubt_user *u)
{
	const char *why;
	pid_t tid = 0, vm;
	bool ran = false;
	struct um *s;
	int err, n = 0;

	u->dead_unmapped = 0;
	u->dead_why[0] = 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->pt = &u->pt;
	s->pid = u->pid;
	s->tries = 1;	/* no waiting here: a later ubt tries again */
	/* no memfd of this session's yet: inode 0 is none's */
	if (um_scan(u, s, 0)) {
		um_free(s);
		return 0;
	}
	for (int i = 0; i < s->n; i++)
		n += !s->m[i].gone;
	if (!n) {
		um_free(s);
		return 0;
	}
	why = um_dead_views(s);
	if (!why) {
		um_dead_park(s);
		um_dead_slots(s);
	}
	vm = why ? 0 : user_vm_sharer(u->pid);
	if (vm)
		why = "another process shares its memory";
	if (!why)
		why = um_wait(u, s, &tid, &ran);
	else
		tid = vm;
	if (why) {
		snprintf(u->dead_why, sizeof(u->dead_why), "pid %d: %d "
			 "mapping(s) of dead ubts' memory stay in the process "
			 "(their code read-only-executable) for a later ubt to "
			 "remove: %s %d may still use them (%s)", (int)u->pid,
			 n, vm ? "process" : "thread", (int)tid, why);
		um_free(s);
		return 0;
	}
	err = um_dead_forget(u, s) ?: um_unmap(u, s, &u->dead_unmapped);
	/* their descriptors, each if still that memfd (all stopped) */
	if (!err)
		um_close_old(u, s, 0);
	/* and parked calls' pages, of calls that have returned since */
	if (!err)
		err = um_reclaim(u, s, &u->dead_unmapped);
	um_free(s);
	return err;
}
