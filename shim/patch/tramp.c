/* Trampoline generation: hand-encoded x86-64, every byte accounted for. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "rt_abi.h"
#include "tramp.h"

/* the return path finds a shadow entry's block as the page it lies in */
_Static_assert(RT_BLK_MAP == 4096 && RT_SH_SLOT == 0 &&
		       RT_BLK_SHADOW + RT_SHADOW_DEPTH * RT_SHADOW_ENTRY <=
			       RT_BLK_MAP,
	       "shadow stack outside the block's first page");

struct emit {
	uint8_t *p;
	size_t n, cap;
	uint64_t at;
	int err;
};

static void bytes(struct emit *e, const void *b, size_t n)
{
	if (e->cap - e->n < n) {
		e->err = -ENOSPC;
		return;
	}
	memcpy(e->p + e->n, b, n);
	e->n += n;
}

#define EMIT(e, ...)                                              \
	do {                                                      \
		static const uint8_t b_[] = { __VA_ARGS__ };      \
		bytes(e, b_, sizeof(b_));                         \
	} while (0)

/* Bytes not known at compile time (an 8-bit displacement). */
#define EMITV(e, ...)                                             \
	do {                                                      \
		const uint8_t b_[] = { __VA_ARGS__ };             \
		bytes(e, b_, sizeof(b_));                         \
	} while (0)

static uint64_t here(const struct emit *e)
{
	return e->at + e->n;
}

static void u32(struct emit *e, uint32_t v)
{
	bytes(e, &v, 4);
}

/* Placeholder rel32 at the current position; returns its offset. */
static size_t rel32_hole(struct emit *e)
{
	size_t pos = e->n;

	u32(e, 0);
	return pos;
}

/*
 * mov %fs:tls,%rax; test %rax,%rax; jz rel32: the thread's block in %rax,
 * or a jump to where the returned hole is fixed to.
 */
static size_t emit_block_test(struct emit *e, int64_t tls)
{
	EMIT(e, 0x64, 0x48, 0x8b, 0x04, 0x25);
	u32(e, (uint32_t)tls);
	EMIT(e, 0x48, 0x85, 0xc0);
	EMIT(e, 0x0f, 0x84);
	return rel32_hole(e);
}

/* Point the rel32 at pos (ending at pos + 4) to target address. */
static void rel32_fix(struct emit *e, size_t pos, uint64_t target)
{
	int64_t rel = (int64_t)(target - (e->at + pos + 4));
	int32_t r = (int32_t)rel;

	if (rel != r) {
		e->err = -ERANGE;
		return;
	}
	if (pos + 4 <= e->cap)
		memcpy(e->p + pos, &r, 4);
}

/* Does a rel32 at the current position (a 5-byte jmp or call) reach? */
static bool reach(const struct emit *e, uint64_t target)
{
	int64_t rel = (int64_t)(target - (here(e) + 5));

	return rel == (int32_t)rel;
}

static void rel32_to(struct emit *e, uint64_t target)
{
	rel32_fix(e, rel32_hole(e), target);
}

/* The stolen instructions, relocated to the current position. */
static int emit_relocated(struct emit *e, struct patch_site *s,
			  uint64_t *reloc_at, struct patch_reloc *r)
{
	int err;

	*reloc_at = here(e);
	if (e->err)
		return e->err;
	err = patch_relocate(s, here(e), e->p + e->n, e->cap - e->n, r);
	if (err)
		return err;
	e->n += r->len;
	return 0;
}

/*
 * The probe code at code (running at target address fn) in place: copied
 * when tramp_inline() takes it, with %rsp 8 bytes down as a call leaves
 * it, else called.
 */
