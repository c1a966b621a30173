/*
 * The user-mode side of the combined run: attach to the -p process or
 * start the -c command, install every user-mode site (user.h), follow an
 * exec, notice the target's end, report the user side's warnings.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ast.h"
#include "cg.h"
#include "child.h"
#include "exitwatch.h"
#include "format.h"
#include "guard.h"
#include "kernel.h"
#include "merge.h"
#include "native.h"
#include "output.h"
#include "probes.h"
#include "run.h"
#include "sema.h"
#include "user.h"
#include "util.h"
#include "ptrace.h"
#include "progress.h"
#include "run_int.h"

void run_fleet_add(struct run *r, struct ubt_user *u)
{
	r->fleet = xrealloc(r->fleet, (r->nfleet + 1) * sizeof(*r->fleet));
	r->fleet[r->nfleet++] = u;
}

/*
 * The binaries with user-mode sites (resolved, once each): their code
 * slices are mapped in the stop that places the runtime, so that
 * preparing the sites later stops nothing.  In r->c's arena, the
 * array malloc'ed (freed with the run).
 */
static const char **run_user_modules(struct run *r, size_t *n)
{
	const char **mods = NULL;
	char rp[PATH_MAX];
	const char *last = NULL;
	size_t cnt = 0;

	for (int i = 0; i < r->nobj->nprogs; i++) {
		const struct cg_prog *p = &r->nobj->progs[i];

		for (int j = 0; j < p->nmatches; j++) {
			const char *t = p->matches[j].target;
			size_t k;

			if (!t || (last && !strcmp(t, last)))
				continue;
			last = t;
			if (!realpath(t, rp))
				continue;
			for (k = 0; k < cnt && strcmp(mods[k], rp); k++)
				;
			if (k < cnt)
				continue;
			mods = xrealloc(mods, (cnt + 1) * sizeof(*mods));
			mods[cnt++] = arena_printf(&r->c->arena, "%s", rp);
		}
	}
	*n = cnt;
	return mods;
}

/*
 * Thread blocks: as many as RUN_BLOCKS_VM bytes of blocks hold, between
 * the default (1024) and RUN_BLOCKS_MAX.  The memfd is sparse: a block's
 * pages are made when its thread first writes them, so the blocks
 * nobody takes cost address space in the target and in ubt, no memory;
 * a process with more live threads than that at once (a thread that is
 * gone leaves its block to the next) records nothing in the others, said
 * at exit.
 */
#define RUN_BLOCKS_VM (4ULL << 30)
#define RUN_BLOCKS_MAX 16384u

static void run_user_nblocks(struct memfd_layout *l)
{
	struct memfd_layout one = *l;
	uint64_t per, n;

	one.nblocks = 1;
	per = memfd_layout_size(&one);
	one.nblocks = 2;
	per = memfd_layout_size(&one) - per;
	n = per ? RUN_BLOCKS_VM / per : 0;
	if (n > RUN_BLOCKS_MAX)
		n = RUN_BLOCKS_MAX;
	if (n > l->nblocks)
		l->nblocks = (uint32_t)n;
}

/* The options every process's user side is attached with. */
void run_user_opts(struct run *r, struct user_opts *uo)
{
	*uo = (struct user_opts){ .sz = sizeof(*uo),
				  .runtime_path = r->o->runtime_path,
				  .fault_safe_reads = true,
				  .task = r->nobj->native_task };
	/* the runtime near the first return probe's module (tramp.c) */
	for (int i = 0; i < r->nobj->nprogs && !uo->near; i++) {
		const struct cg_prog *p = &r->nobj->progs[i];

		if (p->provider == PROV_URETPROBE && p->nmatches &&
		    realpath(p->matches[0].target, r->near))
			uo->near = r->near;
	}
	memfd_layout_default(&uo->layout);
	/* printf-heavy probes: rings are touched only as far as used */
	if (uo->layout.ring_size < RUN_RING_SIZE)
		uo->layout.ring_size = RUN_RING_SIZE;
	if (r->nobj->nevents && uo->layout.ring_size < RUN_RING_SIZE_EVENTS)
		uo->layout.ring_size = RUN_RING_SIZE_EVENTS;
	if (uo->layout.map_size < r->nobj->native_area)
		uo->layout.map_size = (r->nobj->native_area + 4095) & ~4095ull;
	uo->layout.shared_size = native_shared_size(r->nobj->native_maps,
						    r->nobj->nnative_maps);
	run_user_nblocks(&uo->layout);
	if (!r->mods)
		r->mods = run_user_modules(r, &r->nmods);
	uo->modules = r->mods;
	uo->nmodules = r->nmods;
}

