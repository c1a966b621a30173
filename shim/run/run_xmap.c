/*
 * The run's side of the maps user-mode and kernel probes share at user
 * speed (codegen/cg_xmap.h): which they are (-v), their tables written
 * and mapped into the target before any probe is placed, their dropped
 * updates at exit.  When the target cannot map a table, the user-mode
 * probes that use one run in the kernel instead: their BPF programs were
 * built standby (cg_opts.standby), and are attached instead of installed;
 * the table stays, the kernel's programs alone use it.  That is decided
 * before anything is patched, and whatever was mapped is unmapped again.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cg.h"
#include "cg_xmap.h"
#include "kernel.h"
#include "native.h"
#include "place.h"
#include "sema.h"
#include "user.h"
#include "util.h"
#include "xmap.h"
#include "run_int.h"

void run_xmap_note(const struct cg_object *kobj, FILE *f)
{
	for (int i = 0; i < kobj->nmaps; i++)
		if (kobj->maps[i].xmap)
			fprintf(f, "ubt: map %s is shared by user-mode and "
				"kernel probes at user speed (a BPF array "
				"mapped into the target, %u slots)\n",
				kobj->maps[i].name, kobj->maps[i].xmap_slots);
}

/*
 * Standby, the user-mode probes that use a shared map, when each of them
 * uses only shared maps and aggregations that no other user-mode probe
 * uses: in the kernel it would write anything else on the other side
 * from the probes that read it.  A probe with sites on both sides keeps
 * its user sites (no program of its own for them).
 */
bool *run_xmap_standby(struct compile *c, const struct run_decision *d,
		       const bool *xmaps, const char **why)
{
	struct sema_program *sp = c->sema;
	uint64_t cand = 0;
	bool *sb;

	*why = NULL;
	if (!xmaps || sp->nprobes > 64)
		return NULL;
	for (int j = 0; j < sp->nprobes; j++)
		for (int i = 0; i < sp->nmaps; i++)
			if (xmaps[i] && d[j].where != RUN_KERNEL &&
			    (sp->maps[i]->probes & (1ull << j)))
				cand |= 1ull << j;
	for (int j = 0; j < sp->nprobes; j++) {
		if (!(cand & (1ull << j)))
			continue;
		if (d[j].where == RUN_BOTH) {
			*why = "a probe that uses it has sites on both sides";
			return NULL;
		}
		for (int i = 0; i < sp->nmaps; i++) {
			const struct sema_map *sm = sp->maps[i];

			if (xmaps[i] || !(sm->probes & (1ull << j)))
				continue;
			if (!place_agg_map(sm)) {
				*why = arena_printf(&c->arena, "its probes also "
						    "use map %s", sm->name);
				return NULL;
			}
			for (int k = 0; k < sp->nprobes; k++)
				if ((sm->probes & (1ull << k)) &&
				    d[k].where != RUN_KERNEL &&
				    !(cand & (1ull << k))) {
					*why = arena_printf(
						&c->arena, "%s is also used "
						"by a user-mode probe that "
						"does not use it", sm->name);
					return NULL;
				}
		}
	}
	if (!cand)
		return NULL;
	sb = arena_alloc(&c->arena, (sp->nprobes + 1) * sizeof(*sb));
	for (int j = 0; j < sp->nprobes; j++)
		sb[j] = cand & (1ull << j);
	return sb;
}

/* The standby programs replace the user-mode ones (run_xmap_standby()). */
static void run_xmap_fall_back(struct run *r, const char *map,
			       const char *why)
{
	const bool *sb = r->xstandby;

	/* (the others may wait for run_fallback.c) */
	for (int i = 0; i < r->kobj->nprogs; i++) {
		struct cg_prog *p = &r->kobj->progs[i];

		if (p->standby && p->probe && sb[p->probe->probe.index])
			p->standby = false;
	}
	for (int i = 0; i < r->nobj->nprogs; i++) {
		struct cg_prog *p = &r->nobj->progs[i];

		if (p->probe && sb[p->probe->probe.index])
			p->standby = true;
	}
	if (!r->o->verbose)
		return;
	fprintf(stderr, "ubt: map %s cannot be shared with the target (%s): "
		"the user-mode probes that use a shared map run in the "
		"kernel:", map, why);
	for (struct ast_node *p = r->c->program->program.probes; p;
	     p = p->next)
		if (sb[p->probe.index])
			fprintf(stderr, " %s", place_probe_name(r->c, p));
	fputc('\n', stderr);
}

