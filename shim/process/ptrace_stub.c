/*
 * Remote calls that a killed ubt cannot turn into a crash of the target.
 *
 * A tracer that dies (SIGKILL) lets its tracees go at once, as they are:
 * a thread stopped after a single step, or at the SIGSEGV of a call that
 * returned to address 0, gets that signal and dies of it; a thread whose
 * registers ubt had set for a remote system call or call runs on with
 * them.  So every remote operation runs through a small stub that ubt
 * places in the target (one page, r-x, written through /proc/PID/mem):
 * it saves the FPU state below the thread's stack pointer (xsave, or
 * fxsave), makes the system call or calls the function, restores the FPU
 * state and makes a getpid() system call, at whose entry stop ubt takes
 * the result and puts the thread's own registers back.  If ubt is gone by
 * then, getpid() just returns, and the stub itself puts back every
 * register from the call's data on the stack (rflags, the 15 others,
 * %rsp, %rip: the thread
 * goes on where it was, a system call it was in restarted as the kernel
 * would), so the target never sees its tracer vanish.  ubt's stops are
 * system call stops (PTRACE_O_TRACESYSGOOD: a SIGTRAP | 0x80 that the
 * kernel cannot send when the tracer dies and the guard seizes the thread
 * before it ran; a plain SIGTRAP it sends) and PTRACE_INTERRUPT stops,
 * none of which delivers a signal then; never a single step.
 *
 * The stub page's own mmap, once in the life of a process (the page is
 * kept: pt_stub_place()), runs through a copy of the stub in the vdso's
 * spare bytes, zeroed again after.  Only where the vdso has no room does
 * it run from a syscall instruction of the vdso or libc with ubt's
 * registers (two system call stops): the one window left there.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cpuid.h>
#include <sys/mman.h>
#include "ptrace_int.h"

/*
 * The stub (its assembly beside each line), relocation-free, with no data
 * of its own: each call's data is on the thread's stack, where %rsp points
 * on entry (D_ words, then the FPU save area at D_FPU, 64-byte aligned).
 * So a call a killed ubt left blocked in the target (a remote dlopen()
 * waiting for a lock) keeps its own registers to go back to, whatever
 * calls a later ubt makes on that thread or another: nothing two calls
 * share but the code.  The last two instructions put %rsp and %rip back:
 * %rip from a slot ubt wrote at the thread's own %rsp - 136, below its
 * red zone (where a signal frame could go), which "ret $128" pops.
 */
