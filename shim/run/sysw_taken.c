/*
 * System-wide user mode's taken table (sysw_int.h): a process goes in
 * with the sites patched there, the BPF programs that follow its
 * children and mark the calls the kernel sees enter there are loaded,
 * and what they could not write is said at the end.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "run_int.h"
#include "sysw_bpf.h"
#include "sysw_int.h"
#include "user.h"
#include "util.h"

/*
 * The taken table's followers and the return marks' program: without
 * them, a process taken still counts once unless another tracer puts a
 * uprobe on one of its sites (then its children, or its returns, may
 * count twice: said here).
 */
void sysw_taken_load(struct run *r, struct sysw *s)
{
	char why[256] = "";
	int e;

	s->marks_fd = kernel_own_map_fd(r->k, CG_MAP_RETMARK);
	if (s->taken_fd < 0)
		return;
	/* only uretprobes skip there: the mark program reads its own */
	s->patched_fd = kernel_own_map_fd(r->k, CG_MAP_PATCHED);
	if (s->patched_fd < 0) {
		LIBBPF_OPTS(bpf_map_create_opts, o,
			    .map_flags = BPF_F_NO_PREALLOC);

		s->patched_fd = bpf_map_create(BPF_MAP_TYPE_HASH,
					       "ubt_sysw_patched", 16, 4,
					       CG_PATCHED_MAX, &o);
		s->own_patched = s->patched_fd >= 0;
	}
	if (s->patched_fd < 0) {
		fprintf(stderr, "ubt: system-wide user mode: no table of the "
			"sites patched (%s): another tracer's uprobe on a "
			"site may count its hits twice\n", strerror(errno));
		return;
	}
	s->lost_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ubt_sysw_lost", 4, 8,
				    SYSW_LOST_N, NULL);
	e = s->lost_fd < 0 ? -errno :
			     sysw_bpf_follow(s->taken_fd, s->lost_fd,
					     s->follow, why, sizeof(why));
	if (e)
		fprintf(stderr, "ubt: system-wide user mode: the children of "
			"processes taken are not followed (%s): another "
			"tracer's uprobe on a site may count their hits "
			"twice\n",
			s->lost_fd < 0 ? strerror(-e) : why);
	if (s->marks_fd < 0 || s->lost_fd < 0)
		return;
	s->mark_fd = sysw_bpf_mark(s->taken_fd, s->patched_fd, s->marks_fd,
				   s->lost_fd);
	if (s->mark_fd < 0)
		fprintf(stderr, "ubt: system-wide user mode: no return marks "
			"(%s): another tracer's uprobe on a uretprobe's "
			"function may count its returns twice\n",
			strerror(-s->mark_fd));
}

/* What the followers and marks could not write, said once at the end. */
void sysw_taken_lost(const struct sysw *s)
{
	uint64_t n[SYSW_LOST_N] = { 0 };

	for (uint32_t i = 0; s->lost_fd >= 0 && i < SYSW_LOST_N; i++)
		bpf_map_lookup_elem(s->lost_fd, &i, &n[i]);
	if (n[SYSW_LOST_CHILD])
		fprintf(stderr, "ubt: system-wide user mode: %llu child "
			"process(es) of processes taken not in the taken table "
			"(%d at most): if another tracer put a uprobe on their "
			"sites, their hits counted twice\n",
			(unsigned long long)n[SYSW_LOST_CHILD], CG_TAKEN_MAX);
	if (n[SYSW_LOST_MARK])
		fprintf(stderr, "ubt: system-wide user mode: %llu return "
			"mark(s) not written: as many returns may have "
			"counted twice\n",
			(unsigned long long)n[SYSW_LOST_MARK]);
}

struct sysw_patch {
	struct run *r;
	uint32_t gen;
	int n, err;
};

/* CG_MAP_PATCHED's key */
struct sysw_site_key {
	uint32_t gen, pad;
	uint64_t at;
};

struct sysw_gen {
	uint32_t gen;
	uint64_t *at;		/* the sites it put in */
	int n;
	int unseen;		/* sweeps in a row that did not find it */
};

/* A site patched in r->u: {gen, the kernel probe's address} in. */
static void sysw_patched_site(const char *bin, uint64_t file_off,
			      uint64_t sem_off, bool ret, void *ctx)
{
	struct sysw_patch *p = ctx;
	struct sysw *s = p->r->sw;
	struct sysw_site_key key = { .gen = p->gen };
	struct sysw_gen *g;
	uint32_t one = 1;

	(void)sem_off;
	(void)ret;
	if (run_target_addr(user_pid(p->r->u), bin, file_off, &key.at) ||
	    !user_site_at(p->r->u, key.at))
		return;
	if (bpf_map_update_elem(s->patched_fd, &key, &one, BPF_ANY)) {
		p->err = p->err ?: -errno;
		return;
	}
	p->n++;
	g = s->ngens ? &s->gens[s->ngens - 1] : NULL;
	if (!g || g->gen != p->gen) {
		s->gens = xrealloc(s->gens, (s->ngens + 1) * sizeof(*s->gens));
		g = &s->gens[s->ngens++];
		*g = (struct sysw_gen){ .gen = p->gen };
	}
	g->at = xrealloc(g->at, (g->n + 1) * sizeof(*g->at));
	g->at[g->n++] = key.at;
}

