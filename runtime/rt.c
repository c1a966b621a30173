/*
 * libubt-rt.so: the agent ubt loads into the traced process with a remote
 * dlopen.  No libc calls, no LLVM, no locks: it hands each thread a block of
 * the shared memfd (once per thread, rt_block.c), wraps calls for return
 * probes with a per-thread shadow stack, and offers two helpers to native
 * probe code (ring output, keyed tables).  It never aborts or exits the
 * process: when blocks run out or ubt is gone, probes stop recording or keep
 * writing into memory nobody reads, both harmless.  Ordinary maps live in
 * lock-free tables shared by all threads (struct rt_shtab), read, updated,
 * deleted and iterated through four more helpers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ucontext.h>

#include "rt_abi.h"
#include "rt_asm.h"
#include "rt_clock.h"
#include "rt_int.h"

#define RT_STR_(x) #x
#define RT_STR(x) RT_STR_(x)

void *rt_block_get(void);
int rt_ring_write(const void *data, uint32_t len, uint32_t type);
void *rt_htab_lookup(struct rt_htab *h, const void *key);
void *rt_htab_find(struct rt_htab *h, const void *key);
long rt_htab_delete(struct rt_htab *h, const void *key);
void *rt_shtab_read(struct rt_shtab *h, const void *key, void *dst);
long rt_shtab_update(struct rt_shtab *h, const void *key, const void *val);
long rt_shtab_delete(struct rt_shtab *h, const void *key);
uint64_t rt_shtab_next(struct rt_shtab *h, uint64_t from, void *key,
		       void *val);
uint64_t rt_htab_next_all(struct rt_htab *h, uint64_t from, void *key,
			  void *val);
void rt_slow(void);
void rt_wrap_enter(void);
void rt_wrap_exit(void);
void rt_wrap_call(void);
void rt_wrap_low(void);
void rt_wrap_stubs(void);
void rt_wrap_ret(void);
void rt_wrap_parked_ret(void);
/* RT_FN_WRAP_STUB_NEXT: slots of rt_wrap_stubs taken (written by ubt) */
static volatile uint32_t rt_stub_next;
/* RT_FN_PARKED: the read-only pages of parked calls (written by ubt) */
static volatile uint64_t rt_parked[RT_PARKED_MAX];
void rt_exec_hook(void);
void rt_vf_hook_spawn(void);
void rt_vf_hook_clone(void);
void rt_vf_hook_vfork(void);
long rt_probe_read(void *dst, const void *src, uint64_t len);
extern const char rt_copy_insn[], rt_copy_fixup[];
void rt_restorer(void);

/* The kernel's struct sigaction (rt_sigaction with an 8-byte mask). */
struct rt_ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};
#define RT_SA_RESTORER 0x04000000

static struct rt_ksigaction rt_old_segv, rt_old_bus;

/*
 * A child forked by the target inherits the shared memfd and the thread
 * pointers: it must not write into its parent's blocks.  libc's atfork hook
 * (bound at dlopen: libc is already loaded) turns recording off in it.
 */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void),
			     void (*child)(void), void *dso);

static long rt_sigaction(int sig, const struct rt_ksigaction *act,
			 struct rt_ksigaction *old)
{
	/* SYS_rt_sigaction, the kernel's 8-byte mask */
	return rt_syscall4(13, sig, (long)act, (long)old, 8);
}


/* tgkill(getpid(), gettid(), sig) */
static void rt_tgkill_self(int sig)
{
	long pid = rt_syscall0(39 /* getpid */);
	long tid = rt_syscall0(186 /* gettid */);

	rt_syscall4(234 /* SYS_tgkill */, pid, tid, sig, 0);
}

/*
 * SIGSEGV/SIGBUS: a fault in rt_probe_read's copy, or in rt_frame_read's
 * loads (rt_stack.c), resumes at its fixup;
 * any other fault goes to the handler that was there before (chained), or
 * gets the default action back and faults again, as without the runtime.
 */
