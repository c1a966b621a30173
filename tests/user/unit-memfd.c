/*
 * The runtime (libubt-rt.so, loaded here with dlopen, as ubt loads it into a
 * target) and ubt's reader of the shared memfd: per-thread blocks, output
 * rings (full rings drop and count, wrap-around), keyed tables, and the
 * bounds checks on everything read back from memory the target can corrupt.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memfd.h"
#include "tests/tap.h"


enum { NBLOCKS = 4, RING = 256, NREC = 10 };

static struct memfd m;
static int64_t tls;
static long (*rt_init)(struct rt_ctl *);
static int (*ring_write)(const void *, uint32_t, uint32_t);
static void *(*htab_lookup)(struct rt_htab *, const void *);
static long (*htab_delete)(struct rt_htab *, const void *);
static const struct memfd_htab tab = {
	.off = 64, .nslots = 8, .key_size = 8, .val_size = 8,
};

static char *my_block(void)
{
	uintptr_t fs0;

	__asm__("mov %%fs:0, %0" : "=r"(fs0));
	return *(char **)(fs0 + (uintptr_t)tls);
}

struct rec {
	uint64_t thread, seq, pad;
};

struct result {
	int written;
	int tab_hits;
	bool have_block;
};

/* every thread of test_threads() lives until all took their block */
static pthread_barrier_t all_took;

/*
 * Each thread: NREC events into its ring, keys 0..9 into its table, then
 * it waits for the others (a block is taken again once its thread is gone:
 * test_reuse()).
 */
static void *thread_main(void *arg)
{
	struct result *r = arg;
	uint64_t i;
	char *blk;

	for (i = 0; i < NREC; i++) {
		struct rec e = { .thread = (uintptr_t)arg, .seq = i };

		if (!ring_write(&e, sizeof(e), 1))
			r->written++;
	}
	blk = my_block();
	r->have_block = blk != NULL;
	for (i = 0; blk && i < 10; i++) {
		uint64_t *v = htab_lookup(
			(struct rt_htab *)(blk + RT_BLK_MAP + tab.off), &i);

		if (v) {
			*v += i + 1;
			r->tab_hits++;
		}
	}
	pthread_barrier_wait(&all_took);
	return NULL;
}

struct seen {
	int n;
	uint64_t last_seq;
	bool in_order;
};

static int on_event(uint32_t type, const void *data, uint32_t len, void *arg)
{
	struct seen *s = arg;
	struct rec e;

	if (type != 1 || len != sizeof(e)) {
		s->in_order = false;
		return 0;
	}
	memcpy(&e, data, sizeof(e));
	if (s->n && e.seq != s->last_seq + 1)
		s->in_order = false;
	s->last_seq = e.seq;
	s->n++;
	return 0;
}

static int on_slot(const void *key, const void *val, uint32_t block,
		   void *arg)
{
	uint64_t k, v;

	memcpy(&k, key, 8);
	memcpy(&v, val, 8);
	if (v == k + 1)
		(*(int *)arg)++;
	return 0;
}

static void test_threads(void)
{
	struct result r[NBLOCKS + 1] = { 0 };
	pthread_t th[NBLOCKS + 1];
	int i, written = 0, hits = 0, blocks = 0, events = 0, slots = 0;
	bool order = true;

	ok(!memfd_htab_add(&m, &tab), "a keyed table in the block template");
	pthread_barrier_init(&all_took, NULL, NBLOCKS + 1);
	for (i = 0; i <= NBLOCKS; i++)
		pthread_create(&th[i], NULL, thread_main, &r[i]);
	for (i = 0; i <= NBLOCKS; i++) {
		pthread_join(th[i], NULL);
		written += r[i].written;
		hits += r[i].tab_hits;
		blocks += r[i].have_block;
	}
	ok(blocks == NBLOCKS && m.ctl->no_block == 1,
	   "%d threads, %d blocks: one thread records nothing", NBLOCKS + 1,
	   NBLOCKS);
	ok(memfd_nblocks_used(&m) == NBLOCKS, "blocks used clamped to %d",
	   NBLOCKS);
	/* 256-byte rings hold 8 records of 32 bytes: 2 of 10 dropped */
	ok(written == NBLOCKS * 8 && memfd_ring_dropped(&m) == NBLOCKS * 2,
	   "full rings drop and count (%d written, %llu dropped)", written,
	   (unsigned long long)memfd_ring_dropped(&m));
	for (i = 0; i < NBLOCKS; i++) {
		struct seen s = { .in_order = true };
		int n = memfd_ring_consume(&m, (uint32_t)i, on_event, &s);

		events += n > 0 ? n : 0;
		order = order && s.in_order && s.n == n;
	}
	ok(events == NBLOCKS * 8 && order, "every event read back in order");
	ok(hits == NBLOCKS * 8, "tables: 8 slots filled, 2 keys refused");
	i = memfd_htab_foreach(&m, &tab, on_slot, &slots);
	ok(!i && slots == NBLOCKS * 8,
	   "tables read back: %d slots with the right values", slots);
}

