/*
 * ustack in user-mode probes (RT_FN_USTACK): the calling thread's stack
 * walked by its frame pointers, inside the process, every read fault-safe.
 */
#include "rt_int.h"

#define RT_USER_TOP 0x7ffffffff000ULL	/* above: not a user address */

typedef long (*rt_read_fn)(void *dst, const void *src, uint64_t len);

uint64_t rt_ustack(uint64_t *out, uint64_t limit, uint64_t ip, uint64_t sp,
		   uint64_t fp)
{
	/* through the table: rt.c owns the copy and its fault fixup */
	rt_read_fn rd = (rt_read_fn)rt_ctl_p->fn[RT_FN_PROBE_READ];
	uint64_t *f = out + 2, n = 0, prev = sp, w[2];

	if (limit > RT_USTACK_MAX)
		limit = RT_USTACK_MAX;
	if (n < limit && ip)
		f[n++] = ip;
	/* at the entry, before the function's own frame: its return
	 * address is on top of the stack (the kernel adds it too) */
	if (n < limit && !rd(w, (const void *)sp, 8) && w[0])
		f[n++] = w[0];
	while (n < limit) {
		/* frames lie above the last one, word aligned: anything
		 * else is not a frame pointer (and would loop) */
		if (fp <= prev || (fp & 7) || fp >= RT_USER_TOP)
			break;
		if (rd(w, (const void *)fp, 16) || !w[1])
			break;
		f[n++] = w[1];
		prev = fp;
		fp = w[0];
	}
	out[0] = rt_hash(f, (uint32_t)(8 * n)) ^ n;
	out[1] = n;
	return n;
}