static bool emit_probe(struct emit *e, uint64_t fn, const uint8_t *code,
		       size_t len)
{
	size_t start = e->n;
	unsigned reads;
	int n;

	if (code && e->cap - e->n > 10) {
		EMIT(e, 0x48, 0x8d, 0x64, 0x24, 0xf8);	/* lea -8(%rsp),%rsp */
		n = tramp_inline(code, len, e->p + e->n, e->cap - e->n - 5,
				 &reads);
		if (n >= 0 && !(reads & TRAMP_USES_RSP)) {
			/* no stack use: no room for a return address
			 * either (the copy's branches are its own) */
			memmove(e->p + start, e->p + e->n, (size_t)n);
			e->n = start + (size_t)n;
			return true;
		}
		if (n >= 0) {
			e->n += (size_t)n;
			EMIT(e, 0x48, 0x8d, 0x64, 0x24, 0x08); /* lea 8(%rsp) */
			return true;
		}
		e->n = start;
	}
	EMIT(e, 0xe8);				/* call fn */
	rel32_to(e, fn);
	return false;
}

/* The argument registers probe code reads, when inlined; else all. */
static unsigned probe_reads(const uint8_t *code, size_t len)
{
	uint8_t tmp[3 * TRAMP_INLINE_MAX];
	unsigned reads;

	if (!code || tramp_inline(code, len, tmp, sizeof(tmp), &reads) < 0)
		return TRAMP_READS_RDI | TRAMP_READS_RSI;
	return reads & (TRAMP_READS_RDI | TRAMP_READS_RSI);
}

/*
 * The slow path, taken once per thread: rt_slow returns the thread's block
 * in %rax; with one, go back to the probe call, without, skip the probe.
 * Returns the position of the rel32 to the literal holding rt_slow's
 * address, which the caller places and fixes.
 */
static size_t emit_slow_stub(struct emit *e, uint64_t call, uint64_t after)
{
	size_t lit;

	EMIT(e, 0xff, 0x15);			/* call *lit_slow */
	lit = rel32_hole(e);
	EMIT(e, 0x48, 0x85, 0xc0);		/* test %rax,%rax */
	EMIT(e, 0x0f, 0x85);			/* jnz .call */
	rel32_to(e, call);
	EMIT(e, 0xe9);				/* jmp .after */
	rel32_to(e, after);
	return lit;
}

/*
 * At a site inside a function: the entry code called on a 16-byte aligned
 * stack (the old %rsp kept twice above it), when the thread has its block
 * (*jz_slow: the rel32 of the jump to the slow path, *call_at the call,
 * *after the instruction after it); %rsp comes back, %r11 is clobbered.
 */
static void emit_aligned_call(struct emit *e, const struct tramp_spec *spec,
			      size_t *jz_slow, size_t *call_at, size_t *after)
{
	EMIT(e, 0x49, 0x89, 0xe3);		/* mov %rsp,%r11 */
	EMIT(e, 0x48, 0x83, 0xe4, 0xf0);	/* and $-16,%rsp */
	EMIT(e, 0x41, 0x53);			/* push %r11 */
	EMIT(e, 0x41, 0x53);			/* push %r11 */
	/* the thread's block, or jz .slow */
	*jz_slow = emit_block_test(e, spec->tls_offset);
	*call_at = e->n;
	EMIT(e, 0xe8);				/* call entry code */
	rel32_to(e, spec->entry_code);
	*after = e->n;
	EMIT(e, 0x48, 0x8b, 0x24, 0x24);	/* mov (%rsp),%rsp */
}

/*
 * The end of a site inside a function: the relocated window (its jump back
 * included), the slow path (call at call_at, else on to after), and the
 * literal of rt_slow's address; the length, or -errno.
 */
static int emit_mid_tail(struct emit *e, const struct tramp_spec *spec,
			 struct patch_site *s, uint64_t *reloc_at,
			 struct patch_reloc *r, size_t jz_slow, size_t call_at,
			 size_t after)
{
	size_t lit_slow, slow;
	int err = emit_relocated(e, s, reloc_at, r);

	if (err)
		return err;
	slow = e->n;
	lit_slow = emit_slow_stub(e, spec->at + call_at, spec->at + after);
	while (e->n % 8)
		EMIT(e, 0xcc);
	rel32_fix(e, jz_slow, spec->at + slow);
	rel32_fix(e, lit_slow, here(e));
	bytes(e, &spec->fn_slow, 8);
	return e->err ? e->err : (int)e->n;
}

/*
 * A site inside a function: every register and the flags may be live, the
 * red zone may be in use and the stack alignment is unknown.  The flags are
 * kept unless the code after the site sets them all first (flags_dead).
 */
