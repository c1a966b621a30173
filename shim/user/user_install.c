/*
 * Installing probes: code slices within +-2 GiB of each module, the
 * probe's native code and trampoline copied there, the jump written with
 * every thread stopped and moved out of the window, then resumed.
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
#include <sys/uio.h>
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

/*
 * A code slice near module path with room for need bytes more: one it
 * has, or a new one (a library's hundreds of sites fill several).
 */
static int get_slice(struct ubt_user *u, const char *path, uint64_t lo,
		     uint64_t hi, size_t need)
{
	struct user_slice *sl;
	uint64_t at;
	int64_t ret;
	int i, err;
	bool was;

	for (i = 0; i < u->nslices; i++)
		if (!strcmp(u->slices[i].path, path) &&
		    u->slices[i].used + need + 16 <= RT_CODE_SLICE)
			return i;
	if (u->nslices == RT_CODE_SLICES)
		return user_err(u, -ENOSPC, "too many patched modules");
	err = find_gap(u, lo, hi, &at);
	if (err)
		return user_err(u, err, "no room for code within 2 GiB of %s",
			    path);
	/* -p: one thread stops for the mmap, then runs on */
	was = u->released;
	err = user_restop(u, false);
	if (err)
		return err;
	err = user_rsys(u, SYS_mmap, at, RT_CODE_SLICE, PROT_READ | PROT_EXEC,
		   MAP_SHARED | MAP_FIXED_NOREPLACE, (uint64_t)u->target_fd,
		   memfd_code_off((unsigned int)u->nslices), &ret);
	/* the range taken by another thread since the maps were read (kept
	 * in attach()'s stop, user_attach.c): read again, chosen again */
	if (err == -EEXIST) {
		pt_maps_forget();
		err = find_gap(u, lo, hi, &at);
		if (err)
			user_err(u, err, "no room for code within 2 GiB of %s",
				 path);
		else
			err = user_rsys(u, SYS_mmap, at, RT_CODE_SLICE,
					PROT_READ | PROT_EXEC,
					MAP_SHARED | MAP_FIXED_NOREPLACE,
					(uint64_t)u->target_fd,
					memfd_code_off((unsigned int)u->nslices),
					&ret);
	}
	if (was)
		user_release(u);
	if (err)
		return err;
	if ((uint64_t)ret != at)
		return user_err(u, -EEXIST, "code area for %s", path);
	sl = &u->slices[u->nslices];
	snprintf(sl->path, sizeof(sl->path), "%s", path);
	sl->target = at;
	sl->used = 0;
	return u->nslices++;
}

