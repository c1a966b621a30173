/*
 * Unit tests of shim/output/output.c and frontend/format.c: printf formatting,
 * format checks, map printing at exit and by print(), hist/lhist, JSON.
 *
 * The expected texts are bpftrace 0.17's output for the same data,
 * captured by running the bpftrace program quoted above each case.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "diag.h"
#include "format.h"
#include "output.h"
#include "types.h"
#include "util.h"

static struct arena A;
static int ntest;
static int nfail;

static void check_str(const char *name, const char *got, const char *exp)
{
	ntest++;
	if (got && !strcmp(got, exp)) {
		printf("ok %d - %s\n", ntest, name);
		return;
	}
	nfail++;
	printf("not ok %d - %s\n", ntest, name);
	printf("# expected:\n");
	for (const char *p = exp; *p;) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);

		printf("#   |%.*s|\n", n, p);
		p += n + (nl ? 1 : 0);
	}
	printf("# got:\n");
	for (const char *p = got ? got : "(null)"; *p;) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);

		printf("#   |%.*s|\n", n, p);
		p += n + (nl ? 1 : 0);
	}
}

static void check_int(const char *name, long long got, long long exp)
{
	ntest++;
	if (got == exp) {
		printf("ok %d - %s\n", ntest, name);
		return;
	}
	nfail++;
	printf("not ok %d - %s # got %lld, expected %lld\n", ntest, name, got,
	       exp);
}

/* ---- an output stream into memory ---- */

static char *mem_buf;
static size_t mem_len;
static struct out O;

static void mem_open(enum out_format f)
{
	FILE *fp = open_memstream(&mem_buf, &mem_len);

	if (!fp)
		abort();
	out_init(&O, fp, f);
}

/* Close the stream; the text stays valid until the next mem_open(). */
static const char *mem_close(void)
{
	static char *last;

	fclose(O.f);
	free(last);
	last = mem_buf;
	mem_buf = NULL;
	return last;
}

/* ---- types ---- */

static struct type *t_s64, *t_u64, *t_u32, *t_s8, *t_s16, *t_s32, *t_str;

static struct type *tuple(int n, ...)
{
	struct type *t = type_new(&A, TY_TUPLE, 0);
	size_t off = 0, align = 1;
	va_list ap;

	t->fields = arena_alloc(&A, n * sizeof(*t->fields) + 1);
	t->nfields = n;
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		struct type *ft = va_arg(ap, struct type *);
		size_t al = ft->kind == TY_STRING ? 1 :
			    ft->kind == TY_TUPLE ? 8 :
			    ft->kind == TY_BUFFER ? 1 : ft->size;

		if (al > align)
			align = al;
		off = (off + al - 1) / al * al;
		t->fields[i].type = ft;
		t->fields[i].offset = off;
		off += ft->size;
	}
	va_end(ap);
	t->size = (off + align - 1) / align * align;
	return t;
}

static struct type *agg(enum type_kind k, bool is_signed)
{
	struct type *t = type_new(&A, k, 8);

	t->is_signed = is_signed;
	return t;
}

static struct type *hist_t(int bits)
{
	struct type *t = type_new(&A, TY_HIST, 8);

	t->hist_bits = bits;
	return t;
}

static struct type *lhist_t(int64_t min, int64_t max, int64_t step)
{
	struct type *t = type_new(&A, TY_LHIST, 8);

	t->lhist_min = min;
	t->lhist_max = max;
	t->lhist_step = step;
	return t;
}

/* Write one value of type t at p (integers, strings, tuples). */
struct tv {
	int64_t i;
	const char *s;
};

static void put(const struct type *t, void *p, const struct tv *v, int *k)
{
	if (t->kind == TY_TUPLE) {
		for (int i = 0; i < t->nfields; i++)
			put(t->fields[i].type,
			    (char *)p + t->fields[i].offset, v, k);
		return;
	}
	if (t->kind == TY_STRING || t->kind == TY_ARRAY) {
		memcpy(p, v[*k].s, strnlen(v[*k].s, t->size));
	} else if (t->kind == TY_BUFFER) {
		unsigned char len = strlen(v[*k].s);

		/* "\x01" style bytes come in as they are; len in .i if set */
		if (v[*k].i)
			len = v[*k].i;
		memcpy(p, &len, 1);
		memcpy((char *)p + 1, v[*k].s, len);
	} else {
		uint64_t x = v[*k].i;

		memcpy(p, &x, t->size);	/* little-endian: low bytes */
	}
	(*k)++;
}

static void *make(const struct type *t, const struct tv *v)
{
	void *p = arena_alloc(&A, t->size + 8);
	int k = 0;

	put(t, p, v, &k);
	return p;
}

#define V(...) ((const struct tv[]){ __VA_ARGS__ })
#define I(x) { .i = (x) }
#define S(x) { .s = (x) }

/* ---- maps, filled as the BPF side would ---- */

struct tmap {
	struct out_map m;
	struct out_entry e[64];
	size_t vsize;
};

static struct tmap *tmap(const char *name, struct type *kt, int nkeys,
			 struct type *vt)
{
	struct tmap *t = arena_alloc(&A, sizeof(*t));

	t->m.name = name;
	t->m.key_type = kt;
	t->m.nkeys = nkeys;
	t->m.value_type = vt;
	t->m.entries = t->e;
	switch (vt->kind) {
	case TY_COUNT:
	case TY_SUM:
		t->vsize = 8;
		break;
	case TY_MIN:
	case TY_MAX:
		t->vsize = sizeof(struct out_minmax);
		break;
	case TY_AVG:
	case TY_STATS:
		t->vsize = sizeof(struct out_avg);
		break;
	case TY_HIST:
	case TY_LHIST:
		t->vsize = out_nbuckets(vt) * 8;
		break;
	default:
		t->vsize = vt->size;
	}
	return t;
}

/* The value slot for key (NULL for keyless), created zeroed. */
static void *slot(struct tmap *t, const struct tv *key)
{
	void *k = t->m.key_type ? make(t->m.key_type, key) : NULL;

	for (size_t i = 0; i < t->m.nentries; i++)
		if (!k || !memcmp(t->e[i].key, k, t->m.key_type->size))
			return (void *)t->e[i].value;
	if (t->m.nentries == ARRAY_SIZE(t->e))
		abort();
	t->e[t->m.nentries].key = k;
	t->e[t->m.nentries].value = arena_alloc(&A, t->vsize + 8);
	return (void *)t->e[t->m.nentries++].value;
}

static void del(struct tmap *t, const struct tv *key)
{
	void *k = make(t->m.key_type, key);

	for (size_t i = 0; i < t->m.nentries; i++)
		if (!memcmp(t->e[i].key, k, t->m.key_type->size)) {
			t->e[i] = t->e[--t->m.nentries];
			return;
		}
}

static void clear(struct tmap *t)
{
	t->m.nentries = 0;
}

static void zero(struct tmap *t)
{
	for (size_t i = 0; i < t->m.nentries; i++)
		memset((void *)t->e[i].value, 0, t->vsize);
}

static void count(struct tmap *t, const struct tv *key)
{
	uint64_t *v = slot(t, key);

	(*v)++;
}

static void sum(struct tmap *t, const struct tv *key, int64_t x)
{
	int64_t *v = slot(t, key);

	*v += x;
}

static void minmax(struct tmap *t, const struct tv *key, int64_t x)
{
	struct out_minmax *v = slot(t, key);
	bool is_min = t->m.value_type->kind == TY_MIN;

	if (!v->set || (is_min ? x < v->value : x > v->value))
		v->value = x;
	v->set = 1;
}

static void avg(struct tmap *t, const struct tv *key, int64_t x)
{
	struct out_avg *v = slot(t, key);

	v->count++;
	v->total += x;
}

static void hist(struct tmap *t, const struct tv *key, int64_t x)
{
	uint64_t *v = slot(t, key);
	const struct type *vt = t->m.value_type;

	if (vt->kind == TY_HIST)
		v[out_hist_index(x, vt->hist_bits)]++;
	else
		v[out_lhist_index(x, vt->lhist_min, vt->lhist_max,
				  vt->lhist_step)]++;
}

static void set(struct tmap *t, const struct tv *key, const struct tv *val)
{
	void *v = slot(t, key);
	void *src = make(t->m.value_type, val);

	memcpy(v, src, t->m.value_type->size);
}

#define K(...) V(__VA_ARGS__)
#define NOKEY NULL

