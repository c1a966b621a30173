/*
 * libubt-many.so: 500 exported functions, ubt_many_000 .. ubt_many_499,
 * for attaching to a whole library at once (uprobe:LIB:*, issue 15): each
 * adds its own constant (0x1000 + its number, read as hex digits) to its
 * argument.  ubt_many_all(x) calls every one of them once and returns the
 * sum of their results; ubt_many_expect(x) is what that sum must be.
 * Written out by the preprocessor: MANY_10 makes ten functions from one
 * prefix, MANY_100 a hundred.
 */
#include "target.h"

#define MANY_1(n)                                                   \
	UBT_PROBE long ubt_many_##n(long x)                         \
	{                                                           \
		UBT_FRAME();                                        \
		return x + 0x1##n;                                  \
	}
#define MANY_10(n)                                                  \
	MANY_1(n##0) MANY_1(n##1) MANY_1(n##2) MANY_1(n##3)         \
	MANY_1(n##4) MANY_1(n##5) MANY_1(n##6) MANY_1(n##7)         \
	MANY_1(n##8) MANY_1(n##9)
#define MANY_100(n)                                                 \
	MANY_10(n##0) MANY_10(n##1) MANY_10(n##2) MANY_10(n##3)     \
	MANY_10(n##4) MANY_10(n##5) MANY_10(n##6) MANY_10(n##7)     \
	MANY_10(n##8) MANY_10(n##9)

MANY_100(0)
MANY_100(1)
MANY_100(2)
MANY_100(3)
MANY_100(4)

/* the same list again, as calls summed */
#undef MANY_1
#define MANY_1(n) sum += ubt_many_##n(x);

UBT_PROBE long ubt_many_all(long x)
{
	long sum = 0;

	MANY_100(0)
	MANY_100(1)
	MANY_100(2)
	MANY_100(3)
	MANY_100(4)
	return sum;
}

#undef MANY_1
#define MANY_1(n) sum += x + 0x1##n;

UBT_PROBE long ubt_many_expect(long x)
{
	long sum = 0;

	UBT_FRAME();
	MANY_100(0)
	MANY_100(1)
	MANY_100(2)
	MANY_100(3)
	MANY_100(4)
	return sum;
}
