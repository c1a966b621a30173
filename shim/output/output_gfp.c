/*
 * printf's %gr (the newest bpftrace): a kernel GFP flags word by name,
 * as the kernel's own %pGg prints it: the compound masks first, in the
 * kernel's order (include/trace/events/mmflags.h), then single flags,
 * then what is left in hex.
 */
#include <inttypes.h>
#include <stdio.h>

#include "output_int.h"
#include "util.h"

/* the bits of linux/gfp_types.h (6.x) */
#define G_DMA		(1ULL << 0)
#define G_HIGHMEM	(1ULL << 1)
#define G_DMA32		(1ULL << 2)
#define G_MOVABLE	(1ULL << 3)
#define G_HIGH		(1ULL << 5)
#define G_IO		(1ULL << 6)
#define G_FS		(1ULL << 7)
#define G_ZERO		(1ULL << 8)
#define G_DIRECT	(1ULL << 10)
#define G_KSWAPD	(1ULL << 11)
#define G_WRITE		(1ULL << 12)
#define G_NOWARN	(1ULL << 13)
#define G_RETRY		(1ULL << 14)
#define G_NOFAIL	(1ULL << 15)
#define G_NORETRY	(1ULL << 16)
#define G_MEMALLOC	(1ULL << 17)
#define G_COMP		(1ULL << 18)
#define G_NOMEMALLOC	(1ULL << 19)
#define G_HARDWALL	(1ULL << 20)
#define G_THISNODE	(1ULL << 21)
#define G_ACCOUNT	(1ULL << 22)
#define G_ZEROTAGS	(1ULL << 23)
#define G_SKIP_ZERO	(1ULL << 24)
#define G_SKIP_KASAN	(1ULL << 25)
#define G_NO_OBJ_EXT	(1ULL << 26)

#define GFP_NOIO	(G_DIRECT | G_KSWAPD)
#define GFP_NOFS	(GFP_NOIO | G_IO)
#define GFP_KERNEL	(GFP_NOFS | G_FS)
#define GFP_USER	(GFP_KERNEL | G_HARDWALL)
#define GFP_HIGHUSER	(GFP_USER | G_HIGHMEM)
#define GFP_HIGHUSER_MOVABLE (GFP_HIGHUSER | G_MOVABLE | G_SKIP_KASAN)
#define GFP_TRANSHUGE_LIGHT ((GFP_HIGHUSER_MOVABLE | G_COMP | \
			      G_NOMEMALLOC | G_NOWARN) & ~GFP_NOIO)

static const struct {
	uint64_t mask;
	const char *name;
} gfp_names[] = {
	{ GFP_TRANSHUGE_LIGHT | G_DIRECT, "GFP_TRANSHUGE" },
	{ GFP_TRANSHUGE_LIGHT, "GFP_TRANSHUGE_LIGHT" },
	{ GFP_HIGHUSER_MOVABLE, "GFP_HIGHUSER_MOVABLE" },
	{ GFP_HIGHUSER, "GFP_HIGHUSER" },
	{ GFP_USER, "GFP_USER" },
	{ GFP_KERNEL | G_ACCOUNT, "GFP_KERNEL_ACCOUNT" },
	{ GFP_KERNEL, "GFP_KERNEL" },
	{ GFP_NOFS, "GFP_NOFS" },
	{ G_HIGH | G_KSWAPD, "GFP_ATOMIC" },
	{ GFP_NOIO, "GFP_NOIO" },
	{ G_KSWAPD | G_NOWARN, "GFP_NOWAIT" },
	{ G_DMA, "GFP_DMA" },
	{ G_HIGHMEM, "__GFP_HIGHMEM" },
	{ G_DMA32, "GFP_DMA32" },
	{ G_HIGH, "__GFP_HIGH" },
	{ G_IO, "__GFP_IO" },
	{ G_FS, "__GFP_FS" },
	{ G_ZERO, "__GFP_ZERO" },
	{ G_DIRECT, "__GFP_DIRECT_RECLAIM" },
	{ G_KSWAPD, "__GFP_KSWAPD_RECLAIM" },
	{ G_WRITE, "__GFP_WRITE" },
	{ G_NOWARN, "__GFP_NOWARN" },
	{ G_RETRY, "__GFP_RETRY_MAYFAIL" },
	{ G_NOFAIL, "__GFP_NOFAIL" },
	{ G_NORETRY, "__GFP_NORETRY" },
	{ G_MEMALLOC, "__GFP_MEMALLOC" },
	{ G_COMP, "__GFP_COMP" },
	{ G_NOMEMALLOC, "__GFP_NOMEMALLOC" },
	{ G_HARDWALL, "__GFP_HARDWALL" },
	{ G_THISNODE, "__GFP_THISNODE" },
	{ G_ACCOUNT, "__GFP_ACCOUNT" },
	{ G_ZEROTAGS, "__GFP_ZEROTAGS" },
	{ G_SKIP_ZERO, "__GFP_SKIP_ZERO" },
	{ G_SKIP_KASAN, "__GFP_SKIP_KASAN" },
	{ G_NO_OBJ_EXT, "__GFP_NO_OBJ_EXT" },
};

void out_gfp_flags(char *buf, size_t size, uint64_t v)
{
	size_t n = 0;
	int w;

	if (!size)
		return;
	buf[0] = '\0';
	if (!v) {
		snprintf(buf, size, "0");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(gfp_names); i++) {
		if ((v & gfp_names[i].mask) != gfp_names[i].mask)
			continue;
		w = snprintf(buf + n, size - n, "%s%s", n ? "|" : "",
			     gfp_names[i].name);
		if (w < 0 || (size_t)w >= size - n)
			return;
		n += (size_t)w;
		v &= ~gfp_names[i].mask;
	}
	if (v)
		snprintf(buf + n, size - n, "%s0x%" PRIx64, n ? "|" : "", v);
}