int user_prepare_slice(struct ubt_user *u, const char *path)
{
	uint64_t bias, lo, hi;
	int sl;

	if (user_module_range(u, path, &bias, &lo, &hi))
		return 0;	/* not mapped (yet): the install says */
	sl = get_slice(u, path, lo, hi, 0);
	return sl < 0 ? sl : 0;
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

int user_peek(struct ubt_user *u, uint64_t addr, void *buf, size_t n)
{
	struct iovec l = { buf, n }, r = { (void *)(uintptr_t)addr, n };
	char path[64];
	ssize_t got;
	int fd;

	if (process_vm_readv(u->pid, &l, 1, &r, 1, 0) == (ssize_t)n)
		return 0;
	if (u->pt.memfd >= 0)
		return pt_read(&u->pt, addr, buf, n);
	/* a page without read permission: /proc/PID/mem reads it */
	snprintf(path, sizeof(path), "/proc/%d/mem", u->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = pread(fd, buf, n, (off_t)addr);
	close(fd);
	if (got == (ssize_t)n)
		return 0;
	return got < 0 ? -errno : -EIO;
}

/* ubt's view of the record at target address at in slice i */
struct rt_site *user_slice_record(struct ubt_user *u, int i, uint64_t at)
{
	return (struct rt_site *)((char *)memfd_code(&u->m, (unsigned int)i) +
				  (at - u->slices[i].target));
}

/*
 * ubt's view of the record at target address at, in whichever slice holds
 * it (a site's earlier record may be in another slice than its code now:
 * user_install()), or NULL.
 */
struct rt_site *user_record(struct ubt_user *u, uint64_t at)
{
	for (int i = 0; i < u->nslices; i++)
		if (at >= u->slices[i].target &&
		    at - u->slices[i].target <= RT_CODE_SLICE - RT_SITE_HDR)
			return user_slice_record(u, i, at);
	return NULL;
}

/* ubt's view of the bytes at target address at, in whichever slice */
static const uint8_t *slice_bytes(struct ubt_user *u, uint64_t at)
{
	for (int i = 0; i < u->nslices; i++)
		if (at >= u->slices[i].target &&
		    at - u->slices[i].target < RT_CODE_SLICE)
			return (const uint8_t *)memfd_code(&u->m,
							   (unsigned int)i) +
			       (at - u->slices[i].target);
	return NULL;
}

/*
 * The runtime's next free stub slot for a return site's trampoline
 * (RT_FN_WRAP_STUBS): spec->stub and spec->stub_bytes set, and the count
 * to write back once the slot is used; 0 (no slot) when the runtime has
 * none left or the count read back is implausible.
 */
static uint32_t take_stub(struct ubt_user *u, struct tramp_spec *spec,
			  uint8_t *bytes)
{
	uint64_t base = u->m.ctl->fn[RT_FN_WRAP_STUBS];
	uint64_t at = u->m.ctl->fn[RT_FN_WRAP_STUB_NEXT];
	uint64_t call = u->m.ctl->fn[RT_FN_WRAP_CALL];
	uint32_t next;

	/* the memfd is the target's to scribble on: both lie in the
	 * runtime, next to rt_wrap_call; with -p the process runs here,
	 * unstopped (no thread runs a slot before its jump is placed) */
	if (!base || !at || base - call > (1 << 20) || at - call > (1 << 20) ||
	    getenv("UBT_NO_WRAP_STUBS") || pt_mem_open(&u->pt, u->pid) ||
	    pt_read(&u->pt, at, &next, sizeof(next)) ||
	    next >= RT_WRAP_STUBS)
		return 0;
	spec->stub = base + (uint64_t)next * RT_WRAP_STUB;
	spec->stub_bytes = bytes;
	return next + 1;
}

int user_install(struct ubt_user *u, const struct user_probe *p)
{
	uint64_t vaddr, size, off, bias, lo, hi, addr, code_at;
	uint64_t tramp, reloc_at, rec, room = 0;
	uint8_t jmp[PATCH_MAX_WINDOW];
	struct user_site *us = NULL;
	struct rt_site *site;
	struct patch_reloc r;
	struct tramp_spec spec;
	char path[PATH_MAX];
	/* two inlined bodies of up to 3 * TRAMP_INLINE_MAX, and the rest */
	uint8_t buf[8 * TRAMP_INLINE_MAX];
	uint8_t stub[RT_WRAP_STUB] = { 0 };
	uint32_t stub_next = 0;
	size_t us_len[2];
	int i, err, sl, n;

	uint64_t offset = USER_FIELD(p, struct user_probe, offset);
	bool regs = USER_FIELD(p, struct user_probe, regs);

	if (u->resumed)
		return user_err(u, -EBUSY, "probes are installed before resuming");
	if (p->sz < offsetof(struct user_probe, code_len) + sizeof(size_t))
		return user_err(u, -EINVAL, "struct user_probe too small");
	if (!realpath(p->binary, path))
		return user_err(u, -errno, "%s", p->binary);
	err = patch_find_symbol(path, p->symbol, &vaddr, &size, &off);
	if (err == -ENOENT) {
		user_err(u, 0, "%s: no function %s", path, p->symbol);
		return err;
	}
	if (err)
		return user_err(u, err, "%s: no function %s", path, p->symbol);
	err = user_module_range(u, path, &bias, &lo, &hi);
	if (err)
		return user_err(u, err, "%s is not mapped in pid %d", path, u->pid);
	addr = bias + vaddr;
	if (offset && p->kind == USER_PROBE_RETURN)
		return user_err(u, 0, "a return probe has no offset");
	if (regs && p->kind != USER_PROBE_ENTRY)
		return user_err(u, 0, "a USDT site has no return");
	if (u->new_image)
		return user_err(u, -ESTALE, "pid %d ran execve() during attach",
				u->pid);
	for (i = 0; i < u->nsites; i++)
		if (u->sites[i].s.func == addr &&
		    u->sites[i].offset == offset)
			us = &u->sites[i];
	/* one trampoline, one contract for the code it calls */
	if (us && us->regs != regs)
		return user_err(u, 0, "a USDT site and a uprobe at one address");
	if (!us) {
		struct patch_site s;
		uint8_t *code, *mem = NULL;
		char why[160];

		if (size > USER_MAX_FUNC)
			size = USER_MAX_FUNC;
		/* a short function: the padding after it too */
		if (!offset && size < PATCH_ROOM_BELOW)
			patch_find_room(path, vaddr, size, &room);
		/* the file's code: the process's may hold others' int3 */
		code = user_read_file_code(path, off, size + room);
		if (!code)
			return user_err(u, -EIO, "%s: cannot read %s", path,
				    p->symbol);
		if (p->pop_entry ? patch_analyze_pop(code, size, addr, &s) :
				   patch_analyze_room(code, size, room, addr,
						      offset, &s))
			err = -EINVAL;
		/* from the function's start: a USDT site may be deep in */
		if (!err && s.addr + s.len - addr > size + room)
			err = user_err(u, -EINVAL, "%s: window past the end",
				   p->symbol);
		if (!err) {
			mem = xmalloc(s.addr + s.len - addr);
			err = user_peek(u, addr, mem, s.addr + s.len - addr);
		}
		/* our own sites in the function read back as the file's */
		for (i = 0; !err && i < u->nsites; i++) {
			const struct patch_site *o = &u->sites[i].s;

			if (o->func == addr && u->sites[i].installed &&
			    o->addr + o->len <= s.addr + s.len)
				memcpy(mem + (o->addr - addr), o->orig,
				       o->len);
		}
		if (!err && user_site_compare(&s, code, mem, why, sizeof(why)))
			err = user_err(u, -EBUSY, "%s: %s", p->symbol, why);
		free(code);
		free(mem);
		if (err == -EINVAL && s.reason[0])
			return user_err(u, 0, "%s", s.reason);
		if (err == -EBUSY)
			return err;
		for (i = 0; i < u->nsites; i++) {
			const struct patch_site *o = &u->sites[i].s;

			if (o->func == addr && s.addr < o->addr + o->len &&
			    o->addr < s.addr + s.len)
				return user_err(u, 0, "the patch window overlaps "
						  "another probe's");
		}
		if (err)
			return user_err(u, err, "read %s in pid %d", p->symbol,
				    u->pid);
		if (u->nsites == USER_MAX_SITES)
			return user_err(u, -ENOSPC, "too many patched functions");
		if (u->nsites == u->sites_cap) {
			u->sites_cap = u->sites_cap ? 2 * u->sites_cap : 64;
			u->sites = xrealloc(u->sites, u->sites_cap *
						      sizeof(*u->sites));
		}
		us = &u->sites[u->nsites];
		memset(us, 0, sizeof(*us));
		us->s = s;
		us->offset = offset;
		us->regs = regs;
		/* the code, its record and a trampoline of any size */
		sl = get_slice(u, path, lo, hi,
			       p->code_len + RT_SITE_HDR + sizeof(buf));
		if (sl < 0)
			return sl;
		us->slice = sl;
		u->nsites++;
	} else if (u->slices[us->slice].used + p->code_len + RT_SITE_HDR +
			   sizeof(buf) + 48 > RT_CODE_SLICE) {
		/*
		 * Another probe on a site whose slice is full (an alias of
		 * the function, in a library's wildcard): its code and the
		 * new trampoline go to another slice near the module; the
		 * first probe's code stays where it is (tramp_build() says
		 * when it is out of reach).
		 */
		sl = get_slice(u, path, lo, hi,
			       p->code_len + RT_SITE_HDR + sizeof(buf));
		if (sl < 0)
			return sl;
		us->slice = sl;
	}
	code_at = slice_put(u, us->slice, p->code, p->code_len);
	if (!code_at)
		return user_err(u, -ENOSPC, "code area full");
	rec = slice_put(u, us->slice, (const uint8_t[RT_SITE_HDR]){ 0 },
			RT_SITE_HDR);
	if (!rec)
		return user_err(u, -ENOSPC, "code area full");
	us_len[0] = us->entry_len;
	us_len[1] = us->ret_len;
	spec = (struct tramp_spec){
		.at = rec + RT_SITE_HDR,
		.tls_offset = u->tls_offset,
		.fn_slow = u->m.ctl->fn[RT_FN_SLOW],
		.fn_enter = u->m.ctl->fn[RT_FN_WRAP_ENTER],
		.fn_exit = u->m.ctl->fn[RT_FN_WRAP_EXIT],
		.fn_call = u->m.ctl->fn[RT_FN_WRAP_CALL],
		.fn_low = u->m.ctl->fn[RT_FN_WRAP_LOW],
		.entry_code = p->kind == USER_PROBE_ENTRY ? code_at
							  : us->entry_code,
		.ret_code = p->kind == USER_PROBE_RETURN ? code_at
							 : us->ret_code,
		.regs = us->regs,
	};
	if (p->kind == USER_PROBE_ENTRY)
		us_len[0] = p->code_len;
	else
		us_len[1] = p->code_len;
	spec.entry_len = us_len[0];
	spec.ret_len = us_len[1];
	if (spec.ret_code)
		stub_next = take_stub(u, &spec, stub);
	if (spec.entry_code)
		spec.entry_bytes = slice_bytes(u, spec.entry_code);
	if (spec.ret_code)
		spec.ret_bytes = slice_bytes(u, spec.ret_code);
	n = tramp_build(&spec, &us->s, buf, sizeof(buf), &reloc_at, &r);
	if (n < 0)
		return user_err(u, n, "trampoline for %s%s%s", p->symbol,
			    us->s.reason[0] ? ": " : "", us->s.reason);
	tramp = slice_put(u, us->slice, buf, (size_t)n);
	if (tramp != spec.at)
		return user_err(u, -ENOSPC, "code area full");
	if (spec.stub && stub[0] == 0xe8) {
		/* the slot, then the count of slots taken, then the jump */
		err = pt_write(&u->pt, spec.stub, stub, RT_WRAP_STUB);
		err = err ?: pt_write(&u->pt, u->m.ctl->fn[RT_FN_WRAP_STUB_NEXT],
				      &stub_next, sizeof(stub_next));
		if (err)
			return user_err(u, err, "write a return stub");
	}
	if (spec.ret_code) {
		/* as tramp_build() chose: a rel32 jump or one through an
		 * address (the trampoline is less than a page) */
		int64_t d = (int64_t)(spec.fn_call - spec.at);

		us->wrap = d > INT32_MIN + 4096 && d < INT32_MAX - 4096 ? 1 :
									 -1;
		if (spec.stub && stub[0] == 0xe8)
			us->wrap = 2;
	}
	patch_jump_bytes(&us->s, tramp, jmp);
	/* the record first: a jump is never there without it */
	site = user_slice_record(u, us->slice, rec);
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
	/*
	 * A trampoline prepared before for this site was never jumped to.
	 * Its record is where it was put, in another slice when this
	 * probe's code went to a new one (the site's slice full): us->slice
	 * is not its slice then.
	 */
	if (us->rec && (site = user_record(u, us->rec)))
		site->state = RT_SITE_DONE;
	us->rec = rec;
	us->entry_code = spec.entry_code;
	us->ret_code = spec.ret_code;
	us->entry_len = spec.entry_len;
	us->ret_len = spec.ret_len;
	us->tramp = tramp;
	us->reloc_at = reloc_at;
	us->r = r;
	memcpy(us->jmp, jmp, us->s.len);
	/* the jump is written by user_resume(), with every thread stopped */
	us->pending = true;
	return 0;
}

int user_semaphore_add(struct ubt_user *u, uint64_t addr)
{
	if (u->resumed)
		return user_err(u, -EBUSY, "semaphores are set before resuming");
	/* incremented with the jumps, every thread stopped (user_commit()) */
	u->sems_pend = xrealloc(u->sems_pend,
				(u->nsems_pend + 1) * sizeof(*u->sems_pend));
	u->sems_pend[u->nsems_pend++] = addr;
	return 0;
}

/*
 * The jumps prepared by user_install(), written in one stop of every
 * thread (user_commit()), then the target runs.  After user_detach()
 * (u->detached) nothing is written: the target is only let go.
 */
/*
 * The longest stop of a thread in the final stop: from the first stop
 * ubt saw to now, or a stop of a thread let go meanwhile (hold()).
 */
static uint64_t longest_stop(struct ubt_user *u, uint64_t now)
{
	uint64_t first = now;

	for (int i = 0; i < u->pt.nth; i++)
		if (u->pt.th[i].stop_ns && u->pt.th[i].stop_ns < first)
			first = u->pt.th[i].stop_ns;
	return now - first > u->pt.held_ns ? now - first : u->pt.held_ns;
}

void user_on_commit(struct ubt_user *u,
		    int (*fn)(struct ubt_user *u, void *ctx), void *ctx)
{
	u->commit_fn = fn;
	u->commit_ctx = ctx;
}

int user_resume(struct ubt_user *u)
{
	bool commit = !u->detached &&
		      (u->nsems_pend || u->tls_pending || u->nsites);
	bool fresh = u->released;	/* -p: every thread stops now */
	uint64_t t0, t1;
	int err, e;

	if (u->resumed)
		return 0;
	u->range.valid = false;
	t0 = mono_ns();
	if (commit && fresh) {
		u->pt.hold_ns = USER_HOLD_NS;
		/* nothing written yet: give up rather than hold them */
		u->pt.hold_fail = true;
	}
	if (commit)
		user_rt(u, true);
	err = user_restop(u, commit);
	if (err) {
		user_rt(u, false);
		u->resumed = true;
		return err;
	}
	if (commit) {
		/* pt_stop_all() from one thread */
		u->pt.hold_ns = USER_HOLD_NS;
		err = user_stop_all(u);
		/* stopped: from here on (the commit hook's calls) no giving
		 * up, the jumps may be written */
		u->pt.hold_fail = false;
		t1 = mono_ns();
		u->pause.stop = t1 - t0;
		u->pause.threads = u->pt.nth;
		err = err ?: user_commit(u);
		if (!err && u->commit_fn)
			err = u->commit_fn(u, u->commit_ctx);
		/* killed workers' mapped memfds the attach could not check:
		 * nothing to do (no remote call) unless there are some */
		if (!err && u->nstray)
			user_strays_close(u);
	}
	t1 = mono_ns();
	pt_detach_others(&u->pt);	/* they need not wait for the close */
	if (commit) {
		uint64_t now = mono_ns();

		u->pause.resume = now - t1;
		u->pause.total = fresh ? longest_stop(u, now) : now - t0;
		u->pause.holds = u->pt.holds;
		u->pause.retries = u->pt.retries;
	}
	/* the memfd's descriptor stays open in the target until the detach
	 * (user_unmap.c): the runtime maps chunks of blocks from it */
	e = 0;
	user_unhold(u);
	e = pt_detach(&u->pt) ?: e;	/* never leave it stopped */
	user_rt(u, false);
	user_note_exit(u);
	u->resumed = true;
	/* threads let go meanwhile (hold) ran: the longest stop counts */
	if (commit && fresh)
		u->stop_ns += u->pause.total;
	else
		user_count_stop(u);
	user_unboost(u);
	if (!err && e)
		err = user_err(u, e, "resume pid %d", u->pid);
	return err;
}