struct tally {
	int n, zero;
	uint64_t sum;
};

static int on_tally(const void *key, const void *val, uint32_t block,
		    void *arg)
{
	struct tally *t = arg;
	uint64_t v;

	(void)key;
	(void)block;
	memcpy(&v, val, 8);
	t->n++;
	t->zero += !v;
	t->sum += v;
	return 0;
}

struct reuse {
	char *blk;
	pid_t tid;
	int written;
};

static void *reuse_main(void *arg)
{
	struct reuse *r = arg;
	struct rec e = { .thread = 99 };
	uint64_t k = 3, *v;

	r->tid = (pid_t)syscall(SYS_gettid);
	r->written = !ring_write(&e, sizeof(e), 1);
	r->blk = my_block();
	v = r->blk ? htab_lookup((struct rt_htab *)(r->blk + RT_BLK_MAP +
						       tab.off), &k) : NULL;
	if (v)
		*v += 100;
	return NULL;
}

/*
 * Every block is taken and their threads are gone: a new thread takes one
 * of them again, with its own tid and an empty shadow stack, the old
 * thread's table and ring going on.
 */
static void test_reuse(void)
{
	struct reuse r = { 0 };
	struct tally t = { 0 };
	pthread_t th;
	char *b0 = m.base + m.block_off;

	pthread_create(&th, NULL, reuse_main, &r);
	pthread_join(th, NULL);
	ok(r.blk && r.written && m.ctl->blocks_reused == 1 &&
		   m.ctl->no_block == 1 && m.ctl->next_block == NBLOCKS,
	   "a gone thread's block taken again (%llu reused)",
	   (unsigned long long)m.ctl->blocks_reused);
	if (!r.blk)
		return;
	ok(r.blk >= b0 && r.blk < b0 + NBLOCKS * m.block_size &&
		   (uint64_t)(r.blk - b0) % m.block_size == 0 &&
		   *(uint32_t *)(r.blk + RT_BLK_TID) == (uint32_t)r.tid &&
		   *(uint32_t *)(r.blk + RT_BLK_PID) == (uint32_t)getpid() &&
		   *(uint64_t *)(r.blk + RT_BLK_SHADOW_TOP) == 0,
	   "it is one of the %d, with the new thread's ids", NBLOCKS);
	memfd_htab_foreach(&m, &tab, on_tally, &t);
	ok(t.n == NBLOCKS * 8 && t.sum == NBLOCKS * 36 + 100,
	   "the old thread's table goes on (%d slots, sum %llu)", t.n,
	   (unsigned long long)t.sum);
}

static struct tally tally(const struct memfd_htab *t)
{
	struct tally r = { 0 };

	memfd_htab_foreach(&m, t, on_tally, &r);
	return r;
}

/*
 * The slot states ubt changes (zero: used -> zeroed; clear, delete:
 * -> deleted) and the owner's revival of a zeroed slot, on the tables
 * test_threads() filled (every block: 8 keys, values k + 1).
 */
static void test_htab_states(void)
{
	struct rt_htab *h0 = (struct rt_htab *)(m.base + m.block_off +
						RT_BLK_MAP + tab.off);
	struct memfd_htab skip0 = tab;
	struct tally t;
	uint64_t key = 3, *v;

	ok(!memfd_htab_zero(&m, &tab), "zero every keyed table");
	t = tally(&tab);
	ok(t.n == NBLOCKS * 8 && t.zero == t.n,
	   "zeroed: %d keys kept, %d of them read back as 0", t.n, t.zero);
	v = htab_lookup(h0, &key);
	ok(v && *v == 0, "the owner's lookup revives a zeroed key with 0");
	if (v)
		*v += 100;
	t = tally(&tab);
	ok(t.n == NBLOCKS * 8 && t.sum == 100,
	   "revived: the owner's update is seen, the rest stay 0");
	skip0.skip = 1;
	ok(!memfd_htab_delete(&m, &skip0, &key), "delete a key elsewhere");
	t = tally(&tab);
	ok(t.n == NBLOCKS * 8 - (NBLOCKS - 1) && t.sum == 100,
	   "delete: gone from the other blocks, kept in the skipped one");
	key = 5;
	ok(htab_delete && !htab_delete(h0, &key),
	   "the owner deletes a zeroed key");
	ok(!memfd_htab_clear(&m, &tab) && tally(&tab).n == 0,
	   "clear: used and zeroed slots deleted");
	key = 3;
	v = htab_lookup(h0, &key);
	ok(v && *v == 0 && tally(&tab).n == 1,
	   "a deleted key comes back with 0");
	/* as test_threads() left them, for test_untrusted() */
	for (uint32_t i = 0; i < NBLOCKS; i++) {
		struct rt_htab *hi = (struct rt_htab *)(
			m.base + m.block_off + i * m.block_size + RT_BLK_MAP +
			tab.off);

		for (key = 0; key < 10; key++) {
			v = htab_lookup(hi, &key);
			if (v)
				*v = key + 1;
		}
	}
}