/* r->u attached: its tables placed, its globals set. */
int run_user_prepare(struct run *r)
{
	for (int i = 0; i < r->nobj->nnative_maps; i++) {
		const struct native_map *nm = &r->nobj->native_maps[i];
		struct memfd_htab t = { .off = nm->off, .nslots = nm->nslots,
					.key_size = nm->key_size,
					.val_size = nm->val_size,
					.max_keys = nm->max_keys };
		int e;

		if (nm->kind == NATIVE_MAP_SHARED)
			e = memfd_shtab_add(user_memfd(r->u),
					    &run_shtab_of(nm));
		else if (nm->kind == NATIVE_MAP_HTAB)
			e = memfd_htab_add(user_memfd(r->u), &t);
		else
			continue;
		if (!e && nm->tslot)
			e = run_slot_place(r);
		if (e) {
			fprintf(stderr, "ubt: cannot place map %s: %s\n",
				nm->name, strerror(-e));
			return e;
		}
	}
	/* every new block starts with the globals */
	if (user_memfd(r->u)->ctl->tmpl_len < NATIVE_MAPS_OFF)
		user_memfd(r->u)->ctl->tmpl_len = NATIVE_MAPS_OFF;
	if (!r->ustart)
		r->ustart = mono_ns();
	run_set_global_one(r, NATIVE_GLOBALS_START, r->ustart);
	run_set_global_one(r, NATIVE_GLOBALS_CPID, r->cpid);
	run_set_global_one(r, NATIVE_GLOBALS_PID, user_pid(r->u));
	return 0;
}

/*
 * The top of the [stack] mapping of pid (0: not found): the same for the
 * life of an image (the stack grows at its bottom), another after an
 * execve() (randomised).
 */
static unsigned long run_stack_top(pid_t pid)
{
	char path[64], line[512];
	unsigned long lo, hi = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			break;
	fclose(f);
	return hi;
}

int run_user_attach(struct run *r)
{
	struct user_opts uo;
	char err[512];

	run_user_opts(r, &uo);
	if (r->o->pid > 0) {
		/* an execve() under the attach (its remote calls fail on
		 * the old image's memory): attached to afresh */
		for (int tries = 1;; tries++) {
			unsigned long top = run_stack_top(r->o->pid);

			r->u = user_attach_pid(r->o->pid, &uo, err,
					       sizeof(err));
			if (r->u || tries > RUN_EXEC_RETRIES || !top ||
			    kill(r->o->pid, 0) ||
			    run_stack_top(r->o->pid) == top)
				break;
			if (r->o->verbose)
				fprintf(stderr, "ubt: pid %d ran execve() "
					"during the attach (%s): attaching "
					"again (%d)\n", (int)r->o->pid, err,
					tries);
		}
	} else {
		char **argv = child_split_cmd(r->o->cmd);

		if (!argv) {
			fprintf(stderr, "ubt: cannot parse the command: %s\n",
				r->o->cmd);
			return -EINVAL;
		}
		r->u = user_attach_cmd(argv, &uo, err, sizeof(err));
		free(argv);
		if (r->u)
			r->cpid = user_pid(r->u);
	}
	if (!r->u) {
		fprintf(stderr, "ubt: %s\n", err);
		return -EINVAL;
	}
	run_fleet_add(r, r->u);
	r->ustart = 0;
	return run_user_prepare(r);
}

