/*
 * The run's side of the maps user-mode and kernel probes share at user
 * speed (codegen/cg_xmap.h): which they are (-v), their tables written
 * and mapped into the target before any probe is placed, their dropped
 * updates at exit.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cg.h"
#include "cg_xmap.h"
#include "kernel.h"
#include "native.h"
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

int run_xmap_place(struct run *r)
{
	for (int i = 0; i < r->kobj->nmaps; i++) {
		const struct cg_map *m = &r->kobj->maps[i];
		const struct native_map *nm;
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
		if (err) {
			fprintf(stderr, "ubt: cannot share map %s with the "
				"target: %s (UBT_NO_XMAP=1 keeps its probes "
				"in the kernel)\n", m->name,
				user_error(r->u) && *user_error(r->u) ?
					user_error(r->u) : strerror(-err));
			return err;
		}
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
				"dropped: they lost %d races in a row for a "
				"slot of the table it shares with kernel "
				"probes (UBT_NO_XMAP=1 keeps it in a BPF hash "
				"map)\n", (unsigned long long)raced,
				r->kobj->maps[i].name, CG_XMAP_ATTEMPTS);
	}
}
