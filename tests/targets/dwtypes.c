/*
 * ubt-dwtypes [N [wait]]: calls functions whose arguments are structs,
 * enums and typedefs known only from this program's DWARF, N rounds
 * (default 3), then exits 0. With "wait", prints "ready" first and waits
 * for SIGUSR1 (for -p) before the calls. The corpus depends on exactly this sequence; change it
 * only together with tests/runtime/types.test.
 *
 * The data (never changed):
 *	TAIL = { .num = 7, .name = "tail", .color = DW_BLUE,
 *		 .vals = { 4, 5, 6 },
 *		 .inner = { .id = -2, .tag = "in2" }, .next = NULL,
 *		 .in = NULL, .label = "last" }
 *	HEAD = { .num = 42, .name = "head node", .color = DW_GREEN,
 *		 .vals = { 1, 2, 3 },
 *		 .inner = { .id = 1000, .tag = "in1" }, .next = &TAIL,
 *		 .in = &TAIL.inner, .label = "first" }
 *	PAIR = { .half = { .a = 1, .b = -1 } }: a union, .whole is
 *		0xffffffff00000001
 *	BITS = { .lo = 1, .mid = 5, .neg = -3, .hi = 0x1234 } (bitfields:
 *		bpftrace 0.17 cannot read a DWARF struct that has any)
 *	MIXED = { .ratio = 0.5, .after = 77 } (a double, then an int)
 *
 * for i in 1..N:
 *	dw_visit(&HEAD, DW_RED, &TAIL)		returns 42
 *	dw_color(DW_BLUE)			returns 40
 *	dw_pair(&PAIR)				returns 0
 *	dw_bits(&BITS)				returns 0
 *	dw_mixed(&MIXED)			returns 77
 */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "target.h"

enum dw_color {
	DW_RED = 1,
	DW_GREEN = 2,
	DW_BLUE = 40,
};

struct dw_inner {
	long id;
	char tag[8];
};

struct dw_node {
	int num;
	char name[16];
	enum dw_color color;
	int vals[3];
	struct dw_inner inner;
	struct dw_node *next;
	struct dw_inner *in;
	const char *label;
};

typedef struct dw_node dw_node_t;

struct dw_bits {
	unsigned int lo : 1;
	unsigned int mid : 3;
	int neg : 4;
	unsigned short hi;
};

struct dw_mixed {
	double ratio;
	int after;
};

union dw_pair {
	struct {
		int32_t a;
		int32_t b;
	} half;
	uint64_t whole;
};

static struct dw_node TAIL = {
	.num = 7,
	.name = "tail",
	.color = DW_BLUE,
	.vals = { 4, 5, 6 },
	.inner = { .id = -2, .tag = "in2" },
	.next = NULL,
	.in = NULL,
	.label = "last",
};

static struct dw_node HEAD = {
	.num = 42,
	.name = "head node",
	.color = DW_GREEN,
	.vals = { 1, 2, 3 },
	.inner = { .id = 1000, .tag = "in1" },
	.next = &TAIL,
	.in = &TAIL.inner,
	.label = "first",
};

static union dw_pair PAIR = { .half = { .a = 1, .b = -1 } };

static struct dw_bits BITS = { .lo = 1, .mid = 5, .neg = -3, .hi = 0x1234 };

static struct dw_mixed MIXED = { .ratio = 0.5, .after = 77 };

UBT_PROBE int dw_visit(struct dw_node *n, enum dw_color c, dw_node_t *t)
{
	UBT_FRAME();
	return n->num + (int)(c - DW_RED) + (t->next != NULL);
}

UBT_PROBE int dw_color(enum dw_color c)
{
	UBT_FRAME();
	return (int)c;
}

UBT_PROBE int dw_pair(union dw_pair *p)
{
	UBT_FRAME();
	return (int)(p->whole & 0);
}

UBT_PROBE int dw_bits(struct dw_bits *b)
{
	UBT_FRAME();
	return (int)(b->hi & 0);
}

UBT_PROBE int dw_mixed(struct dw_mixed *m)
{
	UBT_FRAME();
	return m->after;
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
		bad |= dw_visit(&HEAD, DW_RED, &TAIL) != 42;
		bad |= dw_color(DW_BLUE) != 40;
		bad |= dw_pair(&PAIR) != 0;
		bad |= dw_bits(&BITS) != 0;
		bad |= dw_mixed(&MIXED) != 77;
	}
	return target_result("ubt-dwtypes", bad);
}