static const uint8_t stub_code[] = {
	0xb8, 0xff, 0xff, 0xff, 0xff,			/* mov $-1,%eax */
	0xba, 0xff, 0xff, 0xff, 0xff,			/* mov $-1,%edx */
	0x80, 0x7c, 0x24, 0x40, 0x00,			/* cmpb $0,D_XSAVE(%rsp) */
	0x74, 0x0b,					/* je 1f */
	0x48, 0x0f, 0xae, 0xa4, 0x24, 0x00, 0x01, 0x00, 0x00,	/* xsave64 D_FPU(%rsp) */
	0xeb, 0x09,					/* jmp 2f */
	0x48, 0x0f, 0xae, 0x84, 0x24, 0x00, 0x01, 0x00, 0x00,	/* 1: fxsave64 D_FPU(%rsp) */
	0x48, 0x8b, 0x7c, 0x24, 0x10,			/* 2: mov D_A0(%rsp),%rdi */
	0x48, 0x8b, 0x74, 0x24, 0x18,			/* mov D_A1(%rsp),%rsi */
	0x48, 0x8b, 0x54, 0x24, 0x20,			/* mov D_A2(%rsp),%rdx */
	0x4c, 0x8b, 0x54, 0x24, 0x28,			/* mov D_A3(%rsp),%r10 */
	0x4c, 0x8b, 0x44, 0x24, 0x30,			/* mov D_A4(%rsp),%r8 */
	0x4c, 0x8b, 0x4c, 0x24, 0x38,			/* mov D_A5(%rsp),%r9 */
	0x48, 0x8b, 0x04, 0x24,				/* mov D_FN(%rsp),%rax */
	0x80, 0x7c, 0x24, 0x08, 0x00,			/* cmpb $0,D_CALL(%rsp) */
	0x75, 0x04,					/* jne 3f */
	0x0f, 0x05,					/* syscall */
	0xeb, 0x05,					/* jmp 4f */
	0x4c, 0x89, 0xd1,				/* 3: mov %r10,%rcx */
	0xff, 0xd0,					/* call *%rax */
	0x48, 0x89, 0xc7,				/* 4: mov %rax,%rdi */
	0xb8, 0xff, 0xff, 0xff, 0xff,			/* mov $-1,%eax */
	0xba, 0xff, 0xff, 0xff, 0xff,			/* mov $-1,%edx */
	0x80, 0x7c, 0x24, 0x40, 0x00,			/* cmpb $0,D_XSAVE(%rsp) */
	0x74, 0x0b,					/* je 5f */
	0x48, 0x0f, 0xae, 0xac, 0x24, 0x00, 0x01, 0x00, 0x00,	/* xrstor64 D_FPU(%rsp) */
	0xeb, 0x09,					/* jmp 6f */
	0x48, 0x0f, 0xae, 0x8c, 0x24, 0x00, 0x01, 0x00, 0x00,	/* 5: fxrstor64 D_FPU(%rsp) */
	0xb8, 0x27, 0x00, 0x00, 0x00,			/* 6: mov $39,%eax */
	0x0f, 0x05,					/* syscall */
	/* PT_STUB_MARKER: reached only when ubt is gone */
	0xff, 0x74, 0x24, 0x48,				/* push D_FLAGS(%rsp) */
	0x9d,						/* popfq */
	0x48, 0x8b, 0x44, 0x24, 0x58,			/* mov D_RAX(%rsp),%rax */
	0x48, 0x8b, 0x5c, 0x24, 0x60,			/* mov D_RBX(%rsp),%rbx */
	0x48, 0x8b, 0x4c, 0x24, 0x68,			/* mov D_RCX(%rsp),%rcx */
	0x48, 0x8b, 0x54, 0x24, 0x70,			/* mov D_RDX(%rsp),%rdx */
	0x48, 0x8b, 0x74, 0x24, 0x78,			/* mov D_RSI(%rsp),%rsi */
	0x48, 0x8b, 0xbc, 0x24, 0x80, 0x00, 0x00, 0x00,	/* mov D_RDI(%rsp),%rdi */
	0x48, 0x8b, 0xac, 0x24, 0x88, 0x00, 0x00, 0x00,	/* mov D_RBP(%rsp),%rbp */
	0x4c, 0x8b, 0x84, 0x24, 0x90, 0x00, 0x00, 0x00,	/* mov D_R8(%rsp),%r8 */
	0x4c, 0x8b, 0x8c, 0x24, 0x98, 0x00, 0x00, 0x00,	/* mov D_R9(%rsp),%r9 */
	0x4c, 0x8b, 0x94, 0x24, 0xa0, 0x00, 0x00, 0x00,	/* mov D_R10(%rsp),%r10 */
	0x4c, 0x8b, 0x9c, 0x24, 0xa8, 0x00, 0x00, 0x00,	/* mov D_R11(%rsp),%r11 */
	0x4c, 0x8b, 0xa4, 0x24, 0xb0, 0x00, 0x00, 0x00,	/* mov D_R12(%rsp),%r12 */
	0x4c, 0x8b, 0xac, 0x24, 0xb8, 0x00, 0x00, 0x00,	/* mov D_R13(%rsp),%r13 */
	0x4c, 0x8b, 0xb4, 0x24, 0xc0, 0x00, 0x00, 0x00,	/* mov D_R14(%rsp),%r14 */
	0x4c, 0x8b, 0xbc, 0x24, 0xc8, 0x00, 0x00, 0x00,	/* mov D_R15(%rsp),%r15 */
	0x48, 0x8b, 0x64, 0x24, 0x50,			/* mov D_SLOT(%rsp),%rsp */
	0xc2, 0x80, 0x00,				/* ret $128 */
};

