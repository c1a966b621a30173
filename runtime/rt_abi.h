/*
 * The layout of the shared memfd, common to ubt (shim/user/memfd.c) and the
 * runtime placed in the traced process (runtime/rt.c, runtime/rt_asm.S).
 * Usable from C and from assembler.
 *
 *   offset 0            struct rt_ctl (control block, starts with sz/version)
 *   RT_CODE_OFF         code slices: one per patched module, each mapped
 *                       read+exec in the target within +-2 GiB of it
 *   RT_SHARED_OFF       shared area, ctl.shared_size bytes: the lock-free
 *                       tables of ordinary maps (struct rt_shtab), one
 *                       for all threads
 *   ctl.tmpl_off        template of a thread's map area
 *   ctl.block_off       thread blocks, block_size bytes each
 *
 * The target maps the control block, the shared area, the template and
 * the first ctl.chunk_blocks blocks at once; each further chunk of
 * chunk_blocks blocks is mapped (from ctl.target_fd) by the runtime when
 * a thread first takes a block there (runtime/rt_chunk.c), at an address
 * of its own: the address space a process holds grows with its threads,
 * not with the most it could have.
 *
 * A thread block (one per thread, single writer: that thread), page
 * aligned: a return trampoline finds the block of a shadow entry as the
 * page the entry lies in (also a block of an earlier attach):
 *
 *   0x000  u32 sz, u32 version
 *   0x008  u32 tid, u32 pid: the thread that holds the block, one u64
 *          changed by compare-and-swap (a block of a thread that is
 *          gone is taken again, runtime/rt_block.c); pid 0: a runtime
 *          that never takes blocks again set it
 *   0x010  u64 ctl: the target's address of the control block
 *   0x018  u64 shadow_top: byte offset of the shadow stack top (16/entry)
 *   0x020  u64 shadow_lost: return probes skipped (shadow stack full)
 *   0x028  u64 ring_head: bytes produced into the ring (producer)
 *   0x030  u64 ring_dropped: events dropped because the ring was full
 *   0x038  u64 ring_tail_seen: the producer's last read of ring_tail
 *          (its own copy: ring_tail is read again only when the ring
 *          looks full, so that the consumer's line is rarely pulled over)
 *   0x040  u64 ring_tail: bytes consumed (written by ubt only)
 *   0x048  u64 rand: the thread's xorshift64 state (rand), never 0
 *   0x050  u32 uid, u32 gid: the thread's, read when it took the block
 *          (uid, gid, username)
 *   0x058  char comm[16]: the thread's name as last read (comm)
 *   0x068  u64 comm_word: the word of its slot in the comm table when
 *          it was read (RT_COMM_NEVER: read it at every hit)
 *   0x070  u64 comm_slot: the target's address of that slot's word
 *   0x078  u64 cred_gen: the credentials generation (RT_COMM_SLOTS) when
 *          uid and gid were read
 *   0x080  u64 cred_at: the target's address of the generation probe
 *          code compares with cred_gen (its own cred_gen when there is
 *          none: uid and gid stay as first read)
 *   0x100  shadow stack: RT_SHADOW_DEPTH entries of RT_SHADOW_ENTRY
 *          bytes, {u64 slot, u64 ret, u64 rbx, u64 cont}: the address of
 *          the wrapped call's return address on the machine stack, the
 *          original return address, the caller's %rbx and the
 *          trampoline's continuation (see RT_FN_WRAP_CALL)
 *   0x1000 map area: ctl.map_size bytes, starting as a copy of the
 *          template at ctl.tmpl_off (table headers), else zero;
 *          keyless aggregations at fixed offsets chosen by the code
 *          generator, keyed ones in open-addressing tables
 *          (struct rt_htab) at fixed offsets
 *   0x1000 + map_size: output ring, ctl.ring_size bytes (power of two)
 *
 * Native probe code reaches its block with one %fs-relative load:
 * block = *(u64 *)(%fs:ctl.tls_offset).  The trampoline guarantees the
 * pointer is non-NULL when it calls probe code.
 */
#ifndef UBT_RT_ABI_H
#define UBT_RT_ABI_H

