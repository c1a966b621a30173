/*
 * The native target's side of a map shared with kernel probes
 * (codegen/cg_xmap.h): an 8-byte word in the memfd's shared area where
 * ubt writes the target's address of the mapped BPF array; probe code
 * loads it through the control block, as it reaches the shared tables.
 */
#include <string.h>

#include "irb_native_int.h"
#include "rt_abi.h"
#include "util.h"

LLVMValueRef irb_native_xmap_define(struct irb *ir, const char *name,
				    uint32_t nslots)
{
	LLVMValueRef ref;
	struct native_map *m;

	BUG_ON(irb_nat.ir != ir);
	/* a reference like the other maps' (irb_native_map_define()) */
	ref = LLVMConstIntToPtr(LLVMConstInt(ir->i64, 0x1000 + irb_nat.nmaps,
					     0),
				ir->ptr);
	if (irb_nat.nmaps == irb_nat.cap) {
		irb_nat.cap = irb_nat.cap ? 2 * irb_nat.cap : 16;
		irb_nat.maps = xrealloc(irb_nat.maps,
					irb_nat.cap * sizeof(*irb_nat.maps));
		irb_nat.refs = xrealloc(irb_nat.refs,
					irb_nat.cap * sizeof(*irb_nat.refs));
	}
	irb_nat.refs[irb_nat.nmaps] = (struct nat_map){ .ref = ref,
							.idx = irb_nat.nmaps };
	m = &irb_nat.maps[irb_nat.nmaps++];
	memset(m, 0, sizeof(*m));
	m->name = name;
	m->kind = NATIVE_MAP_XMAP;
	m->key_size = 8;
	m->val_size = 8;
	m->nslots = nslots;
	m->bytes = 8;
	m->off = irb_nat.shared;
	irb_nat.shared = rt_align8(irb_nat.shared + 8);
	return ref;
}

LLVMValueRef irb_native_xmap_table(struct irb *ir, LLVMValueRef map)
{
	const struct native_map *m = nat_find(map);
	LLVMValueRef w;

	BUG_ON(!m || m->kind != NATIVE_MAP_XMAP);
	w = LLVMBuildLoad2(ir->b, ir->ptr, nat_shtab(ir, m), "xmap");
	LLVMSetOrdering(w, LLVMAtomicOrderingAcquire);
	LLVMSetAlignment(w, 8);
	return w;
}
