/*
 * A wrapped call (return probe) in progress when ubt detaches is parked,
 * not a reason to keep ubt's memory in the target (RT_FN_WRAP_PARKED in
 * runtime/rt_abi.h).  With every thread stopped, um_plan() lists the
 * calls of this session in each thread's block (the shadow entries whose
 * slot on the stack still holds a wrapped call's return address); if no
 * thread needs the memory otherwise, um_park() makes, for each such
 * block, a read-only private copy of its first page (the shadow stack,
 * the entries' own wrapped returns made the parked one), rewrites each
 * call's return address to the runtime's parked return, then puts the
 * copy in the page's place at once (mremap) and records it in the
 * runtime's table (RT_FN_PARKED); user_unmap.c then takes all of the
 * memfd out.  The parked return reads only its entry at %rbx and goes
 * back to the caller, under rt_wrap_call's unwind rules.
 *
 * um_reclaim(), at a later detach or attach: the recorded pages go once
 * no thread's rip is in the runtime and no live frame holds the parked
 * return.
 *
 * Looking at the stacks (um_stack_holds(), here with the rest of the
 * look at threads that user_unmap.c calls: um_parked_word(),
 * um_inner_ret()), words that
 * need none of the memory are not counted: the parked return; a copy of
 * a wrapped call's return that is no entry's slot (rt_shadow_push()
 * leaves one where the wrapped function's frame then lies): for this
 * session's detach when no other memfd is mapped, for dead sessions'
 * memory when every one of their blocks' entries was read
 * (um_dead_slots()); and a return address after a direct call from the
 * runtime into itself (its frame is live only while its callee is, whose
 * own return or rip tells), unless it is the rip a signal frame saved.
 *
 * UBT_NO_PARK=1 keeps the old rule: every mapping stays while a call is
 * in progress (tests/README.md).  Not parked: calls in children forked
 * during the session, rt_wrap_low's calls (another tracer's return probe
 * there), a call tail-called from one of an earlier session.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "user_unmap.h"

/* A wrapped call's return address: rt_wrap_call's, or a stub slot's. */
static bool um_wrap_ret(const struct um *s, uint64_t a)
{
	return a && (a == s->wrap_ret ||
		     (a - s->stubs < RT_WRAP_STUBS * RT_WRAP_STUB &&
		      (a - s->stubs) % RT_WRAP_STUB == 5));
}

/*
 * A word at addr on a stack that needs none of the memfd: a parked
 * call's return address, or one that will be (a slot planned).
 */
bool um_parked_word(const struct um *s, uint64_t addr, uint64_t w)
{
	if (s->park_ret && w == s->park_ret)
		return true;
	/*
	 * Every wrapped call in progress of this session is planned (its
	 * block's entries); of earlier ones, none is when no memfd but
	 * this session's is mapped (a kept one's stays mapped; a parked
	 * one returns through RT_FN_WRAP_PARKED): another return address
	 * of a wrapped call is a stale copy (rt_shadow_push() passes
	 * rt_wrap_call's on the stack, where the wrapped function's frame
	 * then lies).
	 */
	if (s->plan && s->only_own && um_wrap_ret(s, w))
		return true;
	/* the dead path: not the slot of any entry of theirs */
	if (s->slots_known && um_wrap_ret(s, w)) {
		for (int i = 0; i < s->nslots; i++)
			if (s->slots[i] == addr)
				return false;
		return true;
	}
	for (int i = 0; i < s->npark; i++)
		if (s->park[i].slot == addr)
			return true;
	return false;
}

/*
 * Can thread tid's wrapped calls in progress, entries [0, top) of its
 * block blk, be parked?  Each entry whose slot still holds a wrapped
 * call's return address is planned (the others are of frames gone);
 * one whose own return address is a wrapped call's (a tail call from a
 * wrapped function) must lead to an entry of the same page.  NULL when
 * they can (the stack is looked at after: a return address into ubt's
 * code elsewhere, rt_wrap_low's say, keeps everything).
 */