#define RT_ABI_VERSION 16
/* rt_init() returns -(RT_ABI_MISMATCH + its RT_ABI_VERSION) when the
 * control block is of another version. */
#define RT_ABI_MISMATCH 0x7ab10000L
#define RT_CTL_SIZE 4096
#define RT_CODE_OFF 4096
#define RT_CODE_SLICE (256 * 1024)	/* one slice per patched module */
#define RT_CODE_SLICES 16
/* the shared area: right after the code, at a fixed offset */
#define RT_SHARED_OFF (RT_CODE_OFF + RT_CODE_SLICE * RT_CODE_SLICES)

#define RT_MAX_CHILDREN 64
#define RT_EXEC_WAIT_MS 1000
/* a clone(CLONE_VM) announced waits for the hand-over at most this long */
#define RT_VM_WAIT_MS 2000
/*
 * The u64 at this offset of a block's map area is the process's pid (the
 * pid builtin): ubt puts the target's in the template; a forked child's
 * runtime writes its own into the blocks it takes.
 */
#define RT_MAP_PID 24

#define RT_BLK_SZ 0x000
#define RT_BLK_TID 0x008
#define RT_BLK_PID 0x00c
#define RT_BLK_CTL 0x010
#define RT_BLK_SHADOW_TOP 0x018
#define RT_BLK_SHADOW_LOST 0x020
#define RT_BLK_RING_HEAD 0x028
#define RT_BLK_RING_DROPPED 0x030
#define RT_BLK_RING_TAIL_SEEN 0x038
#define RT_BLK_RING_TAIL 0x040
#define RT_BLK_RAND 0x048
#define RT_BLK_UID 0x050
#define RT_BLK_GID 0x054
#define RT_BLK_COMM 0x058
#define RT_BLK_COMM_WORD 0x068
#define RT_BLK_COMM_SLOT 0x070
#define RT_BLK_CRED_GEN 0x078
#define RT_BLK_CRED_AT 0x080
/* rt_hash() of the thread's tid as a u64 key (@s[tid]: no hashing) */
#define RT_BLK_TID_HASH 0x088
/*
 * u32, 1: the thread runs with the time-stamp counter disabled
 * (prctl(PR_SET_TSC, PR_TSC_SIGSEGV), read when it takes its block):
 * probe code never executes rdtsc or rdtscp there; nsecs and event
 * stamps come from the clock_gettime system call instead (the vDSO's
 * clock reads the counter too), the rand seed from it.
 */
#define RT_BLK_NOTSC 0x090
#define RT_BLK_SHADOW 0x100
#define RT_SHADOW_ENTRY 32
#define RT_SH_SLOT 0
#define RT_SH_RET 8
#define RT_SH_RBX 16
#define RT_SH_CONT 24
/*
 * A push writes its slot at the top's index, then the new top, then reads
 * the slot back: a signal handler that came in between and took the entry
 * (it pushed there, or dropped it as a frame left by longjmp: the slot
 * there was not ours yet) left another slot, and the push starts over.  A
 * pop reads the entry, then lowers the top (one store): a handler that
 * never returns (siglongjmp) leaves the entry as a frame left by longjmp,
 * dropped by a later push.
 */
#define RT_SHADOW_DEPTH 120	/* 0x100 + 120 * 32 = RT_BLK_MAP */
#define RT_SAME_STACK 0x800000	/* 8 MiB: frames closer are on one stack */
#define RT_BLK_MAP 0x1000

/* Ring records: u32 len (whole record incl. header, 8-aligned), u32 type */
#define RT_REC_PAD 0	/* skip to the start of the ring */
#define RT_REC_HDR 8