static const char *exit_text(enum out_format f, int n, ...)
{
	const struct out_map *maps[32];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		maps[i] = &va_arg(ap, struct tmap *)->m;
	va_end(ap);
	mem_open(f);
	if (out_print_maps_at_exit(&O, maps, n))
		fprintf(O.f, "<error>");
	return mem_close();
}

/* printf through a parsed format and argument values. */
static void pf(const char *fmt, const struct type *args, const struct tv *v)
{
	struct fmt_string f;
	void *data = args->size ? make(args, v) : arena_alloc(&A, 8);

	fmt_parse(&A, fmt, strlen(fmt), &f);
	if (out_printf(&O, &f, args, data, args->size))
		fprintf(O.f, "<error>");
}

/* bpftrace 0.17 prints "%%" after the last conversion as two percent
 * signs; the three lines with a "%" below expect the right single one. */
static const char exp_p1[] =
	"42   |ff|str|A\n"
	"-1 1 1 -1 18446744073709551615 -1 -1\n"
	"0x1 0xffffffffffffffff\n"
	"4294967295 ffffffff FFFFFFFF -1\n"
	"        ab|cd        |ef|\n"
	"%d 2|\n"
	"1 a%b %k\n"
	"%1%\n"
	"ab|005|006       |\n"
	"AA|    B|C  |\n"
	"5 -5\n"
	"255 65535 4294967295 18446744073709551615\n"
	"ffffffff fffffffffffffffe   007 -0042 -3   |\n"
	"(nil) (nil)                 0xff|0xff                |\n"
	"37777777777    10 11   |1777777777777777777777\n"
	"-1||\n"
	"\\x61\\x62|a\\x01\\xff|61 62|%5r|\n"
	"a%ba\tb\\\n"
	"\n"
	"\n";

static const char exp_pj[] =
	"{\"type\": \"printf\", \"data\": \"42   |ff|str|A\\n\"}\n"
	"{\"type\": \"printf\", \"data\": \"q\\\"uote\\\\ \\t x\\u0001\\r\\n\"}\n"
	"{\"type\": \"printf\", \"data\": \"%d 2|\\n\"}\n"
	"\n"
	"\n";

static const char exp_t1[] =
	"\n"
	"\n"
	"@a: 4\n"
	"\n"
	"@h: \n"
	"[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"[8, 16)                0 |                                                    |\n"
	"[16, 32)               0 |                                                    |\n"
	"[32, 64)               0 |                                                    |\n"
	"[64, 128)              0 |                                                    |\n"
	"[128, 256)             0 |                                                    |\n"
	"[256, 512)             0 |                                                    |\n"
	"[512, 1K)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@l: \n"
	"[0, 10)                1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@m[1, a]: 1\n"
	"@s: count 1, average 3, total 3\n"
	"\n"
	"@x[b]: -5\n";

static const char exp_t2[] =
	"\n"
	"\n"
	"@: 5\n"
	"@av[2]: -10\n"
	"@av[3]: -3\n"
	"@av[1]: 3\n"
	"\n"
	"@c[3]: 1\n"
	"@c[1]: 2\n"
	"@c[2]: 3\n"
	"\n"
	"@i[7]: -4\n"
	"@i[5]: 10\n"
	"@i[9]: 20\n"
	"@i[2]: 30\n"
	"@j[1]: 5\n"
	"@j[3]: 7\n"
	"@j[2]: 4294967295\n"
	"@mn[2]: -3\n"
	"@mn[1]: 5\n"
	"@mx[1]: 3\n"
	"@mx[2]: 9\n"
	"@s[c]: -3\n"
	"@s[b]: 5\n"
	"@s[a]: 7\n"
	"@st[2]: count 3, average 6, total 20\n"
	"@st[1]: count 1, average 10, total 10\n"
	"\n"
	"@str[1]: zz\n"
	"@str[2]: aa\n"
	"@tv: (1, x, -2)\n"
	"@u[1, a]: 4\n"
	"@u[1, b]: 5\n"
	"@u[0, z]: 6\n";

static const char exp_t3[] =
	"\n"
	"\n"
	"@a: \n"
	"(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	"[0]                    2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	"[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	"\n"
	"@b: \n"
	"[1M, 2M)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"[2M, 4M)               0 |                                                    |\n"
	"[4M, 8M)               0 |                                                    |\n"
	"[8M, 16M)              0 |                                                    |\n"
	"[16M, 32M)             0 |                                                    |\n"
	"[32M, 64M)             0 |                                                    |\n"
	"[64M, 128M)            0 |                                                    |\n"
	"[128M, 256M)           0 |                                                    |\n"
	"[256M, 512M)           0 |                                                    |\n"
	"[512M, 1G)             0 |                                                    |\n"
	"[1G, 2G)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@e: \n"
	"[512, 1K)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"[1K, 2K)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@f: \n"
	"(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@q: \n"
	"[1]                    1 |@@@@@@@                                             |\n"
	"[2, 4)                 3 |@@@@@@@@@@@@@@@@@@@@@@                              |\n"
	"[4, 8)                 0 |                                                    |\n"
	"[8, 16)                7 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n";

static const char exp_t4[] =
	"\n"
	"\n"
	"@l: \n"
	"(..., 0)               1 |@@@@@@@@@@@@@@@@@                                   |\n"
	"[0, 10)                0 |                                                    |\n"
	"[10, 20)               0 |                                                    |\n"
	"[20, 30)               0 |                                                    |\n"
	"[30, 40)               0 |                                                    |\n"
	"[40, 50)               0 |                                                    |\n"
	"[50, 60)               1 |@@@@@@@@@@@@@@@@@                                   |\n"
	"[60, 70)               0 |                                                    |\n"
	"[70, 80)               0 |                                                    |\n"
	"[80, 90)               0 |                                                    |\n"
	"[90, 100)              0 |                                                    |\n"
	"[100, ...)             3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@m: \n"
	"[3000, 4000)           1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"[4000, 5000)           0 |                                                    |\n"
	"[5000, 6000)           1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@n: \n"
	"[15, 20)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@o: \n"
	"[1M, 2M)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@p: \n"
	"[0, 3)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"[3, 6)                 0 |                                                    |\n"
	"[6, 9)                 0 |                                                    |\n"
	"[10, ...)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@r: \n"
	"(..., 1K)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"[1K, 2K)               0 |                                                    |\n"
	"[2K, 3K)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"[3K, 4K)               0 |                                                    |\n"
	"[4K, ...)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@s: \n"
	"[127000, 125K)         1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@t: \n"
	"[3, 4)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n";

static const char exp_t5[] =
	"A\n"
	"@c[1]: 1\n"
	"@c[2]: 2\n"
	"@c[3]: 3\n"
	"B\n"
	"@c[2]: 2\n"
	"@c[3]: 3\n"
	"C\n"
	"@c[1]: 0\n"
	"@c[2]: 1\n"
	"@c[3]: 1\n"
	"D\n"
	"@h[0]: \n"
	"[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@h[1]: \n"
	"[1]                    3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"E\n"
	"@h[2]: \n"
	"[4, 8)                 0 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@h[0]: \n"
	"[2, 4)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@h[1]: \n"
	"[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"F\n"
	"@a[3]: 5\n"
	"@a[1]: 10\n"
	"\n"
	"@a[2]: 1\n"
	"@a[3]: 2\n"
	"@a[1]: 5\n"
	"\n"
	"G\n"
	"\n"
	"H\n"
	"5\n"
	"-1\n"
	"str\n"
	"(1, a, (2, b), -3)\n"
	"\n"
	"\n"
	"@a[2]: 2\n"
	"@a[3]: 5\n"
	"@a[1]: 10\n"
	"\n"
	"@c[1]: 1\n"
	"@c[2]: 2\n"
	"@c[3]: 3\n"
	"\n"
	"\n";

static const char exp_t6[] =
	"\n"
	"\n"
	"@a[0]: w\n"
	"@a[5]: x\n"
	"@a[100]: z\n"
	"@a[-3]: y\n"
	"@b[]: 5\n"
	"@b[B]: 3\n"
	"@b[a]: 4\n"
	"@b[ab]: 2\n"
	"@b[b]: 1\n"
	"@c[1, a]: r\n"
	"@c[1, b]: q\n"
	"@c[2, a]: p\n"
	"@c[-1, z]: s\n"
	"@g[0]: (2, b)\n"
	"@g[1]: (1, a)\n"
	"@hs[256]: \n"
	"[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@hs[1]: \n"
	"[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@hs[2]: \n"
	"[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	"\n"
	"@z: \n"
	"\n"
	"@za: 0\n"
	"\n"
	"@zs: count 0, average 0, total 0\n"
	"\n";

