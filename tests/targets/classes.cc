/*
 * ubt-classes [N]: C++ classes with base classes, passed to traced
 * functions (extern "C", so that their names are plain) N rounds
 * (default 2), then exits 0. Only its DWARF describes the types:
 *
 *	struct Shape { int id; char name[8]; };
 *	struct Circle : Shape { int radius; };
 *	struct Ring : Circle { int inner; };		two levels
 *	struct Point { long x; long y; };
 *	struct Tagged : Point, Shape { short z; };	two bases; Shape at 16
 *	struct Shadow : Shape { long id; };		its id hides Shape's
 *	class Animal { virtual ~Animal(); int legs; };	a vtable pointer
 *	class Dog : public Animal { int barks; };
 *
 * for i in 1..N:
 *	ubt_ring(&r)	returns r.inner; r = { .id = i, .name = "ring",
 *			  .radius = 10 * i, .inner = 5 * i }
 *	ubt_tagged(&t)	returns t.z; t = { .x = 100 * i, .y = -i,
 *			  .id = 7, .name = "tag<i>", .z = 3 * i }
 *	ubt_shadow(&s)	returns 0; s: Shape's id = 1, name "base",
 *			  its own id = 1000 * i
 *	ubt_dog(&d)	returns d.barks; d = { .legs = 4, .barks = i }
 */
#include <stdio.h>
#include <string.h>

#include "target.h"

struct Shape {
	int id;
	char name[8];
};

struct Circle : Shape {
	int radius;
};

struct Ring : Circle {
	int inner;
};

struct Point {
	long x;
	long y;
};

struct Tagged : Point, Shape {
	short z;
};

struct Shadow : Shape {
	long id;
};

class Animal {
public:
	Animal(int l) : legs(l) {}
	virtual ~Animal() {}
	int legs;
};

class Dog : public Animal {
public:
	Dog(int b) : Animal(4), barks(b) {}
	int barks;
};

extern "C" {
UBT_PROBE int ubt_ring(const Ring *r)
{
	UBT_FRAME();
	return r->inner;
}

UBT_PROBE int ubt_tagged(const Tagged *t)
{
	UBT_FRAME();
	return t->z;
}

UBT_PROBE int ubt_shadow(const Shadow *s)
{
	UBT_FRAME();
	return s->id == 0;
}

UBT_PROBE int ubt_dog(const Dog *d)
{
	UBT_FRAME();
	return d->barks;
}
}

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 2);

	for (long i = 1; i <= n; i++) {
		Ring r;
		Tagged t;
		Shadow s;
		Dog d((int)i);

		memset(&r, 0, sizeof(r));
		memset(&t, 0, sizeof(t));
		memset(&s, 0, sizeof(s));
		r.id = (int)i;
		strcpy(r.name, "ring");
		r.radius = 10 * (int)i;
		r.inner = 5 * (int)i;
		t.x = 100 * i;
		t.y = -i;
		t.id = 7;
		snprintf(t.name, sizeof(t.name), "tag%ld", i);
		t.z = (short)(3 * i);
		s.Shape::id = 1;
		strcpy(s.name, "base");
		s.id = 1000 * i;
		if (ubt_ring(&r) != 5 * i || ubt_tagged(&t) != 3 * i ||
		    ubt_shadow(&s) != 0 || ubt_dog(&d) != i) {
			printf("ubt-classes: wrong result\n");
			return 1;
		}
	}
	return 0;
}