static void rt_fault(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	struct rt_ksigaction *old = sig == SIGBUS ? &rt_old_bus : &rt_old_segv;
	greg_t *rip = &uc->uc_mcontext.gregs[REG_RIP];

	if (*rip == (greg_t)(uintptr_t)rt_copy_insn) {
		*rip = (greg_t)(uintptr_t)rt_copy_fixup;
		return;
	}
	if (*rip == (greg_t)(uintptr_t)rt_frame_insn0 ||
	    *rip == (greg_t)(uintptr_t)rt_frame_insn1) {
		*rip = (greg_t)(uintptr_t)rt_frame_fixup;
		return;
	}
	if (old->handler == SIG_IGN && si && si->si_code <= 0)
		return;	/* sent by kill(): ignored, as without us */
	if (old->handler == SIG_DFL || old->handler == SIG_IGN) {
		struct rt_ksigaction dfl = { .handler = SIG_DFL };

		rt_sigaction(sig, &dfl, NULL);
		/*
		 * A fault comes back when the instruction runs again; a
		 * signal sent by kill() would not: send it again, so that
		 * it ends the process as it would without the runtime.
		 */
		if (si && si->si_code <= 0)
			rt_tgkill_self(sig);
		return;
	}
	if (old->flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))old->handler)(sig, si,
								     ctx);
	else
		((void (*)(int))old->handler)(sig);
}

