/*
 * The tables user-mode and kernel probes share (codegen/cg_xmap.h), as ubt
 * reads them back (shim/kernel/xmap.c): a real BPF_F_MMAPABLE array, its header
 * written by xmap_init(), slots written here as probe code and as a
 * misbehaving target would write them.  Only what the code can have
 * written comes out; the rest is skipped and counted.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "cg_xmap.h"
#include "tap.h"
#include "types.h"
#include "xmap.h"

struct seen {
	uint64_t keys[16], vals[16];
	int n;
};

static int collect(const void *key, const void *value, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < 16) {
		memcpy(&s->keys[s->n], key, 8);
		memcpy(&s->vals[s->n], value, 8);
	}
	s->n++;
	return 0;
}

static uint64_t *slot(char *t, uint32_t i)
{
	return (uint64_t *)(t + CG_XMAP_HDR + (uint64_t)i * CG_XMAP_SLOT);
}

/* a slot as probe code leaves it: state st of generation gen */
static void put(char *t, uint32_t i, uint64_t key, uint64_t gen, uint64_t st,
		uint64_t v)
{
	slot(t, i)[CG_XMAP_SLOT_KEY / 8] = key ^ CG_XMAP_KEY_FLIP;
	slot(t, i)[CG_XMAP_SLOT_STATE / 8] = gen << CG_XMAP_GEN_SHIFT | st;
	slot(t, i)[CG_XMAP_SLOT_VALUE / 8] = v;
}

static uint64_t state(char *t, uint32_t i)
{
	return slot(t, i)[CG_XMAP_SLOT_STATE / 8];
}

static uint64_t value(char *t, uint32_t i)
{
	return slot(t, i)[CG_XMAP_SLOT_VALUE / 8];
}