int run_xmap_place(struct run *r)
{
	for (int i = 0; i < r->kobj->nmaps; i++) {
		const struct cg_map *m = &r->kobj->maps[i];
		const struct native_map *nm;
		const char *why;
		int fd, err;

		if (!m->xmap)
			continue;
		nm = run_native_map(r, i);
		fd = kernel_map_fd(r->k, i);
		if (!nm || nm->kind != NATIVE_MAP_XMAP || fd < 0)
			err = -EINVAL;
		else
			err = xmap_init(fd, m);
		if (err) {
			fprintf(stderr, "ubt: cannot share map %s with the "
				"target: %s\n", m->name, strerror(-err));
			return err;
		}
		err = user_xmap_add(r->u, fd, nm->off,
				    cg_xmap_bytes(m->xmap_slots));
		if (!err)
			continue;
		why = user_error(r->u) && *user_error(r->u) ?
			      user_error(r->u) : strerror(-err);
		/* nothing is patched yet: the kernel runs them instead */
		if (r->xstandby && !kernel_standby_loaded(r->k))
			r->xno_standby = "their kernel programs did not load";
		else if (r->xstandby && !user_xmap_remove_all(r->u)) {
			run_xmap_fall_back(r, m->name, why);
			return 0;
		}
		fprintf(stderr, "ubt: cannot share map %s with the target: %s "
			"(%s%s%sUBT_NO_XMAP=1 keeps its probes in the kernel)\n",
			m->name, why,
			r->xno_standby ? "they cannot run in the kernel "
					 "instead: " : "",
			r->xno_standby ?: "", r->xno_standby ? "; " : "");
		return err;
	}
	return 0;
}

static uint64_t run_xmap_count(struct run *r, int map, uint32_t off,
			       bool *bad)
{
	const struct cg_map *m = &r->kobj->maps[map];
	uint64_t n, ns = mono_ns() - r->ustart;

	if (!m->xmap)
		return 0;
	n = xmap_count(kernel_map_fd(r->k, map), m, off);
	/* the target's to write: at most one update a nanosecond */
	if (n == UINT64_MAX || n > ns) {
		*bad = true;
		return 0;
	}
	return n;
}

uint64_t run_xmap_dropped(struct run *r, int map, bool *bad)
{
	return run_xmap_count(r, map, CG_XMAP_OFF_DROPPED, bad);
}

void run_xmap_warnings(struct run *r)
{
	for (int i = 0; i < r->kobj->nmaps; i++) {
		bool bad = false;
		uint64_t n = run_xmap_count(r, i, CG_XMAP_OFF_COLLIDED, &bad);
		uint64_t raced = run_xmap_count(r, i, CG_XMAP_OFF_RACED, &bad);

		if (bad)
			fprintf(stderr, "WARNING: ignoring an implausible "
				"count of dropped updates of %s read back "
				"from the target\n", r->kobj->maps[i].name);
		if (!bad && n)
			fprintf(stderr, "WARNING: %llu updates of %s were "
				"dropped: their keys found no free slot in "
				"the table it shares with kernel probes "
				"(UBT_NO_XMAP=1 keeps it in a BPF hash map)\n",
				(unsigned long long)n,
				r->kobj->maps[i].name);
		if (!bad && raced)
			fprintf(stderr, "WARNING: %llu updates of %s were "
				"dropped: they kept losing races for a slot "
				"of the table it shares with kernel probes "
				"(UBT_NO_XMAP=1 keeps it in a BPF hash map)\n",
				(unsigned long long)raced,
				r->kobj->maps[i].name);
	}
}