/*
 * Helper entry points published in ctl.fn[] for native probe code (SysV
 * calling convention, general registers only):
 *   RT_FN_RING_WRITE   int rt_ring_write(const void *, u32 len, u32 type):
 *                      0, or -1 when the event was dropped (and counted)
 *   RT_FN_HTAB_LOOKUP  void *rt_htab_lookup(struct rt_htab *, const void *
 *                      key): the value, inserted zeroed; NULL when full
 *                      (no free slot, or max_keys keys: counted in
 *                      dropped)
 *   RT_FN_PROBE_READ   long rt_probe_read(void *dst, const void *src,
 *                      u64 len): 0, or -EFAULT if src faulted
 *   RT_FN_HTAB_FIND    void *rt_htab_find(struct rt_htab *, const void *
 *                      key): the value, NULL when absent (no insert)
 *   RT_FN_HTAB_DELETE  long rt_htab_delete(struct rt_htab *, const void *
 *                      key): 0, or -ENOENT; the slot becomes state 2
 *                      (deleted: skipped when read back, revived by
 *                      RT_FN_HTAB_LOOKUP with a zero value); a zeroed
 *                      slot (state 3) is deleted too
 *   RT_FN_SHTAB_READ   void *rt_shtab_read(struct rt_shtab *, const void
 *                      *key, void *dst): copies key's value into dst (a
 *                      consistent copy, never torn) and returns dst; NULL
 *                      when absent
 *   RT_FN_SHTAB_UPDATE long rt_shtab_update(struct rt_shtab *, const void
 *                      *key, const void *val): 0, or -ENOMEM when the
 *                      table is full (no free slot, or max_keys keys:
 *                      counted in dropped)
 *   RT_FN_SHTAB_DELETE long rt_shtab_delete(struct rt_shtab *, const void
 *                      *key): 0, or -ENOENT; the slot becomes a tombstone
 *   RT_FN_SHTAB_NEXT   u64 rt_shtab_next(struct rt_shtab *, u64 from, void
 *                      *key, void *val): copies the first used slot at
 *                      index from or after into key and val (key_size and
 *                      val_size rounded up to 8; both from one consistent
 *                      copy, never torn) and returns its index + 1; 0 when
 *                      no used slot is left (iteration: for, len())
 *   RT_FN_HTAB_NEXT_ALL u64 rt_htab_next_all(struct rt_htab *, u64 from,
 *                      void *key, void *val): iteration over an
 *                      aggregation (for, len()), the per-CPU map's analog:
 *                      the table is the calling thread's; visits the keys
 *                      of the union of every thread's table at the same
 *                      map-area offset (used or zeroed slots; each key
 *                      once, in the first block that holds it), copying
 *                      the key and the calling thread's value (zero where
 *                      its own slot is absent, deleted or zeroed) into key
 *                      and val (sizes rounded up to 8); returns the
 *                      position (block * nslots + slot) + 1, the next
 *                      call's from, or 0 at the end.  Other threads'
 *                      tables are only read; every header is checked
 *   RT_FN_CLOCK_NS     u64 rt_clock_ns(void): CLOCK_MONOTONIC in ns
 *   RT_FN_COMM_SYNC    void rt_comm_sync(void): bring the calling thread's
 *                      comm in its block up to date (see RT_COMM_SLOTS)
 *   RT_FN_CRED_SYNC    void rt_cred_sync(void): read the calling thread's
 *                      uid and gid again (see RT_COMM_SLOTS)
 *   RT_FN_EXEC_HOOK    entry probe code (tramp.h contract, every register
 *                      kept) that ubt places on libc's execve: the
 *                      calling thread announces the exec (exec_pid,
 *                      exec_tid, then exec_seq) and waits, at most
 *                      RT_EXEC_WAIT_MS, until ubt has seized it and set
 *                      exec_ack to that seq: ubt then follows the exec
 *                      and places the probes in the new image
 *                      (bpf_ktime_get_ns()'s clock) through the vDSO, no
 *                      system call where the clocksource allows it
 *   RT_FN_USTACK       u64 rt_ustack(u64 *out, u64 limit, u64 ip, u64 sp,
 *                      u64 fp): the calling thread's stack at a function's
 *                      entry: ip, the return address at sp, then the
 *                      return addresses of the frame-pointer chain from
 *                      fp (each frame above the last, every read
 *                      fault-safe), at most limit (<= RT_USTACK_MAX)
 *                      frames into out[2..]; out[0] = a hash of them (the
 *                      stack's id), out[1] = how many; returns how many
 * and the trampolines' own: slow path (block allocation), wrapper entry
 * and exit for return probes, and RT_FN_WRAP_CALL, the one place that
 * calls a wrapped function: reached by a jump with %r11 = the relocated
 * function and %rbx = its shadow entry, it calls *%r11 and jumps to the
 * entry's cont.  Its return address lies in libubt-rt.so, whose
 * .eh_frame says where the caller's return address and %rbx are (in the
 * entry at %rbx), so that C++ exceptions, pthread_exit() and backtrace()
 * unwind through wrapped calls.
 */