/* One thread writes and consumes across the ring's end many times. */
static void *wrap_main(void *arg)
{
	int *bad = arg, i;

	for (i = 0; i < 100; i++) {
		char buf[40];
		struct seen s = { .in_order = true };

		memset(buf, i, sizeof(buf));
		if (ring_write(buf, (uint32_t)(i % 37) + 1, 2) ||
		    ring_write(buf, 20, 2))
			(*bad)++;
		/* this thread has the next block */
		if (memfd_ring_consume(&m, NBLOCKS - 1, on_event, &s) != 2)
			(*bad)++;
	}
	return NULL;
}

static void test_wrap(void)
{
	pthread_t th;
	int bad = 0;

	uint64_t next = m.ctl->next_block, none = m.ctl->no_block;

	/* recycle the last block for a fresh thread, then put the
	 * counters back: ubt sees them only grow */
	m.ctl->next_block = NBLOCKS - 1;
	m.ctl->no_block = 0;
	pthread_create(&th, NULL, wrap_main, &bad);
	pthread_join(th, NULL);
	m.ctl->next_block = next;
	m.ctl->no_block = none;
	ok(!bad, "ring wraps around with padding records (%d bad)", bad);
}

static int count_cb(uint32_t type, const void *data, uint32_t len, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

static sigjmp_buf fault_jb;
static volatile int own_handler_ran;
static volatile int *volatile bad_ptr;

static void own_handler(int sig, siginfo_t *si, void *ctx)
{
	own_handler_ran++;
	siglongjmp(fault_jb, 1);
}

/* Fault-safe reads; a fault elsewhere still reaches the handler before it. */
static void test_probe_read(long (*rd)(void *, const void *, uint64_t))
{
	long pg = sysconf(_SC_PAGESIZE);
	char buf[64] = { 0 }, *two;

	ok(rd(buf, "hello", 6) == 0 && !strcmp(buf, "hello"),
	   "probe_read copies mapped memory");
	ok(rd(buf, (void *)8, 8) == -EFAULT, "probe_read of NULL+8: -EFAULT");
	two = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(two + pg, pg);
	ok(rd(buf, two + pg - 8, 16) == -EFAULT,
	   "probe_read across the end of a mapping: -EFAULT");
	munmap(two, pg);
	bad_ptr = (volatile int *)16;	/* unmapped, but not NULL */
	if (!sigsetjmp(fault_jb, 1))
		*bad_ptr = 1;
	ok(own_handler_ran == 1, "other faults reach the earlier handler");
	ok(rd(buf, "again", 6) == 0 && !strcmp(buf, "again"),
	   "probe_read still works afterwards");
}

/* Lines of fd 2 from stderr_begin() on go to a file (read back by _end). */
static FILE *err_file;
static int err_saved = -1;

static void stderr_begin(void)
{
	fflush(stderr);
	err_file = tmpfile();
	err_saved = dup(2);
	if (!err_file || err_saved < 0 || dup2(fileno(err_file), 2) < 0) {
		printf("Bail out! cannot redirect stderr\n");
		exit(99);
	}
}

/* The number of lines that contain what. */
static int stderr_end(const char *what)
{
	char line[1024];
	int n = 0;

	fflush(stderr);
	dup2(err_saved, 2);
	close(err_saved);
	rewind(err_file);
	while (fgets(line, sizeof(line), err_file))
		if (strstr(line, what)) {
			n++;
			printf("# %s", line);
		}
	fclose(err_file);
	return n;
}

/* The target can write anything into the memfd. */
static void test_untrusted(void)
{
	char *b[NBLOCKS];
	uint64_t v;
	char buf[16];
	int n = 0;

	for (int i = 0; i < NBLOCKS; i++)
		b[i] = m.base + m.block_off + i * m.block_size;
#define HEAD(i) (*(uint64_t *)(b[i] + RT_BLK_RING_HEAD))
#define TAIL(i) (*(uint64_t *)(b[i] + RT_BLK_RING_TAIL))
#define REC(i) ((uint32_t *)(b[i] + RT_BLK_MAP + m.l.map_size + \
			     (TAIL(i) & (RING - 1))))
	stderr_begin();
	HEAD(0) = TAIL(0) + 1000000;
	ok(memfd_ring_consume(&m, 0, count_cb, &n) == -EBADMSG && !n &&
		   memfd_corrupted(&m),
	   "ring head far past the tail: rejected");
	HEAD(0) = TAIL(0);
	ok(memfd_ring_consume(&m, 0, count_cb, &n) == 0 && !n,
	   "a corrupted ring is not read again");
	HEAD(1) = TAIL(1) + 16;
	REC(1)[0] = 0x7ffffff8;
	ok(memfd_ring_consume(&m, 1, count_cb, &n) == -EBADMSG && !n,
	   "record longer than the ring: rejected");
	HEAD(2) = TAIL(2) + 16;
	REC(2)[0] = 12;
	ok(memfd_ring_consume(&m, 2, count_cb, &n) == -EBADMSG && !n,
	   "misaligned record length: rejected");
	HEAD(3) = TAIL(3) + 3;
	ok(memfd_ring_consume(&m, 3, count_cb, &n) == -EBADMSG,
	   "misaligned head: rejected");
	m.ctl->next_block = 1ULL << 40;
	ok(memfd_nblocks_used(&m) == NBLOCKS,
	   "huge block count: the last plausible one is kept");
	ok(stderr_end("the process corrupted ubt's shared memory") == 1,
	   "the corruption is said once");