static int build_mid(const struct tramp_spec *spec, struct patch_site *s,
		     uint8_t *out, size_t cap, uint64_t *reloc_at,
		     struct patch_reloc *r)
{
	struct emit e = { .p = out, .cap = cap, .at = spec->at };
	size_t jz_slow, call_at, after;

	EMIT(&e, 0x48, 0x8d, 0x64, 0x24, 0x80);	/* lea -128(%rsp),%rsp */
	if (!s->flags_dead)
		EMIT(&e, 0x9c);			/* pushfq */
	EMIT(&e, 0x50);				/* push %rax */
	EMIT(&e, 0x41, 0x53);			/* push %r11 */
	emit_aligned_call(&e, spec, &jz_slow, &call_at, &after);
	EMIT(&e, 0x41, 0x5b);			/* pop %r11 */
	EMIT(&e, 0x58);				/* pop %rax */
	if (!s->flags_dead)
		EMIT(&e, 0x9d);			/* popfq */
	EMIT(&e, 0x48, 0x8d, 0xa4, 0x24);	/* lea 128(%rsp),%rsp */
	u32(&e, 128);
	return emit_mid_tail(&e, spec, s, reloc_at, r, jz_slow, call_at,
			     after);
}

/* mov %reg,off(%rsp), or (load) mov off(%rsp),%reg; reg 0..15, not rsp */
static void rsp_mov(struct emit *e, bool load, int reg, int32_t off)
{
	uint8_t b[8];
	size_t n = 0;

	b[n++] = 0x48 | (reg >= 8 ? 0x04 : 0);		/* REX.W, REX.R */
	b[n++] = load ? 0x8b : 0x89;
	if (off >= -128 && off < 128) {
		b[n++] = 0x44 | (reg & 7) << 3;		/* disp8(%rsp) */
		b[n++] = 0x24;
		b[n++] = (uint8_t)off;
	} else {
		b[n++] = 0x84 | (reg & 7) << 3;		/* disp32(%rsp) */
		b[n++] = 0x24;
		memcpy(b + n, &off, 4);
		n += 4;
	}
	bytes(e, b, n);
}

/* struct pt_regs offsets of the general registers, by x86 number */
static const int32_t tramp_pt_regs[16] = {
	80, 88, 96, 40, -1, 32, 104, 112,	/* rax rcx rdx rbx - rbp rsi rdi */
	72, 64, 56, 48, 24, 16, 8, 0,		/* r8 .. r15 */
};

#define TRAMP_PT_REGS_SIZE 168

/*
 * A site inside a function whose probe code reads any register (USDT
 * arguments): as build_mid(), but every general register, the flags, the
 * site's address and the site's %rsp go into a struct pt_regs on the
 * stack, whose address the probe code gets in %rdi; the registers the
 * trampoline and the probe code change come back from it (the flags only
 * where they are live).
 */
static int build_regs(const struct tramp_spec *spec, struct patch_site *s,
		      uint8_t *out, size_t cap, uint64_t *reloc_at,
		      struct patch_reloc *r)
{
	struct emit e = { .p = out, .cap = cap, .at = spec->at };
	size_t jz_slow, call_at, after;
	uint64_t pc = s->kept;