#define RT_FN_RING_WRITE 0
#define RT_FN_HTAB_LOOKUP 1
#define RT_FN_SLOW 2
#define RT_FN_WRAP_ENTER 3
#define RT_FN_WRAP_EXIT 4
#define RT_FN_PROBE_READ 5
#define RT_FN_HTAB_FIND 6
#define RT_FN_HTAB_DELETE 7
#define RT_FN_SHTAB_READ 8
#define RT_FN_SHTAB_UPDATE 9
#define RT_FN_SHTAB_DELETE 10
#define RT_FN_SHTAB_NEXT 11
#define RT_FN_WRAP_CALL 12
#define RT_FN_HTAB_NEXT_ALL 13
#define RT_FN_CLOCK_NS 14
#define RT_FN_EXEC_HOOK 15
#define RT_FN_USTACK 16
#define RT_FN_COMM_SYNC 17
#define RT_FN_CRED_SYNC 18
/*
 * Return probes' own stubs (RT_WRAP_STUBS slots of 16 bytes, int3 until
 * ubt writes one): RT_FN_WRAP_CALL's job for one site, with direct
 * branches, "call rel32 <relocated function>; jmp rel32 <continuation>",
 * under the same unwind information.  RT_FN_WRAP_STUB_NEXT is the address
 * of the u32 count of slots taken (ubt's alone to write; never reused, so
 * that a call in progress from an earlier session finds its own).
 */
#define RT_FN_WRAP_STUBS 19
#define RT_FN_WRAP_STUB_NEXT 20
/*
 * Entry probe code (tramp.h contract, every register kept) that ubt
 * places on libc's functions that make a child sharing the memory and
 * the thread pointer of the calling thread while it waits
 * (runtime/rt_vfork.c): RT_FN_VF_SPAWN on posix_spawn, posix_spawnp and
 * vfork, RT_FN_VF_CLONE on clone (only with CLONE_VM | CLONE_VFORK in
 * its flags, %rdx, and neither CLONE_THREAD nor CLONE_SETTLS).  The
 * thread's block pointer is lent for the call: the child takes a block
 * of its own at its first hit, the parent gets its own back when the
 * call returns to its caller.
 */
#define RT_FN_VF_SPAWN 21
#define RT_FN_VF_CLONE 22
/*
 * RT_FN_WRAP_LOW: RT_FN_WRAP_CALL's job (%r11 = the relocated function,
 * %rbx = its shadow entry) for a call whose return address is a kernel
 * uretprobe's trampoline (the first slot of the [uprobes] page, so page
 * aligned: the trampoline sends a return address with no bit of 0xfff
 * set here).  The kernel took the call's return address at its entry and
 * drops its record of the call when another of its uprobes is hit at the
 * same %rsp with another return address there, which a tail call from a
 * wrapped function would do (SIGILL at the return).  So the function is
 * called RT_WRAP_LOW_GAP bytes lower, the kernel's return address left
 * in its slot, and the first RT_WRAP_LOW_COPY bytes of its stack
 * arguments copied down.
 */
#define RT_FN_WRAP_LOW 23
/*
 * RT_FN_VF_VFORK: RT_FN_VF_SPAWN's job at vfork+1, after glibc's
 * "pop %rdi" (the caller's return address, in %rdi until the "push %rdi"
 * after the system call; the entry cannot hold the jump): the address in
 * %rdi is lent instead of the one on the stack.
 */
