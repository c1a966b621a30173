/*
 * A small ELF for tests/unit-probes: known function symbols (global,
 * weak, local) and USDT notes (target-sem.c: one with a semaphore). With an argument
 * it sleeps that many seconds so tests can resolve it through -p.
 */
#include <stdlib.h>
#include <sys/sdt.h>
#include <unistd.h>

int ubt_probe_beta(int x);	/* target-sem.c */

__attribute__((noinline)) int ubt_probe_alpha(int x)
{
	DTRACE_PROBE2(ubt_test, start, x, (long)x * 2);
	return x + 1;
}

__attribute__((noinline)) int ubt_probe_alpha2(int x)
{
	return x * 3;
}

__attribute__((noinline)) static int ubt_probe_local(int x)
{
	DTRACE_PROBE(ubt_test, done);
	return x ^ 5;
}

/* Parameters of many kinds, for `-lv` (DWARF parameter listing). */
struct ubt_pt {
	int a;
};
union ubt_u {
	int a;
	long b;
};
enum ubt_e { UBT_A, UBT_B };
typedef unsigned long ubt_size;

__attribute__((noinline)) long
ubt_probe_types(const char *s, void *p, const void *q, struct ubt_pt *st,
		ubt_size n, char *restrict r, volatile int *vi, int arr[],
		void (*fn)(int), enum ubt_e e, union ubt_u *u, char **pp,
		const struct ubt_pt *const cst, unsigned char uc, _Bool b,
		long long ll, struct ubt_pt byval)
{
	return (long)s + (long)p + (long)q + st->a + n + *r + *vi + arr[0] +
	       (long)fn + e + u->a + (long)pp + cst->a + uc + b + ll +
	       byval.a;
}

/* C++ symbols, named in C through asm labels: ubt_cpp(int),
 * ubt_cpp(), ubt::probe(long). */
int ubt_cpp_i(int x) __asm__("_Z7ubt_cppi");
int ubt_cpp_v(void) __asm__("_Z7ubt_cppv");
long ubt_ns_probe(long x) __asm__("_ZN3ubt5probeEl");

__attribute__((noinline)) int ubt_cpp_i(int x)
{
	return x + 1;
}

__attribute__((noinline)) int ubt_cpp_v(void)
{
	return 7;
}

__attribute__((noinline)) long ubt_ns_probe(long x)
{
	return x * 2;
}

int main(int argc, char **argv)
{
	int v = ubt_probe_alpha(argc) + ubt_probe_alpha2(argc) +
		ubt_probe_beta(argc) + ubt_probe_local(argc) +
		ubt_cpp_i(argc) + ubt_cpp_v() + ubt_ns_probe(argc);

	if (argc > 1)
		sleep(atoi(argv[1]));
	return v == 12345;
}