/* One patched function: the probes that run there, in program order. */
struct run_site {
	char bin[PATH_MAX];
	const char *func;
	uint64_t offset;
	uint64_t file_off;	/* where the probe is in the file */
	enum user_probe_kind kind;
	bool regs;		/* a USDT site: its code takes pt_regs */
	bool reads_regs;	/* regs, and a program there reads them: else
				 * the trampoline need not save them all */
	uint64_t sem_off;	/* its semaphore's file offset, 0: none */
	const char *name;	/* for messages */
	const struct cg_prog **progs;
	int nprogs;
};

/*
 * The code for a site: one program's code, or for several a chain that
 * calls each in turn (calls relative to the chain, keeping the stack
 * aligned as the trampoline left it), followed by their code.
 */
static void *run_site_code(const struct run_site *st, size_t *len)
{
	size_t head = 4 + 5 * st->nprogs + 4 + 1, at, *offs;
	uint8_t *code;

	if (st->nprogs == 1) {
		*len = st->progs[0]->code_len;
		code = xmalloc(*len);
		memcpy(code, st->progs[0]->code, *len);
		return code;
	}
	offs = xcalloc(st->nprogs, sizeof(*offs));
	at = (head + 15) & ~(size_t)15;
	for (int i = 0; i < st->nprogs; i++) {
		offs[i] = at;
		at = (at + st->progs[i]->code_len + 15) & ~(size_t)15;
	}
	code = xmalloc(at);
	memset(code, 0xcc, at);
	memcpy(code, "\x48\x83\xec\x08", 4);	/* sub $8,%rsp */
	for (int i = 0; i < st->nprogs; i++) {
		size_t call = 4 + 5 * i;
		int32_t rel = (int32_t)(offs[i] - (call + 5));

		code[call] = 0xe8;			/* call rel32 */
		memcpy(code + call + 1, &rel, 4);
		memcpy(code + offs[i], st->progs[i]->code,
		       st->progs[i]->code_len);
	}
	memcpy(code + 4 + 5 * st->nprogs, "\x48\x83\xc4\x08\xc3", 5);
	free(offs);
	*len = at;
	return code;
}

/* A hash of a site's key (bin, func, offset, kind, regs): FNV-1a. */
static uint64_t site_hash(const char *bin, const char *func, uint64_t off,
			  enum user_probe_kind kind, bool regs)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *c = bin; *c; c++)
		h = (h ^ (uint8_t)*c) * 0x100000001b3ULL;
	h = (h ^ 0xff) * 0x100000001b3ULL;
	for (const char *c = func; *c; c++)
		h = (h ^ (uint8_t)*c) * 0x100000001b3ULL;
	h ^= off * 0x9e3779b97f4a7c15ULL;
	return h ^ ((uint64_t)kind << 1 | regs);
}

/*
 * An index of sites[0..n) by key, open addressing over *size slots (a
 * power of two, at least twice n), slot values index + 1; made anew as
 * it fills.  A library's wildcard has thousands of sites: found by a
 * linear search with two strcmp()s each, they took half of the time
 * before "Attaching" (1.6 s for libc's 7186).
 */
static void site_index_put(int *idx, size_t size, uint64_t h, int i)
{
	size_t k = (size_t)h & (size - 1);

	while (idx[k])
		k = (k + 1) & (size - 1);
	idx[k] = i + 1;
}

static int *site_index_grow(int *idx, size_t *size, const uint64_t *hs,
			    int n)
{
	if ((size_t)n * 2 < *size)
		return idx;
	free(idx);
	*size = *size ? *size * 2 : 64;
	idx = xcalloc(*size, sizeof(*idx));
	for (int i = 0; i < n; i++)
		site_index_put(idx, *size, hs[i], i);
	return idx;
}

static struct run_site *run_sites_of(struct run *r, int *nsites)
{
	struct run_site *sites = NULL;
	uint64_t *hs = NULL;
	int *idx = NULL;
	size_t isize = 0;
	char last_target[PATH_MAX] = "", rp[PATH_MAX];
	int n = 0, cap = 0;