#define RT_FN_VF_VFORK 24
/*
 * A wrapped call still in progress when ubt detaches is parked (the
 * detach, shim/user/user_unmap.c): ubt writes RT_FN_WRAP_PARKED, a
 * return address in the runtime under rt_wrap_call's unwind rules, over
 * the call's return address (rt_wrap_call's, RT_FN_WRAP_RET, or a stub
 * slot's), replaces the first page of the thread's block (its shadow
 * stack) by a read-only private copy at the same address, and takes the
 * rest of the memfd out.  Returning there, the call reads only its entry
 * at %rbx (or, when that is not its own, the page's entries from the
 * top down) and goes back to its caller with the caller's %rbx; no
 * return probe runs, nothing is written.  The copies' addresses are in
 * the runtime's table at RT_FN_PARKED (RT_PARKED_MAX u64 words, 0 free,
 * ubt's alone to write), where a later ubt finds them and unmaps them
 * once no thread's stack holds RT_FN_WRAP_PARKED.
 */
#define RT_FN_WRAP_RET 25
#define RT_FN_WRAP_PARKED 26
#define RT_FN_PARKED 27
#define RT_FN_MAX 28
#define RT_PARKED_MAX 64
#define RT_WRAP_LOW_COPY 128
#define RT_WRAP_LOW_GAP 144	/* COPY + 16: %rsp stays 16-aligned */
#define RT_WRAP_STUBS 2048
#define RT_WRAP_STUB 16
/* frames RT_FN_USTACK takes at most */
#define RT_USTACK_MAX 1024

/*
 * comm without a system call per hit.  ubt's BPF program on the kernel's
 * task_rename tracepoint (shim/user/user_comm.c) runs whenever a thread of the
 * target is renamed (prctl(PR_SET_NAME), a write to /proc/.../comm, from
 * any process) and writes the new name into the thread's slot of a table
 * (a BPF array map the target maps read-only at ctl.comm_tab): slot tid %
 * RT_COMM_SLOTS, the name first, then the word (tid | seq << 32, seq one
 * more than before), before the rename returns.  Probe code compares the
 * slot's word with the one its thread saw last (RT_BLK_COMM_WORD) and,
 * when it differs, calls RT_FN_COMM_SYNC, which takes the name from the
 * slot if it is this thread's, else reads it with prctl(PR_GET_NAME)
 * (another thread renamed in the slot, a torn read): a system call per
 * rename at most, none per hit.  Until ubt sets comm_live (the table
 * mapped, the program attached), and in forked children (renamed
 * unseen), every hit reads it with prctl.
 *
 * The u64 after the slots counts credential changes of the target's
 * threads: ubt's program on the exits of setuid, setgid, setreuid,
 * setregid, setresuid and setresgid adds one (before the call returns).
 * Probe code compares it with the generation its thread read uid and gid
 * at (RT_BLK_CRED_GEN) and calls RT_FN_CRED_SYNC when it differs: two
 * system calls per change at most.
 */
#define RT_COMM_SLOTS 32
/*
 * Per-thread slots (codegen/native.h struct native_map tslot): a map only
 * ever used as @m[tid] by user-mode probes keeps the thread's own entry
 * at a fixed offset of the block's map area, {u64 key, u64 value}, key
 * the thread's tid while the entry is present, else 0; the map's
 * per-thread table (struct rt_htab) holds only the entries of gone
 * threads.  ubt lists each such map in rt_ctl.tslot: when the runtime
 * gives a gone thread's block to another thread (rt_block.c), it moves a
 * present slot's entry into that table, under its key, and empties the
 * slot (rt_tslot.c), so that the printout at exit still finds it.
 */
#define RT_TSLOT_MAX 16
/* tables shared with kernel probes recorded in rt_ctl.xmap */
#define RT_XMAP_MAX 64
#define RT_COMM_CRED_OFF (RT_COMM_SLOTS * 24)	/* the generation */
#define RT_COMM_TAB_SIZE (RT_COMM_CRED_OFF + 8)
#define RT_COMM_NEVER (~0ULL)

#ifndef __ASSEMBLER__
#include <stdint.h>