static const char exp_j1[] =
	"{\"type\": \"printf\", \"data\": \"42   |ff|str|A\\n\"}\n"
	"{\"type\": \"printf\", \"data\": \"q\\\"uote\\\\ \\t x\\u0001\\r\\n\"}\n"
	"{\"type\": \"value\", \"data\": 5}\n"
	"{\"type\": \"value\", \"data\": \"s\"}\n"
	"{\"type\": \"value\", \"data\": [1,\"a\"]}\n"
	"{\"type\": \"map\", \"data\": {\"@m\": {\"1,a\": 1}}}\n"
	"\n"
	"\n"
	"{\"type\": \"stats\", \"data\": {\"@a\": 4}}\n"
	"{\"type\": \"stats\", \"data\": {\"@ak\": {\"1,2\": 5}}}\n"
	"{\"type\": \"hist\", \"data\": {\"@h\": [{\"min\": 4, \"max\": 7, \"count\": 1}, {\"min\": 8, \"max\": 15, \"count\": 0}, {\"min\": 16, \"max\": 31, \"count\": 0}, {\"min\": 32, \"max\": 63, \"count\": 0}, {\"min\": 64, \"max\": 127, \"count\": 0}, {\"min\": 128, \"max\": 255, \"count\": 0}, {\"min\": 256, \"max\": 511, \"count\": 0}, {\"min\": 512, \"max\": 1023, \"count\": 1}]}}\n"
	"{\"type\": \"hist\", \"data\": {\"@hk\": {\"1\": [{\"max\": -1, \"count\": 1}], \"2\": [{\"min\": 0, \"max\": 0, \"count\": 1}]}}}\n"
	"{\"type\": \"map\", \"data\": {\"@i\": 7}}\n"
	"{\"type\": \"hist\", \"data\": {\"@l\": [{\"max\": -1, \"count\": 1}, {\"min\": 0, \"max\": 9, \"count\": 1}, {\"min\": 10, \"max\": 19, \"count\": 0}, {\"min\": 20, \"max\": 29, \"count\": 0}, {\"min\": 30, \"max\": 39, \"count\": 0}, {\"min\": 40, \"max\": 49, \"count\": 0}, {\"min\": 50, \"max\": 59, \"count\": 0}, {\"min\": 60, \"max\": 69, \"count\": 0}, {\"min\": 70, \"max\": 79, \"count\": 0}, {\"min\": 80, \"max\": 89, \"count\": 0}, {\"min\": 90, \"max\": 99, \"count\": 0}, {\"min\": 100, \"count\": 1}]}}\n"
	"{\"type\": \"map\", \"data\": {\"@m\": {\"1,a\": 1}}}\n"
	"{\"type\": \"map\", \"data\": {\"@mn\": 3}}\n"
	"{\"type\": \"map\", \"data\": {\"@mx\": 3}}\n"
	"{\"type\": \"stats\", \"data\": {\"@s\": {\"count\": 1, \"average\": 3, \"total\": 3}}}\n"
	"{\"type\": \"stats\", \"data\": {\"@sk\": {\"a\": {\"count\": 1, \"average\": 4, \"total\": 4}}}}\n"
	"{\"type\": \"map\", \"data\": {\"@str\": \"ab\\\"c\\\\d\\n\\t\"}}\n"
	"{\"type\": \"map\", \"data\": {\"@tup\": [1,\"a\",[2,\"b\"]]}}\n"
	"{\"type\": \"map\", \"data\": {\"@x\": {\"b\": -5}}}\n";

static const char exp_j2[] =
	"{\"type\": \"map\", \"data\": {\"@n\": {\"1\": 4}}}\n"
	"{\"type\": \"map\", \"data\": {\"@n\": {\"2\": 1, \"1\": 2}}}\n"
	"\n"
	"\n"
	"{\"type\": \"stats\", \"data\": {\"@a\": 0}}\n"
	"{\"type\": \"hist\", \"data\": {\"@h\": []}}\n"
	"{\"type\": \"map\", \"data\": {\"@k\": {\"a\\\"b\": 1}}}\n"
	"{\"type\": \"hist\", \"data\": {\"@l\": [{\"max\": 9, \"count\": 1}]}}\n"
	"{\"type\": \"hist\", \"data\": {\"@lk\": {\"1\": [{\"min\": 0, \"max\": 4, \"count\": 1}]}}}\n"
	"{\"type\": \"map\", \"data\": {\"@m\": {\"1\": 3}}}\n"
	"{\"type\": \"map\", \"data\": {\"@n\": {\"2\": 3, \"1\": 4}}}\n"
	"{\"type\": \"hist\", \"data\": {\"@r\": [{\"max\": 1023, \"count\": 1}, {\"min\": 1024, \"max\": 2047, \"count\": 0}, {\"min\": 2048, \"max\": 3071, \"count\": 1}, {\"min\": 3072, \"max\": 4095, \"count\": 0}, {\"min\": 4096, \"count\": 1}]}}\n"
	"{\"type\": \"stats\", \"data\": {\"@s\": {\"count\": 0, \"average\": 0, \"total\": 0}}}\n"
	"{\"type\": \"stats\", \"data\": {\"@st\": {\"1,x\": {\"count\": 1, \"average\": 5, \"total\": 5}}}}\n";

static const char exp_e1[] =
	"\n"
	"\n"
	"\n"
	"\n"
	"@c: 0\n"
	"\n"
	"\n"
	"\n"
	"\n"
	"\n"
	"\n"
	"\n"
	"\n"
	"@z: 1\n";

static const char exp_e2[] =
	"\n"
	"\n"
	"{\"type\": \"map\", \"data\": {\"@c\": 0}}\n"
	"{\"type\": \"map\", \"data\": {\"@z\": 1}}\n";


/* ---- format parsing and checks ---- */

static int nconvs(const char *fmt)
{
	struct fmt_string f;

	fmt_parse(&A, fmt, strlen(fmt), &f);
	return f.nconvs;
}

static const char *check(const char *func, const char *fmt, int n, ...)
{
	struct type *args[8];
	struct fmt_string f;
	const char *msg;
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		args[i] = va_arg(ap, struct type *);
	va_end(ap);
	fmt_parse(&A, fmt, strlen(fmt), &f);
	msg = fmt_check_args(&A, func, &f, args, n);
	return msg ? msg : "";
}

static void test_format_parse(void)
{
	/* bpftrace -e 'BEGIN { printf("<%X>\n", 8); exit(); }' for each X:
	 * "Too many arguments" means bpftrace saw no conversion */
	static const char *const one[] = {
		"%o", "%lo", "%llo", "%ho", "%hho", "%zo", "%jo", "%to",
		"%lu", "%lld", "%c", "%s", "%r", "%rx", "%rh", "%x8", "%d5",
		"%-08lx", "%5.3d", "%-.2s", "%p", "%X", "%tX", "%jp",
	};
	static const char *const none[] = {
		"%i", "%li", "%e", "%f", "%g", "%a", "%n", "%h", "%l", "%ll",
		"%hh", "%z", "%j", "%t", "%q", "%L", "%Lu", "%llld", "%hhhd",
		"%lc", "%hc", "%ls", "%hs", "%lr", "%", "abc%", "%5", "%+d",
		"% d", "%#x", "%5.s", "%.s", "%%",
	};
	struct fmt_string f;

	for (size_t i = 0; i < ARRAY_SIZE(one); i++) {
		char name[64];

		snprintf(name, sizeof(name), "format: %s is a conversion",
			 one[i]);
		check_int(name, nconvs(one[i]), 1);
	}
	for (size_t i = 0; i < ARRAY_SIZE(none); i++) {
		char name[64];

		snprintf(name, sizeof(name), "format: %s is no conversion",
			 none[i]);
		check_int(name, nconvs(none[i]), 0);
	}
	check_int("format: %%d %d has two conversions", nconvs("%%d %d\n"), 2);
	check_int("format: %5.3d|%-08x|%+d|% d|%#x has two",
		  nconvs("%5.3d|%-08x|%+d|% d|%#x\n"), 2);

	fmt_parse(&A, "a%-08.3lxb%rx", 13, &f);
	check_int("format: parsed count", f.nconvs, 2);
	check_int("format: left", f.convs[0].left, 1);
	check_int("format: zero pad", f.convs[0].zero_pad, 1);
	check_int("format: width", f.convs[0].width, 8);
	check_int("format: precision", f.convs[0].precision, 3);
	check_str("format: length", f.convs[0].length, "l");
	check_int("format: conv", f.convs[0].conv, 'x');
	check_str("format: token", f.convs[0].token, "lx");
	check_int("format: prefix", (int)f.convs[0].prefix_len, 1);
	check_int("format: buffer mode", f.convs[1].buf_mode, 'x');
	check_int("format: buffer arg", f.convs[1].arg, FMT_ARG_BUFFER);
	check_int("format: tail", (int)f.tail_len, 0);
}