/* An anonymous private mapping of len bytes, at at (MAP_FIXED) if set. */
static long rt_mmap_anon(void *at, uint64_t len)
{
	long ret;
	/* MAP_PRIVATE|MAP_ANONYMOUS, | MAP_FIXED */
	register long r10 __asm__("r10") = at ? 0x32 : 0x22;
	register long r8 __asm__("r8") = -1;
	register long r9 __asm__("r9") = 0;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(9L) /* SYS_mmap */, "D"(at), "S"(len),
			   "d"(3L) /* PROT_READ|PROT_WRITE */, "r"(r10),
			   "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

static void rt_munmap(void *at, uint64_t len)
{
	rt_syscall4(11 /* SYS_munmap */, (long)at, (long)len, 0, 0);
}

/* kill(pid, 0): 0, or -ESRCH for a process that is gone */
static long rt_kill0(uint32_t pid)
{
	return rt_syscall4(62 /* SYS_kill */, pid, 0, 0, 0);
}

/* Take a slot of ctl->children for this (child) process. */
static void rt_child_register(struct rt_ctl *ctl)
{
	uint32_t me = (uint32_t)rt_syscall0(39 /* getpid */);

	if (ctl->sz < offsetof(struct rt_ctl, children) +
			      sizeof(ctl->children))
		return;
	for (int i = 0; i < RT_MAX_CHILDREN; i++) {
		uint32_t *slot = &ctl->children[i];
		uint32_t was = __atomic_load_n(slot, __ATOMIC_RELAXED);

		if (was && rt_kill0(was) != -3 /* -ESRCH */)
			continue;
		if (__atomic_compare_exchange_n(slot, &was, me, 0,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	}
	__atomic_fetch_add(&ctl->children_lost, 1, __ATOMIC_RELAXED);
}

/*
 * The forking thread's block header and shadow stack, copied before the
 * fork (libc's prepare hook): once fork() returns in the parent, its
 * wrapped calls in progress return and pop their entries from the shared
 * block while the child's hook may not have run yet.  libc holds its
 * atfork lock from the prepare hooks to the parent's or child's.
 */
static char *rt_fork_snap;

static void rt_fork_prepare(void)
{
	char *self = rt_self;
	long p;
	int i;

	rt_fork_snap = 0;
	if (!self)
		return;
	p = rt_mmap_anon(NULL, RT_BLK_MAP);
	if (p < 0 && p > -4096)
		return;
	rt_fork_snap = (char *)p;
	for (i = 0; i < RT_BLK_MAP; i++)
		rt_fork_snap[i] = self[i];
}

static void rt_fork_parent(void)
{
	if (rt_fork_snap)
		rt_munmap(rt_fork_snap, RT_BLK_MAP);
	rt_fork_snap = 0;
}

/*
 * In the child (libc's atfork hook, bound at dlopen): it inherits the
 * shared memfd and the thread pointer of the forking thread, whose block
 * is its parent's.  Replace that block, in place, by a private copy of its
 * header and shadow stack as they were at the fork (rt_fork_snap), so
 * that wrapped calls in progress still find their shadow entries (also
 * through %rbx, which points into the block) without touching the
 * parent's; then forget it: with RT_CTL_CHILDREN
 * the child's next hit takes a block of its own from the shared memfd,
 * where ubt reads it and merges it as any thread's, else it records
 * nothing.  The child's pid goes into ctl->children so
 * that ubt restores its code too when it detaches.
 */
static void rt_fork_child(void)
{
	struct rt_ctl *ctl = rt_ctl_p;
	char *old = rt_self, *tmp = rt_fork_snap;
	long p;
	int i;

	rt_self = 0;
	rt_forked = 1;
	rt_fork_snap = 0;
	if (!ctl)
		return;
	rt_noblock = !(ctl->flags & RT_CTL_CHILDREN);
	rt_child_register(ctl);
	if (!old)
		return;
	if (!tmp) {
		rt_noblock = 1;	/* keep the shared block: still no crash */
		rt_self = old;
		return;
	}
	p = rt_mmap_anon(old, ctl->block_size);
	if (p == (long)(uintptr_t)old)
		for (i = 0; i < RT_BLK_MAP; i++)
			old[i] = tmp[i];
	rt_munmap(tmp, RT_BLK_MAP);
}

static void rt_fault_install(int handler)
{
	struct rt_ksigaction act = {
		.handler = (void *)rt_fault,
		.flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | RT_SA_RESTORER,
		.restorer = (void *)rt_restorer,
	};
	static int atfork_done, handler_done;

	if (!atfork_done) {
		atfork_done = 1;
		__register_atfork(rt_fork_prepare, rt_fork_parent,
				  rt_fork_child, NULL);
	}
	if (handler && !handler_done) {
		handler_done = 1;
		rt_sigaction(SIGSEGV, &act, &rt_old_segv);
		rt_sigaction(SIGBUS, &act, &rt_old_bus);
	}
}

/*
 * Append one record to the thread's ring.  Drops (and counts) when the ring
 * is full: the consumer may be slow or dead, the target never waits.
 */
RT_EXPORT int rt_ring_write(const void *data, uint32_t len, uint32_t type)
{
	struct rt_ctl *ctl = rt_ctl_p;
	char *blk = rt_self ? rt_self : rt_block_get();
	uint64_t size, head, tail, rec, off, need;
	char *ring;
	uint32_t i;

	if (!blk)
		return -1;
	size = ctl->ring_size;
	ring = blk + RT_BLK_MAP + ctl->map_size;
	head = *(uint64_t *)(blk + RT_BLK_RING_HEAD);
	/* our last read of ubt's tail: older is safe (less room) */
	tail = *(uint64_t *)(blk + RT_BLK_RING_TAIL_SEEN);
	rec = rt_align8((uint64_t)len + RT_REC_HDR);
	off = head & (size - 1);
	need = rec;
	if (off + rec > size)
		need += size - off;
	if (head - tail > size || head - tail + need > size) {
		tail = __atomic_load_n((uint64_t *)(blk + RT_BLK_RING_TAIL),
				       __ATOMIC_ACQUIRE);
		*(uint64_t *)(blk + RT_BLK_RING_TAIL_SEEN) = tail;
	}
	if (ctl->detached || rec > size || head - tail > size ||
	    head - tail + need > size) {
		(*(uint64_t *)(blk + RT_BLK_RING_DROPPED))++;
		return -1;
	}
	if (off + rec > size) {
		*(uint32_t *)(ring + off) = (uint32_t)(size - off);
		*(uint32_t *)(ring + off + 4) = RT_REC_PAD;
		head += size - off;
		off = 0;
	}
	*(uint32_t *)(ring + off) = (uint32_t)rec;
	*(uint32_t *)(ring + off + 4) = type;
	/* whole words first: records are 8-aligned, events mostly u64s */
	for (i = 0; i + 8 <= len; i += 8)
		__builtin_memcpy(ring + off + RT_REC_HDR + i,
				 (const char *)data + i, 8);
	for (; i < len; i++)
		ring[off + RT_REC_HDR + i] = ((const char *)data)[i];
	__atomic_store_n((uint64_t *)(blk + RT_BLK_RING_HEAD), head + rec,
			 __ATOMIC_RELEASE);
	return 0;
}

/* keys need not be aligned (a probe's stack, a slot) */

/*
 * On execve's entry (RT_FN_EXEC_HOOK): tell ubt, wait until it follows
 * (it has seized this thread: the exec stops in the new image), bounded,
 * so that a ubt gone or busy costs the exec at most RT_EXEC_WAIT_MS.
 */
__attribute__((visibility("hidden"))) void rt_exec_wait(void)
{
	struct rt_ctl *ctl = rt_ctl_p;
	uint32_t seq;
	int i;

	if (!ctl || __atomic_load_n(&ctl->detached, __ATOMIC_ACQUIRE))
		return;
	/* a forked or vfork'd child: ubt follows the target only */
	if (rt_forked || rt_syscall0(39 /* getpid */) != rt_pid)
		return;
	__atomic_store_n(&ctl->exec_pid,
			 (uint32_t)rt_syscall0(39 /* getpid */),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->exec_tid,
			 (uint32_t)rt_syscall0(186 /* gettid */),
			 __ATOMIC_RELAXED);
	seq = __atomic_add_fetch(&ctl->exec_seq, 1, __ATOMIC_RELEASE);
	for (i = 0; i < RT_EXEC_WAIT_MS / 10; i++) {
		uint32_t ack = __atomic_load_n(&ctl->exec_ack,
					       __ATOMIC_ACQUIRE);

		if (ack == seq ||
		    __atomic_load_n(&ctl->detached, __ATOMIC_ACQUIRE))
			return;
		rt_futex_wait(&ctl->exec_ack, ack, 10000000L);
	}
}

/*
 * Called by ubt (remote call) once after dlopen, in a stopped thread of the
 * target: publish the helpers and return the %fs offset of rt_self.  vdso:
 * the vDSO's address from the target's auxiliary vector, believed only
 * with check == ~vdso (callers that pass one argument leave both words
 * undefined; none is read then).
 */
RT_EXPORT long rt_init(struct rt_ctl *ctl, uint64_t vdso, uint64_t check)
{
	uintptr_t fs0;

	/* a runtime of another ubt: say so, touch nothing else */
	if (ctl->version != RT_ABI_VERSION || ctl->sz != sizeof(*ctl))
		return -RT_ABI_MISMATCH - (long)RT_ABI_VERSION;
	if (!rt_chunk_valid(ctl))
		return -22;	/* EINVAL: ubt says it did not initialize */
	rt_chunk_reset(ctl);
	ctl->ctl_at = (uintptr_t)&rt_ctl_p;
	__asm__("mov %%fs:0, %0" : "=r"(fs0));
	ctl->tls_offset = (intptr_t)&rt_tls - (intptr_t)fs0;
	ctl->fn[RT_FN_RING_WRITE] = (uintptr_t)rt_ring_write;
	ctl->fn[RT_FN_HTAB_LOOKUP] = (uintptr_t)rt_htab_lookup;
	ctl->fn[RT_FN_SLOW] = (uintptr_t)rt_slow;
	ctl->fn[RT_FN_WRAP_ENTER] = (uintptr_t)rt_wrap_enter;
	ctl->fn[RT_FN_WRAP_EXIT] = (uintptr_t)rt_wrap_exit;
	ctl->fn[RT_FN_WRAP_CALL] = (uintptr_t)rt_wrap_call;
	ctl->fn[RT_FN_WRAP_LOW] = (uintptr_t)rt_wrap_low;
	ctl->fn[RT_FN_WRAP_STUBS] = (uintptr_t)rt_wrap_stubs;
	ctl->fn[RT_FN_WRAP_STUB_NEXT] = (uintptr_t)&rt_stub_next;
	ctl->fn[RT_FN_WRAP_RET] = (uintptr_t)rt_wrap_ret;
	ctl->fn[RT_FN_WRAP_PARKED] = (uintptr_t)rt_wrap_parked_ret;
	ctl->fn[RT_FN_PARKED] = (uintptr_t)rt_parked;
	ctl->fn[RT_FN_PROBE_READ] = (uintptr_t)rt_probe_read;
	ctl->fn[RT_FN_HTAB_FIND] = (uintptr_t)rt_htab_find;
	ctl->fn[RT_FN_HTAB_DELETE] = (uintptr_t)rt_htab_delete;
	ctl->fn[RT_FN_SHTAB_READ] = (uintptr_t)rt_shtab_read;
	ctl->fn[RT_FN_SHTAB_UPDATE] = (uintptr_t)rt_shtab_update;
	ctl->fn[RT_FN_SHTAB_DELETE] = (uintptr_t)rt_shtab_delete;
	ctl->fn[RT_FN_SHTAB_NEXT] = (uintptr_t)rt_shtab_next;
	ctl->fn[RT_FN_HTAB_NEXT_ALL] = (uintptr_t)rt_htab_next_all;
	rt_clock_init(check == ~vdso ? vdso : 0);
	ctl->fn[RT_FN_CLOCK_NS] = (uintptr_t)rt_clock_ns;
	ctl->fn[RT_FN_EXEC_HOOK] = (uintptr_t)rt_exec_hook;
	ctl->fn[RT_FN_USTACK] = (uintptr_t)rt_ustack;
	ctl->fn[RT_FN_COMM_SYNC] = (uintptr_t)rt_comm_sync;
	ctl->fn[RT_FN_CRED_SYNC] = (uintptr_t)rt_cred_sync;
	ctl->fn[RT_FN_VF_SPAWN] = (uintptr_t)rt_vf_hook_spawn;
	ctl->fn[RT_FN_VF_CLONE] = (uintptr_t)rt_vf_hook_clone;
	ctl->fn[RT_FN_VF_VFORK] = (uintptr_t)rt_vf_hook_vfork;
	rt_fault_install(ctl->flags & RT_CTL_FAULT_HANDLER);
	rt_pid = rt_syscall0(39 /* getpid */);
	__atomic_store_n(&rt_ctl_p, ctl, __ATOMIC_RELEASE);
	return ctl->tls_offset;
}

/*
 * rt_slow: the trampoline's slow path, taken once per thread.  Returns the
 * block (or 0) in %rax and preserves every other register: it is called
 * with the probed function's arguments live.  The C code it calls is built
 * with -mgeneral-regs-only, so vector registers are untouched.
 *
 * rt_wrap_enter: %r11 = address of the caller's return address (the slot).
 * Pushes {slot, return address, %rbx} on the thread's shadow stack and
 * points %rbx at the entry; %rax = 1, or 0 (%rbx unchanged) when the call
 * cannot be wrapped.  Clobbers %rax, flags.  Entries of frames that are
 * gone (left by longjmp, a C++ exception, a forced unwind or a signal
 * handler that did not return) are dropped first: rt_shadow_push
 * (rt_shadow.c) says which.
 *
 * rt_probe_read(dst, src, len): copy user memory that may be unmapped;
 * 0, or -EFAULT when the copy faulted (rt_fault resumes at the fixup).
 * Needs RT_CTL_FAULT_HANDLER: without the handler a fault is the
 * target's own.
 *
 * rt_wrap_exit: %r11 = the slot of the returning call.  Pops the shadow
 * stack down to the entry for that slot, discarding entries above it
 * (frames skipped by longjmp, an exception or by leaving a signal
 * handler), and returns the
 * original return address in %r11 and the caller's %rbx in %rbx.
 * Preserves all other registers.
 *
 * rt_wrap_call: see RT_FN_WRAP_CALL in rt_abi.h; rt_wrap_low: see
 * RT_FN_WRAP_LOW.
 */
/*
 * The unwind rules of rt_wrap_call and of every stub slot: they hold at
 * every instruction (the comment at rt_wrap_call below says why).
 */
#define RT_WRAP_CFI                                                         \
	"	.cfi_startproc\n"                                           \
	"	.cfi_escape 0x0f, 0x0b, 0x77, 0x0f, 0x73, 0x00, 0x08, 0x05, " \
	"0x25, 0x08, 0x07, 0x1d, 0x1c\n"                                 \
	"	.cfi_escape 0x16, 0x07, 0x02, 0x77, 0x00\n"                  \
	"	.cfi_escape 0x10, 0x10, 0x02, 0x73, " RT_STR(RT_SH_RET) "\n" \
	"	.cfi_escape 0x10, 0x03, 0x02, 0x73, " RT_STR(RT_SH_RBX) "\n"

__asm__(".text\n"
	".globl rt_probe_read\n"
	".type rt_probe_read,@function\n"
	"rt_probe_read:\n"
	"	mov %rdx, %rcx\n"
	".globl rt_copy_insn\n"
	".hidden rt_copy_insn\n"
	"rt_copy_insn:\n"
	"	rep movsb\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	".globl rt_copy_fixup\n"
	".hidden rt_copy_fixup\n"
	"rt_copy_fixup:\n"
	"	mov $-14, %rax\n"
	"	ret\n"
	".size rt_probe_read, .-rt_probe_read\n"

	".globl rt_restorer\n"
	".hidden rt_restorer\n"
	".type rt_restorer,@function\n"
	"rt_restorer:\n"
	"	mov $15, %eax\n"
	"	syscall\n"
	".size rt_restorer, .-rt_restorer\n"


	/* rt_exec_hook: rt_exec_wait with every register kept */
	".globl rt_exec_hook\n"
	".hidden rt_exec_hook\n"
	".type rt_exec_hook,@function\n"
	"rt_exec_hook:\n"
	"	push %rax\n"
	"	lea rt_exec_wait(%rip), %rax\n"
	"	call rt_call_kept\n"
	"	pop %rax\n"
	"	ret\n"
	".size rt_exec_hook, .-rt_exec_hook\n"

	".globl rt_slow\n"
	".hidden rt_slow\n"
	".type rt_slow,@function\n"
	"rt_slow:\n"
	"	lea rt_block_get(%rip), %rax\n"
	"	jmp rt_call_kept\n"
	".size rt_slow, .-rt_slow\n"

	".globl rt_wrap_enter\n"
	".hidden rt_wrap_enter\n"
	".type rt_wrap_enter,@function\n"
	"rt_wrap_enter:\n"
	RT_ASM_SAVE_ARGS
	"	mov %r11, %rdi\n"
	"	mov %rbx, %rsi\n"
	"	lea rt_wrap_ret(%rip), %rdx\n"
	"	lea rt_wrap_stubs(%rip), %rcx\n"
	"	call rt_shadow_push\n"
	RT_ASM_RESTORE_ARGS
	"	test %rax, %rax\n"
	"	jz 9f\n"
	"	mov %rax, %rbx\n"
	"	mov $1, %eax\n"
	"9:	ret\n"
	".size rt_wrap_enter, .-rt_wrap_enter\n"

	".globl rt_wrap_exit\n"
	".hidden rt_wrap_exit\n"
	".type rt_wrap_exit,@function\n"
	"rt_wrap_exit:\n"
	"	push %rax\n"
	"	push %rcx\n"
	"	movq rt_tls@gottpoff(%rip), %rax\n"
	"	movq %fs:(%rax), %rax\n"
	"	mov " RT_STR(RT_BLK_SHADOW_TOP) "(%rax), %rcx\n"
	"	and $-" RT_STR(RT_SHADOW_ENTRY) ", %rcx\n"
	/* a top the process scribbled over: search the stack's entries */
	"	cmp $" RT_STR(RT_SHADOW_DEPTH) " * " RT_STR(RT_SHADOW_ENTRY)
	", %rcx\n"
	"	jbe 1f\n"
	"	mov $" RT_STR(RT_SHADOW_DEPTH) " * " RT_STR(RT_SHADOW_ENTRY)
	", %ecx\n"
	"1:	test %rcx, %rcx\n"
	"	jz 9f\n"
	"	sub $" RT_STR(RT_SHADOW_ENTRY) ", %rcx\n"
	"	cmp %r11, " RT_STR(RT_BLK_SHADOW) "(%rax,%rcx)\n"
	"	jne 1b\n"
	/* read the entry before it is free: a signal handler may push */
	"	mov " RT_STR(RT_BLK_SHADOW) " + " RT_STR(RT_SH_RBX)
	"(%rax,%rcx), %rbx\n"
	"	mov " RT_STR(RT_BLK_SHADOW) " + " RT_STR(RT_SH_RET)
	"(%rax,%rcx), %r11\n"
	"	mov %rcx, " RT_STR(RT_BLK_SHADOW_TOP) "(%rax)\n"
	"	pop %rcx\n"
	"	pop %rax\n"
	"	ret\n"
	/* unreachable: every wrapped call pushed its entry */
	"9:	ud2\n"
	".size rt_wrap_exit, .-rt_wrap_exit\n"

	/*
	 * The caller's frame as seen from the return address in here: its
	 * %rsp is ours (the wrapped function's return address slot is just
	 * below), its return address and %rbx are in the shadow entry at
	 * %rbx.  True at every instruction, before the call as after it.
	 * Unwinders tell frames apart by their CFAs, and libgcc aborts when
	 * two frames in a row have the same one: the wrapped function's CFA
	 * is %rsp, and a function that a wrapped function tail-called and
	 * that is wrapped too runs under two rt_wrap_call frames with the
	 * same %rsp.  So the CFA is %rsp + 15 - (entry index % 7) (below the
	 * caller's own CFA, %rsp + 16 at least), and the caller's %rsp has a
	 * rule of its own.  DW_CFA_def_cfa_expression (0x0f): length 11,
	 * DW_OP_breg7 15, DW_OP_breg3 0, DW_OP_const1u 5, DW_OP_shr,
	 * DW_OP_const1u 7, DW_OP_mod, DW_OP_minus.  DW_CFA_expression (0x10)
	 * and DW_CFA_val_expression (0x16): register, length 2, DW_OP_bregN
	 * (0x70 + N) offset.
	 */
	".p2align 4\n"
	".globl rt_wrap_call\n"
	".hidden rt_wrap_call\n"
	".type rt_wrap_call,@function\n"
	"rt_wrap_call:\n"
	RT_WRAP_CFI
	"	call *%r11\n"
	".globl rt_wrap_ret\n"
	".hidden rt_wrap_ret\n"
	"rt_wrap_ret:\n"
	"	jmp *" RT_STR(RT_SH_CONT) "(%rbx)\n"
	"	.cfi_endproc\n"
	".size rt_wrap_call, .-rt_wrap_call\n"

	/*
	 * RT_FN_WRAP_PARKED (rt_abi.h): a wrapped call parked at a detach
	 * returns here.  Its unwind rules are rt_wrap_call's at the return
	 * address (the call before it never runs: an unwinder looks one
	 * byte back); the code after it has none.  %rsp is the slot + 8;
	 * every register but %rbx and the flags is kept.
	 */
	".p2align 4\n"
	".type rt_wrap_parked,@function\n"
	"rt_wrap_parked:\n"
	RT_WRAP_CFI
	"	call *%r11\n"
	".globl rt_wrap_parked_ret\n"
	".hidden rt_wrap_parked_ret\n"
	"rt_wrap_parked_ret:\n"
	"	.cfi_endproc\n"
	"	push %r11\n"
	"	cmp %rsp, " RT_STR(RT_SH_SLOT) "(%rbx)\n"
	"	jne 2f\n"
	"	mov " RT_STR(RT_SH_RET) "(%rbx), %r11\n"
	"	mov " RT_STR(RT_SH_RBX) "(%rbx), %rbx\n"
	"	xchg %r11, (%rsp)\n"
	"	ret\n"
	/* not its entry: the page's, from its top down (rt_wrap_exit's
	 * search, without the pop) */
	"2:	push %rax\n"
	"	push %rcx\n"
	"	mov %rbx, %rax\n"
	"	and $-4096, %rax\n"
	"	mov " RT_STR(RT_BLK_SHADOW_TOP) "(%rax), %rcx\n"
	"	and $-" RT_STR(RT_SHADOW_ENTRY) ", %rcx\n"
	"	cmp $" RT_STR(RT_SHADOW_DEPTH) " * " RT_STR(RT_SHADOW_ENTRY)
	", %rcx\n"
	"	jbe 3f\n"
	"	mov $" RT_STR(RT_SHADOW_DEPTH) " * " RT_STR(RT_SHADOW_ENTRY)
	", %ecx\n"
	"3:	test %rcx, %rcx\n"
	"	jz 9f\n"
	"	sub $" RT_STR(RT_SHADOW_ENTRY) ", %rcx\n"
	"	lea 16(%rsp), %r11\n"
	"	cmp %r11, " RT_STR(RT_BLK_SHADOW) "(%rax,%rcx)\n"
	"	jne 3b\n"
	"	mov " RT_STR(RT_BLK_SHADOW) " + " RT_STR(RT_SH_RBX)
	"(%rax,%rcx), %rbx\n"
	"	mov " RT_STR(RT_BLK_SHADOW) " + " RT_STR(RT_SH_RET)
	"(%rax,%rcx), %r11\n"
	"	pop %rcx\n"
	"	pop %rax\n"
	"	xchg %r11, (%rsp)\n"
	"	ret\n"
	/* unreachable: ubt parks only calls with their entry there */
	"9:	ud2\n"
	".size rt_wrap_parked, .-rt_wrap_parked\n"

	/*
	 * rt_wrap_low: entered with %rsp just above the kernel's return
	 * address (the slot + 8).  Each push copies the word GAP - 8 above
	 * its destination: the stack arguments land just above the new
	 * return address.  From the return address the caller's %rsp is
	 * %rsp + GAP; its return address (the kernel's trampoline) and %rbx
	 * are in the entry at %rbx.
	 */
	".p2align 4\n"
	".globl rt_wrap_low\n"
	".hidden rt_wrap_low\n"
	".type rt_wrap_low,@function\n"
	"rt_wrap_low:\n"
	"	.cfi_startproc\n"
	"	.cfi_def_cfa %rsp, 0\n"
	"	.cfi_escape 0x10, 0x10, 0x02, 0x73, " RT_STR(RT_SH_RET) "\n"
	"	.cfi_escape 0x10, 0x03, 0x02, 0x73, " RT_STR(RT_SH_RBX) "\n"
	"	lea -(" RT_STR(RT_WRAP_LOW_GAP) " - " RT_STR(RT_WRAP_LOW_COPY)
	")(%rsp), %rsp\n"
	"	.cfi_adjust_cfa_offset " RT_STR(RT_WRAP_LOW_GAP) " - "
	RT_STR(RT_WRAP_LOW_COPY) "\n"
	"	.rept " RT_STR(RT_WRAP_LOW_COPY) " / 8\n"
	"	pushq " RT_STR(RT_WRAP_LOW_GAP) " - 8(%rsp)\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.endr\n"
	"	call *%r11\n"
	"	lea " RT_STR(RT_WRAP_LOW_GAP) "(%rsp), %rsp\n"
	"	.cfi_adjust_cfa_offset -" RT_STR(RT_WRAP_LOW_GAP) "\n"
	"	jmp *" RT_STR(RT_SH_CONT) "(%rbx)\n"
	"	.cfi_endproc\n"
	".size rt_wrap_low, .-rt_wrap_low\n"

	/*
	 * RT_FN_WRAP_STUBS: per-site copies of rt_wrap_call written by ubt
	 * (call rel32; jmp rel32), under the same rules: they hold at
	 * every address, so one FDE covers every slot.
	 */
	".p2align 4\n"
	".globl rt_wrap_stubs\n"
	".hidden rt_wrap_stubs\n"
	".type rt_wrap_stubs,@function\n"
	"rt_wrap_stubs:\n"
	RT_WRAP_CFI
	"	.fill " RT_STR(RT_WRAP_STUBS) " * " RT_STR(RT_WRAP_STUB)
	", 1, 0xcc\n"
	"	.cfi_endproc\n"
	".size rt_wrap_stubs, .-rt_wrap_stubs\n");

