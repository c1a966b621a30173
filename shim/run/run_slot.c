/*
 * Per-thread slots (codegen/native.h struct native_map tslot,
 * shim/place/place_slot.c): the runtime told where they are, their
 * entries read back, -v's note.
 */
#include <stdio.h>

#include "run_int.h"

/* Each map with a slot in ctl->tslot (before any hit); 0 or -E2BIG. */
int run_slot_place(struct run *r)
{
	struct rt_ctl *ctl = user_memfd(r->u)->ctl;
	uint32_t n = 0;

	for (int i = 0; i < r->nobj->nnative_maps; i++) {
		const struct native_map *nm = &r->nobj->native_maps[i];

		if (nm->kind != NATIVE_MAP_HTAB || !nm->tslot)
			continue;
		if (n >= RT_TSLOT_MAX || nm->tslot > UINT32_MAX ||
		    nm->off > UINT32_MAX)
			return -E2BIG;
		ctl->tslot[n].slot = (uint32_t)nm->tslot;
		ctl->tslot[n].htab = (uint32_t)nm->off;
		n++;
	}
	ctl->ntslots = n;
	return 0;
}

struct run_slot_read {
	kernel_entry_fn fn;
	void *ctx;
};

static int run_slot_block(const void *data, uint32_t block, void *arg)
{
	const uint64_t *s = data;
	struct run_slot_read *rd = arg;

	(void)block;
	/* the target's word: a tid, or 0 (absent); anything else is not
	 * believed */
	if (!s[0] || s[0] > INT32_MAX)
		return 0;
	return rd->fn(&s[0], &s[1], rd->ctx);
}

/* The present slots of map nm in r->u's blocks, each as (tid, value). */
int run_slot_read(struct run *r, const struct native_map *nm,
		  kernel_entry_fn fn, void *ctx)
{
	struct run_slot_read rd = { .fn = fn, .ctx = ctx };

	if (nm->kind != NATIVE_MAP_HTAB || !nm->tslot)
		return 0;
	return user_read_maps(r->u, nm->tslot, 16, run_slot_block, &rd);
}

/* -v, --dry-run: the maps kept in per-thread slots. */
void run_slot_note(const struct cg_object *nobj, FILE *f)
{
	for (int i = 0; nobj && i < nobj->nnative_maps; i++) {
		const struct native_map *nm = &nobj->native_maps[i];

		if (nm->kind != NATIVE_MAP_HTAB || !nm->tslot)
			continue;
		for (int j = 0; j < nobj->nmaps; j++)
			if (nobj->maps[j].bpf_name &&
			    !strcmp(nobj->maps[j].bpf_name, nm->name))
				fprintf(f, "ubt: map %s: per-thread slot (only "
					"%s[tid] in user-mode probes: no "
					"hash, no delete call)\n",
					nobj->maps[j].name,
					nobj->maps[j].name);
	}
}