static void test_format_check(void)
{
	struct type *tup = tuple(2, t_s64, t_str);
	struct type *cnt = agg(TY_COUNT, false);
	struct type *h = hist_t(0);
	struct type *buf = type_new(&A, TY_BUFFER, 8);
	struct type *ptr = type_pointer(&A, t_s8);
	struct type *probe = type_new(&A, TY_PROBE, 64);

	check_str("check: not enough",
		  check("printf", "%d\n", 0),
		  "printf: Not enough arguments for format string (0 supplied, 1 expected)");
	check_str("check: not enough 2",
		  check("printf", "%d %d\n", 1, t_s64),
		  "printf: Not enough arguments for format string (1 supplied, 2 expected)");
	check_str("check: too many",
		  check("printf", "x\n", 1, t_s64),
		  "printf: Too many arguments for format string (1 supplied, 0 expected)");
	check_str("check: %k is text",
		  check("printf", "%k\n", 1, t_s64),
		  "printf: Too many arguments for format string (1 supplied, 0 expected)");
	check_str("check: %%d counts",
		  check("printf", "%%d %d\n", 1, t_s64),
		  "printf: Not enough arguments for format string (1 supplied, 2 expected)");
	check_str("check: too many 5/2",
		  check("printf", "%5.3d|%-08x|%+d|% d|%#x\n", 5, t_s64, t_s64,
			t_s64, t_s64, t_s64),
		  "printf: Too many arguments for format string (5 supplied, 2 expected)");
	check_str("check: %s with integer",
		  check("printf", "%s\n", 1, t_s64),
		  "printf: %s specifier expects a value of type string (integer supplied)");
	check_str("check: %d with string",
		  check("printf", "%d\n", 1, t_str),
		  "printf: %d specifier expects a value of type integer (string supplied)");
	check_str("check: %c with string",
		  check("printf", "%c\n", 1, t_str),
		  "printf: %c specifier expects a value of type integer (string supplied)");
	check_str("check: %r with integer",
		  check("printf", "%r\n", 1, t_s64),
		  "printf: %r specifier expects a value of type buffer (integer supplied)");
	check_str("check: %rx with integer",
		  check("printf", "%rx\n", 1, t_s64),
		  "printf: %rx specifier expects a value of type buffer (integer supplied)");
	check_str("check: %-5lx names lx",
		  check("printf", "%-5lx\n", 1, t_str),
		  "printf: %lx specifier expects a value of type integer (string supplied)");
	check_str("check: tuple",
		  check("printf", "%s\n", 1, tup),
		  "printf: %s specifier expects a value of type string (tuple supplied)");
	check_str("check: count",
		  check("printf", "%d\n", 1, cnt),
		  "printf: %d specifier expects a value of type integer (count supplied)");
	check_str("check: hist",
		  check("printf", "%s\n", 1, h),
		  "printf: %s specifier expects a value of type string (hist supplied)");
	check_str("check: buffer to %s",
		  check("printf", "%s\n", 1, buf),
		  "printf: %s specifier expects a value of type string (buffer supplied)");
	check_str("check: first mismatch wins",
		  check("printf", "%s %d\n", 2, t_s64, t_str),
		  "printf: %s specifier expects a value of type string (integer supplied)");
	check_str("check: system",
		  check("system", "echo %d\n", 0),
		  "system: Not enough arguments for format string (0 supplied, 1 expected)");
	check_str("check: cat",
		  check("cat", "%s", 1, t_s64),
		  "cat: %s specifier expects a value of type string (integer supplied)");
	check_str("check: fine",
		  check("printf", "%d %s %r %c %p %d\n", 6, t_s8, t_str, buf,
			t_u32, ptr, ptr),
		  "");
	check_str("check: probe is a string",
		  check("printf", "%s\n", 1, probe), "");
	check_str("check: probe is no integer",
		  check("printf", "%d\n", 1, probe),
		  "printf: %d specifier expects a value of type integer (string supplied)");
}

/* ---- printf ---- */

static void test_printf(void)
{
	struct type *b2 = type_new(&A, TY_BUFFER, 1 + 8);

	/* bpftrace -e 'BEGIN { printf(...); ...; exit(); }', each printf
	 * below in this order (tests/unit-output.c's exp_p1) */
	mem_open(OUT_TEXT);
	pf("%-5d|%x|%s|%c\n", tuple(4, t_s64, t_s64, t_str, t_s64),
	   V(I(42), I(255), S("str"), I(65)));
	pf("%lld %hhd %hd %ld %zu %jd %td\n",
	   tuple(7, t_s64, t_s64, t_s64, t_s64, t_s64, t_s64, t_s64),
	   V(I(-1), I(257), I(65537), I(-1), I(-1), I(-1), I(-1)));
	pf("%p %p\n", tuple(2, t_s64, t_s8), V(I(1), I(-1)));
	pf("%u %x %X %d\n", tuple(4, t_s64, t_s64, t_s64, t_s32),
	   V(I(-1), I(-1), I(-1), I(-1)));
	pf("%10s|%-10s|%.2s|\n", tuple(3, t_str, t_str, t_str),
	   V(S("ab"), S("cd"), S("efg")));
	pf("%%d %d|\n", tuple(2, t_s64, t_s64), V(I(1), I(2)));
	pf("%d a%%b %k\n", tuple(1, t_s64), V(I(1)));
	pf("%%%d%%\n", tuple(1, t_s64), V(I(1)));
	pf("%-.2s|%.3d|%-10.3d|\n", tuple(3, t_str, t_s64, t_s64),
	   V(S("abc"), I(5), I(6)));
	pf("%c%c|%5c|%-3c|\n", tuple(4, t_s64, t_s64, t_s64, t_s64),
	   V(I(65), I(0x141), I(66), I(67)));
	pf("%d %d\n", tuple(2, t_s64, t_s64),
	   V(I(4294967301LL), I(-4294967301LL)));
	pf("%hhu %hu %u %lu\n", tuple(4, t_s64, t_s64, t_s64, t_s64),
	   V(I(-1), I(-1), I(-1), I(-1)));
	pf("%x %lx %5.3d %05d %-5d|\n",
	   tuple(5, t_s8, t_s16, t_s64, t_s64, t_s64),
	   V(I(-1), I(-2), I(7), I(-42), I(-3)));
	pf("%p %lp %20p|%-20p|\n", tuple(4, t_s64, t_s64, t_s64, t_s64),
	   V(I(0), I(0), I(255), I(255)));
	pf("%o %5o %-5o|%llo\n", tuple(4, t_s64, t_s64, t_s64, t_s64),
	   V(I(-1), I(8), I(9), I(-1)));
	pf("%d|%s|\n", tuple(2, t_u64, t_str), V(I(-1), S("")));
	pf("%rx|%r|%rh|%5r|\n", tuple(4, b2, b2, b2, b2),
	   V(S("ab"), { .i = 3, .s = "a\x01\xff" }, S("ab"), S("z")));
	pf("a%%b", tuple(0), V(I(0)));
	pf("%s\n", tuple(1, t_str), V(S("a\tb\\")));
	fputs("\n\n", O.f);	/* exit, no maps */
	check_str("printf: specifiers, widths, flags, %%, buffers",
		  mem_close(), exp_p1);

	mem_open(OUT_JSON);
	pf("%-5d|%x|%s|%c\n", tuple(4, t_s64, t_s64, t_str, t_s64),
	   V(I(42), I(255), S("str"), I(65)));
	pf("q\"uote\\ \t x\x01\r\n", tuple(0), V(I(0)));
	pf("%%d %d|\n", tuple(2, t_s64, t_s64), V(I(1), I(2)));
	fputs("\n\n", O.f);
	check_str("printf: json", mem_close(), exp_pj);

	{
		struct fmt_string f;
		struct type *args = tuple(2, t_s64, t_str);
		void *data = make(args, V(I(7), S("x y")));
		char *s;

		fmt_parse(&A, "echo %d %s", 10, &f);
		s = out_format(&f, args, data, args->size);
		check_str("out_format: for system()", s, "echo 7 x y");
		free(s);
		errno = 0;
		s = out_format(&f, args, data, args->size - 1);
		check_int("out_format: short record", s == NULL && errno == EINVAL,
			  1);
	}
}

