/*
 * ubt-cold [N]: C++ built with g++ -O2, whose thrower() has a .cold part
 * (its throw, split out by the compiler as _Z7throweri.cold): a fragment
 * of the function, not a function of its own, which a probe on
 * "thrower" (or "throw*") must not also pick.  main calls thrower(i) for
 * i in 0..N-1 (default 20), every fifth call with -1 (throws; caught by
 * main): N calls, N / 5 throws, the rest return 2i.  Prints "calls N
 * caught C sum S" and exits 0, or 1 after a wrong result.
 */
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

__attribute__((noinline, used)) int thrower(int x)
{
	if (__builtin_expect(x < 0, 0))
		throw std::runtime_error("negative");
	return x * 2;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 0) : 20;
	long caught = 0, sum = 0, want = 0;

	for (long i = 0; i < n; i++) {
		int v = i % 5 == 4 ? -1 : (int)i;

		try {
			sum += thrower(v);
			want += 2 * i;
		} catch (const std::runtime_error &) {
			caught++;
		}
	}
	printf("calls %ld caught %ld sum %ld\n", n, caught, sum);
	if (caught != n / 5 || sum != want) {
		fprintf(stderr, "ubt-cold: wrong result\n");
		return 1;
	}
	return 0;
}
