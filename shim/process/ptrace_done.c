/*
 * A remote call that ends without system call stops.  The stub
 * (ptrace_stub.c) stops the control thread at every system call the call
 * makes (PTRACE_SYSCALL), to see its end: a dlopen() is ~20 of them, and
 * under load each stop waits for a CPU (50-100 us), all while the thread
 * is held.  Once a memory page is shared with the target (the memfd), a
 * call can run freely (PTRACE_CONT) through a small helper beside the
 * stub in its page, which calls the function, stores the result and
 * "done" in that shared word, restores the FPU state, wakes ubt (a futex
 * on the shared page) and sleeps at most 100 ms, where ubt interrupts it
 * and puts its registers back (pt_settle()).  The sleep is a select()
 * with no descriptors: interrupted, it asks for a plain restart and
 * leaves the thread's restart block alone, which a thread stopped in
 * its own poll(), nanosleep() or timed futex wait still needs (a timed
 * futex wait there would put its own restart in place of the thread's,
 * and the thread's call would end early when it goes back to it).  A ubt
 * that is gone or late costs the wait: then the helper returns into the
 * stub, which puts the thread back by itself as it always does; ubt sees
 * a thread outside the stub's page and takes its registers as they are.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/futex.h>
#include <sys/syscall.h>
#include "ptrace_int.h"

/*
 * The helper's code (at PT_DONE_OFF in the stub's page), entered by the
 * stub's "call *%rax" with the stub's data at 8(%rsp): D_REAL the
 * function, D_DONE the shared pair {u32 done, u32, u64 result}, D_TS the
 * sleep's struct timeval, D_NR the system call number when the function
 * is the helper's own system call (PT_RAWSYS_OFF, pt_done_syscall()).
 */
static const uint8_t done_code[] = {
	0x48, 0x83, 0xec, 0x08,				/* sub $8,%rsp */
	0x48, 0x8b, 0x84, 0x24, 0xe0, 0x00, 0x00, 0x00,	/* mov 16+D_REAL(%rsp),%rax */
	0xff, 0xd0,					/* call *%rax */
	0x48, 0x89, 0x04, 0x24,				/* mov %rax,(%rsp) */
	0x48, 0x8b, 0xb4, 0x24, 0xe8, 0x00, 0x00, 0x00,	/* mov 16+D_DONE(%rsp),%rsi */
	0x48, 0x89, 0x46, 0x08,				/* mov %rax,8(%rsi) */
	0xc7, 0x06, 0x01, 0x00, 0x00, 0x00,		/* movl $1,(%rsi) */
	0xb8, 0xff, 0xff, 0xff, 0xff,			/* mov $-1,%eax */
	0xba, 0xff, 0xff, 0xff, 0xff,			/* mov $-1,%edx */
	0x80, 0x7c, 0x24, 0x50, 0x00,			/* cmpb $0,16+D_XSAVE(%rsp) */
	0x74, 0x0b,					/* je 1f */
	0x48, 0x0f, 0xae, 0xac, 0x24, 0x10, 0x01, 0x00, 0x00,	/* xrstor64 16+D_FPU(%rsp) */
	0xeb, 0x09,					/* jmp 2f */
	0x48, 0x0f, 0xae, 0x8c, 0x24, 0x10, 0x01, 0x00, 0x00,	/* 1: fxrstor64 16+D_FPU(%rsp) */
	0x48, 0x8b, 0xbc, 0x24, 0xe8, 0x00, 0x00, 0x00,	/* 2: mov 16+D_DONE(%rsp),%rdi */
	0xbe, 0x01, 0x00, 0x00, 0x00,			/* mov $FUTEX_WAKE,%esi */
	0xba, 0x01, 0x00, 0x00, 0x00,			/* mov $1,%edx */
	0xb8, 0xca, 0x00, 0x00, 0x00,			/* mov $SYS_futex,%eax */
	0x0f, 0x05,					/* syscall */
	0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00,		/* nopw 0(%rax,%rax) */
	0x31, 0xff,					/* xor %edi,%edi (no fds) */
	0x31, 0xf6,					/* xor %esi,%esi */
	0x31, 0xd2,					/* xor %edx,%edx */
	0x45, 0x31, 0xd2,				/* xor %r10d,%r10d */
	0x4c, 0x8d, 0x84, 0x24, 0xf0, 0x00, 0x00, 0x00,	/* lea 16+D_TS(%rsp),%r8 */
	0xb8, 0x17, 0x00, 0x00, 0x00,			/* mov $SYS_select,%eax */
	0x0f, 0x05,					/* syscall: ubt stops it here */
	0x48, 0x8b, 0x04, 0x24,				/* mov (%rsp),%rax */
	0x48, 0x83, 0xc4, 0x08,				/* add $8,%rsp */
	0xc3,						/* ret */
	0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,	/* int3 (padding) */
	/*
	 * PT_RAWSYS_OFF: a system call as a function the helper calls,
	 * without libc (no errno changed): its arguments are in the
	 * registers the system call takes (the stub loads %r10, the
	 * helper keeps it), its number in D_NR.
	 */
	0x48, 0x8b, 0x84, 0x24, 0x08, 0x01, 0x00, 0x00,	/* mov 24+D_NR(%rsp),%rax */
	0x0f, 0x05,					/* syscall */
	0xc3,						/* ret */
};