static void test_misc(void)
{
	struct tm tm = {
		.tm_year = 126, .tm_mon = 10, .tm_mday = 21,
		.tm_hour = 5, .tm_min = 7, .tm_sec = 9,
	};
	struct type *sym = type_new(&A, TY_USYM, 16);
	struct type *cg = type_new(&A, TY_CGROUP_PATH, 8);
	struct type *inet = type_new(&A, TY_INET, 24);
	unsigned char in4[24] = { 2, 0, 0, 0, 0, 0, 0, 0, 127, 0, 0, 1 };
	unsigned char in6[24] = { 10, 0, 0, 0, 0, 0, 0, 0,
				  0, 0, 0, 0, 0, 0, 0, 0,
				  0, 0, 0, 0, 0, 0, 0, 1 };
	uint64_t addr[2] = { 0x55a04f604510, 77 };
	uint64_t zero8 = 0;
	FILE *saved;

	mem_open(OUT_TEXT);
	out_attached(&O, 1);
	out_attached(&O, 3);
	out_lost_events(&O, 12);
	out_time(&O, "%H:%M:%S\n", &tm);
	out_time(&O, "%Y-%m-%d", &tm);
	check_str("attached, lost events, time",
		  mem_close(),
		  "Attaching 1 probe...\n"
		  "Attaching 3 probes...\n"
		  "Lost 12 events\n"
		  "05:07:09\n"
		  "2026-11-21");
	mem_open(OUT_JSON);
	out_attached(&O, 2);
	out_lost_events(&O, 5);
	out_time(&O, "%H\n", &tm);
	check_str("attached, lost events, time: json", mem_close(),
		  "{\"type\": \"attached_probes\", \"data\": {\"probes\": 2}}\n"
		  "{\"type\": \"lost_events\", \"data\": {\"events\": 5}}\n"
		  "{\"type\": \"time\", \"data\": \"05\\n\"}\n");

	/* cgroup_path(id, filter): no hierarchy named so, no text */
	saved = stderr;
	stderr = fopen("/dev/null", "w");
	cg->name = "ubt-no-such-hierarchy";
	mem_open(OUT_TEXT);
	out_print_value(&O, cg, &zero8);
	check_str("print(cgroup_path) of no hierarchy", mem_close(), "\n");
	/* bpftrace -e 'BEGIN { printf("%s\n", ntop(0x0100007f)); }' */
	mem_open(OUT_TEXT);
	out_print_value(&O, inet, in4);
	out_print_value(&O, inet, in6);
	out_print_value(&O, sym, addr);
	check_str("ntop, unresolved usym", mem_close(),
		  "127.0.0.1\n::1\n0x55a04f604510\n");
	fclose(stderr);
	stderr = saved;

	/* the bucket indexes codegen computes */
	check_int("hist index -5", out_hist_index(-5, 0), 0);
	check_int("hist index 0", out_hist_index(0, 0), 1);
	check_int("hist index 1", out_hist_index(1, 0), 2);
	check_int("hist index 2", out_hist_index(2, 0), 3);
	check_int("hist index 3", out_hist_index(3, 0), 3);
	check_int("hist index 4", out_hist_index(4, 0), 4);
	check_int("hist index 1023", out_hist_index(1023, 0), 11);
	check_int("hist index 1024", out_hist_index(1024, 0), 12);
	check_int("hist index max", out_hist_index(INT64_MAX, 0), 64);
	check_int("hist buckets", out_nbuckets(hist_t(0)), 65);
	check_int("hist k=2 index 3", out_hist_index(3, 2), 4);
	check_int("hist k=2 index 4", out_hist_index(4, 2), 5);
	check_int("hist k=2 index 7", out_hist_index(7, 2), 8);
	check_int("hist k=2 index 8", out_hist_index(8, 2), 9);
	check_int("hist k=2 index 10", out_hist_index(10, 2), 10);
	check_int("hist k=2 index max", out_hist_index(INT64_MAX, 2),
		  (long long)out_nbuckets(hist_t(2)) - 1);
	check_int("lhist index <min", out_lhist_index(-5, 0, 100, 10), 0);
	check_int("lhist index 0", out_lhist_index(0, 0, 100, 10), 1);
	check_int("lhist index 99", out_lhist_index(99, 0, 100, 10), 10);
	check_int("lhist index >=max", out_lhist_index(100, 0, 100, 10), 11);
	check_int("lhist index partial", out_lhist_index(9, 0, 10, 3), 4);
	check_int("lhist buckets", out_nbuckets(lhist_t(0, 100, 10)), 12);
}

/* bpftrace -e 'BEGIN { @h = hist(5); @h = hist(1000);
 *   @l = lhist(7, 0, 100, 10); @s = stats(3); @a = avg(4);
 *   @m[1, "a"] = count(); @x["b"] = sum(-5); exit(); }' */
static void test_t1(void)
{
	struct tmap *h = tmap("@h", NULL, 0, hist_t(0));
	struct tmap *l = tmap("@l", NULL, 0, lhist_t(0, 100, 10));
	struct tmap *s = tmap("@s", NULL, 0, agg(TY_STATS, true));
	struct tmap *a = tmap("@a", NULL, 0, agg(TY_AVG, true));
	struct tmap *m = tmap("@m", tuple(2, t_s64, t_str), 2,
			      agg(TY_COUNT, false));
	struct tmap *x = tmap("@x", t_str, 1, agg(TY_SUM, true));

	hist(h, NOKEY, 5);
	hist(h, NOKEY, 1000);
	hist(l, NOKEY, 7);
	avg(s, NOKEY, 3);
	avg(a, NOKEY, 4);
	count(m, K(I(1), S("a")));
	sum(x, K(S("b")), -5);
	check_str("exit: hist, lhist, stats, avg, tuple key, string key",
		  exit_text(OUT_TEXT, 6, h, l, s, a, m, x), exp_t1);
}

static void test_t2(void)
{
	struct tmap *c = tmap("@c", t_s64, 1, agg(TY_COUNT, false));
	struct tmap *s = tmap("@s", t_str, 1, agg(TY_SUM, true));
	struct tmap *i = tmap("@i", t_s64, 1, t_s64);
	struct tmap *j = tmap("@j", t_s64, 1, t_u32);
	struct tmap *str = tmap("@str", t_s64, 1, t_str);
	struct tmap *u = tmap("@u", tuple(2, t_s64, t_str), 2, t_s64);
	struct type *tvt = tuple(3, t_s64, t_str, t_s64);
	struct tmap *tv = tmap("@tv", NULL, 0, tvt);
	struct tmap *mn = tmap("@mn", t_s64, 1, agg(TY_MIN, true));
	struct tmap *mx = tmap("@mx", t_s64, 1, agg(TY_MAX, true));
	struct tmap *av = tmap("@av", t_s64, 1, agg(TY_AVG, true));
	struct tmap *st = tmap("@st", t_s64, 1, agg(TY_STATS, true));
	struct tmap *e = tmap("@e", t_s64, 1, t_s64);
	struct tmap *at = tmap("@", NULL, 0, t_s64);

	count(c, K(I(3)));
	count(c, K(I(1)));
	count(c, K(I(1)));
	for (int n = 0; n < 3; n++)
		count(c, K(I(2)));
	sum(s, K(S("b")), 5);
	sum(s, K(S("a")), 7);
	sum(s, K(S("c")), -3);
	set(i, K(I(5)), V(I(10)));
	set(i, K(I(2)), V(I(30)));
	set(i, K(I(9)), V(I(20)));
	set(i, K(I(7)), V(I(-4)));
	set(j, K(I(1)), V(I(5)));
	set(j, K(I(2)), V(I(-1)));
	set(j, K(I(3)), V(I(7)));
	set(str, K(I(1)), V(S("zz")));
	set(str, K(I(2)), V(S("aa")));
	set(u, K(I(1), S("b")), V(I(5)));
	set(u, K(I(1), S("a")), V(I(4)));
	set(u, K(I(0), S("z")), V(I(6)));
	set(tv, NOKEY, V(I(1), S("x"), I(-2)));
	minmax(mn, K(I(1)), 5);
	minmax(mn, K(I(2)), -3);
	minmax(mx, K(I(1)), 3);
	minmax(mx, K(I(2)), 9);
	avg(av, K(I(1)), 3);
	avg(av, K(I(1)), 4);
	avg(av, K(I(2)), -10);
	avg(av, K(I(3)), -3);
	avg(av, K(I(3)), -4);
	avg(st, K(I(1)), 10);
	avg(st, K(I(2)), 1);
	avg(st, K(I(2)), 1);
	avg(st, K(I(2)), 18);
	set(e, K(I(1)), V(I(1)));
	del(e, K(I(1)));
	set(at, NOKEY, V(I(5)));
	check_str("exit: sort orders, value kinds, empty map",
		  exit_text(OUT_TEXT, 13, c, s, i, j, str, u, tv, mn, mx, av,
			    st, e, at),
		  exp_t2);
}

