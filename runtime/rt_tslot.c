/*
 * Per-thread slots of a block taken again (rt_block.c): the gone
 * thread's entries of maps only ever used as @m[tid] (rt_abi.h
 * RT_TSLOT_MAX) are moved into the maps' per-thread tables of the same
 * block, under the gone thread's tid, so that ubt's printout at exit
 * still finds them, as the map would hold them; the slots start empty
 * for the new thread.  Runs in the thread that took the block, its only
 * writer from then on, before its first hit.
 */
#include <stddef.h>
#include <stdint.h>

#include "rt_abi.h"
#include "rt_int.h"

__attribute__((visibility("hidden"))) void
rt_tslot_spill(const struct rt_ctl *ctl, char *blk)
{
	char *area = blk + RT_BLK_MAP;
	uint32_t n, i;

	if (ctl->sz < offsetof(struct rt_ctl, tslot) + sizeof(ctl->tslot))
		return;
	n = ctl->ntslots < RT_TSLOT_MAX ? ctl->ntslots : RT_TSLOT_MAX;
	for (i = 0; i < n; i++) {
		uint64_t so = ctl->tslot[i].slot, ho = ctl->tslot[i].htab;
		uint64_t *slot = (uint64_t *)(area + so), *v;
		struct rt_htab *h = (struct rt_htab *)(area + ho);

		/* ubt's offsets: inside the map area, the table's header
		 * one of its own */
		if (so + 16 > ctl->map_size || (so & 7) ||
		    ho + sizeof(*h) > ctl->map_size || (ho & 7) ||
		    h->sz != sizeof(*h) || h->key_size != 8 ||
		    h->val_size > 8 || !h->nslots ||
		    (h->nslots & (h->nslots - 1)) ||
		    ho + sizeof(*h) + (uint64_t)h->nslots *
				    rt_htab_slot_size(h) > ctl->map_size)
			continue;
		if (!slot[0])
			continue;
		v = rt_htab_lookup(h, &slot[0]);
		if (v)
			*v = slot[1];
		__atomic_store_n(&slot[0], 0, __ATOMIC_RELEASE);
	}
}