	for (int i = 0; i < r->nobj->nprogs; i++) {
		const struct cg_prog *p = &r->nobj->progs[i];
		enum user_probe_kind kind = p->provider == PROV_URETPROBE ?
						    USER_PROBE_RETURN :
						    USER_PROBE_ENTRY;

		bool regs = p->provider == PROV_USDT;

		if (p->standby)		/* runs in the kernel (run_xmap.c) */
			continue;
		for (int j = 0; j < p->nmatches; j++) {
			const struct probes_match *m = &p->matches[j];
			struct run_site *st = NULL;
			const char *func = m->func;
			uint64_t off = m->func_offset;
			uint64_t h;
			size_t at;

			/* placement took only sites a function holds */
			if (regs && place_usdt_func(&r->c->arena, m, &func,
						    &off))
				BUG("USDT site %s in user mode without a "
				    "function", m->name);
			/* a wildcard's matches share their binary */
			if (strcmp(m->target, last_target)) {
				snprintf(last_target, sizeof(last_target), "%s",
					 m->target);
				if (!realpath(m->target, rp))
					snprintf(rp, sizeof(rp), "%s",
						 m->target);
			}
			h = site_hash(rp, func, off, kind, regs);
			idx = site_index_grow(idx, &isize, hs, n);
			for (at = (size_t)h & (isize - 1); idx[at] && !st;
			     at = (at + 1) & (isize - 1)) {
				struct run_site *k = &sites[idx[at] - 1];

				if (hs[idx[at] - 1] == h && k->offset == off &&
				    k->kind == kind && k->regs == regs &&
				    !strcmp(k->func, func) &&
				    !strcmp(k->bin, rp))
					st = k;
			}
			if (!st) {
				if (n == cap) {
					cap = cap ? 2 * cap : 16;
					sites = xrealloc(sites,
							 cap * sizeof(*sites));
					hs = xrealloc(hs, cap * sizeof(*hs));
				}
				hs[n] = h;
				site_index_put(idx, isize, h, n);
				st = &sites[n++];
				memset(st, 0, sizeof(*st));
				snprintf(st->bin, sizeof(st->bin), "%s", rp);
				st->func = func;
				st->offset = off;
				st->file_off = m->offset;
				st->kind = kind;
				st->regs = regs;
				st->sem_off = regs ? m->semaphore_offset : 0;
				st->name = m->name ? m->name : m->func;
			}
			st->progs = xrealloc(st->progs, (st->nprogs + 1) *
							sizeof(*st->progs));
			st->progs[st->nprogs++] = p;
			st->reads_regs |= regs && !p->ctx_unused;
		}
	}
	free(idx);
	free(hs);
	*nsites = n;
	return sites;
}

void run_user_sites(struct run *r,
		    void (*cb)(const char *bin, uint64_t file_off,
			       uint64_t sem_off, bool ret, void *ctx),
		    void *ctx)
{
	int nsites;
	struct run_site *sites = run_sites_of(r, &nsites);

	for (int i = 0; i < nsites; i++) {
		cb(sites[i].bin, sites[i].file_off, sites[i].sem_off,
		   sites[i].kind == USER_PROBE_RETURN, ctx);
		free(sites[i].progs);
	}
	free(sites);
}

/*
 * The address in the target of file offset off of bin (resolved path), in
 * its mappings m (read once for every site).
 */
static int run_maps_addr(const struct pt_map *m, int n, const char *bin,
			   uint64_t off, uint64_t *addr)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(m[i].path, bin) && off >= m[i].off &&
		    off - m[i].off < m[i].end - m[i].start) {
			*addr = m[i].start + (off - m[i].off);
			return 0;
		}
	return -ENOENT;
}

/* The same for pid, its mappings read now. */
int run_target_addr(pid_t pid, const char *bin, uint64_t off,
		    uint64_t *addr)
{
	struct pt_map *m = NULL;
	int n = 0, err = pt_maps(pid, &m, &n);

	err = err ?: run_maps_addr(m, n, bin, off, addr);
	free(m);
	return err;
}