static void test_t3(void)
{
	struct tmap *a = tmap("@a", NULL, 0, hist_t(0));
	struct tmap *b = tmap("@b", NULL, 0, hist_t(0));
	struct tmap *e = tmap("@e", NULL, 0, hist_t(0));
	struct tmap *f = tmap("@f", NULL, 0, hist_t(0));
	struct tmap *q = tmap("@q", NULL, 0, hist_t(0));
	static const int64_t av[] = { -5, 0, 0, 1, 2, 3, 4 };
	static const int64_t qv[] = { 3, 3, 3, 1, 8, 8, 8, 8, 8, 8, 8 };

	for (size_t n = 0; n < ARRAY_SIZE(av); n++)
		hist(a, NOKEY, av[n]);
	hist(b, NOKEY, 1 << 20);
	hist(b, NOKEY, 1 << 30);
	hist(e, NOKEY, 1023);
	hist(e, NOKEY, 1024);
	hist(f, NOKEY, -1);
	for (size_t n = 0; n < ARRAY_SIZE(qv); n++)
		hist(q, NOKEY, qv[n]);
	check_str("exit: hist labels, suffixes, bars",
		  exit_text(OUT_TEXT, 5, a, b, e, f, q), exp_t3);
}

static void test_t4(void)
{
	struct tmap *l = tmap("@l", NULL, 0, lhist_t(0, 100, 10));
	struct tmap *m = tmap("@m", NULL, 0, lhist_t(0, 10000, 1000));
	struct tmap *n = tmap("@n", NULL, 0, lhist_t(10, 20, 5));
	struct tmap *o = tmap("@o", NULL, 0, lhist_t(0, 2097152, 1048576));
	struct tmap *p = tmap("@p", NULL, 0, lhist_t(0, 10, 3));
	struct tmap *r = tmap("@r", NULL, 0, lhist_t(1024, 4096, 1024));
	struct tmap *s = tmap("@s", NULL, 0, lhist_t(127000, 130000, 1000));
	struct tmap *t = tmap("@t", NULL, 0, lhist_t(0, 10, 1));

	hist(l, NOKEY, -5);
	hist(l, NOKEY, 55);
	hist(l, NOKEY, 100);
	hist(l, NOKEY, 100);
	hist(l, NOKEY, 100);
	hist(m, NOKEY, 3000);
	hist(m, NOKEY, 5000);
	hist(n, NOKEY, 15);
	hist(o, NOKEY, 1048576);
	hist(p, NOKEY, 1);
	hist(p, NOKEY, 10);
	hist(r, NOKEY, 2048);
	hist(r, NOKEY, 1);
	hist(r, NOKEY, 5000);
	hist(s, NOKEY, 127500);
	hist(t, NOKEY, 3);
	check_str("exit: lhist labels, open ends, suffixes",
		  exit_text(OUT_TEXT, 8, l, m, n, o, p, r, s, t), exp_t4);
}

/* print() at run time, top and div, values */
static void test_t5(void)
{
	struct tmap *c = tmap("@c", t_s64, 1, agg(TY_COUNT, false));
	struct tmap *h = tmap("@h", t_s64, 1, hist_t(0));
	struct tmap *a = tmap("@a", t_s64, 1, agg(TY_AVG, true));
	struct tmap *e = tmap("@e", t_s64, 1, t_s64);
	struct type *tv = tuple(4, t_s64, t_str, tuple(2, t_s64, t_str),
				t_s64);
	struct type *none = tuple(0);
	const struct out_map *maps[4];

	count(c, K(I(1)));
	count(c, K(I(2)));
	count(c, K(I(2)));
	for (int n = 0; n < 3; n++) {
		count(c, K(I(3)));
		hist(h, K(I(1)), 1);
	}
	hist(h, K(I(2)), 5);
	hist(h, K(I(0)), 2);
	hist(h, K(I(0)), 2);
	avg(a, K(I(1)), 10);
	avg(a, K(I(2)), 2);
	avg(a, K(I(3)), 5);
	set(e, K(I(1)), V(I(1)));
	del(e, K(I(1)));

	mem_open(OUT_TEXT);
	pf("A\n", none, NULL);
	out_print_map(&O, &c->m, 0, 0);
	pf("B\n", none, NULL);
	out_print_map(&O, &c->m, 2, 0);
	pf("C\n", none, NULL);
	out_print_map(&O, &c->m, 0, 2);
	pf("D\n", none, NULL);
	out_print_map(&O, &h->m, 2, 0);
	pf("E\n", none, NULL);
	out_print_map(&O, &h->m, 0, 2);
	pf("F\n", none, NULL);
	out_print_map(&O, &a->m, 2, 0);
	out_print_map(&O, &a->m, 0, 2);
	pf("G\n", none, NULL);
	out_print_map(&O, &e->m, 0, 0);
	pf("H\n", none, NULL);
	out_print_value(&O, t_s64, make(t_s64, V(I(5))));
	out_print_value(&O, t_s64, make(t_s64, V(I(-1))));
	out_print_value(&O, t_str, make(t_str, V(S("str"))));
	out_print_value(&O, tv, make(tv, V(I(1), S("a"), I(2), S("b"),
					    I(-3))));
	clear(h);
	maps[0] = &c->m;
	maps[1] = &h->m;
	maps[2] = &a->m;
	maps[3] = &e->m;
	out_print_maps_at_exit(&O, maps, 4);
	check_str("print(): maps, top, div, values, cleared maps", mem_close(),
		  exp_t5);
}

static void test_t6(void)
{
	struct tmap *a = tmap("@a", t_s64, 1, t_str);
	struct tmap *b = tmap("@b", t_str, 1, t_str);
	struct tmap *c = tmap("@c", tuple(2, t_s64, t_str), 2, t_str);
	struct tmap *g = tmap("@g", t_s64, 1, tuple(2, t_s64, t_str));
	struct tmap *hs = tmap("@hs", t_s64, 1, hist_t(0));
	struct tmap *z = tmap("@z", NULL, 0, hist_t(0));
	struct tmap *zs = tmap("@zs", NULL, 0, agg(TY_STATS, true));
	struct tmap *za = tmap("@za", NULL, 0, agg(TY_AVG, true));

	set(a, K(I(5)), V(S("x")));
	set(a, K(I(-3)), V(S("y")));
	set(a, K(I(100)), V(S("z")));
	set(a, K(I(0)), V(S("w")));
	set(b, K(S("b")), V(S("1")));
	set(b, K(S("ab")), V(S("2")));
	set(b, K(S("B")), V(S("3")));
	set(b, K(S("a")), V(S("4")));
	set(b, K(S("")), V(S("5")));
	set(c, K(I(2), S("a")), V(S("p")));
	set(c, K(I(1), S("b")), V(S("q")));
	set(c, K(I(1), S("a")), V(S("r")));
	set(c, K(I(-1), S("z")), V(S("s")));
	set(g, K(I(1)), V(I(1), S("a")));
	set(g, K(I(0)), V(I(2), S("b")));
	hist(hs, K(I(2)), 1);
	hist(hs, K(I(256)), 1);
	hist(hs, K(I(1)), 1);
	hist(z, NOKEY, 3);
	zero(z);
	avg(zs, NOKEY, 3);
	zero(zs);
	avg(za, NOKEY, 5);
	zero(za);
	check_str("exit: key orders, tuple values, zeroed aggregations",
		  exit_text(OUT_TEXT, 8, a, b, c, g, hs, z, zs, za), exp_t6);
}