static bool sysw_gen_live(const uint32_t *live, int n, uint32_t gen)
{
	for (int i = 0; i < n; i++)
		if (live[i] == gen)
			return true;
	return false;
}

/*
 * A generation comes back only through a fork of a process that has it
 * (sysw_bpf.c): one not in the table never is again.  The walk of the
 * table may miss a child put in behind it while its parent leaves ahead
 * of it: a generation goes when two sweeps in a row (a second apart)
 * did not find it.
 */
void sysw_taken_sweep(struct sysw *s)
{
	uint32_t key, next, *live = NULL;
	int nlive = 0, n = 0;

	if (s->taken_fd < 0 || !s->ngens)
		return;
	for (void *at = NULL; !bpf_map_get_next_key(s->taken_fd, at, &next);
	     at = &key) {
		uint32_t gen;

		key = next;
		if (bpf_map_lookup_elem(s->taken_fd, &key, &gen))
			continue;
		live = xrealloc(live, (nlive + 1) * sizeof(*live));
		live[nlive++] = gen;
	}
	for (int i = 0; i < s->ngens; i++) {
		struct sysw_gen *g = &s->gens[i];

		g->unseen = sysw_gen_live(live, nlive, g->gen) ? 0 :
								 g->unseen + 1;
		if (g->unseen < 2) {
			s->gens[n++] = *g;
			continue;
		}
		for (int j = 0; j < g->n; j++) {
			struct sysw_site_key k = { .gen = g->gen,
						   .at = g->at[j] };

			bpf_map_delete_elem(s->patched_fd, &k);
		}
		free(g->at);
	}
	s->ngens = n;
	free(live);
}

void sysw_taken_free(struct sysw *s)
{
	for (int i = 0; i < s->ngens; i++)
		free(s->gens[i].at);
	free(s->gens);
	s->gens = NULL;
	s->ngens = 0;
}

/*
 * r->u into CG_MAP_TAKEN with a new generation, its patched sites into
 * CG_MAP_PATCHED first: while it is in, the kernel programs of its
 * probes return at once there at those sites (codegen/cg.c
 * cg_skip_taken()), but for the returns of calls that entered before.
 * Set while the process is stopped, with its jumps in place and the
 * kernel's int3s out (its children get the generation at their fork,
 * sysw_bpf.c); taken out before the int3s come back.  It leaves by
 * itself at exec and exit.  Not in when no site is patched there (the
 * kernel counts it all).  0, or -errno (a site or the process could not
 * go in) with why.
 */
int sysw_taken_in(struct run *r, int *n, char *why, size_t len)
{
	struct sysw *s = r->sw;
	struct sysw_patch p = { .r = r, .gen = ++s->gen ?: ++s->gen };
	uint32_t key = (uint32_t)user_pid(r->u);
	int e;

	*n = 0;
	if (s->taken_fd < 0 || s->patched_fd < 0)
		return 0;
	run_user_sites(r, sysw_patched_site, &p);
	*n = p.n;
	if (p.err)
		snprintf(why, len, "the table of sites patched: %s",
			 strerror(-p.err));
	if (!p.n)
		return p.err;
	if (bpf_map_update_elem(s->taken_fd, &key, &p.gen, BPF_ANY)) {
		e = -errno;
		snprintf(why, len, "the taken table: %s", strerror(-e));
		return e;
	}
	return p.err;
}

void sysw_taken_out(struct sysw *s, pid_t pid)
{
	uint32_t key = (uint32_t)pid;

	if (s->taken_fd >= 0)
		bpf_map_delete_elem(s->taken_fd, &key);
}

/*
 * -v: the processes still in the taken table (taken, or children of one,
 * still running: the others left it when they exited or exec'd).
 */
void sysw_taken_note(const struct sysw *s)
{
	uint32_t key, next;
	int n = 0, sites = 0;

	if (s->taken_fd < 0)
		return;
	for (void *at = NULL;
	     !bpf_map_get_next_key(s->taken_fd, at, &next) && n < INT_MAX;
	     at = &key) {
		key = next;
		n++;
	}
	for (int i = 0; i < s->ngens; i++)
		sites += s->gens[i].n;
	if (n)
		fprintf(stderr, "ubt: system-wide user mode: %d process(es) "
			"in the taken table at the end, %d patched site(s) "
			"recorded for them\n", n, sites);
	else
		fprintf(stderr, "ubt: system-wide user mode: no process in "
			"the taken table at the end, %d patched site(s) of "
			"processes gone still recorded\n", sites);
}