struct rt_ctl {
	uint32_t sz;		/* sizeof(struct rt_ctl) */
	uint32_t version;	/* RT_ABI_VERSION */
	uint64_t total_size;	/* bytes of the memfd */
	uint64_t block_off;	/* offset of thread block 0 */
	uint64_t block_size;
	uint64_t map_size;
	uint64_t ring_size;	/* power of two */
	uint32_t nblocks;
	uint32_t tracer_pid;
	int64_t tls_offset;	/* %fs offset of the runtime's block pointer */
	uint64_t target_base;	/* the target's address of this memfd */
	uint64_t fn[RT_FN_MAX];	/* the target's addresses of helpers */
	uint64_t tmpl_off;	/* template copied to a new block's map area */
	uint64_t tmpl_len;	/* (table headers), <= map_size */
	/* written by the runtime */
	uint64_t next_block;	/* fresh blocks handed out (<= nblocks; an
				 * older runtime's may exceed it) */
	uint64_t no_block;	/* threads that found no free block */
	uint32_t detached;	/* set by ubt: stop producing events */
	uint32_t flags;		/* RT_CTL_*, set by ubt before rt_init */
	uint64_t shared_size;	/* bytes of shared area at RT_SHARED_OFF */
	/*
	 * Written by forked children (they share this memfd): each takes a
	 * slot, one that is 0 or names a process gone, for its pid, so that
	 * ubt finds every patched child when it detaches.
	 */
	uint32_t children_lost;	/* children that found no free slot */
	uint32_t children[RT_MAX_CHILDREN];
	/* an execve() about to happen (RT_FN_EXEC_HOOK) */
	uint32_t exec_pid;	/* the process */
	uint32_t exec_tid;	/* the thread that calls it */
	uint32_t exec_seq;	/* announcements so far (the runtime's) */
	uint32_t exec_ack;	/* the seq ubt is ready for (ubt's; futex) */
	/*
	 * nsecs from the time-stamp counter (written by ubt, shim/user/user_clock.c;
	 * read inline by probe code): CLOCK_MONOTONIC in ns is
	 *	clk_ns0 + (((s128)(s64)(rdtsc - clk_tsc0) * clk_mult) >> clk_shift)
	 * with clk_shift always RT_CLK_SHIFT (probe code has it as a constant)
	 * and clk_mult < 2^63 (a signed multiplication: one imul).
	 * clk_seq is odd while ubt rewrites the rest, 0 (clk_mult 0) until
	 * the first segment: no counter clock (probe code calls
	 * RT_FN_CLOCK_NS, the vDSO).  A reader that
	 * finds clk_seq odd or changed calls RT_FN_CLOCK_NS too: it never
	 * waits for ubt.
	 */
#define RT_CLK_SHIFT 32
	uint32_t clk_seq;
	uint32_t clk_shift;
	uint64_t clk_tsc0;
	uint64_t clk_ns0;
	uint64_t clk_mult;
	/* comm (see RT_COMM_SLOTS), written by ubt */
	uint64_t comm_tab;	/* the target's address of the table */
	uint32_t comm_live;	/* it is mapped, the program attached */
	/*
	 * Set by ubt once every site of this memfd is restored (its detach,
	 * or a later ubt's removal of a dead one's leftovers): a later ubt's
	 * search for leftovers (shim/patch/owner.c) skips the memfd instead of
	 * reading its 4 MiB of code slices, which cost ~1.5 ms per earlier
	 * attach, inside the target's stop.
	 */
	uint32_t sites_clean;
	/* written by the runtime (rt_block.c): where the next search for a
	 * gone thread's block starts, and blocks taken again so far */
	uint32_t reclaim_next;
	uint64_t blocks_reused;
	/* written by the runtime: threads that took a block with the
	 * time-stamp counter disabled (RT_BLK_NOTSC) */
	uint64_t notsc_threads;
	/*
	 * Set by ubt: blocks per chunk of the target's view (a power of
	 * two, at most RT_CHUNKS chunks; 0: every block is mapped with the
	 * control block) and the memfd's descriptor in the target (open
	 * until ubt detaches), from which the runtime maps further chunks.
	 */
	uint32_t chunk_blocks;
	int32_t target_fd;
	/* written by rt_init: the target's address of the runtime's own
	 * pointer to this control block, which ubt clears when it unmaps
	 * the memfd at its detach (shim/user/user_unmap.c) */
	uint64_t ctl_at;
	/* set by ubt before any hit: the per-thread slots (RT_TSLOT_MAX) */
	uint32_t ntslots;
	uint32_t tslot_pad;
	struct rt_tslot {
		uint32_t slot;	/* the slot's offset in the map area */
		uint32_t htab;	/* the map's struct rt_htab's */
	} tslot[RT_TSLOT_MAX];
	/*
	 * A child with clone(CLONE_VM) without CLONE_VFORK about to be made
	 * (runtime/rt_vfork.c, on libc's clone): the calling thread writes
	 * its tid, then counts the announcement, and waits, at most
	 * RT_VM_WAIT_MS, until ubt sets vm_ack (futex on it) at the end of
	 * its detach: the process's probes were handed over to the kernel
	 * (or the run ended) and its code is the file's again before the
	 * child runs its first instruction.
	 */
	uint32_t vm_seq;	/* announcements so far (the runtime's) */
	uint32_t vm_tid;	/* the thread that makes the child */
	uint32_t vm_ack;	/* 1 set by ubt: detached, the code restored;
				 * 2 by the runtime: a wait ran out, none
				 * more in this session */
	uint32_t vm_pad;
	/*
	 * Set by ubt (shim/user/user_xmap.c): the tables shared with kernel
	 * probes that it mapped into the target, RT_XMAP_MAX at most.  Each
	 * names its word in the shared area (offset from RT_SHARED_OFF),
	 * which holds the mapping's address (0: not mapped), and the
	 * mapping's length in pages.  A later ubt that removes this memfd
	 * after its ubt died unmaps them too (shim/user/user_unmap.c), only
	 * where a BPF map's mapping of exactly that length starts there.
	 */
	uint32_t nxmaps;
	uint32_t xmap_pad;
	struct rt_xmap_rec {
		uint32_t off;	/* its word's offset in the shared area */
		uint32_t pages;	/* the mapping's length */
	} xmap[RT_XMAP_MAX];
};