static void test_j1(void)
{
	struct tmap *h = tmap("@h", NULL, 0, hist_t(0));
	struct tmap *hk = tmap("@hk", t_s64, 1, hist_t(0));
	struct tmap *l = tmap("@l", NULL, 0, lhist_t(0, 100, 10));
	struct tmap *s = tmap("@s", NULL, 0, agg(TY_STATS, true));
	struct tmap *sk = tmap("@sk", t_str, 1, agg(TY_STATS, true));
	struct tmap *a = tmap("@a", NULL, 0, agg(TY_AVG, true));
	struct tmap *ak = tmap("@ak", tuple(2, t_s64, t_s64), 2,
			       agg(TY_AVG, true));
	struct tmap *m = tmap("@m", tuple(2, t_s64, t_str), 2,
			      agg(TY_COUNT, false));
	struct tmap *x = tmap("@x", t_str, 1, agg(TY_SUM, true));
	struct tmap *mn = tmap("@mn", NULL, 0, agg(TY_MIN, true));
	struct tmap *mx = tmap("@mx", NULL, 0, agg(TY_MAX, true));
	struct tmap *str = tmap("@str", NULL, 0, t_str);
	struct type *tt = tuple(3, t_s64, t_str, tuple(2, t_s64, t_str));
	struct tmap *tup = tmap("@tup", NULL, 0, tt);
	struct tmap *i = tmap("@i", NULL, 0, t_s64);
	struct tmap *e = tmap("@e", t_s64, 1, t_s64);
	struct type *none = tuple(0);
	const struct out_map *maps[15] = {
		&h->m, &hk->m, &l->m, &s->m, &sk->m, &a->m, &ak->m, &m->m,
		&x->m, &mn->m, &mx->m, &str->m, &tup->m, &i->m, &e->m,
	};

	hist(h, NOKEY, 5);
	hist(h, NOKEY, 1000);
	hist(hk, K(I(1)), -1);
	hist(hk, K(I(2)), 0);
	hist(l, NOKEY, 7);
	hist(l, NOKEY, -7);
	hist(l, NOKEY, 700);
	avg(s, NOKEY, 3);
	avg(sk, K(S("a")), 4);
	avg(a, NOKEY, 4);
	avg(ak, K(I(1), I(2)), 5);
	count(m, K(I(1), S("a")));
	sum(x, K(S("b")), -5);
	minmax(mn, NOKEY, 3);
	minmax(mx, NOKEY, 3);
	set(str, NOKEY, V(S("ab\"c\\d\n\t")));
	set(tup, NOKEY, V(I(1), S("a"), I(2), S("b")));
	set(i, NOKEY, V(I(7)));

	mem_open(OUT_JSON);
	pf("%-5d|%x|%s|%c\n", tuple(4, t_s64, t_s64, t_str, t_s64),
	   V(I(42), I(255), S("str"), I(65)));
	pf("q\"uote\\ \t x\x01\r\n", none, NULL);
	out_print_value(&O, t_s64, make(t_s64, V(I(5))));
	out_print_value(&O, t_str, make(t_str, V(S("s"))));
	out_print_value(&O, tuple(2, t_s64, t_str),
			make(tuple(2, t_s64, t_str), V(I(1), S("a"))));
	out_print_map(&O, &m->m, 0, 0);
	out_print_map(&O, &e->m, 0, 0);
	out_print_maps_at_exit(&O, maps, 15);
	check_str("json: values, maps, hist, lhist, stats, escapes",
		  mem_close(), exp_j1);
}

static void test_j2(void)
{
	struct tmap *l = tmap("@l", NULL, 0, lhist_t(10, 20, 5));
	struct tmap *h = tmap("@h", NULL, 0, hist_t(0));
	struct tmap *s = tmap("@s", NULL, 0, agg(TY_STATS, true));
	struct tmap *a = tmap("@a", NULL, 0, agg(TY_AVG, true));
	struct tmap *k = tmap("@k", t_str, 1, t_s64);
	struct tmap *m = tmap("@m", t_s64, 1, agg(TY_MIN, true));
	struct tmap *st = tmap("@st", tuple(2, t_s64, t_str), 2,
			       agg(TY_STATS, true));
	struct tmap *n = tmap("@n", t_s64, 1, t_s64);
	struct tmap *lk = tmap("@lk", t_s64, 1, lhist_t(0, 10, 5));
	struct tmap *r = tmap("@r", NULL, 0, lhist_t(1024, 4096, 1024));
	const struct out_map *maps[10] = {
		&l->m, &h->m, &s->m, &a->m, &k->m, &m->m, &st->m, &n->m,
		&lk->m, &r->m,
	};

	hist(l, NOKEY, 3);
	hist(h, NOKEY, 3);
	zero(h);
	avg(s, NOKEY, 3);
	zero(s);
	avg(a, NOKEY, 5);
	zero(a);
	set(k, K(S("a\"b")), V(I(1)));
	minmax(m, K(I(1)), 3);
	avg(st, K(I(1), S("x")), 5);
	set(n, K(I(2)), V(I(3)));
	set(n, K(I(1)), V(I(4)));
	hist(lk, K(I(1)), 3);
	hist(r, NOKEY, 2048);
	hist(r, NOKEY, 1);
	hist(r, NOKEY, 5000);

	mem_open(OUT_JSON);
	out_print_map(&O, &n->m, 1, 0);
	out_print_map(&O, &n->m, 0, 2);
	out_print_maps_at_exit(&O, maps, 10);
	check_str("json: top, div, zeroed, lhist bounds, tuple keys",
		  mem_close(), exp_j2);
}

/* bpftrace -e 'BEGIN { if (pid == 0) { @a = avg(1); @c = count();
 *   @ck[1] = count(); @h = hist(1); @s = stats(1); @str = "s";
 *   @sk[1] = stats(1); @su = sum(1); } @z = 1; exit(); }'  (and -f json) */
static void test_empty(void)
{
	struct tmap *m[9] = {
		tmap("@a", NULL, 0, agg(TY_AVG, true)),
		tmap("@c", NULL, 0, agg(TY_COUNT, false)),
		tmap("@ck", t_s64, 1, agg(TY_COUNT, false)),
		tmap("@h", NULL, 0, hist_t(0)),
		tmap("@s", NULL, 0, agg(TY_STATS, true)),
		tmap("@str", NULL, 0, t_str),
		tmap("@sk", t_s64, 1, agg(TY_STATS, true)),
		tmap("@su", NULL, 0, agg(TY_SUM, true)),
		tmap("@z", NULL, 0, t_s64),
	};

	set(m[8], NOKEY, V(I(1)));
	check_str("exit: empty maps",
		  exit_text(OUT_TEXT, 9, m[0], m[1], m[2], m[3], m[4], m[5],
			    m[6], m[7], m[8]), exp_e1);
	check_str("exit: empty maps: json",
		  exit_text(OUT_JSON, 9, m[0], m[1], m[2], m[3], m[4], m[5],
			    m[6], m[7], m[8]), exp_e2);
}

static int resolve_probe(void *ctx, const struct type *t, const void *data,
			 char *buf, size_t size)
{
	uint64_t v;

	if (t->kind != TY_PROBE)
		return -ENOTSUP;
	memcpy(&v, data, 8);
	snprintf(buf, size, "%s", v == 0 ? "BEGIN" : "END");
	(*(int *)ctx)++;
	return 0;
}

/* bpftrace -e 'BEGIN { printf("%s|%s|%s\n", strerror(2), username,
 *   strerror(0)); print(strerror(1)); @[username] = count(); exit(); }'
 * bpftrace -f json -e 'BEGIN { @[username] = count();
 *   @p[probe] = count(); exit(); }' */
