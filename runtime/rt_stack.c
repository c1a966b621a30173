/*
 * ustack in user-mode probes (RT_FN_USTACK): the calling thread's stack
 * walked by its frame pointers, inside the process, every read fault-safe.
 */
#include "rt_int.h"

#define RT_USER_TOP 0x7ffffffff000ULL	/* above: not a user address */

/*
 * rt_frame_read(src, dst): two words at src into dst; 0, or -EFAULT when a
 * load faulted (needs RT_CTL_FAULT_HANDLER, as rt_probe_read).  Two plain
 * loads: a frame costs a few cycles, not a rep movsb's start-up.
 */
long rt_frame_read(const void *src, uint64_t *dst);
__asm__(".text\n"
	".globl rt_frame_read\n"
	".hidden rt_frame_read\n"
	".type rt_frame_read,@function\n"
	"rt_frame_read:\n"
	".globl rt_frame_insn0\n"
	".hidden rt_frame_insn0\n"
	"rt_frame_insn0:\n"
	"	mov (%rdi), %rax\n"
	".globl rt_frame_insn1\n"
	".hidden rt_frame_insn1\n"
	"rt_frame_insn1:\n"
	"	mov 8(%rdi), %rdx\n"
	"	mov %rax, (%rsi)\n"
	"	mov %rdx, 8(%rsi)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	".globl rt_frame_fixup\n"
	".hidden rt_frame_fixup\n"
	"rt_frame_fixup:\n"
	"	mov $-14, %rax\n"
	"	ret\n"
	".size rt_frame_read, .-rt_frame_read\n");

uint64_t rt_ustack(uint64_t *out, uint64_t limit, uint64_t ip, uint64_t sp,
		   uint64_t fp)
{
	uint64_t *f = out + 2, n = 0, prev = sp, w[2];

	if (limit > RT_USTACK_MAX)
		limit = RT_USTACK_MAX;
	if (n < limit && ip)
		f[n++] = ip;
	/* at the entry, before the function's own frame: its return
	 * address is on top of the stack (the kernel adds it too) */
	if (n < limit && !rt_frame_read((const void *)sp, w) && w[0])
		f[n++] = w[0];
	while (n < limit) {
		/* frames lie above the last one, word aligned: anything
		 * else is not a frame pointer (and would loop) */
		if (fp <= prev || (fp & 7) || fp >= RT_USER_TOP)
			break;
		if (rt_frame_read((const void *)fp, w) || !w[1])
			break;
		f[n++] = w[1];
		prev = fp;
		fp = w[0];
	}
	out[0] = rt_hash(f, (uint32_t)(8 * n)) ^ n;
	out[1] = n;
	return n;
}