#define PT_STUB_MARKER 0x86
#define PT_STUB_PAGE 4096
#define PT_STUB_SLOT 136	/* the %rip slot, below the thread's %rsp */

/* the call's words on the stack, in the order of stub_code's D_ labels */
enum {
	D_FN, D_CALL, D_A0, D_A1, D_A2, D_A3, D_A4, D_A5, D_XSAVE, D_FLAGS,
	D_SLOT, D_RAX, D_RBX, D_RCX, D_RDX, D_RSI, D_RDI, D_RBP, D_R8, D_R9,
	D_R10, D_R11, D_R12, D_R13, D_R14, D_R15, D_N
};
#define D_FPU 256	/* bytes of words before the FPU save area */

_Static_assert(sizeof(stub_code) == 0xfc, "the stub's code");
_Static_assert(D_N * 8 <= D_FPU && D_FPU % 64 == 0, "the stub's data");
/* ptrace_done.c's helper has 5 words after these, below D_FPU */
_Static_assert(D_N == PT_STUB_WORDS && (D_N + 5) * 8 <= D_FPU,
	       "the helper's data");

/* The FPU save area: xsave's size for the enabled features, or fxsave's. */
static uint32_t fpu_area(bool *xsave)
{
	static uint32_t size;
	static bool xs;
	unsigned int a, b, c, d;

	if (!size) {
		size = 512;
		if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1U << 27)) &&
		    __get_cpuid_count(0xd, 0, &a, &b, &c, &d) && b >= 576) {
			size = b;
			xs = true;
		}
	}
	*xsave = xs;
	return size;
}

/*
 * The registers the thread goes on with, as the kernel would let it go
 * from a stop in get_signal(): an interrupted system call restarted
 * (%rip back on its syscall instruction), no system call pending.
 */
void pt_resume_regs(const struct user_regs_struct *in,
		    struct user_regs_struct *out)
{
	*out = *in;
	if ((int64_t)in->orig_rax < 0)
		return;
	switch ((int64_t)in->rax) {
	case -512:	/* ERESTARTSYS */
	case -513:	/* ERESTARTNOINTR */
	case -514:	/* ERESTARTNOHAND */
		out->rax = in->orig_rax;
		out->rip -= 2;
		break;
	case -516:	/* ERESTART_RESTARTBLOCK */
		out->rax = SYS_restart_syscall;
		out->rip -= 2;
		break;
	default:
		break;
	}
	out->orig_rax = (uint64_t)-1;
}

/*
 * For tests (tests/README.md): UBT_TEST_DIE_IN_MMAP=1 kills ubt's worker
 * at the entry of the stub page's own mmap (the thread then in the middle
 * of it, with the registers of the call).
 */
void pt_test_die_in_mmap(void)
{
	const char *v = getenv("UBT_TEST_DIE_IN_MMAP");

	if (v && *v == '1')
		kill(getpid(), SIGKILL);
}

/* Find the bytes 0f 05 in an executable mapping: vdso first, then libc. */
static int find_syscall_insn(struct pt *p)
{
	struct pt_map *m;
	int n, i, pass, err;

	err = pt_maps(p->pid, &m, &n);
	if (err)
		return err;
	for (pass = 0; pass < 2 && !p->syscall_insn; pass++) {
		for (i = 0; i < n && !p->syscall_insn; i++) {
			uint8_t buf[65536];
			uint64_t a, len;
			size_t k;

			if (m[i].perms[2] != 'x')
				continue;
			if (pass == 0 && strcmp(m[i].path, "[vdso]"))
				continue;
			if (pass == 1 && !strstr(m[i].path, "libc"))
				continue;
			for (a = m[i].start; a < m[i].end && !p->syscall_insn;
			     a += len) {
				len = m[i].end - a;
				if (len > sizeof(buf))
					len = sizeof(buf);
				if (pt_read(p, a, buf, len))
					break;
				for (k = 0; k + 1 < len; k++) {
					if (buf[k] == 0x0f &&
					    buf[k + 1] == 0x05) {
						p->syscall_insn = a + k;
						break;
					}
				}
			}
		}
	}
	free(m);
	return p->syscall_insn ? 0 : -ENOENT;
}

