/*
 * ubt-types [N [wait]]: passes typed data to traced functions, N rounds
 * (default 3), then exits 0: structs with a char array, an enum, a nested
 * struct, a pointer to another struct, an int array, bit fields and a
 * pointer to longs; an int array; a pointer to a pointer. The corpus
 * (tests/runtime/types.test) depends on exactly this sequence; change it
 * only together with the cases. The types are declared again in the
 * cases' scripts (tests/runtime/scripts/types.h).
 *
 * for i in 1..N:
 *	ubt_types_rec(&r)	returns r.id; r is
 *		{ .id = i, .name = "rec<i>", .color = COLORS[(i - 1) % 3],
 *		  .inner = { .b = 10 * i, .c = -i },
 *		  .next = &{ .b = 100 * i, .c = i },
 *		  .arr = { i, 2 * i, 3 * i, 4 * i },
 *		  .flags = i % 8, .mode = 3 * i % 32,
 *		  .vals = { 1000 * i, 1000 * i + 1, 1000 * i + 2 } }
 *		with COLORS = { UBT_RED (1), UBT_GREEN (2), UBT_BLUE (4) }
 *	ubt_types_ints(INTS, 4)	returns 26; INTS = { 5, 6, 7, 8 }
 *	ubt_types_pp(&&r)	returns r.id (r as above)
 *
 * With "wait" (for -p), it first prints "ready" once its SIGUSR1 handler
 * is installed and waits up to 30 s for SIGUSR1 (exit 1 without it).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "target.h"

enum ubt_color { UBT_RED = 1, UBT_GREEN = 2, UBT_BLUE = 4 };

struct ubt_inner {
	int b;
	short c;
};

struct ubt_rec {
	int id;
	char name[8];
	enum ubt_color color;
	struct ubt_inner inner;
	struct ubt_inner *next;
	int arr[4];
	unsigned int flags : 3;
	unsigned int mode : 5;
	long *vals;
};

static const enum ubt_color COLORS[] = { UBT_RED, UBT_GREEN, UBT_BLUE };
static const int INTS[] = { 5, 6, 7, 8 };

UBT_PROBE int ubt_types_rec(const struct ubt_rec *r)
{
	UBT_FRAME();
	return r->id;
}

UBT_PROBE int ubt_types_ints(const int *p, int n)
{
	int s = 0;

	UBT_FRAME();
	for (int i = 0; i < n; i++)
		s += p[i];
	return s;
}

UBT_PROBE int ubt_types_pp(struct ubt_rec *const *pp)
{
	UBT_FRAME();
	return (*pp)->id;
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 3);
	long bad = 0;

	if (argc > 2 && !strcmp(argv[2], "wait"))
		target_wait_usr1();
	else if (argc > 2)
		return 2;

	for (long i = 1; i <= n; i++) {
		struct ubt_inner next = { .b = 100 * i, .c = i };
		long vals[3] = { 1000 * i, 1000 * i + 1, 1000 * i + 2 };
		struct ubt_rec r = {
			.id = i,
			.color = COLORS[(i - 1) % 3],
			.inner = { .b = 10 * i, .c = -i },
			.next = &next,
			.arr = { i, 2 * i, 3 * i, 4 * i },
			.flags = i % 8,
			.mode = 3 * i % 32,
			.vals = vals,
		};
		struct ubt_rec *rp = &r;

		snprintf(r.name, sizeof(r.name), "rec%d", (int)i);
		bad |= ubt_types_rec(&r) != i;
		bad |= ubt_types_ints(INTS, 4) != 26;
		bad |= ubt_types_pp(&rp) != i;
	}
	return target_result("ubt-types", bad);
}
