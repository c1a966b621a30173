/*
 * Internal to the native target's IR helpers: irb_native.c (functions,
 * map layout, memory, emit), irb_native_map.c (map operations) and
 * irb_native_helper.c (the BPF helpers).
 */
#ifndef UBT_IRB_NATIVE_INT_H
#define UBT_IRB_NATIVE_INT_H

#include <llvm-c/Core.h>

#include <stdbool.h>
#include <stdint.h>

#include "cg.h"
#include "irb.h"
#include "native.h"

#define NAT_CC_PRESERVE_MOST 14	/* llvm::CallingConv::PreserveMost */
#define NAT_MAX_NEST 16		/* map iterations inside one another */

struct nat_map {
	LLVMValueRef ref;	/* what irb_map_define returned */
	int idx;		/* into maps, -1: the ring buffer */
};

/* One native build at a time (the compiler is single-threaded). */
struct irb_native {
	struct irb *ir;
	const struct cg_object *obj;
	const bool *thread_maps;	/* by index in obj->maps */
	const bool *slot_maps;		/* by index in obj->maps: of
					 * thread_maps, with a per-thread slot */
	struct native_map *maps;
	struct nat_map *refs;
	int nmaps, cap;
	uint64_t area;		/* map-area bytes laid out so far */
	uint64_t shared;	/* shared-area bytes laid out so far */
	const char *unsupported;	/* first thing that cannot be lowered */
	LLVMValueRef blk;	/* the block pointer in the current function */
	/* the enclosing functions' block pointers while a map iteration's
	 * callback is built (irb_native_callback_begin() pushes, its
	 * BPF_FUNC_for_each_map_elem pops) */
	LLVMValueRef outer_blk[NAT_MAX_NEST];
	int nest;
	bool regs_ctx;		/* the next program takes a struct pt_regs */
	bool uses_task;		/* a probe reads comm, uid or gid */
};
extern struct irb_native irb_nat;

/* irb_native.c, for irb_native_helper.c */
LLVMValueRef nat_call(struct irb *ir, int i, LLVMTypeRef ret,
		      LLVMValueRef *args, int n);
/* nat_call() of a two-pointer runtime function returning a pointer, for
 * a slow path: it saves the caller-saved registers itself. */
LLVMValueRef nat_call_clobber(struct irb *ir, int i);
LLVMValueRef nat_call_kept(struct irb *ir, int i, LLVMValueRef *args);
struct native_map *nat_find(LLVMValueRef ref);
void nat_unsupported(const char *what);
LLVMValueRef nat_shtab(struct irb *ir, const struct native_map *m);
LLVMValueRef nat_map_area(struct irb *ir, uint64_t off);
LLVMValueRef nat_invariant(struct irb *ir, LLVMValueRef load);
LLVMValueRef nat_ctl(struct irb *ir);
void nat_incoming2(LLVMValueRef phi, LLVMValueRef v0,
		   LLVMBasicBlockRef b0, LLVMValueRef v1,
		   LLVMBasicBlockRef b1);

#endif