const char *um_plan(struct um *s, pid_t tid, uint64_t sp,
			   uint64_t blk, uint64_t top)
{
	static uint64_t sh[RT_SHADOW_DEPTH * RT_SHADOW_ENTRY / 8];

	if (!s->plan || blk & 4095)
		return "a wrapped call (return probe) is in progress";
	top &= -(uint64_t)RT_SHADOW_ENTRY;
	if (top > RT_SHADOW_DEPTH * RT_SHADOW_ENTRY)
		return "a wrapped call (return probe) is in progress, its "
		       "shadow stack scribbled over";
	if (pt_read(s->pt, blk + RT_BLK_SHADOW, sh, top))
		return "its shadow stack cannot be read";
	for (uint64_t k = 0; k < top / 8; k += RT_SHADOW_ENTRY / 8) {
		uint64_t slot = sh[k + RT_SH_SLOT / 8], w = 0;
		uint64_t ret = sh[k + RT_SH_RET / 8];
		uint64_t rbx = sh[k + RT_SH_RBX / 8];

		/* (below the stack pointer: a frame gone, maybe the red
		 * zone's words now) */
		if (slot & 7 || slot < sp || pt_read(s->pt, slot, &w, 8) ||
		    !um_wrap_ret(s, w))
			continue;
		if (um_wrap_ret(s, ret) && (rbx & -4096ULL) != blk)
			return "a wrapped call in progress was tail-called "
			       "from one of an earlier session";
		if (s->npark == UNMAP_PARK_MAX)
			return "too many wrapped calls in progress";
		s->park[s->npark++] = (struct um_park){ .slot = slot,
							.blk = blk,
							.tid = tid };
	}
	return NULL;
}