/* A USDT site's semaphore, incremented while the probes are in place. */
static int run_user_semaphore(struct run *r, const struct run_site *st,
			       const struct pt_map *maps, int nmaps)
{
	uint64_t at;
	int err = run_maps_addr(maps, nmaps, st->bin, st->sem_off, &at);

	err = err ?: user_semaphore_add(r->u, at);
	if (err)
		fprintf(stderr, "ubt: %s: cannot set the semaphore: %s\n",
			st->name, err == -ENOENT ? "not mapped" :
						   user_error(r->u));
	return err;
}

/* Install every user-mode program at each of its matches. */
/*
 * Install every user-mode probe; again: in a new image the target exec'd,
 * where a probe whose binary is not there has no site (as in the kernel):
 * said with -v, not an error.
 */
int run_user_install(struct run *r, int *nprobes, bool again)
{
	int nsites, nmaps = 0, err = 0;
	struct run_site *sites = run_sites_of(r, &nsites);
	struct pt_map *maps = NULL;

	struct progress pg;

	/* hundreds of sites in one library: its mappings read once */
	if (pt_maps(user_pid(r->u), &maps, &nmaps))
		nmaps = 0;

	progress_start(&pg, "sites patched", nsites);
	for (int i = 0; i < nsites && !err; i++) {
		progress_step(&pg, i);
		struct run_site *st = &sites[i];
		size_t len;
		void *code = run_site_code(st, &len);
		uint64_t at = 0;

		/* -ENOENT: code that never reaches its block, or has no
		 * func */
		err = native_patch_tls(code, len, user_tls_offset(r->u));
		if (err == -ENOENT)
			err = 0;
		if (!err && !run_maps_addr(maps, nmaps, st->bin,
					     st->file_off, &at))
			err = native_patch_func(code, len, at);
		if (err == -ENOENT)
			err = 0;
		if (err) {
			progress_end(&pg);
			fprintf(stderr, "ubt: %s: cannot place the native "
				"code: %s\n", st->name, strerror(-err));
		}
		if (!err) {
			err = user_install(r->u, &(struct user_probe){
				.sz = sizeof(struct user_probe),
				.binary = st->bin,
				.symbol = st->func,
				.kind = st->kind,
				.code = code,
				.code_len = len,
				.offset = st->offset,
				.regs = st->reads_regs,
			});
			if (err)
				progress_end(&pg);
			if (err && again) {
				if (r->o->verbose)
					fprintf(stderr, "ubt: %s: no site in "
						"the new image: %s\n",
						st->name, user_error(r->u));
				err = 0;
			} else if (err && !r->cpid &&
				   user_image_changed(r->u)) {
				err = -ESTALE;	/* run_user_setup() again */
			} else if (err) {
				fprintf(stderr,
					"ubt: cannot attach %s in user mode: "
					"%s\n", st->name, user_error(r->u));
			}
		}
		free(code);
		/* the site is in place: the target may take it */
		if (!err && st->sem_off)
			err = run_user_semaphore(r, st, maps, nmaps);
		if (!err)
			*nprobes += st->nprogs;
	}
	if (!err)
		progress_step(&pg, nsites);
	progress_end(&pg);
	for (int i = 0; i < nsites; i++)
		free(sites[i].progs);
	free(sites);
	free(maps);
	return err ? err : 0;
}

/*
 * Let the target run, the prepared jumps written in one stop of every
 * thread (user_resume()); -v says how long it was stopped.  A target
 * killed meanwhile is no error: the run ends as for any exit.
 */
