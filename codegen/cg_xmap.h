/*
 * Maps shared by user-mode and kernel probes at user speed ("xmaps"):
 * an ordinary map that a user-mode probe and a kernel probe both use
 * lives in one table that both sides write with atomics, held in a BPF
 * array map of one value created with BPF_F_MMAPABLE.  BPF programs
 * reach it with map_lookup_elem(key 0); the traced process maps the
 * map's fd (shim/user/user_xmap.c), and native probe code finds the table's
 * address in an 8-byte word of the memfd's shared area
 * (native_map.kind NATIVE_MAP_XMAP, off).  Both lowerings emit the same
 * IR (cg_xmap.c): no system call, no trap, no lock on the user side.  In
 * BPF the IR of each operation is a global function (BTF describes it:
 * ubt_xget_SLOTS, ubt_xput_SLOTS, ubt_xdel_SLOTS, shared by the tables of
 * that many slots, which each use passes) that every use calls, so the
 * verifier walks its loops once per program; native code has it inline.
 *
 * What it covers (shim/place/place_xmap.c decides): maps without a key or with
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
 *   16   u64 dropped: updates of a new key refused (max_entries keys
 *        live), atomic add, reported at exit as a full map's
 *   24   u64 keys: live keys and keys being inserted (+1 by an inserter
 *        before it claims a slot, taken back when its slot does not end
 *        live; -1 by delete() and clear() turning a slot from live to dead)
 *   32   u64 collided: updates that found no slot to claim within the
 *        probe bound, reported at exit
 *   40   u64 raced: updates given up after CG_XMAP_ATTEMPTS attempts
 *        (_BPF in the kernel) lost races (a slot deleted or taken under
 *        them), reported too
 *   64   nslots slots of CG_XMAP_SLOT bytes:
 *          u64 key word: key ^ CG_XMAP_KEY_FLIP; valid when the state is
 *              inserting, live or dead (a dead slot keeps its last key)
 *          u64 state: generation << 3 | one of CG_XMAP_EMPTY (the word is
 *              0: never used), BUSY (claimed, its key being written),
 *              INS (key and value written, checking that no other slot
 *              holds the key), LIVE, DEAD (deleted, or given up)
 *          u64 pins: writers storing into the slot's value right now
 *          u64 value
 *
 * Keys are found by linear probing from a multiplicative hash, at most
 * max_probe slots, stopping at an empty slot (a slot is never empty
 * again once claimed, so no key lives past one).  A map holds max_entries
 * live keys, as a BPF hash map; nslots is four times max_entries, at
 * least 64.  A deleted key's slot is reused, so a run with many more
 * distinct keys over time than max_entries (threads coming and going,
 * keyed by tid) keeps finding slots.  How the two sides write it at once:
 *
 * - Update of a live key (the usual case): the writer pins the slot
 *   (pins += 1), checks that the state is live and the key word its key,
 *   stores the value and unpins.  A dead slot is reused only when its
 *   claimer, after turning the state from dead to busy, reads pins 0, so
 *   no store of a writer of the old key lands in the new key's value
 *   (pin then load, compare-and-swap then load: one of the two sees the
 *   other).  A pin that is never taken back (a thread gone mid-store)
 *   only keeps that slot from being reused.
 * - Insert of a key not found live: +1 keys (within max_entries), claim
 *   the first empty or dead unpinned slot (compare-and-swap of its state
 *   to busy with the next generation), write key and value, state INS
 *   (an exchange: a full barrier), then scan the key's slots again: a live
 *   slot of the key, or one being inserted nearer its hash, wins (ours
 *   turns dead, the live one is updated or the whole update tried again);
 *   one being inserted farther is turned dead (compare-and-swap from the
 *   INS read; when that fails, it may have gone live, and ours gives
 *   way).  Then INS to live by compare-and-swap, which fails when another
 *   inserter turned it dead (tried again).  Two inserters of one key each
 *   publish before they scan, so one sees the other: a key is live in one
 *   slot at a time.  An update that still lost after CG_XMAP_ATTEMPTS
 *   attempts is dropped and counted (raced).
 * - Read, has_key(), delete(): the state, then the key word, then the
 *   value, then the state again; a state that changed meanwhile means the
 *   key was deleted meanwhile (absent).  delete() turns live to dead by
 *   compare-and-swap of the state read, so it never deletes a later
 *   generation of the slot.
 * - The generation (61 bits) makes every claim's state new, so no
 *   compare-and-swap or read succeeds across a reuse.
 */
#ifndef UBT_CG_XMAP_H
#define UBT_CG_XMAP_H

#include <stdint.h>

#define CG_XMAP_VERSION 2
#define CG_XMAP_HDR 64
#define CG_XMAP_SLOT 32
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
#define CG_XMAP_OFF_RACED 40
#define CG_XMAP_SLOT_KEY 0
#define CG_XMAP_SLOT_STATE 8
#define CG_XMAP_SLOT_PINS 16
#define CG_XMAP_SLOT_VALUE 24
/* attempts of an update that lost races: native code, BPF (each one
 * more is another walk of the update function for the verifier: it took
 * 20 ms with 1, 60 ms with 2, 100 ms with 4, in every program using it) */
#define CG_XMAP_ATTEMPTS 4
#define CG_XMAP_ATTEMPTS_BPF 1
#define CG_XMAP_SPIN 64

/* A slot's state word: generation << CG_XMAP_GEN_SHIFT | state */
#define CG_XMAP_GEN_SHIFT 3
#define CG_XMAP_STATE_MASK 7ull
#define CG_XMAP_EMPTY 0
#define CG_XMAP_BUSY 1
#define CG_XMAP_INS 2
#define CG_XMAP_LIVE 3
#define CG_XMAP_DEAD 4

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