/* Does addr hold a signal frame's return address (a restorer's)? */
static bool um_restorer_at(const struct um *s, uint64_t addr)
{
	/* mov $15,%rax; syscall (glibc's) or mov $15,%eax; syscall */
	static const uint8_t a[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f,
				     0x05 };
	static const uint8_t b[] = { 0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	uint8_t code[sizeof(a)];
	uint64_t w;

	if (pt_read(s->pt, addr, &w, 8) || pt_read(s->pt, w, code, sizeof(a)))
		return true;	/* unreadable: as if it were one */
	return !memcmp(code, a, sizeof(a)) || !memcmp(code, b, sizeof(b));
}

/*
 * Parking only: is w, at addr on a live stack, a word the runtime's code
 * after the memfd is gone cannot reach through?  A return address after
 * a direct call from the runtime to the runtime: the frame it returns to
 * is live only while its callee is, whose own return address or rip
 * tells (the runtime calls out only indirectly: wrapped calls, the
 * chained signal handler), so such a word is stale (an uninitialized
 * local's), unless it is the rip a signal frame saved (its restorer 176
 * bytes below: ucontext's mcontext.rip).
 */
bool um_inner_ret(const struct um *s, uint64_t addr, uint64_t w)
{
	uint8_t call[5];
	int32_t rel;
	uint64_t to;

	if ((!s->plan && !s->slots_known) || !um_runtime(s, w) ||
	    w - 5 < s->rt_start ||
	    pt_read(s->pt, w - 5, call, sizeof(call)) || call[0] != 0xe8)
		return false;
	memcpy(&rel, call + 1, 4);
	to = w + (uint64_t)(int64_t)rel;
	return um_runtime(s, to) && !um_restorer_at(s, addr - 176);
}

/* The runtime's table of parked pages, read (0: none there). */
static int um_park_tab(const struct um *s, uint64_t *tab)
{
	if (!s->park_tab)
		return -ENOENT;
	return pt_read(s->pt, s->park_tab, tab, RT_PARKED_MAX * 8);
}

/*
 * The planned calls parked (every thread stopped): for each block, a
 * read-only private copy of its first page (the entries' returns to
 * wrapped calls made RT_FN_WRAP_PARKED too) is made elsewhere; the
 * calls' return addresses are rewritten (until the copy is in place they
 * still read the memfd's page, which holds the same entries); each copy
 * then replaces its block's page at once (mremap) and is recorded in the
 * runtime's table.  Fails before any rewrite when a copy cannot be made;
 * *moved says whether every page was replaced (else the memfd stays).
 */
int um_park(struct ubt_user *u, struct um *s, bool *moved)
{
	static uint8_t page[4096];
	uint64_t tab[RT_PARKED_MAX], blk[RT_PARKED_MAX], copy[RT_PARKED_MAX];
	int nblk = 0, nfree = 0, err = 0;
	int64_t ret;

	*moved = false;
	memset(copy, 0, sizeof(copy));
	if (um_park_tab(s, tab))
		return -ENOENT;
	for (int i = 0; i < RT_PARKED_MAX; i++)
		nfree += !tab[i];
	for (int i = 0; i < s->npark; i++) {
		int k = 0;

		while (k < nblk && blk[k] != s->park[i].blk)
			k++;
		if (k == nblk && nblk == nfree)
			return -ENOSPC;
		if (k == nblk)
			blk[nblk++] = s->park[i].blk;
	}
	for (int k = 0; k < nblk; k++) {
		uint64_t top, *e;

		err = pt_read(s->pt, blk[k], page, sizeof(page));
		if (err)
			break;
		memcpy(&top, page + RT_BLK_SHADOW_TOP, 8);
		top &= -(uint64_t)RT_SHADOW_ENTRY;
		if (top > RT_SHADOW_DEPTH * RT_SHADOW_ENTRY)
			top = RT_SHADOW_DEPTH * RT_SHADOW_ENTRY;
		for (uint64_t o = 0; o < top; o += RT_SHADOW_ENTRY) {
			e = (uint64_t *)(page + RT_BLK_SHADOW + o);
			if (um_wrap_ret(s, e[RT_SH_RET / 8]))
				e[RT_SH_RET / 8] = s->park_ret;
		}
		err = um_sys(u, s, SYS_mmap, 0, sizeof(page),
			     PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0,
			     &ret);
		if (!err && (ret < 0 && ret > -4096))
			err = (int)ret;
		if (err)
			break;
		copy[k] = (uint64_t)ret;
		err = pt_write(s->pt, copy[k], page, sizeof(page)) ?:
		      um_sys(u, s, SYS_mprotect, copy[k], sizeof(page),
			     PROT_READ, 0, 0, 0, &ret);
		if (!err && ret)
			err = (int)ret;
		if (err)
			break;
	}
	if (err) {
		for (int k = 0; k < nblk && copy[k]; k++)
			um_sys(u, s, SYS_munmap, copy[k], sizeof(page), 0, 0,
			       0, 0, &ret);
		return err;
	}
	for (int i = 0; !err && i < s->npark; i++)
		err = pt_write(s->pt, s->park[i].slot, &s->park_ret, 8);
	for (int k = 0; !err && k < nblk; k++) {
		int f = 0;

		err = um_sys(u, s, SYS_mremap, copy[k], sizeof(page),
			     sizeof(page), MREMAP_MAYMOVE | MREMAP_FIXED,
			     blk[k], 0, &ret);
		if (!err && (uint64_t)ret != blk[k])
			err = ret < 0 && ret > -4096 ? (int)ret : -EFAULT;
		while (!err && tab[f])
			f++;
		if (!err) {
			tab[f] = blk[k];
			err = pt_write(s->pt, s->park_tab + 8 * (uint64_t)f,
				       &blk[k], 8);
		}
	}
	*moved = !err;
	if (!err) {
		snprintf(u->park_note, sizeof(u->park_note), "pid %d: %d "
			 "wrapped call(s) in progress parked (thread %d): "
			 "%d read-only page(s) of their shadow entries stay "
			 "until they return, for a later ubt to remove",
			 (int)s->pid, s->npark, (int)s->park[0].tid, nblk);
	}
	return err;
}

/*
 * Is [a, a + 4096) in a private anonymous read-only mapping of pid's (the
 * kernel may have merged it with a neighbour of the same kind)?
 */
static bool um_parked_page(pid_t pid, uint64_t a)
{
	struct pt_map *pm;
	bool yes = false;
	int n;

	if (pt_maps(pid, &pm, &n))
		return false;
	for (int i = 0; i < n && !yes; i++)
		yes = pm[i].start <= a && pm[i].end >= a + 4096 &&
		      !strcmp(pm[i].perms, "r--p") && !pm[i].path[0];
	free(pm);
	return yes;
}

/*
 * Parked calls' pages (of this session or an earlier one), unmapped once
 * no thread's rip is in the runtime and no live frame returns through
 * RT_FN_WRAP_PARKED: each only where the table names it and it still is
 * one read-only anonymous page.  Counted in u->unmapped.
 */
int um_reclaim(struct ubt_user *u, struct um *s, int *count)
{
	uint64_t tab[RT_PARKED_MAX], zero = 0, keep_ret = s->park_ret;
	struct pt_map *pm;
	int npm, n = 0, err = 0;
	int64_t ret;

	if (!s->park_ret || um_park_tab(s, tab))
		return 0;
	for (int i = 0; i < RT_PARKED_MAX; i++)
		n += tab[i] != 0;
	if (!n || pt_maps(s->pid, &pm, &npm))
		return 0;
	/* every word in ubt's code counts now, the parked return too */
	s->park_ret = 0;
	s->npark = 0;
	for (int i = 0; i < s->pt->nth && !err; i++) {
		struct user_regs_struct r;

		if (pt_regs(s->pt, i, &r) || um_runtime(s, r.rip) ||
		    um_stack_holds(u, s, r.rsp,
				   um_stack_end(pm, npm, r.rsp)))
			err = 1;
	}
	free(pm);
	s->park_ret = keep_ret;
	if (err)
		return 0;
	for (int i = 0; i < RT_PARKED_MAX; i++) {
		if (!tab[i])
			continue;
		if (um_parked_page(s->pid, tab[i]) &&
		    !um_sys(u, s, SYS_munmap, tab[i], 4096, 0, 0, 0, 0, &ret) &&
		    !ret)
			(*count)++;
		err = pt_write(s->pt, s->park_tab + 8 * (uint64_t)i, &zero, 8);
		if (err)
			return err;
	}
	return 0;
}

/* Slot a of an entry in a dead block, noted. */
static int um_slot_add(struct um *s, uint64_t a)
{
	if (s->nslots == s->slots_cap) {
		int cap = s->slots_cap ? 2 * s->slots_cap : 64;
		uint64_t *more = realloc(s->slots, (size_t)cap * sizeof(*more));

		if (!more)
			return -ENOMEM;
		s->slots = more;
		s->slots_cap = cap;
	}
	s->slots[s->nslots++] = a;
	return 0;
}

/* The slots of the entries of the block at at, noted. */
static int um_block_slots(struct um *s, uint64_t at)
{
	static uint64_t sh[RT_SHADOW_DEPTH * RT_SHADOW_ENTRY / 8];
	uint64_t top;

	if (pt_read(s->pt, at + RT_BLK_SHADOW_TOP, &top, 8))
		return -EIO;
	top &= -(uint64_t)RT_SHADOW_ENTRY;
	if (top > RT_SHADOW_DEPTH * RT_SHADOW_ENTRY)
		top = RT_SHADOW_DEPTH * RT_SHADOW_ENTRY;
	if (top && pt_read(s->pt, at + RT_BLK_SHADOW, sh, top))
		return -EIO;
	for (uint64_t k = 0; k < top / 8; k += RT_SHADOW_ENTRY / 8)
		if (um_slot_add(s, sh[k + RT_SH_SLOT / 8]))
			return -ENOMEM;
	return 0;
}

/*
 * The slots of the entries of every shadow stack in the dead memfds'
 * blocks (each block mapped in the target, whatever its control block
 * says was handed out), and their runtime's wrapped-call returns.  On
 * any doubt slots_known stays false: every such return keeps them.
 */
void um_dead_slots(struct um *s)
{
	for (int v = 0; v < s->n; v++) {
		struct rt_ctl c;
		uint64_t r, st;

		if (s->m[v].gone || s->m[v].off)
			continue;
		if (pt_read(s->pt, s->m[v].start, &c, sizeof(c)) ||
		    c.block_size < 8192 || c.block_size % 4096 ||
		    c.block_off % 4096)
			return;
		r = c.fn[RT_FN_WRAP_RET];
		st = c.fn[RT_FN_WRAP_STUBS];
		if (r < s->rt_start || r >= s->rt_end || st < s->rt_start ||
		    st >= s->rt_end || (s->wrap_ret && (r != s->wrap_ret ||
						      st != s->stubs)))
			return;
		s->wrap_ret = r;
		s->stubs = st;
		for (int i = 0; i < s->n; i++) {
			const struct um_map *m = &s->m[i];
			uint64_t b, end = m->off + (m->end - m->start);

			if (m->ino != s->m[v].ino || m->x || m->gone ||
			    end <= c.block_off)
				continue;
			b = m->off > c.block_off ?
				    (m->off - c.block_off + c.block_size - 1) /
					    c.block_size : 0;
			for (;; b++) {
				uint64_t off = c.block_off + b * c.block_size;
				uint64_t at = m->start + off - m->off;

				if (off + 4096 > end)
					break;
				if (um_block_slots(s, at))
					return;
			}
		}
	}
	s->slots_known = s->wrap_ret != 0;
}

/*
 * Parked calls (of any session: the runtime is this ubt's) need none of
 * the dead memory: their return address, and the table of their pages,
 * as a dead control view names them, if in the runtime.
 */
void um_dead_park(struct um *s)
{
	for (int i = 0; i < s->n && !s->park_ret; i++) {
		struct rt_ctl c;
		uint64_t r, t;

		if (s->m[i].gone || s->m[i].off ||
		    pt_read(s->pt, s->m[i].start, &c, sizeof(c)))
			continue;
		r = c.fn[RT_FN_WRAP_PARKED];
		t = c.fn[RT_FN_PARKED];
		if (r >= s->rt_start && r + 8 <= s->rt_end &&
		    t >= s->rt_start && t + RT_PARKED_MAX * 8 <= s->rt_end) {
			s->park_ret = r;
			s->park_tab = t;
		}
	}
}

#define UNMAP_STACK (8ULL << 20)	/* live frames read at most */

/* A remote system call in s's process (user_rsys() there). */
int um_sys(struct ubt_user *u, const struct um *s, long nr,
		  uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
		  uint64_t a4, uint64_t a5, int64_t *ret)
{
	uint64_t args[6] = { a0, a1, a2, a3, a4, a5 };

	return user_rsys_in(u, s->pt, nr, args, ret);
}

bool um_code(const struct um *s, uint64_t a)
{
	for (int i = 0; i < s->n; i++)
		if (!s->m[i].gone && s->m[i].x && a >= s->m[i].start &&
		    a < s->m[i].end)
			return true;
	return false;
}

bool um_runtime(const struct um *s, uint64_t a)
{
	for (int i = 0; i < s->nrt; i++)
		if (a >= s->rt_lo[i] && a < s->rt_hi[i])
			return true;
	return false;
}

/*
 * The end of the mapping that holds a (its stack: the live frames lie
 * between a thread's stack pointer and there), 0 if none does.
 */
uint64_t um_stack_end(const struct pt_map *pm, int npm, uint64_t a)
{
	for (int i = 0; i < npm; i++)
		if (a >= pm[i].start && a < pm[i].end)
			return pm[i].end;
	return 0;
}

/*
 * An address in ubt's code among the live frames of a thread: a return
 * address into a code slice (a trampoline or probe code interrupted by
 * a signal, or calling out) or into the runtime (a wrapped call in
 * progress, of this session or an earlier one, returns through
 * rt_wrap_call or a stub; a block lent to a vfork child, through
 * rt_vf_back).  A stale word that looks like one only keeps the
 * mappings.
 */
bool um_stack_holds(struct ubt_user *u, const struct um *s,
			   uint64_t sp, uint64_t end)
{
	static uint64_t words[8192];

	sp &= ~7ULL;
	if (end > sp + UNMAP_STACK)
		return true;	/* too deep to read: kept */
	while (sp < end) {
		size_t n = end - sp < sizeof(words) ? end - sp : sizeof(words);

		if (pt_read(s->pt, sp, words, n))
			return false;
		for (size_t k = 0; k < n / 8; k++)
			if ((um_code(s, words[k]) || um_runtime(s, words[k])) &&
			    !um_parked_word(s, sp + 8 * k, words[k]) &&
			    !um_inner_ret(s, sp + 8 * k, words[k]))
				return true;
		sp += n;
	}
	return false;
}