int run_user_go(struct run *r)
{
	char pause[256];
	int err;

	if (user_resumed(r->u))
		return 0;
	user_clock_tick(r->u);
	err = user_resume(r->u);
	if (err == -ESTALE && !r->cpid)
		return err;	/* an execve() meanwhile: run_user_setup() */
	/* the final stop gave up, nothing written: run_user_setup() puts
	 * the probes in the kernel (run_fallback.c) */
	if (err == -EAGAIN && !r->cpid && run_fallback_ready(r))
		return err;
	if (err && !run_target_exited(r)) {
		fprintf(stderr, "ubt: cannot resume the target: %s\n",
			user_error(r->u));
		return err;
	}
	if (r->o->verbose && user_pause_text(r->u, pause, sizeof(pause)))
		fprintf(stderr, "ubt: attach pause %s\n", pause);
	if (r->o->verbose)
		fprintf(stderr, "ubt: target stopped for %.3f ms in all%s\n",
			user_stop_ns(r->u) / 1e6,
			r->cpid ? " (at its entry point)" :
				  " (the attach pause, and one thread for the "
				  "runtime and code areas)");
	if (r->o->verbose && !r->cpid &&
	    user_ctl_text(r->u, pause, sizeof(pause)))
		fprintf(stderr, "ubt: the thread for the runtime and code "
			"areas: %s\n", pause);
	if (r->o->verbose) {
		int stub, near, far;

		user_wraps(r->u, &stub, &near, &far);
		if (stub + near + far)
			fprintf(stderr, "ubt: return probes: %d site(s) jump "
				"to their own stub in the runtime, %d to its "
				"wrapped call directly, %d through an "
				"address\n",
				stub, near, far);
	}
	return 0;
}

/* -p, an execve() during the attach: the new image attached to afresh */
static int run_user_again(struct run *r, int tries)
{
	if (r->o->verbose)
		fprintf(stderr, "ubt: pid %d ran execve() during the attach: "
			"attaching again (%d)\n", (int)user_pid(r->u), tries);
	if (r->nfleet && r->fleet[r->nfleet - 1] == r->u)
		r->nfleet--;
	user_free(r->u);
	r->u = NULL;
	return run_user_attach(r) ?: run_xmap_place(r);
}

int run_user_setup(struct run *r, int *nprobes)
{
	int err, n, tries = 0;

	for (;;) {
		n = 0;
		err = run_user_install(r, &n, false);
		if (!err && user_install_exec_hook(r->u) && r->o->verbose)
			fprintf(stderr, "ubt: execve() is not followed: %s\n",
				user_error(r->u));
		if (!err && r->o->verbose && user_vfork_note(r->u))
			fprintf(stderr, "ubt: children that share the memory "
				"of their parent record as their parent thread "
				"after these calls (no vfork guard): %s\n",
				user_vfork_note(r->u));
		if (!err && r->o->verbose && user_vmwatch_note(r->u))
			fprintf(stderr, "ubt: children made with clone(CLONE_VM) "
				"from now on are not seen: %s\n",
				user_vmwatch_note(r->u));
		if (!err && !r->cpid)
			err = run_user_go(r);
		if (err != -ESTALE)
			break;
		if (++tries > RUN_EXEC_RETRIES) {
			fprintf(stderr, "ubt: pid %d ran execve() during each "
				"of %d attaches: %s\n", (int)user_pid(r->u),
				tries, user_error(r->u));
			break;
		}
		err = run_user_again(r, tries);
		if (err)
			break;
	}
	if (err == -EAGAIN && run_fallback_ready(r)) {
		return run_fallback(r, "the attach's final stop gave up");
	}
	if (!err)
		*nprobes += n;
	return err;
}

/*
 * The target announced an execve() (runtime/rt_abi.h RT_FN_EXEC_HOOK):
 * follow it, place the probes again in the new image before it runs.
 */
void run_follow_exec(struct run *r)
{
	uint64_t t0 = mono_ns();
	int n = 0, err = user_follow_exec(r->u);

	if (err == 0)
		return;
	if (err > 0) {
		err = run_user_install(r, &n, true);
		/* system-wide: the new image has the kernel's int3s too */
		if (r->exec_installed)
			err = r->exec_installed(r, err);
		if (user_install_exec_hook(r->u) && r->o->verbose)
			fprintf(stderr, "ubt: execve() is not followed: %s\n",
				user_error(r->u));
		err = user_resume(r->u) ?: err;
	}
	if (err < 0)
		fprintf(stderr, "ubt: pid %d ran execve(): its user-mode probes "
			"do not run in the new image: %s\n",
			(int)user_pid(r->u), user_error(r->u));
	else if (r->o->verbose)
		fprintf(stderr, "ubt: pid %d ran execve(): user-mode probes "
			"placed again in the new image (%d probe(s), %.3f ms)\n",
			(int)user_pid(r->u), n, (mono_ns() - t0) / 1e6);
}