	EMIT(&e, 0x48, 0x8d, 0x64, 0x24, 0x80);	/* lea -128(%rsp),%rsp */
	EMIT(&e, 0x9c);				/* pushfq */
	EMIT(&e, 0x48, 0x8d, 0xa4, 0x24);	/* lea -168(%rsp),%rsp */
	u32(&e, (uint32_t)-TRAMP_PT_REGS_SIZE);
	for (int i = 0; i < 16; i++)
		if (tramp_pt_regs[i] >= 0)
			rsp_mov(&e, false, i, tramp_pt_regs[i]);
	rsp_mov(&e, true, 11, TRAMP_PT_REGS_SIZE);	/* the flags */
	rsp_mov(&e, false, 11, 144);
	EMIT(&e, 0x4c, 0x8d, 0x9c, 0x24);	/* lea sp(%rsp),%r11 */
	u32(&e, TRAMP_PT_REGS_SIZE + 8 + 128);
	rsp_mov(&e, false, 11, 152);
	EMIT(&e, 0x49, 0xbb);			/* movabs $pc,%r11 */
	bytes(&e, &pc, 8);
	rsp_mov(&e, false, 11, 128);
	EMIT(&e, 0x45, 0x31, 0xdb);		/* xor %r11d,%r11d */
	rsp_mov(&e, false, 11, 120);		/* orig_rax, cs, ss */
	rsp_mov(&e, false, 11, 136);
	rsp_mov(&e, false, 11, 160);
	EMIT(&e, 0x48, 0x89, 0xe7);		/* mov %rsp,%rdi */
	/* (rt_slow keeps %rdi) */
	emit_aligned_call(&e, spec, &jz_slow, &call_at, &after);
	/* the probe code keeps every register but %rax and %r11
	 * (preserve_most), rt_slow too; %rdi held the pt_regs */
	rsp_mov(&e, true, 0, tramp_pt_regs[0]);
	rsp_mov(&e, true, 7, tramp_pt_regs[7]);
	rsp_mov(&e, true, 11, tramp_pt_regs[11]);
	EMIT(&e, 0x48, 0x8d, 0xa4, 0x24);	/* lea 168(%rsp),%rsp */
	u32(&e, TRAMP_PT_REGS_SIZE);
	if (s->flags_dead)
		EMIT(&e, 0x48, 0x8d, 0x64, 0x24, 0x08);	/* lea 8(%rsp) */
	else
		EMIT(&e, 0x9d);			/* popfq */
	EMIT(&e, 0x48, 0x8d, 0xa4, 0x24);	/* lea 128(%rsp),%rsp */
	u32(&e, 128);
	return emit_mid_tail(&e, spec, s, reloc_at, r, jz_slow, call_at,
			     after);
}

/* The stub slot's bytes: call rel32 reloc; jmp rel32 cont (then int3). */
static int stub_bytes(const struct tramp_spec *spec, uint64_t reloc,
		      uint64_t cont)
{
	int64_t c = (int64_t)(reloc - (spec->stub + 5));
	int64_t j = (int64_t)(cont - (spec->stub + 10));
	int32_t c32 = (int32_t)c, j32 = (int32_t)j;
	uint8_t *b = spec->stub_bytes;

	if (c != c32 || j != j32)
		return -ERANGE;
	memset(b, 0xcc, RT_WRAP_STUB);
	b[0] = 0xe8;
	memcpy(b + 1, &c32, 4);
	b[5] = 0xe9;
	memcpy(b + 6, &j32, 4);
	return 0;
}

int tramp_build(const struct tramp_spec *spec, struct patch_site *s,
		uint8_t *out, size_t cap, uint64_t *reloc_at,
		struct patch_reloc *r)
{
	struct emit e = { .p = out, .cap = cap, .at = spec->at };
	size_t jz_slow = 0, call_at = 0, jz_reloc = 0, lea_reloc = 0;
	size_t lit_slow = 0, lit_enter = 0, lit_exit = 0, after = 0;
	size_t lea_cont = 0, lit_call = 0, cont = 0, ret_out = 0;
	size_t jne_skip = 0, popped = 0;
	size_t jz_help = 0, ja_help = 0, jnz_stale = 0, jbe_help = 0;
	size_t push_at = 0, stale = 0, check_at = 0, jne_retry = 0;
	size_t wrapped = 0, jne_help = 0, exit_help = 0, enter_help = 0;
	size_t jz_low = 0, lea_cont_low = 0, lea_reloc_low = 0, lit_low = 0;
	size_t reloc, slow = 0, n;
	bool stub = false;
	int err;