/* chunks of blocks a process maps at most (rt_chunk.c) */
#define RT_CHUNKS 256

struct rt_comm_slot {
	uint64_t word;		/* tid | seq << 32 */
	char name[16];
};

/*
 * A patched site's record, right before its trampoline in the code slice
 * (the jump at addr leads to the byte after it): what makes a jump
 * recognisable as ubt's, to a second ubt and to the one that comes after
 * a killed one, and what it takes to undo it.  ubt writes it before the
 * jump; state RT_SITE_LIVE while the jump may be in place.  A jump whose
 * owner (pid and start time, /proc/PID/stat field 22) is gone is a
 * leftover: the next ubt writes orig back where the bytes are still jmp.
 */
#define RT_SITE_MAGIC 0x3145544953746275ULL	/* "ubtSITE1" */
#define RT_SITE_HDR 96		/* bytes before the trampoline */
#define RT_SITE_LIVE 1
#define RT_SITE_DONE 2		/* restored, or replaced by a newer one */

struct rt_site {
	uint64_t magic;		/* RT_SITE_MAGIC */
	uint32_t sz;		/* sizeof(struct rt_site) */
	uint32_t state;		/* RT_SITE_LIVE or RT_SITE_DONE */
	uint64_t addr;		/* the patched address in the target */
	uint32_t len;		/* bytes of the window, <= 24 */
	uint32_t owner_pid;	/* the ubt process that placed the jump */
	uint64_t owner_start;	/* its start time, clock ticks after boot */
	uint8_t orig[24];	/* the window's original bytes */
	uint8_t jmp[24];	/* the bytes ubt wrote over it */
};

/* Install the SIGSEGV/SIGBUS handler rt_probe_read needs (chained). */
#define RT_CTL_FAULT_HANDLER 1u
/*
 * Forked children record (blocks of their own), as the kernel counts a
 * -c command's children; without it (-p, whose kernel probes follow the
 * process alone) a child's probes record nothing.  Either way a child
 * lists itself in ctl->children, for ubt to restore its code.
 */
#define RT_CTL_CHILDREN 2u

/*
 * A per-thread keyed aggregation table, open addressing, linear probing.
 * Slots: u64 state, key (key_size rounded up to 8), value (val_size
 * rounded up to 8).  Values start zeroed.  The owning thread is the only
 * writer of keys and values; ubt only changes states, by compare-and-swap
 * (clear(): used or zeroed -> deleted; zero(): used -> zeroed; delete()
 * from another thread: used or zeroed -> deleted), so that the owner's
 * increments never undo what ubt did.  The owner revives a deleted or
 * zeroed slot of a key it looks up: value zeroed, then state used.
 */