/* Wait for the next stop of the control thread; signals that are not
 * ubt's kept for its detach.  0 with *st, or -ESRCH. */
static int ctl_wait(struct pt *p, pid_t tid, int *st)
{
	for (;;) {
		pid_t w = waitpid(tid, st, __WALL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || !WIFSTOPPED(*st))
			return -ESRCH;
		return 0;
	}
}

int pt_event_stop(struct pt *p)
{
	struct pt_thread *t = &p->th[p->ctl];
	int st;

	for (;;) {
		if (ctl_wait(p, t->tid, &st))
			return -ESRCH;
		if ((st >> 16) == PTRACE_EVENT_STOP)
			return 0;
		if (!(st >> 16))	/* a signal: for later */
			t->pending_sig = WSTOPSIG(st);
		if (ptrace(PTRACE_CONT, t->tid, 0, 0) < 0)
			return -errno;
	}
}

/*
 * The control thread, at a system call stop or a signal stop ubt made,
 * gets its own registers back.  Outside a system call they go back as
 * they are; a thread that was inside one goes back through an interrupt
 * stop, where the kernel restarts its call on the way out as it would
 * have (and until then, its registers are those of the restart); so does
 * one at a fault's signal stop (fault), which a tracer's death would
 * deliver.
 */
int pt_settle(struct pt *p, bool fault)
{
	struct pt_thread *t = &p->th[p->ctl];
	struct user_regs_struct r;

	if ((int64_t)t->regs.orig_rax < 0 && !fault)
		return ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) < 0 ?
		       -errno : 0;
	pt_resume_regs(&t->regs, &r);
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0 ||
	    ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0 ||
	    ptrace(PTRACE_CONT, t->tid, 0, 0) < 0)
		return -errno;
	return pt_event_stop(p) ?:
	       (ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) < 0 ? -errno : 0);
}

/*
 * A system call from the vdso's (or libc's) syscall instruction, run
 * from stop to stop (entry, exit), without the stub: only to map and
 * unmap the stub's page.
 */