_Static_assert(sizeof(done_code) == 0x9b, "the helper's code");
_Static_assert(PT_RAWSYS_OFF == PT_DONE_OFF + 0x90, "the system call's "
	       "place in the helper's code");
_Static_assert(PT_STUB_WORDS * 8 == 0xd0, "the helper's data after the "
	       "stub's");
_Static_assert(PT_DONE_OFF + sizeof(done_code) <= 4096, "in the page");

#define DONE_WAIT_NS 100000000L	/* the helper's wait when ubt is gone */

void pt_done_word(struct pt *p, uint64_t at, volatile uint32_t *local)
{
	p->done_at = local ? at : 0;
	p->done = local;
}

/* Not a -c command: not seized, it cannot be interrupted in the wait. */
bool pt_done_usable(const struct pt *p)
{
	return p->done && p->stub && !p->stub_boot && !p->child;
}

static int done_enter(struct pt *p, uint64_t fn, const uint64_t a[6],
		      long nr, struct user_regs_struct *r)
{
	uint8_t have[sizeof(done_code)];
	/* D_TS: select()'s struct timeval; D_NR */
	uint64_t w[5] = { fn, p->done_at, 0, DONE_WAIT_NS / 1000,
			  (uint64_t)nr };
	int err;

	/* an older ubt's page has none: written once */
	if (p->done_page != p->stub) {
		err = pt_read(p, p->stub + PT_DONE_OFF, have, sizeof(have));
		if (!err && memcmp(have, done_code, sizeof(have)))
			err = pt_write(p, p->stub + PT_DONE_OFF, done_code,
				       sizeof(done_code));
		if (err)
			return pt_fail(p, err, "cannot write the remote call "
				       "stub");
		p->done_page = p->stub;
	}
	__atomic_store_n(&p->done[0], 0, __ATOMIC_RELEASE);
	err = pt_stub_enter(p, true, p->stub + PT_DONE_OFF, a, r);
	err = err ?: pt_write(p, r->rsp + PT_STUB_WORDS * 8, w, sizeof(w));
	if (err)
		return pt_fail(p, err, "cannot write the remote call's data");
	return 0;
}

int pt_done_enter(struct pt *p, uint64_t fn, const uint64_t a[6],
		  struct user_regs_struct *r)
{
	return done_enter(p, fn, a, -1, r);
}

int pt_done_syscall(struct pt *p, long nr, const uint64_t a[6],
		    struct user_regs_struct *r)
{
	return done_enter(p, p->stub + PT_RAWSYS_OFF, a, nr, r);
}

bool pt_done_seen(const struct pt *p)
{
	return p->done && __atomic_load_n(&p->done[0], __ATOMIC_ACQUIRE);
}

uint64_t pt_done_result(const struct pt *p)
{
	uint64_t v;

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	memcpy(&v, (const void *)(p->done + 2), sizeof(v));
	return v;
}

void pt_done_sleep(struct pt *p, long ns)
{
	struct timespec ts = { 0, ns };

	syscall(SYS_futex, p->done, FUTEX_WAIT, 0, &ts, NULL, 0);
}

/*
 * The helper said done: stop the thread (in its wait, or wherever it got
 * to), *r its registers then; 1 if it is still in the stub's page (its
 * own registers go back), 0 if it put itself back already (its registers
 * are its own now), -errno.
 */
int pt_done_stop(struct pt *p, struct user_regs_struct *r)
{
	struct pt_thread *t = &p->th[p->ctl];
	int err;

	if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0)
		return -errno;
	err = pt_event_stop(p);
	if (err)
		return err;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, r) < 0)
		return -errno;
	if (r->rip >= p->stub && r->rip < p->stub + 4096)
		return 1;
	t->regs = *r;
	t->have_regs = true;
	return 0;
}