int main(void)
{
	struct type kt = { .kind = TY_INT, .size = 8 };
	struct cg_map m = { .name = "@t", .key_type = &kt, .key_size = 8,
			    .value_size = 8, .max_entries = 16, .xmap = true };
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	struct seen s = { 0 };
	uint64_t bad = 0, len;
	uint32_t *h;
	char *t;
	int fd;

	m.xmap_slots = cg_xmap_slots(m.max_entries);
	len = (cg_xmap_bytes(m.xmap_slots) + 4095) & ~4095ull;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ubt_xmap_test", 4,
			    cg_xmap_bytes(m.xmap_slots), 1, &mo);
	if (fd < 0) {
		printf("1..0 # SKIP no BPF array map: %s\n", strerror(-fd));
		return 77;
	}
	t = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ok(t != MAP_FAILED, "the array maps read-write");
	if (t == MAP_FAILED)
		return tap_done();

	ok(!xmap_init(fd, &m), "xmap_init() writes the header");
	h = (uint32_t *)t;
	ok(h[0] == CG_XMAP_HDR && h[1] == CG_XMAP_VERSION &&
	   h[2] == m.xmap_slots && h[3] == cg_xmap_max_probe(m.xmap_slots),
	   "header: size, version, slots, probe bound");
	ok(m.xmap_slots == 64 && cg_xmap_slots(4096) == 16384 &&
	   cg_xmap_slots(1u << 30) == CG_XMAP_MAX_SLOTS,
	   "slots: four per key, at least 64, capped");

	/* as probe code writes them */
	put(t, 3, 5, 1, CG_XMAP_LIVE, 50);
	put(t, 9, 0, 7, CG_XMAP_LIVE, 7);	/* key 0, a reused slot */
	put(t, 10, 6, 2, CG_XMAP_DEAD, 60);	/* deleted */
	put(t, 14, 9, 3, CG_XMAP_INS, 90);	/* being inserted */
	put(t, 15, 4, 1, CG_XMAP_BUSY, 0);	/* claimed */
	/* as no probe code writes them */
	put(t, 11, 7, 1, 5, 70);		/* no such state */
	put(t, 12, 8, 0, CG_XMAP_LIVE, 80);	/* generation 0 */
	ok(!xmap_foreach(fd, &m, collect, &s, &bad),
	   "xmap_foreach() reads the table");
	ok(s.n == 2 && s.keys[0] == 0 && s.vals[0] == 7 && s.keys[1] == 5 &&
	   s.vals[1] == 50,
	   "live keys only, as written, sorted (got %d)", s.n);
	ok(bad == 2, "slots the code cannot have written are counted (%llu)",
	   (unsigned long long)bad);

	/* a key deleted and inserted again farther while ubt read: once */
	put(t, 20, 5, 4, CG_XMAP_LIVE, 51);
	memset(&s, 0, sizeof(s));
	xmap_foreach(fd, &m, collect, &s, NULL);
	ok(s.n == 2 && s.keys[1] == 5 && s.vals[1] == 51,
	   "a key in two live slots comes once, as read last (%d)", s.n);
	put(t, 20, 5, 4, CG_XMAP_DEAD, 51);

	/* a keyless map's only key is 0 */
	m.key_type = NULL;
	memset(&s, 0, sizeof(s));
	bad = 0;
	xmap_foreach(fd, &m, collect, &s, &bad);
	ok(s.n == 1 && s.keys[0] == 0 && s.vals[0] == 7 && bad == 3,
	   "keyless: key 0 only, other keys counted (%d, %llu)", s.n,
	   (unsigned long long)bad);
	m.key_type = &kt;

	/* clear(): live keys deleted, one key less each; zero() */
	((uint64_t *)t)[CG_XMAP_OFF_KEYS / 8] = 2;
	ok(!xmap_clear(fd, &m, true) &&
	   state(t, 3) == (1 << CG_XMAP_GEN_SHIFT | CG_XMAP_LIVE) &&
	   value(t, 3) == 0 && value(t, 9) == 0 && value(t, 10) == 60 &&
	   value(t, 14) == 90 && slot(t, 3)[CG_XMAP_SLOT_PINS / 8] == 0 &&
	   value(t, 12) == 80 && ((uint64_t *)t)[CG_XMAP_OFF_KEYS / 8] == 2,
	   "zero(): live values 0, keys kept, no pin left");
	ok(!xmap_clear(fd, &m, false), "clear()");
	ok(state(t, 3) == (1 << CG_XMAP_GEN_SHIFT | CG_XMAP_DEAD) &&
	   state(t, 9) == (7 << CG_XMAP_GEN_SHIFT | CG_XMAP_DEAD) &&
	   state(t, 14) == (3 << CG_XMAP_GEN_SHIFT | CG_XMAP_INS) &&
	   state(t, 11) == (1 << CG_XMAP_GEN_SHIFT | 5) &&
	   state(t, 12) == CG_XMAP_LIVE &&
	   ((uint64_t *)t)[CG_XMAP_OFF_KEYS / 8] == 0,
	   "clear(): live keys dead and uncounted, other slots left "
	   "(%llx %llx %llu)", (unsigned long long)state(t, 3),
	   (unsigned long long)state(t, 9),
	   (unsigned long long)((uint64_t *)t)[CG_XMAP_OFF_KEYS / 8]);

	((uint64_t *)t)[CG_XMAP_OFF_DROPPED / 8] = 12;
	((uint64_t *)t)[CG_XMAP_OFF_COLLIDED / 8] = 3;
	((uint64_t *)t)[CG_XMAP_OFF_RACED / 8] = 4;
	ok(xmap_count(fd, &m, CG_XMAP_OFF_DROPPED) == 12 &&
	   xmap_count(fd, &m, CG_XMAP_OFF_COLLIDED) == 3 &&
	   xmap_count(fd, &m, CG_XMAP_OFF_RACED) == 4,
	   "dropped, collided and raced counts read back");
	ok(xmap_count(fd, &m, 8) == UINT64_MAX,
	   "no other header word is a count");

	/* a cg_map that is not a table's: nothing mapped, nothing read */
	m.xmap_slots = 48;
	ok(xmap_foreach(fd, &m, collect, &s, NULL) == -EINVAL &&
	   xmap_count(fd, &m, CG_XMAP_OFF_DROPPED) == UINT64_MAX,
	   "a slot count that is not a power of two is refused");
	munmap(t, len);
	close(fd);
	return tap_done();
}