static int raw_syscall(struct pt *p, long nr, const uint64_t a[6],
		       int64_t *ret)
{
	pid_t tid = p->th[p->ctl].tid;
	struct user_regs_struct r = p->th[p->ctl].regs;
	int st, stops = 0, err;

	if (!p->syscall_insn && find_syscall_insn(p))
		return -ENOENT;
	pt_maps_forget();
	r.rax = (uint64_t)nr;
	r.orig_rax = (uint64_t)-1;
	r.rdi = a[0];
	r.rsi = a[1];
	r.rdx = a[2];
	r.r10 = a[3];
	r.r8 = a[4];
	r.r9 = a[5];
	r.rip = p->syscall_insn;
	r.eflags &= ~0x100ULL;	/* no trap flag */
	if (ptrace(PTRACE_SETREGS, tid, 0, &r) < 0)
		return -errno;
	while (stops < 2) {
		if (ptrace(PTRACE_SYSCALL, tid, 0, 0) < 0)
			return -errno;
		if (ctl_wait(p, tid, &st))
			return -ESRCH;
		if (st >> 16)
			continue;
		if (WSTOPSIG(st) != (SIGTRAP | 0x80)) {
			p->th[p->ctl].pending_sig = WSTOPSIG(st);
			continue;
		}
		stops++;
		pt_test_die_in_mmap();
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return -errno;
	err = pt_settle(p, false);
	if (r.rip != p->syscall_insn + 2)
		return -EFAULT;
	*ret = (int64_t)r.rax;
	return err;
}

/* A stub page an earlier session (or ubt) left: 4 KiB, private r-x, no
 * file, its code the stub's. */
static uint64_t stub_find(struct pt *p)
{
	uint8_t code[sizeof(stub_code)];
	struct pt_map *m;
	uint64_t at = 0;
	int n;

	if (pt_maps(p->pid, &m, &n))
		return 0;
	for (int i = 0; i < n && !at; i++)
		if (m[i].end - m[i].start == PT_STUB_PAGE && !m[i].path[0] &&
		    !strcmp(m[i].perms, "r-xp") &&
		    !pt_read(p, m[i].start, code, sizeof(code)) &&
		    !memcmp(code, stub_code, sizeof(code)))
			at = m[i].start;
	free(m);
	return at;
}

/*
 * The vdso's spare bytes (the zeros after its image, to the end of its
 * last page) where the stub fits with room to spare, or 0.  /proc/PID/mem
 * writes there through the r-x protection (a private copy of the page,
 * as a debugger's breakpoint in the vdso makes).
 */
static uint64_t boot_room(struct pt *p)
{
	uint8_t page[4096];
	struct pt_map *m;
	uint64_t at, end = 0;
	size_t zeros = 0;
	int n;

	if (getenv("UBT_TEST_NO_STUB_BOOT") || pt_maps(p->pid, &m, &n))
		return 0;
	for (int i = 0; i < n && !end; i++)
		if (!strcmp(m[i].path, "[vdso]") &&
		    m[i].end - m[i].start >= sizeof(page))
			end = m[i].end;
	free(m);
	if (!end || pt_read(p, end - sizeof(page), page, sizeof(page)))
		return 0;
	at = (end - sizeof(stub_code)) & ~15ULL;
	/* a copy a killed worker left (its thread came out of it) */
	if (!memcmp(page + sizeof(page) - (end - at), stub_code,
		    sizeof(stub_code)))
		return at;
	while (zeros < sizeof(page) && !page[sizeof(page) - 1 - zeros])
		zeros++;
	/* 256 zero bytes at least between the image and the stub */
	return zeros >= sizeof(stub_code) + 16 + 256 ? at : 0;
}

/*
 * The page stays for the life of the process (or until an exec) and every
 * later session takes it up again: one page, read-only, executable, never
 * writable.  Its own mmap goes through a copy of the stub in the vdso's
 * spare bytes, so that a worker killed in the middle of it leaves the
 * thread to put itself back as after any other call; the copy is zeroed
 * again once the page is there (ptrace_call.c's stub_ready()).  Only a
 * vdso without the room makes that mmap from a system call instruction
 * of the vdso or libc with ubt's registers, the one window left.
 */
int pt_stub_place(struct pt *p, uint64_t a[6])
{
	const uint64_t mm[6] = { 0, PT_STUB_PAGE, PROT_READ | PROT_EXEC,
				 MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1,
				 0 };
	int64_t ret;
	int err;

	if (p->stub)
		return 0;
	memcpy(a, mm, sizeof(mm));
	ret = (int64_t)stub_find(p);
	if (ret && (p->stub_boot = boot_room(p))) {
		/* a killed worker's copy in the vdso: zeroed */
		uint8_t zero[sizeof(stub_code)] = { 0 };

		pt_write(p, p->stub_boot, zero, sizeof(zero));
		p->stub_boot = 0;
	}
	if (!ret && (p->stub_boot = boot_room(p))) {
		err = pt_write(p, p->stub_boot, stub_code, sizeof(stub_code));
		if (!err) {
			p->stub = p->stub_boot;
			return 0;
		}
		p->stub_boot = 0;
	}
	if (!ret) {
		err = raw_syscall(p, SYS_mmap, a, &ret);
		if (err)
			return pt_fail(p, err, "remote system call %d",
				       SYS_mmap);
		if (ret < 0 && ret > -4096)
			return pt_fail(p, (int)ret, "remote system call %d",
				       SYS_mmap);
	}
	/* /proc/PID/mem writes through the page's r-x protection */
	err = pt_write(p, (uint64_t)ret, stub_code, sizeof(stub_code));
	if (err)
		return pt_fail(p, err, "cannot write the remote call stub");
	p->stub = (uint64_t)ret;
	return 0;
}

int pt_stub_boot_end(struct pt *p, uint64_t page)
{
	uint8_t zero[sizeof(stub_code)] = { 0 };
	uint64_t boot = p->stub_boot;
	int err = 0;

	p->stub_boot = 0;
	p->stub = 0;
	if (page && (int64_t)page > -4096 && (int64_t)page < 0)
		page = 0;
	if (page) {
		err = pt_write(p, page, stub_code, sizeof(stub_code));
		if (err)
			return pt_fail(p, err, "cannot write the remote call "
				       "stub");
		p->stub = page;
	}
	/* the thread is back out of it: the vdso's bytes as they were */
	if (pt_write(p, boot, zero, sizeof(zero)) && !err)
		err = pt_fail(p, -EIO, "cannot clear the vdso's spare bytes");
	return page ? err : pt_fail(p, -ENOMEM, "remote system call %d",
				    SYS_mmap);
}

/*
 * Into *r the control thread's registers to enter the stub with, for a
 * system call nr (call false) or a call of fn (true); the call's data
 * written on the thread's stack (the arguments, the registers to go back
 * to), below the red zone and the page under it (user_target_memfd()).
 */
int pt_stub_enter(struct pt *p, bool call, uint64_t fn, const uint64_t a[6],
		  struct user_regs_struct *r)
{
	const struct user_regs_struct *own = &p->th[p->ctl].regs;
	struct user_regs_struct back;
	uint64_t d[D_N] = { 0 }, zero[8] = { 0 };
	bool xsave;
	uint32_t area = fpu_area(&xsave);
	uint64_t mm[6];
	int err;

	err = pt_stub_place(p, mm);
	if (err)
		return err;
	pt_resume_regs(own, &back);
	d[D_FN] = fn;
	d[D_CALL] = call;
	memcpy(&d[D_A0], a, 6 * sizeof(*a));
	d[D_XSAVE] = xsave;
	d[D_FLAGS] = back.eflags;
	d[D_SLOT] = back.rsp - PT_STUB_SLOT;
	d[D_RAX] = back.rax;
	d[D_RBX] = back.rbx;
	d[D_RCX] = back.rcx;
	d[D_RDX] = back.rdx;
	d[D_RSI] = back.rsi;
	d[D_RDI] = back.rdi;
	d[D_RBP] = back.rbp;
	d[D_R8] = back.r8;
	d[D_R9] = back.r9;
	d[D_R10] = back.r10;
	d[D_R11] = back.r11;
	d[D_R12] = back.r12;
	d[D_R13] = back.r13;
	d[D_R14] = back.r14;
	d[D_R15] = back.r15;
	*r = *own;
	r->rsp = (own->rsp - 4096 - 64 - area - D_FPU) & ~63ULL;
	r->rip = p->stub;
	r->rax = 0;
	r->orig_rax = (uint64_t)-1;
	r->eflags &= ~(0x100ULL | 0x400ULL);	/* no trap flag, DF clear */
	err = pt_write(p, r->rsp, d, sizeof(d));
	err = err ?: pt_write(p, d[D_SLOT], &back.rip, 8);
	/* xrstor wants the header's reserved bytes zero */
	if (!err && xsave)
		err = pt_write(p, r->rsp + D_FPU + 512, zero, sizeof(zero));
	if (err)
		return pt_fail(p, err, "cannot write the remote call's data");
	return 0;
}

/* Is the control thread, stopped at a system call with registers r, at the
 * stub's end?  Its result is then in %rdi. */
bool pt_stub_done(const struct pt *p, const struct user_regs_struct *r)
{
	return p->stub && r->rip == p->stub + PT_STUB_MARKER &&
	       r->orig_rax == SYS_getpid && r->rax == (uint64_t)-ENOSYS;
}
