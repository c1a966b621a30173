/*
 * irb: the small IR-building helpers the lowering goes through, so that
 * the BPF and native targets differ only here (DESIGN.md). An irb holds
 * one LLVM module under construction and its builder.
 */
#ifndef UBT_IRB_H
#define UBT_IRB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/TargetMachine.h>

#include "cg.h"

/* A stack buffer: its alloca, size and how many scopes have had it. */
struct irb_slot {
	LLVMValueRef a;
	size_t size;
	int uses;
};

/*
 * A BPF function's scratch room (irb_scratch.c), where its temporaries of
 * more than IRB_STACK_SMALL bytes go instead of the 512-byte stack: the
 * value of the per-CPU map CG_MAP_SCRATCH, or for a program that may be
 * preempted (a uprobe's) its task's value of CG_MAP_SCRATCH_TASK.
 */
enum irb_room { IRB_ROOM_CPU, IRB_ROOM_TASK, IRB_NROOMS, IRB_ROOM_NONE };

struct irb_scratch_fn {
	LLVMValueRef fn;
	LLVMValueRef base;	/* the lookup, null-checked in the entry */
	LLVMValueRef made[4];	/* the prologue's instructions before it */
	int nmade;
	LLVMValueRef cmp, key_store;
	LLVMBasicBlockRef ok;	/* where the slots' addresses are made */
	LLVMBasicBlockRef fail;
	enum irb_room room;
	int prog;		/* the program it belongs to */
	bool used;
};

struct irb {
	enum cg_target target;
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMDIBuilderRef di;
	LLVMMetadataRef di_file, di_cu;
	LLVMTypeRef i1, i8, i16, i32, i64, ptr, void_;
	LLVMValueRef fn;	/* function being built */
	LLVMBasicBlockRef entry;	/* its entry block: allocas go here */
	/* temporaries of the open scopes (irb_scope_begin), whose
	 * lifetimes end with the scope so that the stack is reused */
	struct irb_slot *temps;
	int ntemps, captemps;
	int scope;
	/* temporaries whose scope has ended, for irb_alloca() to give
	 * again (irb.c: why) */
	struct irb_slot *spare;
	int nspare, capspare;
	/* BPF: the functions' scratch rooms; a program and its callbacks
	 * share one entry of the map, bump-allocated (scratch_top) */
	struct irb_scratch_fn *sfn;
	int nsfn, capsfn;
	/* stand-ins for the maps until irb_scratch_finish() */
	LLVMValueRef scratch_map[IRB_NROOMS];
	size_t scratch_max[IRB_NROOMS];
	int scratch_prog;		/* programs begun */
	enum irb_room scratch_room;	/* the current program's */
	size_t scratch_top;
	/*
	 * The task room costs a uprobe's program two helper calls (about
	 * 100 ns): without task_room, its temporaries stay on the stack
	 * (room_skipped says one did), and cg_build() builds again with it
	 * when they do not fit (stack_exceeded, quiet_stack: not said yet)
	 * or a loop's context is large (room_wanted).
	 */
	bool task_room, room_skipped, room_wanted;
	bool quiet_stack, stack_exceeded;
};

#define IRB_STACK_MSG "the probe needs more than the 512 bytes of BPF stack"

/* Temporaries larger than this live in the scratch map (BPF target). */
#define IRB_STACK_SMALL 16
/* The most a program's scratch room holds: a per-CPU map's value limit. */
#define IRB_SCRATCH_MAX 32768

/* Kinds of user-memory reads. */
enum irb_read {
	IRB_READ_USER,
	IRB_READ_KERNEL,
	IRB_READ_USER_STR,
	IRB_READ_KERNEL_STR,
	/* bpf_probe_read(): user memory below the user-space limit, else
	 * kernel (bpftrace's read where the address space is unknown) */
	IRB_READ_ANY,
};

/*
 * What both targets share: a zeroed irb with a context, a module with the
 * target's triple and tm's data layout, a builder and the common types.
 */
void irb_module_init(struct irb *ir, enum cg_target t, const char *name,
		     const char *triple, LLVMTargetMachineRef tm);
int irb_init(struct irb *ir, enum cg_target t, const char *name);
void irb_release(struct irb *ir);

/* Start a program function `name` in ELF section `section`, taking the
 * context pointer; returns it (LLVMGetParam(fn, 0)). */
LLVMValueRef irb_func_begin(struct irb *ir, const char *name,
			    const char *section);
/* Start a static function `long name(void *, ...)` in .text (nparams
 * pointers), for helpers that take a callback; returns the function. The
 * caller saves and restores ir->fn, ir->entry and the insertion point. */
LLVMValueRef irb_callback_begin(struct irb *ir, const char *name,
				int nparams);
/* Start a global function `long name(...)` in .text (BPF target):
 * nparams parameters, parameter i a long when mem[i] is 0, else a
 * pointer to mem[i] bytes (or null); BTF describes it, so the verifier
 * checks it once per program instead of at every call.  The caller saves
 * and restores ir->fn, ir->entry and the insertion point;
 * irb_alloca_type() only. */
LLVMValueRef irb_subprog_begin(struct irb *ir, const char *name, int nparams,
			       const uint64_t *mem);
/* Call such a function from the current one. */
LLVMValueRef irb_subprog_call(struct irb *ir, LLVMValueRef fn,
			      LLVMValueRef *args, int n);
