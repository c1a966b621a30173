/*
 * ubt-strs: calls ubt_key(s) with strings the process never reads
 * itself, each in a page of its own that nothing touches before the
 * first call (a tracer's first read of it faults, later reads do not),
 * and each followed by more non-zero bytes after its NUL:
 *
 *	ubt_key("alphabet")	first read of page 0
 *	ubt_key("a")		first read of page 1
 *	ubt_key("alpha")	first read of page 2
 *	ubt_key("alphabet")
 *	ubt_key("a")
 *	ubt_key("alpha")
 *	ubt_key("a")
 *
 * ubt_key returns 0 (it must not read *s), then the program exits 0.
 * So "a" appears 3 times, "alpha" and "alphabet" twice each, and each
 * string is read once in a page not yet faulted in, once or twice after.
 */
#include "target.h"

/*
 * Pages far apart: each string's page is faulted in by its first read
 * only (fault-around maps at most 64 KiB around a touched page, but a
 * fault may map a whole large folio of the page cache: 256 KiB apart
 * was not enough here, 1 MiB was).
 * After each NUL come the bytes of a longer string, so that a read
 * that copies past the NUL sees them.
 */
#define STRS_GAP (1024 * 1024)

static const struct {
	char pad0[STRS_GAP];
	char s0[32];
	char pad1[STRS_GAP];
	char s1[32];
	char pad2[STRS_GAP];
	char s2[32];
	char pad3[STRS_GAP];
} FAR __attribute__((aligned(4096))) = {
	.s0 = "alphabet\0soup and more letters",
	.s1 = "a\0lphabet soup and more letters",
	.s2 = "alpha\0bet soup and more letters",
};

UBT_PROBE int ubt_key(const char *s)
{
	UBT_FRAME();
	/* must not read *s */
	return (int)((unsigned long)s & 0);
}

int main(void)
{
	const char *const order[] = { FAR.s0, FAR.s1, FAR.s2, FAR.s0,
				      FAR.s1, FAR.s2, FAR.s1 };
	int bad = 0;

	for (unsigned int i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		bad |= ubt_key(order[i]) != 0;
	return target_result("ubt-strs", bad);
}
