/*
 * Maps shared by user-mode and kernel probes at user speed ("xmaps"):
 * an ordinary map that a user-mode probe and a kernel probe both use
 * lives in one table that both sides write with atomics, held in a BPF
 * array map of one value created with BPF_F_MMAPABLE.  BPF programs
 * reach it with map_lookup_elem(key 0); the traced process maps the
 * map's fd (shim/user_xmap.c), and native probe code finds the table's
 * address in an 8-byte word of the memfd's shared area
 * (native_map.kind NATIVE_MAP_XMAP, off).  Both lowerings emit the same
 * IR (cg_xmap.c): no system call, no trap, no lock on the user side.
 *
 * What it covers (shim/place_xmap.c decides): maps without a key or with
 * one integer key (tid, pid, an address...: an integer, bool, enum or
 * pointer of at most 8 bytes), whose value is one too, used only by reads,
 * assignments (also +=, ++ ...: a read then a store, as a BPF hash map's),
 * delete(), has_key(), print(), clear() and zero() (ubt empties or zeroes
 * the table when it reads the event, as it does a BPF map), and printed
 * at exit.  Everything else keeps the old rule (the probes that share
 * such a map run in the kernel), with the reason.
 *
 * The table (little-endian, 8-byte words):
 *
 *   0    u32 sz (CG_XMAP_HDR), u32 version (CG_XMAP_VERSION): written by
 *        ubt before any probe runs
 *   8    u32 nslots, u32 max_probe: likewise (the code has them as
 *        constants; ubt checks them back)
 *   16   u64 dropped: updates of a key refused (max_entries keys live),
 *        atomic add, reported at exit as a full map's
 *   24   u64 keys: live keys (atomic adds: +1 by the writer that turns a
 *        live word from 0 to 1, -1 by delete() and clear() turning it
 *        back; a writer over max_entries takes its +1 back)
 *   32   u64 collided: updates that found no slot within the probe bound
 *        (or of the key CG_XMAP_KEY_FLIP), reported at exit apart
 *   64   nslots slots of CG_XMAP_SLOT bytes:
 *          u64 key word: 0 empty, else key ^ CG_XMAP_KEY_FLIP (claimed
 *              once, by a compare-and-swap from 0, never given back)
 *          u64 live: 1 when the key has a value, 0 before its first
 *              store and after delete() (both turned by compare-and-swap)
 *          u64 value: valid while live is 1 (stored before live)
 *
 * Keys are found by linear probing from a multiplicative hash, at most
 * max_probe slots; a key that finds no slot is dropped and counted in
 * collided (the key CG_XMAP_KEY_FLIP itself cannot be stored: counted
 * likewise).  A
 * map holds max_entries live keys, as a BPF hash map.  A deleted key
 * keeps its slot (its key word), which it takes again when it comes back:
 * over a run the slots fill with the keys ever stored, so a run with many
 * more distinct keys than max_entries (threads coming and going, keyed by
 * tid) ends up dropping updates that find no slot within the probe bound,
 * counted in collided and reported; nslots is four times max_entries, at
 * least 64.  Stores: the value, then live
 * (release); reads: live (acquire), then the value; both 8-byte atomic
 * accesses, so a reader sees a value some writer stored.
 */
#ifndef UBT_CG_XMAP_H
#define UBT_CG_XMAP_H

#include <stdint.h>

#define CG_XMAP_VERSION 1
#define CG_XMAP_HDR 64
#define CG_XMAP_SLOT 24
#define CG_XMAP_KEY_FLIP (1ull << 63)
#define CG_XMAP_MAX_PROBE 32
#define CG_XMAP_MIN_SLOTS 64
#define CG_XMAP_MAX_SLOTS (1u << 18)
#define CG_XMAP_HASH 0x9e3779b97f4a7c15ull

#define CG_XMAP_OFF_SZ 0
#define CG_XMAP_OFF_NSLOTS 8
#define CG_XMAP_OFF_DROPPED 16
#define CG_XMAP_OFF_KEYS 24
#define CG_XMAP_OFF_COLLIDED 32
#define CG_XMAP_SLOT_KEY 0
#define CG_XMAP_SLOT_LIVE 8
#define CG_XMAP_SLOT_VALUE 16

/* Slots of the table of a map of max_entries keys. */
static inline uint32_t cg_xmap_slots(uint32_t max_entries)
{
	uint32_t n = CG_XMAP_MIN_SLOTS;

	while (n < 4ull * max_entries && n < CG_XMAP_MAX_SLOTS)
		n *= 2;
	return n;
}

/* Bytes of a table of nslots slots. */
static inline uint64_t cg_xmap_bytes(uint32_t nslots)
{
	return CG_XMAP_HDR + (uint64_t)nslots * CG_XMAP_SLOT;
}

/* The probe sequence's bound for a table of nslots slots. */
static inline uint32_t cg_xmap_max_probe(uint32_t nslots)
{
	return nslots < CG_XMAP_MAX_PROBE ? nslots : CG_XMAP_MAX_PROBE;
}

#endif