/* Finish the current function returning 0. */
void irb_func_end(struct irb *ir);

/* A buffer of `size` bytes (align 8), not zeroed: an alloca in the entry
 * block, or a slot of the scratch room (BPF, more than IRB_STACK_SMALL
 * bytes). */
LLVMValueRef irb_alloca(struct irb *ir, size_t size, const char *name);
/* Always on the stack: for a helper that wants its argument there
 * (bpf_loop()'s context). */
LLVMValueRef irb_alloca_stack(struct irb *ir, size_t size, const char *name);
LLVMValueRef irb_alloca_type(struct irb *ir, LLVMTypeRef ty,
			     const char *name);
/*
 * Scopes for temporaries: while a scope is open, irb_alloca() marks the
 * start of the new buffer's lifetime where it is created, and
 * irb_scope_end() ends the lifetimes of the scope's buffers, so that
 * LLVM can share stack slots (BPF has 512 bytes of stack). A buffer whose
 * lifetime has ended is given again by a later irb_alloca() of the same
 * size in the same function.
 */
int irb_scope_begin(struct irb *ir);
void irb_scope_end(struct irb *ir, int mark);
/*
 * The scratch room (BPF): a function's buffers of more than
 * IRB_STACK_SMALL bytes are taken from the value of a per-CPU array map
 * (one entry per program, its callbacks included), looked up once at the
 * function's start. irb_scratch_offset() tells whether p is such a
 * buffer and where; irb_scratch_at() is the current function's address
 * of that offset (a loop's callback reaches the probe's variables so:
 * they run on the same CPU). irb_scratch_finish() defines the map, once
 * every function is built, and drops the unused lookups.
 */
bool irb_scratch_offset(struct irb *ir, LLVMValueRef p, size_t *off);
/* Whether the current function has a scratch room. */
bool irb_scratch_here(struct irb *ir);
LLVMValueRef irb_scratch_at(struct irb *ir, size_t off);
void irb_scratch_prologue(struct irb *ir, bool callback,
			  const char *section);
int irb_scratch_finish(struct irb *ir);
void irb_memset(struct irb *ir, LLVMValueRef dst, int c, size_t size);
void irb_memcpy(struct irb *ir, LLVMValueRef dst, LLVMValueRef src,
		size_t size);
/* ptr + off bytes */
LLVMValueRef irb_gep(struct irb *ir, LLVMValueRef p, size_t off);
LLVMValueRef irb_const(struct irb *ir, uint64_t v);
/*
 * br (a conditional branch) rarely goes to its true (then == true) or
 * false side: branch weights, so that the usual path falls through (a
 * taken branch is what a probe's hot path pays most for on some CPUs).
 */
void irb_unlikely(struct irb *ir, LLVMValueRef br, bool then);

/*
 * Maps (bpf_maps.c): a global in ".maps" described by BTF.
 * bpf_type is BPF_MAP_TYPE_*; key_size 0 for ring buffers.
 */
LLVMValueRef irb_map_define(struct irb *ir, const char *name, int bpf_type,
			    size_t key_size, size_t value_size,
			    uint32_t max_entries);
/* The same with BPF map flags (BPF target only). */
LLVMValueRef irb_map_define_flags(struct irb *ir, const char *name,
				  int bpf_type, size_t key_size,
				  size_t value_size, uint32_t max_entries,
				  uint32_t map_flags);
/* Returns the value pointer, NULL (null pointer) when absent. */
LLVMValueRef irb_map_lookup(struct irb *ir, LLVMValueRef map,
			    LLVMValueRef key);
LLVMValueRef irb_map_update(struct irb *ir, LLVMValueRef map,
			    LLVMValueRef key, LLVMValueRef value,
			    uint64_t flags);
LLVMValueRef irb_map_delete(struct irb *ir, LLVMValueRef map,
			    LLVMValueRef key);
/* Copy size bytes from src (an i64 address or pointer) to dst. */
LLVMValueRef irb_probe_read(struct irb *ir, enum irb_read kind,
			    LLVMValueRef dst, LLVMValueRef size,
			    LLVMValueRef src);
LLVMValueRef irb_ringbuf_output(struct irb *ir, LLVMValueRef rb,
				LLVMValueRef data, size_t size);
/* A helper call by id (BPF_FUNC_*) returning i64. */
LLVMValueRef irb_helper(struct irb *ir, int id, LLVMValueRef *args, int n);
/* Load an i64 at byte offset off from a context pointer. */
LLVMValueRef irb_ctx_load(struct irb *ir, LLVMValueRef ctxp, size_t off,
			  size_t size);

/* Verify, optimise (default<O2>) and emit the module into a malloc'ed
 * image. 0 or -EINVAL (message printed). */
int irb_emit(struct irb *ir, bool optimise, void **image, size_t *size);
/* Print the module's IR. */
void irb_dump(struct irb *ir, FILE *f);

/*
 * Cut every basic block of mod into pieces of at most IRB_SPLIT_MAX
 * instructions, after optimisation and before emitting: LLVM's
 * instruction scheduling costs time quadratic in a block's size
 * (irb_split.c).
 */
#define IRB_SPLIT_MAX 256
void irb_split_blocks(LLVMModuleRef mod);

#endif