#undef HEAD
#undef TAIL
#undef REC
	ok(memfd_block_tid(&m, NBLOCKS) == 0 &&
		   memfd_ring_consume(&m, NBLOCKS, count_cb, &n) == -ERANGE,
	   "block index out of range");
	ok(memfd_map_read(&m, 0, m.l.map_size - 8, buf, 16) == -ERANGE &&
		   memfd_map_read(&m, 0, UINT64_MAX - 4, buf, 8) == -ERANGE &&
		   memfd_sum_u64(&m, m.l.map_size, &v) == -ERANGE,
	   "map reads past the map area refused");
	((struct rt_htab *)(b[0] + RT_BLK_MAP + tab.off))->nslots = 1u << 30;
	n = 0;
	ok(!memfd_htab_foreach(&m, &tab, on_slot, &n) &&
		   n == NBLOCKS * 8,
	   "table header corrupted: ubt's own sizes are used");
	ok(memfd_htab_foreach(&m, &(struct memfd_htab){ .off = 64,
				.nslots = 6, .key_size = 8 },
			      on_slot, &n) == -EINVAL &&
		   memfd_htab_add(&m, &(struct memfd_htab){ .off = 4000,
				  .nslots = 64, .key_size = 8,
				  .val_size = 8 }) == -ERANGE,
	   "invalid or oversized tables refused");
}

int main(void)
{
	struct memfd_layout l = {
		.map_size = 4096, .ring_size = RING, .nblocks = NBLOCKS,
	};
	void *h;

	h = tap_runtime();
	if (!h)
		return 99;
	rt_init = (long (*)(struct rt_ctl *))dlsym(h, "rt_init");
	ring_write = (int (*)(const void *, uint32_t, uint32_t))dlsym(
		h, "rt_ring_write");
	htab_lookup = (void *(*)(struct rt_htab *, const void *))dlsym(
		h, "rt_htab_lookup");
	htab_delete = (long (*)(struct rt_htab *, const void *))dlsym(
		h, "rt_htab_delete");
	ok(rt_init && ring_write && htab_lookup, "runtime exports");
	ok(!memfd_create_local(&m, &l), "memfd with %d blocks", NBLOCKS);
	if (tap_nfail)
		return 1;
	ok(m.ctl->sz == sizeof(struct rt_ctl) &&
		   m.ctl->version == RT_ABI_VERSION,
	   "control block starts with size and version");
	{
		struct sigaction sa = { .sa_sigaction = own_handler,
					.sa_flags = SA_SIGINFO };

		sigaction(SIGSEGV, &sa, NULL);
	}
	m.ctl->flags = RT_CTL_FAULT_HANDLER;
	tls = rt_init(m.ctl);
	ok(tls < 0 && m.ctl->tls_offset == tls && m.ctl->fn[RT_FN_SLOW] &&
		   m.ctl->fn[RT_FN_RING_WRITE] == (uintptr_t)ring_write,
	   "rt_init: TLS offset %lld, helpers published", (long long)tls);
	ok(m.ctl->fn[RT_FN_PROBE_READ] == (uintptr_t)dlsym(h, "rt_probe_read"),
	   "rt_probe_read published");
	test_probe_read((long (*)(void *, const void *, uint64_t))dlsym(
		h, "rt_probe_read"));
	test_threads();
	test_reuse();
	test_htab_states();
	test_wrap();
	test_untrusted();
	memfd_release(&m);
	return tap_done();
}