static void test_resolve(void)
{
	struct type *err = type_new(&A, TY_STRERROR, 8);
	struct type *user = type_new(&A, TY_USERNAME, 8);
	struct type *probe = type_new(&A, TY_PROBE, 8);
	struct tmap *u = tmap("@", user, 1, agg(TY_COUNT, false));
	struct tmap *p = tmap("@p", probe, 1, agg(TY_COUNT, false));
	int calls = 0;

	count(u, K(I(0)));
	count(p, K(I(0)));
	mem_open(OUT_TEXT);
	pf("%s|%s|%s\n", tuple(3, err, user, err), V(I(2), I(0), I(0)));
	out_print_value(&O, err, make(err, V(I(1))));
	out_print_maps_at_exit(&O, (const struct out_map *[]){ &u->m }, 1);
	check_str("username, strerror", mem_close(),
		  "No such file or directory|root|Success\n"
		  "Operation not permitted\n"
		  "\n\n"
		  "@[root]: 1\n");
	mem_open(OUT_JSON);
	O.resolve = resolve_probe;
	O.resolve_ctx = &calls;
	out_print_maps_at_exit(&O, (const struct out_map *[]){ &u->m, &p->m },
			       2);
	check_str("username, probe through the resolver: json", mem_close(),
		  "\n\n"
		  "{\"type\": \"map\", \"data\": {\"@\": {\"root\": 1}}}\n"
		  "{\"type\": \"map\", \"data\": {\"@p\": {\"BEGIN\": 1}}}\n");
	check_int("resolver called", calls, 1);
}

/* bpftrace -e 'BEGIN { @b = buf("a\x01", 2); print(buf("xy\n", 3));
 *   exit(); }'  (and -f json); char[N] prints as a string */
static void test_buffers(void)
{
	struct type *b8 = type_new(&A, TY_BUFFER, 1 + 8);
	struct type *carr = type_new(&A, TY_ARRAY, 8);
	struct tmap *b = tmap("@b", NULL, 0, b8);

	carr->elem = t_s8;
	carr->nelems = 8;
	set(b, NOKEY, V(S("a\x01")));
	mem_open(OUT_TEXT);
	out_print_value(&O, b8, make(b8, V(S("xy\n"))));
	out_print_maps_at_exit(&O, (const struct out_map *[]){ &b->m }, 1);
	check_str("buffer values", mem_close(),
		  "xy\\x0a\n\n\n@b: a\\x01\n");
	mem_open(OUT_JSON);
	out_print_value(&O, b8, make(b8, V(S("xy\n"))));
	out_print_maps_at_exit(&O, (const struct out_map *[]){ &b->m }, 1);
	check_str("buffer values: json", mem_close(),
		  "{\"type\": \"value\", \"data\": \"xy\\\\x0a\"}\n"
		  "\n\n"
		  "{\"type\": \"map\", \"data\": {\"@b\": \"a\\\\x01\"}}\n");
	check_str("check: char[8] is a string",
		  check("printf", "%s\n", 1, carr), "");
	mem_open(OUT_TEXT);
	pf("<%s|%-6s>\n", tuple(2, carr, carr), V(S("bash"), S("abcdefgh")));
	check_str("printf: char[8]", mem_close(), "<bash|abcdefgh>\n");
}

/* bpftrace -e 'BEGIN { printf("%d\n"); exit(); }' */
static void test_diag(void)
{
	static const char src[] = "BEGIN { printf(\"%d\\n\"); exit(); }";
	struct ast_loc loc = { 1, 9, 1, 23 };
	struct type *none = tuple(0), *two = tuple(2, t_s64, t_str);
	struct diag_list d;
	struct fmt_string f;

	diag_init(&d, &A, "stdin", src);
	fmt_parse(&A, "%d\n", 3, &f);
	check_int("fmt_check_diag: error", fmt_check_diag(&d, &loc, "printf",
							 &f, NULL, 0),
		  -EINVAL);
	mem_open(OUT_TEXT);
	diag_print(&d, O.f);
	check_str("fmt_check_diag: bpftrace's message", mem_close(),
		  "stdin:1:9-23: ERROR: printf: Not enough arguments for format string (0 supplied, 1 expected)\n"
		  "BEGIN { printf(\"%d\\n\"); exit(); }\n"
		  "        ~~~~~~~~~~~~~~\n");
	check_int("fmt_check_diag: fine", fmt_check_diag(&d, &loc, "printf",
							&f, &t_s64, 1), 0);
	check_str("fmt_check_tuple: none",
		  fmt_check_tuple(&A, "printf", &f, none),
		  "printf: Not enough arguments for format string (0 supplied, 1 expected)");
	fmt_parse(&A, "%d %s", 5, &f);
	check_str("fmt_check_tuple: fine",
		  fmt_check_tuple(&A, "printf", &f, two) ?: "", "");
}

/* ubt prints the right thing where bpftrace 0.17 does not (listed) */
static void test_ours(void)
{
	struct tmap *h = tmap("@h", NULL, 0, hist_t(0));
	struct tmap *h2 = tmap("@h2", NULL, 0, hist_t(2));
	struct tmap *mx = tmap("@mx", NULL, 0, agg(TY_MAX, true));

	/* bpftrace 0.17 puts every value >= 2^32 into [2G, 4G) */
	hist(h, NOKEY, 5000000000LL);
	hist(h, NOKEY, INT64_MAX);
	/* bpftrace 0.17 never records a max() below 0 */
	minmax(mx, NOKEY, -7);
	/* hist(n, 2): four buckets per power of two */
	hist(h2, NOKEY, 0);
	hist(h2, NOKEY, 3);
	hist(h2, NOKEY, 4);
	hist(h2, NOKEY, 5);
	hist(h2, NOKEY, 11);
	check_str("ours: hist above 4G, max below 0, hist with bits",
		  exit_text(OUT_TEXT, 3, h, h2, mx),
		  "\n\n"
		  "@h: \n"
		  "[4G, 8G)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
		  "[8G, 16G)              0 |                                                    |\n"
		  "[16G, 32G)             0 |                                                    |\n"
		  "[32G, 64G)             0 |                                                    |\n"
		  "[64G, 128G)            0 |                                                    |\n"
		  "[128G, 256G)           0 |                                                    |\n"
		  "[256G, 512G)           0 |                                                    |\n"
		  "[512G, 1T)             0 |                                                    |\n"
		  "[1T, 2T)               0 |                                                    |\n"
		  "[2T, 4T)               0 |                                                    |\n"
		  "[4T, 8T)               0 |                                                    |\n"
		  "[8T, 16T)              0 |                                                    |\n"
		  "[16T, 32T)             0 |                                                    |\n"
		  "[32T, 64T)             0 |                                                    |\n"
		  "[64T, 128T)            0 |                                                    |\n"
		  "[128T, 256T)           0 |                                                    |\n"
		  "[256T, 512T)           0 |                                                    |\n"
		  "[512T, 1P)             0 |                                                    |\n"
		  "[1P, 2P)               0 |                                                    |\n"
		  "[2P, 4P)               0 |                                                    |\n"
		  "[4P, 8P)               0 |                                                    |\n"
		  "[8P, 16P)              0 |                                                    |\n"
		  "[16P, 32P)             0 |                                                    |\n"
		  "[32P, 64P)             0 |                                                    |\n"
		  "[64P, 128P)            0 |                                                    |\n"
		  "[128P, 256P)           0 |                                                    |\n"
		  "[256P, 512P)           0 |                                                    |\n"
		  "[512P, 1E)             0 |                                                    |\n"
		  "[1E, 2E)               0 |                                                    |\n"
		  "[2E, 4E)               0 |                                                    |\n"
		  "[4E, 8E)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
		  "\n"
		  "@h2: \n"
		  "[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
		  "[1]                    0 |                                                    |\n"
		  "[2]                    0 |                                                    |\n"
		  "[3]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
		  "[4]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
		  "[5]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
		  "[6]                    0 |                                                    |\n"
		  "[7]                    0 |                                                    |\n"
		  "[8, 10)                0 |                                                    |\n"
		  "[10, 12)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
		  "\n"
		  "@mx: -7\n");
}

int main(void)
{
	arena_init(&A);
	t_s64 = type_int(&A, 8, true);
	t_u64 = type_int(&A, 8, false);
	t_u32 = type_int(&A, 4, false);
	t_s32 = type_int(&A, 4, true);
	t_s16 = type_int(&A, 2, true);
	t_s8 = type_int(&A, 1, true);
	t_str = type_string(&A, 64);

	test_format_parse();
	test_format_check();
	test_printf();
	test_misc();
	test_t1();
	test_t2();
	test_t3();
	test_t4();
	test_t5();
	test_t6();
	test_j1();
	test_j2();
	test_empty();
	test_diag();
	test_buffers();
	test_resolve();
	test_ours();
	printf("1..%d\n", ntest);
	arena_release(&A);
	return 0;
}
