/*
 * The native x86-64 target of the lowering (DESIGN.md "codegen/"): probe
 * bodies for user mode, run inside the traced process, called from a
 * trampoline (shim/patch/tramp.h contract).
 *
 * Code: preserve_most, no SSE/x87, large code model, static relocation
 * model; every function must come out free of relocations, since the shim
 * copies its bytes into the target (native_emit() refuses anything else).
 *
 * Maps: each thread has its own map area (runtime/rt_abi.h RT_BLK_MAP):
 *
 *   0    struct of globals: CG_GLOBALS_START, CG_GLOBALS_CPID,
 *        CG_GLOBALS_EXIT (as the BPF globals map), NATIVE_GLOBALS_PID
 *        (the target's pid), written by ubt into the template and into
 *        every block
 *   32   u64 scratch for the BPF "lost" map (the runtime counts drops)
 *   64   the program's maps, at the offsets of struct native_map:
 *        keyless aggregations as one value at a fixed offset (a sum
 *        followed by a u64 presence word the probe sets to 1, so that
 *        sum(0) is seen: the other values have a non-zero marker), keyless
 *        hist/lhist as an array of u64 buckets, keyed maps as per-thread
 *        open-addressing tables (struct rt_htab), looked up through the
 *        runtime's RT_FN_HTAB_LOOKUP.
 * Ordinary maps (not aggregations, keyed or not) live in one table shared
 * by all threads (struct rt_shtab) in the memfd's shared area
 * (RT_SHARED_OFF): off is the table's offset there, scratch a per-thread
 * buffer of the map area that a read copies the value into
 * (RT_FN_SHTAB_READ: a consistent copy); updates and deletes go through
 * RT_FN_SHTAB_UPDATE and RT_FN_SHTAB_DELETE; for and len() loop over the
 * slots with RT_FN_SHTAB_NEXT, each loop copying entries into its own
 * key/value buffer in the map area, its body inlined (a callback of
 * bpf_for_each_map_elem() in BPF).  Except ordinary maps that
 * each thread only reaches at its own key (@m[tid], named by
 * irb_native_set_thread_maps()): those stay in per-thread tables
 * (plain: read with RT_FN_HTAB_FIND, deleted with RT_FN_HTAB_DELETE), no
 * atomics.
 * Values are laid out as the BPF target lays out one CPU's value (cg.h),
 * so that ubt merges threads exactly as it merges CPUs.
 *
 * Events: records as the BPF ring-buffer records (cg.h), written with the
 * runtime's RT_FN_RING_WRITE as ring records of type NATIVE_REC_EVENT.
 */
#ifndef UBT_NATIVE_H
#define UBT_NATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

/* the globals: CG_GLOBALS_START/CPID/EXIT (cg_int.h), then the pid */
#define NATIVE_GLOBALS_START 0	/* u64: CLOCK_MONOTONIC ns at start */
#define NATIVE_GLOBALS_CPID 8	/* u64: the -c child's pid */
#define NATIVE_GLOBALS_EXIT 16	/* u64: exit() was called: probes stop */
#define NATIVE_GLOBALS_PID 24	/* u64: the target's pid */
#define NATIVE_GLOBALS_SIZE 32
#define NATIVE_LOST_OFF 32
#define NATIVE_MAPS_OFF 64
#define NATIVE_REC_EVENT 1	/* ring record type of an event */
/*
 * Keyed tables have 2 x max_entries slots (a power of two, at least 16),
 * so that a key not in a table at its limit is found missing after a few
 * slots; they refuse a key more than max_entries (struct rt_htab,
 * rt_shtab max_keys), as a full BPF map does. The caps bound a thread's
 * map area and the shared area: a map declared larger is held to half
 * the cap in user mode.
 */
#define NATIVE_HTAB_MAX_SLOTS (1u << 20)
#define NATIVE_SHTAB_MAX_SLOTS (1u << 20)
#define NATIVE_SHTAB_MAX_PROBE 256

enum native_map_kind {
	NATIVE_MAP_FIXED,	/* one value at off */
	NATIVE_MAP_ARRAY,	/* nslots u64 buckets at off, key = bucket */
	NATIVE_MAP_HTAB,	/* struct rt_htab at off */
	NATIVE_MAP_SHARED,	/* struct rt_shtab at off, shared area */
	NATIVE_MAP_XMAP,	/* u64 at off in the shared area: the target's
				 * address of the table kernel probes share
				 * (codegen/cg_xmap.h), written by ubt */
};

struct native_map {
	const char *name;	/* the BPF map's name (cg_map.bpf_name) */
	enum native_map_kind kind;
	uint64_t off;		/* in the map area (SHARED: shared area) */
	uint64_t bytes;		/* size in the map area */
	uint32_t nslots;	/* HTAB: slots; ARRAY: buckets */
	uint32_t max_keys;	/* HTAB, SHARED: the map's key limit */
	uint32_t key_size;	/* the BPF key size (cg_map.key_size) */
	uint32_t val_size;	/* one thread's value */
	bool plain;		/* HTAB of a map that is not an aggregation:
				 * read without inserting, deletable */
	uint64_t scratch;	/* SHARED: value buffer in the map area */
	uint32_t max_probe;	/* SHARED: probe bound (struct rt_shtab) */
	/*
	 * HTAB of a map only ever used as @m[tid] by user-mode probes
	 * (shim/place/place_slot.c), 0: none: the offset in the map area of
	 * the thread's own entry, {u64 key, u64 value}: key the thread's tid
	 * while present, 0 when not.  The table holds only entries of gone
	 * threads, put there by the runtime when it gave their block to
	 * another thread (runtime/rt_tslot.c, rt_ctl.tslot).
	 */
	uint64_t tslot;
};

/* One function's code, copied out of the emitted object. */
struct native_code {
	const char *name;
	void *code;		/* malloc'ed */
	size_t len;
	bool ctx_unused;	/* optimised code never reads its first
				 * parameter (a USDT site's pt_regs) */
};

/*
 * Emit mod (already built with the native irb) as x86-64 and copy out the
 * code of each function named in funcs[i].name into funcs[i].code/len.
 * Refuses (-ENOEXEC, err says why) a function that needs a relocation or
 * is missing. 0 or -errno.
 */
int native_emit(LLVMModuleRef mod, bool optimise, struct native_code *funcs,
		int n, char *err, size_t errlen);

/* The x86-64 target machine (created once); NULL when LLVM lacks it. */
LLVMTargetMachineRef native_target_machine(void);

/*
 * The code reaches its thread block as *(u64 *)%fs:NATIVE_TLS_SENTINEL;
 * once the runtime is placed, native_patch_tls() writes the real offset
 * (user_tls_offset()) into a copy of the code. 0, or -ENOENT when the code
 * has no such load, -ERANGE when the offset does not fit.
 */
#define NATIVE_TLS_SENTINEL 0x5eadbee8u
int native_patch_tls(void *code, size_t len, int64_t tls_offset);

/*
 * `func` (bpf_get_func_ip) is the 64-bit constant NATIVE_FUNC_SENTINEL in
 * the code; native_patch_func() writes the probed address in the target
 * over each. 0, or -ENOENT when the code has none.
 */
#define NATIVE_FUNC_SENTINEL 0x5eadf00d5eadf00dull
int native_patch_func(void *code, size_t len, uint64_t addr);

/* Bytes of the shared area the SHARED maps of maps[0..n) need. */
uint64_t native_shared_size(const struct native_map *maps, int n);

/* Free funcs[i].code. */
void native_code_release(struct native_code *funcs, int n);

#endif
