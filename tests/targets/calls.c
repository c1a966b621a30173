/*
 * ubt-calls [N]: calls a fixed set of functions with known arguments and
 * return values, N rounds (default 5), then exits 0. The corpus depends on
 * exactly this sequence; change it only together with tests/runtime/.
 *
 * first open("/dev/null") with the path on the stack, then
 * for i in 1..N:
 *	ubt_add(i, 10 * i)			returns 11 * i
 *	ubt_neg(i)				returns -i
 *	ubt_str(NAMES[(i - 1) % 4], i)		returns strlen(name)
 *	ubt_point(&{ .x = i, .y = 2 * i, .name = "pt<i>" })	returns x + y
 *	ubt_void()
 *	write(/dev/null, buf, i % 64)		i % 64 bytes (tracepoint tests)
 * then once:
 *	ubt_six(1, 2, 3, 4, 5, 6)		returns 21
 *	ubt_big(4294967295)			returns 8589934590
 *	ubt_big(18446744073709551615)		returns 18446744073709551614
 *	ubt_fact(5)				returns 120 (recursive: 5 calls)
 *	ubt_cold(COLD)				returns 0; COLD points to "cold
 *						string" in a page the process
 *						has never touched
 *	ubt_long(LONG)				returns 100; LONG is a 100-character
 *						string "0123456789" * 10 on the stack
 *	getpriority(PRIO_PROCESS, 0)		once (tracepoint tests)
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "target.h"

struct ubt_point {
	int x;
	int y;
	char name[16];
};

static const char *const NAMES[] = { "alpha", "beta", "gamma", "delta" };

/*
 * A string far from anything the program touches: the page holding it is
 * never faulted in (fault-around maps at most 64 KiB around a touched
 * page), so a tracer reading it without faulting sees nothing.
 */
static const struct {
	char pad[512 * 1024];
	char s[16];
	char pad2[512 * 1024];
} COLD __attribute__((aligned(4096))) = { .s = "cold string" };

UBT_PROBE int ubt_add(int a, int b)
{
	UBT_FRAME();
	return a + b;
}

UBT_PROBE long ubt_neg(long x)
{
	UBT_FRAME();
	return -x;
}

UBT_PROBE int ubt_str(const char *s, int n)
{
	UBT_FRAME();
	return (int)strlen(s);
}

UBT_PROBE int ubt_point(const struct ubt_point *p)
{
	UBT_FRAME();
	return p->x + p->y;
}

UBT_PROBE void ubt_void(void)
{
	UBT_FRAME();
	__asm__ volatile("" ::: "memory");
}

UBT_PROBE long ubt_six(long a, long b, long c, long d, long e, long f)
{
	UBT_FRAME();
	return a + b + c + d + e + f;
}

UBT_PROBE unsigned long ubt_big(unsigned long x)
{
	UBT_FRAME();
	return x * 2;
}

/* called through a volatile pointer so that the recursion stays real */
UBT_PROBE int ubt_fact(int n);
static int (*volatile fact_ptr)(int) = ubt_fact;

UBT_PROBE int ubt_fact(int n)
{
	UBT_FRAME();
	return n <= 1 ? 1 : n * fact_ptr(n - 1);
}

UBT_PROBE int ubt_cold(const char *s)
{
	UBT_FRAME();
	/* must not read *s */
	return (int)((unsigned long)s & 0);
}

UBT_PROBE int ubt_long(const char *s)
{
	UBT_FRAME();
	return (int)strlen(s);
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 5);
	/* on the stack, so that it is paged in when openat() is traced */
	char path[] = "/dev/null";
	char buf[64] = { 0 };
	char buf2[101];
	int fd, len, bad = 0;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return 1;
	for (long i = 1; i <= n; i++) {
		struct ubt_point p = { .x = i, .y = 2 * i };

		snprintf(p.name, sizeof(p.name), "pt%d", (int)i);
		bad |= ubt_add(i, 10 * i) != 11 * i;
		bad |= ubt_neg(i) != -i;
		/* strlen() first: the string is paged in before the probe */
		len = (int)strlen(NAMES[(i - 1) % 4]);
		bad |= ubt_str(NAMES[(i - 1) % 4], i) != len;
		bad |= ubt_point(&p) != 3 * i;
		ubt_void();
		if (write(fd, buf, i % sizeof(buf)) < 0)
			bad = 1;
	}
	bad |= ubt_six(1, 2, 3, 4, 5, 6) != 21;
	bad |= ubt_big(4294967295UL) != 8589934590UL;
	bad |= ubt_big(18446744073709551615UL) != 18446744073709551614UL;
	bad |= ubt_fact(5) != 120;
	bad |= ubt_cold(COLD.s) != 0;
	for (int i = 0; i < 100; i++)
		buf2[i] = '0' + i % 10;
	buf2[100] = '\0';
	bad |= ubt_long(buf2) != 100;
	getpriority(PRIO_PROCESS, 0);
	close(fd);
	return target_result("ubt-calls", bad);
}