bool run_target_gone(struct run *r)
{
	struct pollfd pfd = { .fd = r->pidfd, .events = POLLIN };
	int st;

	if (r->cpid > 0) {
		if (r->reaped)
			return true;
		/* reaped by the ptrace code? */
		if (r->u && user_exit_status(r->u, &st)) {
			r->status = st;
			return r->reaped = true;
		}
		/* through the pidfd: even if SIGCHLD was ignored */
		r->reaped = child_gone(r->cpid, r->pidfd, &r->status);
		return r->reaped;
	}
	if (r->pidfd >= 0) {
		int n = poll(&pfd, 1, 0);

		if (n == 0)
			return false;
		if (n == 1 && !(pfd.revents & POLLNVAL))
			return true;
	}
	return kill(r->u ? user_pid(r->u) : r->o->pid, 0) && errno == ESRCH;
}

/*
 * After a failed ptrace operation: has the target exited?  A killed
 * process fails them before it is a zombie: give it up to 100 ms.
 */
bool run_target_exited(struct run *r)
{
	for (int i = 0; i < 100; i++) {
		if (run_target_gone(r))
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * A count the target's threads wrote into a shared table's header: each
 * of `blocks` threads (every one that took a block) cannot have made
 * more than one attempt per nanosecond in the `ns` since the probes were
 * placed.  A count with no thread to have made it is not believed.
 */
static bool shtab_plausible(uint64_t n, uint32_t blocks, uint64_t ns)
{
	return !n || (blocks && n / blocks <= ns);
}

/*
 * Updates of map `map` the target's tables refused (full), all threads.
 * The counters are the target's to write: a thread cannot have tried
 * more than one update per nanosecond since the probes were placed, so a
 * count above that is not believed, and said so.
 */
uint64_t run_user_map_full(struct run *r, int map)
{
	const struct native_map *nm = run_native_map(r, map);
	struct memfd *mf = user_memfd(r->u);
	uint64_t ns = mono_ns() - r->ustart, n = 0;
	uint32_t bad = 0, blocks = memfd_nblocks_used(mf);

	if (nm && nm->kind == NATIVE_MAP_HTAB) {
		struct memfd_htab t = { .off = nm->off, .nslots = nm->nslots,
					.key_size = nm->key_size,
					.val_size = nm->val_size };

		n = memfd_htab_dropped(mf, &t, ns, &bad);
	} else if (nm && nm->kind == NATIVE_MAP_SHARED) {
		/* one table, every thread's updates */
		n = memfd_shtab_dropped(mf, &run_shtab_of(nm));
		if (!shtab_plausible(n, blocks, ns)) {
			bad = 1;
			n = 0;
		}
	} else if (nm && nm->kind == NATIVE_MAP_XMAP) {
		bool xbad = false;

		n = run_xmap_dropped(r, map, &xbad);
		bad = xbad;
	}
	if (bad)
		fprintf(stderr, "WARNING: ignoring an implausible count of "
			"dropped updates of %s read back from the target\n",
			r->kobj->maps[map].name);
	return n;
}

/*
 * Inserts of new keys into map `map` dropped because another thread of
 * the target held the table's insert lock past the runtime's wait
 * (runtime/rt_shtab.c): not a full map, said apart.
 */
uint64_t run_user_map_lockdrop(struct run *r, int map)
{
	const struct native_map *nm = run_native_map(r, map);
	struct memfd *mf = user_memfd(r->u);
	uint64_t n;

	if (!nm || nm->kind != NATIVE_MAP_SHARED)
		return 0;
	n = memfd_shtab_lockdrop(mf, &run_shtab_of(nm));
	if (!shtab_plausible(n, memfd_nblocks_used(mf),
			     mono_ns() - r->ustart)) {
		fprintf(stderr, "WARNING: ignoring an implausible count of "
			"dropped inserts of %s read back from the target\n",
			r->kobj->maps[map].name);
		return 0;
	}
	return n;
}

/* What user mode could not record, said once at exit. */
void run_user_warnings(struct run *r)
{
	uint64_t n = 0, nt = 0, nr = 0, ntsc = 0;

	run_for_each_user(r, j) {
		n += memfd_shadow_lost(user_memfd(r->u));
		nt += user_unrecorded_threads(r->u);
		if (user_memfd(r->u)->ctl) {
			nr += memfd_blocks_reused(user_memfd(r->u));
			ntsc += memfd_notsc_threads(user_memfd(r->u));
		}
	}
	if (r->o->verbose && nr)
		fprintf(stderr, "ubt: %llu per-thread block(s) taken again "
			"after their threads exited\n",
			(unsigned long long)nr);
	if (r->o->verbose && ntsc)
		fprintf(stderr, "ubt: %llu thread(s) ran with the time-stamp "
			"counter disabled (PR_TSC_SIGSEGV): their clock, "
			"stamps and rand seed came from clock_gettime(2), "
			"never rdtsc\n",
			(unsigned long long)ntsc);
	/* "Map full" once per map, kernel and user-mode updates together */
	for (int i = 0; i < r->kobj->nmaps; i++) {
		/* with -k each kernel one was reported as it came */
		uint64_t full = r->c->helper_check ? 0 :
				kernel_map_full(r->k, i);

		run_for_each_user(r, j)
			full += run_user_map_full(r, i);

		if (full)
			out_map_full(stderr, r->kobj->maps[i].name,
				     r->kobj->maps[i].max_entries, full);
		full = 0;
		run_for_each_user(r, j)
			full += run_user_map_lockdrop(r, i);
		if (full)
			fprintf(stderr, "WARNING: %llu insert(s) of a new key "
				"into %s dropped: another thread of the "
				"target held the map's insert lock through "
				"the whole bounded wait (at least 20 ms: "
				"preempted, or gone)\n",
				(unsigned long long)full,
				r->kobj->maps[i].name);
	}
	run_xmap_warnings(r);

	if (n)
		fprintf(stderr, "WARNING: %llu return probe hits were not "
			"recorded (a thread's shadow stack was full)\n",
			(unsigned long long)n);
	n = nt;
	if (n)
		fprintf(stderr, "WARNING: %llu threads found no per-thread "
			"block: their hits were not recorded\n",
			(unsigned long long)n);
}

/*
 * A child made by clone(CLONE_VM) in the target since the attach
 * (user_vmwatch.c), or one a thread is about to make with libc's clone()
 * and waits for the detach to make (user_vm_asked()), runs on the block
 * of the thread that made it: its
 * hits would count as that thread's, with its pid and tid, and a return
 * probe would share its shadow stack.  The probes move to the kernel
 * (run_fallback.c); where they cannot, the run ends with an error, the
 * maps unprinted (their counts mix the two); the detach restores the
 * code with the child stopped too.  True: the run ends.
 */
bool run_user_vm_child(struct run *r)
{
	unsigned n = 0;
	pid_t c = user_vm_child(r->u, &n), a = c ? 0 : user_vm_asked(r->u);

	if (!c && !a)
		return false;
	if (run_fallback_ready(r) && !run_fallback_state(r))
		return run_fallback_child(r, c, n) != 0;
	if (a)
		fprintf(stderr, "ubt: pid %d (thread %d) is making a "
			"child with clone(CLONE_VM) without CLONE_VFORK: it "
			"would run on the per-thread block of the thread that "
			"makes it, so user mode cannot count it apart; the "
			"probes cannot move to the kernel in this run (%s): "
			"the run ends, its maps unprinted (use --mode "
			"kernel)\n", (int)user_pid(r->u), (int)a,
			run_fallback_why_not(r));
	else
		fprintf(stderr, "ubt: pid %d made %u child(ren) with "
			"clone(CLONE_VM) without CLONE_VFORK (the first: pid "
			"%d) after ubt attached: the child runs on the "
			"per-thread block of the thread that made it, so user "
			"mode cannot count it apart; the probes cannot move to "
			"the kernel in this run (%s): the run ends, its maps "
			"unprinted (use --mode kernel)\n", (int)user_pid(r->u),
			n, (int)c, run_fallback_why_not(r));
	return true;
}