	if ((int64_t)(int32_t)spec->tls_offset != spec->tls_offset)
		return -ERANGE;
	if (spec->ret_code && !spec->fn_call)
		return -EINVAL;
	/* (at an entry: one left in place that changes nothing, a nop) */
	if (spec->regs && (s->undo || spec->ret_code || !spec->entry_code))
		return -EINVAL;
	if (spec->regs)
		return build_regs(spec, s, out, cap, reloc_at, r);
	if (s->mid) {
		if (spec->ret_code || !spec->entry_code)
			return -EINVAL;
		return build_mid(spec, s, out, cap, reloc_at, r);
	}
	if (s->undo == 8) {
		/*
		 * The entry instruction (push %rbp, say) ran in place: its
		 * slot is where %rax goes (the lea and push below in one
		 * store: the same stack, one instruction less per hit).
		 */
		EMIT(&e, 0x48, 0x89, 0x04, 0x24);	/* mov %rax,(%rsp) */
	} else {
		if (s->undo) {
			/*
			 * The entry instruction (push, sub $n,%rsp) ran in
			 * place: take its stack change back (registers are
			 * as they were), the relocated copy runs it again
			 * after the probes.
			 */
			EMIT(&e, 0x48, 0x8d, 0xa4, 0x24); /* lea undo(%rsp) */
			u32(&e, s->undo);
		}
		EMIT(&e, 0x50);			/* push %rax */
	}
	if (spec->entry_code) {
		/* the thread's block, or jz .slow */
		jz_slow = emit_block_test(&e, spec->tls_offset);
		call_at = e.n;
		emit_probe(&e, spec->entry_code, spec->entry_bytes,
			   spec->entry_len);
	}
	after = e.n;
	if (spec->ret_code) {
		/* %rdi, %rsi: the return value, for code that reads it */
		unsigned rd = probe_reads(spec->ret_bytes, spec->ret_len);
		/* cont saves %rax, [%rdi, %rsi,] %r11: the slot's offset */
		uint8_t sl = rd ? 24 : 8;

		/*
		 * Inline push of an entry; else rt_wrap_enter.  The thread's
		 * block, or jz .enter_help; an empty stack falls through to
		 * the push, a top entry goes by .stale first (it may have been
		 * left by longjmp: the helper drops it).
		 */
		jz_help = emit_block_test(&e, spec->tls_offset);
		check_at = e.n;
		EMIT(&e, 0x4c, 0x8b, 0x58, RT_BLK_SHADOW_TOP); /* top,%r11 */
		EMIT(&e, 0x49, 0x81, 0xfb);		/* cmp $last,%r11 */
		u32(&e, (RT_SHADOW_DEPTH - 1) * RT_SHADOW_ENTRY);
		EMIT(&e, 0x0f, 0x87);			/* ja .enter_help */
		ja_help = rel32_hole(&e);
		EMIT(&e, 0x4d, 0x85, 0xdb);		/* test %r11,%r11 */
		EMIT(&e, 0x0f, 0x85);			/* jnz .stale */
		jnz_stale = rel32_hole(&e);
		/*
		 * A signal handler may push and pop wrapped calls at any
		 * point, or never return: the slot goes in first (a handler's
		 * push checks the top entry's), then the new top, then the
		 * slot is read back: a handler that came in between may have
		 * taken the entry (see rt_abi.h), and all starts over from
		 * the top's read.  Then the rest.
		 * %rbx holds the slot's address meanwhile (no memory
		 * read-modify-write on the way).
		 */
		push_at = e.n;
		EMIT(&e, 0x53);				/* push %rbx */
		EMIT(&e, 0x48, 0x8d, 0x5c, 0x24, 0x10);	/* lea 16(%rsp),%rbx */
		EMIT(&e, 0x4a, 0x89, 0x9c, 0x18);	/* mov %rbx,top.slot */
		u32(&e, RT_BLK_SHADOW + RT_SH_SLOT);
		EMIT(&e, 0x49, 0x83, 0xc3, RT_SHADOW_ENTRY); /* add $32,%r11 */
		EMIT(&e, 0x4c, 0x89, 0x58, RT_BLK_SHADOW_TOP); /* %r11,top */
		EMIT(&e, 0x4a, 0x39, 0x9c, 0x18);	/* cmp %rbx,entry.slot */
		u32(&e, RT_BLK_SHADOW - RT_SHADOW_ENTRY + RT_SH_SLOT);
		EMIT(&e, 0x0f, 0x85);			/* jne .retry */
		jne_retry = rel32_hole(&e);
		EMIT(&e, 0x4e, 0x8d, 0x9c, 0x18);	/* lea entry,%r11 */
		u32(&e, RT_BLK_SHADOW - RT_SHADOW_ENTRY);
		EMIT(&e, 0x48, 0x8b, 0x03);		/* mov (%rbx),%rax */
		if (spec->fn_low) {
			/* the kernel's uretprobe trampoline?  (ZF to .low) */
			EMIT(&e, 0xa9);			/* test $0xfff,%eax */
			u32(&e, 0xfff);
		}
		EMIT(&e, 0x49, 0x89, 0x43, RT_SH_RET);	/* mov %rax,ret(%r11) */
		EMIT(&e, 0x58);				/* pop %rax: %rbx */
		EMIT(&e, 0x49, 0x89, 0x43, RT_SH_RBX);	/* mov %rax,rbx(%r11) */
		EMIT(&e, 0x4c, 0x89, 0xdb);		/* mov %r11,%rbx */
		EMIT(&e, 0x58);				/* pop %rax */
		/*
		 * The call itself is rt_wrap_call's, in the runtime: its
		 * unwind information leads from the return address to the
		 * caller through the entry at %rbx.
		 */
		wrapped = e.n;
		EMIT(&e, 0x48, 0x8d, 0x64, 0x24, 0x08);	/* lea 8(%rsp),%rsp */
		if (spec->fn_low) {
			EMIT(&e, 0x0f, 0x84);		/* jz .low */
			jz_low = rel32_hole(&e);
		}
		if (spec->stub && spec->stub_bytes && reach(&e, spec->stub)) {
			/* the site's own stub: no cont, no %r11 */
			stub = true;
			EMIT(&e, 0xe9);			/* jmp stub */
			rel32_to(&e, spec->stub);
			goto after_call;
		}
		EMIT(&e, 0x4c, 0x8d, 0x1d);		/* lea .cont,%r11 */
		lea_cont = rel32_hole(&e);
		EMIT(&e, 0x4c, 0x89, 0x5b, RT_SH_CONT);	/* mov %r11,cont(%rbx) */
		EMIT(&e, 0x4c, 0x8d, 0x1d);		/* lea .reloc,%r11 */
		lea_reloc = rel32_hole(&e);
		if (reach(&e, spec->fn_call)) {
			/* the runtime within reach (user_inject.c) */
			EMIT(&e, 0xe9);			/* jmp rt_wrap_call */
			rel32_to(&e, spec->fn_call);
		} else {
			EMIT(&e, 0xff, 0x25);		/* jmp *lit_call */
			lit_call = rel32_hole(&e);
		}
		/*
		 * Back from the function: [slot] is free.  Every register
		 * but %rax, %rdx (the return value) and the flags comes back
		 * as the function left it: a caller compiled with gcc's
		 * -fipa-ra keeps values in %rsi, %rdi or %r11 across calls to
		 * functions that leave them alone.
		 */
after_call:
		cont = e.n;
		EMIT(&e, 0x50);				/* push %rax */
		if (rd) {
			EMIT(&e, 0x57);			/* push %rdi */
			EMIT(&e, 0x56);			/* push %rsi */
		}
		EMIT(&e, 0x41, 0x53);			/* push %r11 */
		/*
		 * The probe only when the thread's block is the entry's: a
		 * call in progress while ubt detached and attached again
		 * returns into a session that is not its own.
		 */
		EMIT(&e, 0x49, 0x89, 0xdb);		/* mov %rbx,%r11 */
		EMIT(&e, 0x49, 0x81, 0xe3, 0x00, 0xf0, 0xff, 0xff); /* and */
		EMIT(&e, 0x64, 0x4c, 0x3b, 0x1c, 0x25);	/* cmp %fs:tls,%r11 */
		u32(&e, (uint32_t)spec->tls_offset);
		EMIT(&e, 0x0f, 0x85);			/* jne .popped */
		jne_skip = rel32_hole(&e);
		if (rd) {
			EMIT(&e, 0x48, 0x89, 0xc7);	/* mov %rax,%rdi */
			EMIT(&e, 0x48, 0x89, 0xd6);	/* mov %rdx,%rsi */
		}
		if (!emit_probe(&e, spec->ret_code, spec->ret_bytes,
				spec->ret_len) && !rd)
			e.err = -ENOSPC;	/* called without its arguments */
		popped = e.n;
		/*
		 * Inline pop: %rbx is our entry, kept by the function (else
		 * rt_wrap_exit).  Its block is the page it lies in, which
		 * may be a block of an earlier attach: the thread got a new
		 * one while the call was in progress.  Entries above it are
		 * stale.
		 */
		EMITV(&e, 0x4c, 0x8d, 0x5c, 0x24, sl);	/* lea sl(%rsp),%r11 */
		EMIT(&e, 0x4c, 0x39, 0x1b);		/* cmp %r11,(%rbx) */
		EMIT(&e, 0x0f, 0x85);			/* jne .exit_help */
		jne_help = rel32_hole(&e);
		EMIT(&e, 0x48, 0x89, 0xd8);		/* mov %rbx,%rax */
		EMIT(&e, 0x48, 0x25, 0x00, 0xf0, 0xff, 0xff); /* and $-4096,%rax */
		EMIT(&e, 0x4c, 0x8d, 0x9b);		/* lea -shadow(%rbx),%r11 */
		u32(&e, (uint32_t)-RT_BLK_SHADOW);
		EMIT(&e, 0x49, 0x29, 0xc3);		/* sub %rax,%r11 */
		/*
		 * Read the entry before the top is lowered: a handler may
		 * push there then.  One store lowers it: a handler that never
		 * returns leaves the entry whole or popped.
		 */
		EMIT(&e, 0xff, 0x73, RT_SH_RET);	/* push ret(%rbx) */
		EMIT(&e, 0x48, 0x8b, 0x5b, RT_SH_RBX);	/* mov rbx(%rbx),%rbx */
		EMIT(&e, 0x4c, 0x89, 0x58, RT_BLK_SHADOW_TOP); /* %r11,top */
		EMIT(&e, 0x41, 0x5b);			/* pop %r11 */
		ret_out = e.n;
		EMITV(&e, 0x48, 0x8b, 0x44, 0x24, sl);	/* mov sl(%rsp),%rax */
		EMITV(&e, 0x4c, 0x89, 0x5c, 0x24, sl);	/* mov %r11,sl(%rsp) */
		EMIT(&e, 0x41, 0x5b);			/* pop %r11 */
		if (rd) {
			EMIT(&e, 0x5e);			/* pop %rsi */
			EMIT(&e, 0x5f);			/* pop %rdi */
		}
		EMIT(&e, 0xc3);				/* ret */
		exit_help = e.n;
		EMITV(&e, 0x4c, 0x8d, 0x5c, 0x24, sl);	/* lea sl(%rsp),%r11 */
		EMIT(&e, 0xff, 0x15);			/* call *lit_exit */
		lit_exit = rel32_hole(&e);
		EMIT(&e, 0xe9);				/* jmp .ret_out */
		rel32_to(&e, spec->at + ret_out);
		/* top entry at or below this slot: stale, helper drops it */
		stale = e.n;
		EMIT(&e, 0x48, 0x8d, 0x64, 0x24, 0x08);	/* lea 8(%rsp),%rsp */
		EMIT(&e, 0x4a, 0x39, 0xa4, 0x18);	/* cmp %rsp,slot */
		u32(&e, RT_BLK_SHADOW - RT_SHADOW_ENTRY + RT_SH_SLOT);
		EMIT(&e, 0x48, 0x8d, 0x64, 0x24, 0xf8);	/* lea -8(%rsp),%rsp */
		EMIT(&e, 0x0f, 0x86);			/* jbe .enter_help */
		jbe_help = rel32_hole(&e);
		EMIT(&e, 0xe9);				/* jmp .push */
		rel32_to(&e, spec->at + push_at);
		/* a handler took the entry being pushed: again */
		rel32_fix(&e, jne_retry, here(&e));
		EMIT(&e, 0x5b);				/* pop %rbx */
		EMIT(&e, 0xe9);				/* jmp .check */
		rel32_to(&e, spec->at + check_at);
		enter_help = e.n;
		EMIT(&e, 0x4c, 0x8d, 0x5c, 0x24, 0x08);	/* lea 8(%rsp),%r11 */
		EMIT(&e, 0xff, 0x15);			/* call *lit_enter */
		lit_enter = rel32_hole(&e);
		EMIT(&e, 0x48, 0x85, 0xc0);		/* test %rax,%rax */
		EMIT(&e, 0x58);				/* pop %rax */
		EMIT(&e, 0x0f, 0x84);			/* jz .reloc */
		jz_reloc = rel32_hole(&e);
		if (spec->fn_low) {
			EMIT(&e, 0x4c, 0x8b, 0x5b, RT_SH_RET); /* ret,%r11 */
			EMIT(&e, 0x41, 0xf7, 0xc3);	/* test $0xfff,%r11d */
			u32(&e, 0xfff);
		}
		EMIT(&e, 0xe9);				/* jmp .wrapped */
		rel32_to(&e, spec->at + wrapped);
		if (spec->fn_low) {
			/*
			 * .low: the return address is page aligned, as the
			 * kernel's uretprobe trampoline is (another tracer's
			 * return probe took it at the entry): the call goes
			 * lower, that address left where the kernel expects
			 * it (RT_FN_WRAP_LOW).  Rarely a caller's own.
			 */
			rel32_fix(&e, jz_low, here(&e));
			EMIT(&e, 0x4c, 0x8d, 0x1d);	/* lea .cont,%r11 */
			lea_cont_low = rel32_hole(&e);
			EMIT(&e, 0x4c, 0x89, 0x5b, RT_SH_CONT); /* cont */
			EMIT(&e, 0x4c, 0x8d, 0x1d);	/* lea .reloc,%r11 */
			lea_reloc_low = rel32_hole(&e);
			if (reach(&e, spec->fn_low)) {
				EMIT(&e, 0xe9);		/* jmp rt_wrap_low */
				rel32_to(&e, spec->fn_low);
			} else {
				EMIT(&e, 0xff, 0x25);	/* jmp *lit_low */
				lit_low = rel32_hole(&e);
			}
		}
	} else {
		EMIT(&e, 0x58);				/* pop %rax */
	}
	reloc = e.n;
	err = emit_relocated(&e, s, reloc_at, r);
	if (err)
		return err;
	if (spec->entry_code) {
		slow = e.n;
		lit_slow = emit_slow_stub(&e, spec->at + call_at,
					  spec->at + after);
	}
	while (e.n % 8)
		EMIT(&e, 0xcc);
	if (e.err)
		return e.err;
	if (spec->entry_code) {
		rel32_fix(&e, jz_slow, spec->at + slow);
		rel32_fix(&e, lit_slow, here(&e));
		bytes(&e, &spec->fn_slow, 8);
	}
	if (spec->ret_code) {
		rel32_fix(&e, jz_help, spec->at + enter_help);
		rel32_fix(&e, ja_help, spec->at + enter_help);
		rel32_fix(&e, jbe_help, spec->at + enter_help);
		rel32_fix(&e, jnz_stale, spec->at + stale);
		rel32_fix(&e, jne_help, spec->at + exit_help);
		rel32_fix(&e, jz_reloc, spec->at + reloc);
		if (stub) {
			err = stub_bytes(spec, spec->at + reloc,
					 spec->at + cont);
			if (err)
				return err;
		} else {
			rel32_fix(&e, lea_reloc, spec->at + reloc);
			rel32_fix(&e, lea_cont, spec->at + cont);
		}
		rel32_fix(&e, jne_skip, spec->at + popped);
		rel32_fix(&e, lit_enter, here(&e));
		bytes(&e, &spec->fn_enter, 8);
		rel32_fix(&e, lit_exit, here(&e));
		bytes(&e, &spec->fn_exit, 8);
		if (lit_call) {
			rel32_fix(&e, lit_call, here(&e));
			bytes(&e, &spec->fn_call, 8);
		}
		if (spec->fn_low) {
			rel32_fix(&e, lea_cont_low, spec->at + cont);
			rel32_fix(&e, lea_reloc_low, spec->at + reloc);
		}
		if (lit_low) {
			rel32_fix(&e, lit_low, here(&e));
			bytes(&e, &spec->fn_low, 8);
		}
	}
	n = e.n;
	return e.err ? e.err : (int)n;
}