#define RT_HTAB_EMPTY 0
#define RT_HTAB_USED 1
#define RT_HTAB_DELETED 2	/* skipped when read back */
#define RT_HTAB_ZEROED 3	/* read back as the key with a zero value */

struct rt_htab {
	uint32_t sz;		/* sizeof(struct rt_htab) */
	uint32_t nslots;	/* power of two */
	uint32_t key_size;
	uint32_t val_size;
	uint64_t used;		/* slots ever taken (deleted ones stay) */
	uint64_t dropped;	/* inserts refused: table full */
	uint64_t max_keys;	/* the map's key limit (bpftrace's
				 * max_entries): an insert finding used at
				 * max_keys is refused; 0: none but nslots */
};

/*
 * A table shared by all threads, for an ordinary (non-aggregation) map:
 * open addressing, linear probing at most max_probe slots from the key's
 * hash.  Slots: u32 state, u32 seq, key (key_size rounded up to 8), value
 * (val_size rounded up to 8), like struct rt_htab's.
 *
 * state: RT_SHTAB_EMPTY, RT_SHTAB_BUSY (claimed by a compare-and-swap, key
 * being written), RT_SHTAB_USED, RT_SHTAB_DEAD (deleted: a tombstone that
 * keeps the probe chain intact; its key may be revived, or the slot taken
 * over by another key through BUSY).  The key of a USED or DEAD slot never
 * changes until the slot is taken over.
 *
 * seq: a sequence counter for the value, odd while a writer copies it in.
 * A writer makes it odd with a compare-and-swap from an even value (a
 * writer that finds it odd lost a race with another writer of the same key
 * and drops its value, as if it had come first); readers copy the value
 * and retry while seq was odd or changed.  Values of 8 bytes or less are
 * written with one aligned store, so they are never torn either way.
 *
 * lock: a slot is claimed for an absent key only by the holder of this
 * lock (compare-and-swap from even to odd, bounded waits), after a scan
 * made under it, so that a key never holds two slots; updates of present
 * keys, revivals and deletes take no lock.
 *
 * keys counts the keys present: a key added (a free slot or a tombstone
 * taken, a deleted key revived) reserves one first, and is refused when
 * max_keys are present; each delete (rt_shtab_delete(), ubt's clear())
 * gives one back.  A key that finds neither itself nor a free slot within
 * max_probe slots, or that would be one key too many, is dropped and
 * counted in dropped (bpftrace's map-full behaviour).
 */
struct rt_shtab {
	uint32_t sz;		/* sizeof(struct rt_shtab) */
	uint32_t nslots;	/* power of two */
	uint32_t key_size;
	uint32_t val_size;
	uint32_t max_probe;	/* 1..nslots */
	uint32_t lock;		/* odd while a thread inserts a key */
	uint64_t used;		/* slots ever claimed */
	uint64_t dropped;	/* updates dropped: table full */
	uint64_t raced;		/* updates that lost a race to a writer */
	uint64_t max_keys;	/* the map's key limit; 0: none but nslots */
	uint64_t keys;		/* keys present (see above) */
	uint64_t lockdrop;	/* inserts dropped: the insert lock stayed
				 * held (preempted or gone holder) */
};

#define RT_SHTAB_EMPTY 0
#define RT_SHTAB_BUSY 1
#define RT_SHTAB_USED 2
#define RT_SHTAB_DEAD 3

_Static_assert(sizeof(struct rt_site) <= RT_SITE_HDR, "rt_site too big");

static inline uint64_t rt_align8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

static inline uint64_t rt_htab_slot_size(const struct rt_htab *h)
{
	return 8 + rt_align8(h->key_size) + rt_align8(h->val_size);
}

static inline uint64_t rt_shtab_slot_size(const struct rt_shtab *h)
{
	return 8 + rt_align8(h->key_size) + rt_align8(h->val_size);
}
#endif

#endif
