/*
 * Children that share the memory and the thread pointer of the thread
 * that made them while it waits (CLONE_VM | CLONE_VFORK without
 * CLONE_SETTLS: vfork(), glibc's posix_spawn(), clone() used so): the
 * child's probe code would find the parent thread's block at %fs, record
 * under the parent's pid and tid and share its shadow stack.  ubt puts
 * rt_vf_hook_spawn or rt_vf_hook_clone (rt_abi.h RT_FN_VF_SPAWN,
 * RT_FN_VF_CLONE) as entry probe code on libc's posix_spawn,
 * posix_spawnp, vfork and clone (glibc's vfork at +1, after its
 * "pop %rdi": rt_vf_hook_vfork, RT_FN_VF_VFORK, lends the return address
 * in %rdi); for the call, the thread lends its block pointer:
 *
 *  - at the entry (rt_vf_lend()): keep self and noblock in struct
 *    rt_tls, zero them, and put rt_vf_back in place of the caller's
 *    return address (kept too).  The child's first hit takes the slow
 *    path and a block of its own (rt_block.c): its own pid and tid, its
 *    own shadow stack.
 *  - at the return (rt_vf_back, rt_vf_restore()): in the parent, self and
 *    noblock back, then on to the caller.  A vfork() child returns there
 *    first (getpid() tells): it goes on to the caller and keeps its own.
 *
 * The parent thread waits in the kernel meanwhile, so nothing else uses
 * the pointer.  A nested call (a signal handler) lends nothing.  One
 * getpid() per call, none per hit.
 *
 * A child that shares the memory but does not make its parent wait
 * (clone() with CLONE_VM, without CLONE_VFORK or CLONE_THREAD) would run
 * beside the thread that made it on that thread's block: its hits under
 * the parent's pid and tid, its wrapped calls on the parent's shadow
 * stack.  The two share %fs: only their stack pointers differ, and a
 * check of it would cost every hit of every thread.  So the child never
 * runs a user-mode probe: at clone's entry the thread announces it
 * (rt_vm_wait(), struct rt_ctl vm_tid, vm_seq) and waits until ubt has
 * handed the process's probes over to the kernel (or ended the run),
 * restored its code and set vm_ack; the child then starts with the
 * file's code, and the kernel counts it under its own pid and tid from
 * its first instruction.  The wait is bounded (RT_VM_WAIT_MS: a ubt gone
 * or stuck); a child made by a system call of its own is left to ubt's
 * watcher (shim/user/user_vmwatch.c).  Nothing on the hit path.
 */
#include <stdint.h>

#include "rt_abi.h"
#include "rt_int.h"

#define RT_CLONE_VM 0x00000100
#define RT_CLONE_VFORK 0x00004000
#define RT_CLONE_THREAD 0x00010000
#define RT_CLONE_SETTLS 0x00080000

void rt_vf_hook_spawn(void);
void rt_vf_hook_clone(void);
void rt_vf_back(void);
void rt_vf_lend(uint64_t *slot, uint64_t flags);
uint64_t rt_vf_restore(void);

/*
 * A CLONE_VM child without CLONE_VFORK about to be made by the calling
 * thread: tell ubt, wait (bounded) until its probes are out of the
 * process and its code restored (ctl->vm_ack).  Only in the process ubt
 * attached to: a forked or vfork'd child is not the one it hands over.
 */
static void rt_vm_wait(void)
{
	struct rt_ctl *ctl = rt_ctl_p;
	int i;

	if (!ctl || __atomic_load_n(&ctl->detached, __ATOMIC_ACQUIRE))
		return;
	if (rt_forked || rt_syscall0(39 /* getpid */) != rt_pid)
		return;
	__atomic_store_n(&ctl->vm_tid, (uint32_t)rt_syscall0(186 /* gettid */),
			 __ATOMIC_RELAXED);
	__atomic_add_fetch(&ctl->vm_seq, 1, __ATOMIC_RELEASE);
	for (i = 0; i < RT_VM_WAIT_MS / 10; i++) {
		if (__atomic_load_n(&ctl->vm_ack, __ATOMIC_ACQUIRE))
			return;
		rt_futex_wait(&ctl->vm_ack, 0, 10000000L);
	}
	/*
	 * No answer: ubt was killed or is stuck.  Later children of this
	 * session do not wait again (ubt's watcher still sees them), so a
	 * ubt killed with its guard costs the process one wait, not one
	 * per clone() until the next ubt reclaims its code.
	 */
	__atomic_store_n(&ctl->vm_ack, 2, __ATOMIC_RELEASE);
}

/* slot: the caller's return address on the stack; flags: clone's */
__attribute__((visibility("hidden"))) void rt_vf_lend(uint64_t *slot,
						      uint64_t flags)
{
	if ((flags & (RT_CLONE_VM | RT_CLONE_VFORK | RT_CLONE_THREAD)) ==
	    RT_CLONE_VM) {
		rt_vm_wait();
		return;
	}
	if ((flags & (RT_CLONE_VM | RT_CLONE_VFORK | RT_CLONE_THREAD |
		      RT_CLONE_SETTLS)) != (RT_CLONE_VM | RT_CLONE_VFORK))
		return;
	if (rt_tls.vf_ret || !rt_tls.self || !*slot)
		return;
	rt_tls.vf_self = rt_tls.self;
	rt_tls.vf_noblock = rt_tls.noblock;
	rt_tls.vf_pid = (uint64_t)rt_syscall0(39 /* getpid */);
	rt_tls.vf_ctl = rt_ctl_p;
	rt_tls.vf_ret = *slot;
	*slot = (uint64_t)(uintptr_t)rt_vf_back;
	rt_tls.self = 0;
	rt_tls.noblock = 0;
}

/* The caller's return address; in the parent, its block back. */
__attribute__((visibility("hidden"))) uint64_t rt_vf_restore(void)
{
	uint64_t ret = rt_tls.vf_ret;

	if ((uint64_t)rt_syscall0(39 /* getpid */) != rt_tls.vf_pid)
		return ret;	/* a vfork() child: its parent comes later */
	/* a block of this session (ubt may have attached again since) */
	rt_tls.self = rt_tls.vf_ctl == rt_ctl_p ? rt_tls.vf_self : 0;
	rt_tls.noblock = rt_tls.vf_noblock;
	rt_tls.vf_ret = 0;
	return ret;
}

/*
 * Entry probe code: the trampoline called it with the function's
 * arguments live and the caller's return address 16 bytes above its
 * own; every register is kept (rt_call_kept).  rt_vf_back: where the
 * lent call returns, %rax and every other register kept.
 */
__asm__(".text\n"
	".globl rt_vf_hook_spawn\n"
	".hidden rt_vf_hook_spawn\n"
	".type rt_vf_hook_spawn,@function\n"
	"rt_vf_hook_spawn:\n"
	"	push %rsi\n"
	"	mov $0x4100, %esi\n"	/* CLONE_VM | CLONE_VFORK */
	"	jmp 1f\n"
	".size rt_vf_hook_spawn, .-rt_vf_hook_spawn\n"

	".globl rt_vf_hook_clone\n"
	".hidden rt_vf_hook_clone\n"
	".type rt_vf_hook_clone,@function\n"
	"rt_vf_hook_clone:\n"
	"	push %rsi\n"
	"	mov %rdx, %rsi\n"	/* clone(fn, stack, flags, ...) */
	"1:	push %rdi\n"
	"	push %rax\n"
	"	lea 40(%rsp), %rdi\n"
	"	lea rt_vf_lend(%rip), %rax\n"
	"	call rt_call_kept\n"
	"	pop %rax\n"
	"	pop %rdi\n"
	"	pop %rsi\n"
	"	ret\n"
	".size rt_vf_hook_clone, .-rt_vf_hook_clone\n"

	/* at vfork+1: the caller's return address is in %rdi (its copy
	 * on this stack is the slot lent) */
	".globl rt_vf_hook_vfork\n"
	".hidden rt_vf_hook_vfork\n"
	".type rt_vf_hook_vfork,@function\n"
	"rt_vf_hook_vfork:\n"
	"	push %rsi\n"
	"	push %rdi\n"
	"	push %rax\n"
	"	lea 8(%rsp), %rdi\n"
	"	mov $0x4100, %esi\n"	/* CLONE_VM | CLONE_VFORK */
	"	lea rt_vf_lend(%rip), %rax\n"
	"	call rt_call_kept\n"
	"	pop %rax\n"
	"	pop %rdi\n"
	"	pop %rsi\n"
	"	ret\n"
	".size rt_vf_hook_vfork, .-rt_vf_hook_vfork\n"

	".globl rt_vf_back\n"
	".hidden rt_vf_back\n"
	".type rt_vf_back,@function\n"
	"rt_vf_back:\n"
	"	push %rax\n"		/* becomes the return address */
	"	push %rax\n"
	"	lea rt_vf_restore(%rip), %rax\n"
	"	call rt_call_kept\n"
	"	mov %rax, 8(%rsp)\n"
	"	pop %rax\n"
	"	ret\n"
	".size rt_vf_back, .-rt_vf_back\n");
