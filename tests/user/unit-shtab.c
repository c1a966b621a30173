/*
 * The lock-free table shared by all threads for ordinary maps (struct
 * rt_shtab): the runtime's update/read/delete (libubt-rt.so loaded here
 * with dlopen, as in a target) and ubt's reader (memfd_shtab_*): writers
 * racing from two threads never tear a value for readers in the process or
 * for ubt, concurrent inserts make no duplicates, a full table drops and
 * counts, tombstones keep the keys after them reachable, and a corrupted
 * header or slot is read back safely. Iteration (rt_shtab_next, for and
 * len() in native code) gives whole key/value pairs while other threads
 * update, delete and take over slots.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memfd.h"
#include "tests/tap.h"


static struct memfd m;
static void *(*sh_read)(struct rt_shtab *, const void *, void *);
static long (*sh_update)(struct rt_shtab *, const void *, const void *);
static long (*sh_delete)(struct rt_shtab *, const void *);
static uint64_t (*sh_next)(struct rt_shtab *, uint64_t, void *, void *);

/* A: 24-byte values (a tuple), written by two threads at once. */
static const struct memfd_shtab ta = {
	.off = 0, .nslots = 128, .key_size = 8, .val_size = 24,
	.max_probe = 128,
};
/* B: small, to fill. */
static const struct memfd_shtab tb = {
	.off = 8192, .nslots = 16, .key_size = 8, .val_size = 8,
	.max_probe = 16,
};
/* C: iterated while keys come and go. */
static const struct memfd_shtab tc = {
	.off = 9216, .nslots = 64, .key_size = 8, .val_size = 24,
	.max_probe = 64,
};

static struct rt_shtab *tab(const struct memfd_shtab *t)
{
	return (struct rt_shtab *)(m.base + RT_SHARED_OFF + t->off);
}

enum { ROUNDS = 200000, HOT = 8 };

static volatile int stop, reading;

/* Writers: keys 0..HOT-1 get {x, x, x}; keys 1000t + i inserted once. */
static void *writer(void *arg)
{
	uint64_t t = (uintptr_t)arg, i;
	long bad = 0;

	for (i = 0; i < ROUNDS; i++) {
		uint64_t k = i % HOT, x = t << 32 | i, v[3] = { x, x, x };

		bad += sh_update(tab(&ta), &k, v) != 0;
		if (i < 20) {
			k = 1000 * (t + 1) + i;
			bad += sh_update(tab(&ta), &k, v) != 0;
		}
	}
	return (void *)bad;
}

/* A reader in the process: every value it sees is whole. */
static void *reader(void *arg)
{
	long torn = 0, seen = 0;

	(void)arg;
	reading = 1;
	while (!stop || seen < 1000) {
		for (uint64_t k = 0; k < HOT; k++) {
			uint64_t v[3];

			if (!sh_read(tab(&ta), &k, v))
				continue;
			seen++;
			torn += v[0] != v[1] || v[1] != v[2];
		}
	}
	return (void *)(torn ? -torn : seen);
}

struct check {
	int n, torn, hot, dup;
	uint64_t keys[256];
};

static int on_entry(const void *key, const void *val, void *arg)
{
	struct check *c = arg;
	uint64_t k, v[3];

	memcpy(&k, key, 8);
	memcpy(v, val, 24);
	c->torn += v[0] != v[1] || v[1] != v[2];
	c->hot += k < HOT;
	for (int i = 0; i < c->n && i < 256; i++)
		c->dup += c->keys[i] == k;
	if (c->n < 256)
		c->keys[c->n] = k;
	c->n++;
	return 0;
}

/*
 * One pass of rt_shtab_next over t: whole pairs ({k, x, x} for key k when
 * kv is set, else {x, x, x}), indexes increasing, at most nslots entries.
 */
struct pass {
	int n, torn, order, dup;
	uint64_t keys[128];
};

static void next_pass(const struct memfd_shtab *t, int kv, struct pass *p)
{
	uint64_t i = 0, k[1], v[3], last = 0;

	memset(p, 0, sizeof(*p));
	while ((i = sh_next(tab(t), i, k, v))) {
		p->torn += kv ? v[0] != k[0] || v[1] != v[2] :
				v[0] != v[1] || v[1] != v[2];
		p->order += i <= last || i > t->nslots;
		last = i;
		for (int j = 0; j < p->n && j < 128; j++)
			p->dup += p->keys[j] == k[0];
		if (p->n < 128)
			p->keys[p->n] = k[0];
		if (++p->n > (int)t->nslots)
			break;
	}
}

static void test_concurrent(void)
{
	struct pass ps;
	int it_torn = 0, it_bad = 0, it_passes = 0;

	pthread_t w[2], r;
	void *res[2], *rres;
	struct check c;
	int ubt_torn = 0, rounds = 0, n;

	ok(!memfd_shtab_add(&m, &ta), "a shared table of 24-byte values");
	pthread_create(&r, NULL, reader, NULL);
	while (!reading)
		sched_yield();
	pthread_create(&w[0], NULL, writer, (void *)1);
	pthread_create(&w[1], NULL, writer, (void *)2);
	/* ubt reads back while the writers run, and so does an iteration
	 * in the process */
	for (int i = 0; i < 200; i++) {
		memset(&c, 0, sizeof(c));
		memfd_shtab_foreach(&m, &ta, on_entry, &c);
		ubt_torn += c.torn;
		rounds++;
		next_pass(&ta, 0, &ps);
		it_torn += ps.torn;
		it_bad += ps.order + ps.dup + (ps.n > (int)ta.nslots);
		it_passes++;
	}
	pthread_join(w[0], &res[0]);
	pthread_join(w[1], &res[1]);
	stop = 1;
	pthread_join(r, &rres);
	ok(!res[0] && !res[1], "every update from 2 threads was taken");
	ok((long)rres > 0, "a reader thread never saw a torn value (%ld reads)",
	   (long)rres);
	ok(!ubt_torn, "ubt never read a torn value (%d passes while writing)",
	   rounds);
	ok(!it_torn && !it_bad,
	   "rt_shtab_next: no torn value, no key twice, slots in order "
	   "(%d passes while writing)", it_passes);
	memset(&c, 0, sizeof(c));
	n = memfd_shtab_foreach(&m, &ta, on_entry, &c);
	ok(!n && c.n == HOT + 40 && c.hot == HOT && !c.dup && !c.torn,
	   "after: %d entries (want %d), no duplicate keys", c.n, HOT + 40);
	next_pass(&ta, 0, &ps);
	ok(ps.n == HOT + 40 && !ps.dup && !ps.torn && !ps.order,
	   "rt_shtab_next visits the same %d entries", ps.n);
	ok(tab(&ta)->used == HOT + 40 && !tab(&ta)->dropped,
	   "%llu slots claimed, none dropped",
	   (unsigned long long)tab(&ta)->used);
}

static int count_entry(const void *key, const void *val, void *arg)
{
	uint64_t k, v;

	memcpy(&k, key, 8);
	memcpy(&v, val, 8);
	if (v == k * 10)
		(*(int *)arg)++;
	return 0;
}

static int nb(void)
{
	int n = 0;

	memfd_shtab_foreach(&m, &tb, count_entry, &n);
	return n;
}

/* Entries of B as rt_shtab_next gives them (value k * 10), -1 if wrong. */
static int nb_next(void)
{
	uint64_t i = 0, k, v;
	int n = 0;

	while ((i = sh_next(tab(&tb), i, &k, &v)))
		if (v != k * 10 || n++ > 16)
			return -1;
	return n;
}

static void test_full_and_tombstones(void)
{
	uint64_t k, v, out;
	int fails = 0, miss = 0;

	ok(!memfd_shtab_add(&m, &tb), "a table of 16 slots");
	for (k = 1; k <= 20; k++) {
		v = k * 10;
		fails += sh_update(tab(&tb), &k, &v) == -ENOMEM;
	}
	ok(fails == 4 && memfd_shtab_dropped(&m, &tb) == 4 && nb() == 16,
	   "full table: 4 of 20 keys dropped and counted, 16 kept");
	ok(nb_next() == 16, "rt_shtab_next: 16 entries in a full table");
	k = 3;
	v = 30;
	ok(!sh_update(tab(&tb), &k, &v),
	   "a key already there is still updated in a full table");
	ok(!sh_delete(tab(&tb), &k) && !sh_read(tab(&tb), &k, &out) &&
		   sh_delete(tab(&tb), &k) == -ENOENT && nb() == 15,
	   "delete: a tombstone, absent afterwards, deleted once");
	ok(nb_next() == 15, "rt_shtab_next skips the tombstone");
	for (k = 1; k <= 20; k++)
		if (k != 3 && (!sh_read(tab(&tb), &k, &out) || out != k * 10))
			miss++;
	ok(miss == 4, "the keys after the tombstone stay reachable");
	k = 3;
	v = 30;
	ok(!sh_update(tab(&tb), &k, &v) && sh_read(tab(&tb), &k, &out) &&
		   out == 30 && nb() == 16,
	   "a deleted key comes back in its slot");
	k = 5;
	sh_delete(tab(&tb), &k);
	k = 77;
	v = 770;
	ok(!sh_update(tab(&tb), &k, &v) && sh_read(tab(&tb), &k, &out) &&
		   out == 770 && nb() == 16 &&
		   memfd_shtab_dropped(&m, &tb) == 4,
	   "a new key takes over a tombstone");
	k = 5;
	ok(!sh_read(tab(&tb), &k, &out), "the key it replaced stays gone");
	ok(!memfd_shtab_clear(&m, &tb) && nb() == 0,
	   "clear: every entry deleted");
	ok(nb_next() == 0 && !sh_next(tab(&tb), 1000, &k, &v),
	   "rt_shtab_next: nothing in a cleared table, nor past its end");
	k = 77;
	ok(!sh_update(tab(&tb), &k, &v) && nb() == 1,
	   "and the table takes entries again");
	out = 1;
	ok(!memfd_shtab_zero(&m, &tb) && sh_read(tab(&tb), &k, &out) &&
		   out == 0,
	   "zero: the key stays with a zero value");
	ok(!sh_update(tab(&tb), &k, &v) && nb() == 1,
	   "and takes a value again");
}

/*
 * Keys 0..39 updated ({k, x, x}) and deleted by two threads, so that
 * tombstones are revived and taken over by other keys, while this thread
 * iterates: every pair it gets is whole and belongs together.
 */
static int churn_stop;

static void *churn(void *arg)
{
	uint64_t t = (uintptr_t)arg, i;

	for (i = 0;
	     i < 1000 || !__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE);
	     i++) {
		uint64_t k = (i * 7 + t) % 40, x = t << 32 | i;
		uint64_t v[3] = { k, x, x };

		sh_update(tab(&tc), &k, v);
		if (i % 3 == t) {
			k = (i * 13 + 5) % 40;
			sh_delete(tab(&tc), &k);
		}
	}
	return NULL;
}

static void test_next_churn(void)
{
	pthread_t w[2];
	struct pass ps;
	int torn = 0, bad = 0, passes = 0, seen = 0;
	uint64_t k[1], v[3];

	ok(!memfd_shtab_add(&m, &tc), "a table for iterating under churn");
	pthread_create(&w[0], NULL, churn, (void *)1);
	pthread_create(&w[1], NULL, churn, (void *)2);
	while (!sh_next(tab(&tc), 0, k, v))	/* the writers are in */
		sched_yield();
	for (passes = 0; passes < 1000 || seen < 50000; passes++) {
		next_pass(&tc, 1, &ps);
		torn += ps.torn;
		bad += ps.order + (ps.n > (int)tc.nslots);
		seen += ps.n;
	}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
	pthread_join(w[0], NULL);
	pthread_join(w[1], NULL);
	ok(!torn && !bad,
	   "rt_shtab_next under updates, deletes and take-overs: %d entries "
	   "in %d passes, none torn, slots in order", seen, passes);
	next_pass(&tc, 1, &ps);
	ok(!ps.torn && !ps.dup && ps.n > 0 && ps.n <= 40,
	   "afterwards: %d keys, each once", ps.n);
}

/*
 * The insert lock held by a thread that never gives it back (a longjmp out
 * of a signal handler): present keys are still updated, new keys are
 * dropped and counted while waiters give up on the holder, then one takes
 * the lock over and inserts go on.
 */
static void test_stuck_lock(void)
{
	uint64_t k = 1000, v[3] = { 1000, 0, 0 }, d0, l0, out[3];
	int fails = 0, present = 0;
	long r;

	for (k = 0; k < 40 && !present; k++)
		present = sh_read(tab(&tc), &k, out) != NULL;
	k--;
	__atomic_store_n(&tab(&tc)->lock, 0x501, __ATOMIC_RELEASE);
	v[0] = k;
	ok(present && !sh_update(tab(&tc), &k, v),
	   "a lock held forever: a present key is still updated");
	d0 = memfd_shtab_dropped(&m, &tc);
	l0 = memfd_shtab_lockdrop(&m, &tc);
	k = 1000;
	v[0] = k;
	while ((r = sh_update(tab(&tc), &k, v)) == -ENOMEM && fails < 100)
		fails++;
	ok(!r && fails == 31 && memfd_shtab_lockdrop(&m, &tc) == l0 + 31 &&
		   memfd_shtab_dropped(&m, &tc) == d0,
	   "new keys dropped %d times, counted as the lock's drops (not a "
	   "full table's), then the lock is taken over", fails);
	ok(sh_read(tab(&tc), &k, out) && out[0] == 1000 &&
		   !(tab(&tc)->lock & 1) && (tab(&tc)->lock >> 8) == 7,
	   "the key is in and the lock free again, one generation on");
}

/*
 * A holder off the CPU (preempted) while another thread inserts: the
 * waiter spins, yields, then naps in nanosleep(2) rather than dropping
 * the insert after a moment.  Here the test holds the lock and lets go
 * only once it has seen the waiter napping, so a wait that never naps
 * fails whatever the machine's load.
 */
static volatile pid_t waiter_tid;
static volatile long waiter_ret = 1;

static void *insert_waiter(void *arg)
{
	uint64_t k = 2000, v[3] = { 2000, 0, 0 };

	(void)arg;
	waiter_tid = (pid_t)syscall(SYS_gettid);
	waiter_ret = sh_update(tab(&tc), &k, v);
	return NULL;
}

static bool napping(pid_t tid)
{
	char path[64];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	return nr == SYS_nanosleep;
}

static void test_preempted_holder(void)
{
	uint32_t w = __atomic_load_n(&tab(&tc)->lock, __ATOMIC_ACQUIRE);
	uint64_t k = 2000, out[3], d0, l0;
	bool seen = false;
	pthread_t t;

	d0 = memfd_shtab_dropped(&m, &tc);
	l0 = memfd_shtab_lockdrop(&m, &tc);
	__atomic_store_n(&tab(&tc)->lock, w | 1, __ATOMIC_RELEASE);
	pthread_create(&t, NULL, insert_waiter, NULL);
	for (int i = 0; i < 100000 && waiter_ret == 1 && !seen; i++) {
		seen = waiter_tid && napping(waiter_tid);
		usleep(50);
	}
	__atomic_store_n(&tab(&tc)->lock, (w & ~0xffu) + 0x100,
			 __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	ok(seen && waiter_ret == 0 && sh_read(tab(&tc), &k, out) &&
		   out[0] == 2000 && memfd_shtab_lockdrop(&m, &tc) == l0 &&
		   memfd_shtab_dropped(&m, &tc) == d0,
	   "a lock holder off the CPU: the inserting thread naps until it "
	   "lets go (seen napping: %d), and the key goes in (%ld)", seen,
	   waiter_ret);
}

/* The target can write anything into the memfd. */
static void test_untrusted(void)
{
	struct rt_shtab saved = *tab(&tb);
	uint64_t ss = 8 + 8 + 8, k = 1, v = 1, out;
	char *slots = (char *)(tab(&tb) + 1);
	int n;

	tab(&tb)->nslots = 1u << 30;
	tab(&tb)->key_size = 4096;
	tab(&tb)->val_size = 4096;
	ok(nb() == 1, "header corrupted: ubt reads with its own sizes");
	ok(sh_update(tab(&tb), &k, &v) && !sh_read(tab(&tb), &k, &out) &&
		   sh_delete(tab(&tb), &k) && !sh_next(tab(&tb), 0, &k, &out),
	   "header corrupted: the runtime refuses the table, no crash");
	tab(&tb)->nslots = 6;
	tab(&tb)->key_size = 8;
	ok(sh_update(tab(&tb), &k, &v) == -EINVAL,
	   "slot count not a power of two: refused");
	*tab(&tb) = saved;
	for (n = 0; n < 16; n++) {
		uint32_t *st = (uint32_t *)(slots + n * ss);

		if (st[0] == RT_SHTAB_USED)
			st[1] |= 1;	/* a writer that never finishes */
		else
			st[0] = 0x7777;	/* no such state */
	}
	n = 0;
	ok(!memfd_shtab_foreach(&m, &tb, count_entry, &n) && n == 0 &&
		   nb_next() == 0,
	   "slots with a bad state or a stuck writer are skipped");
	ok(memfd_shtab_foreach(&m, &(struct memfd_shtab){ .off = 8192,
				 .nslots = 12, .key_size = 8,
				 .val_size = 8, .max_probe = 12 },
			       count_entry, &n) == -EINVAL &&
		   memfd_shtab_add(&m, &(struct memfd_shtab){
				  .off = m.l.shared_size - 64, .nslots = 64,
				  .key_size = 8, .val_size = 8,
				  .max_probe = 8 }) == -ERANGE &&
		   memfd_shtab_add(&m, &(struct memfd_shtab){
				  .off = 0, .nslots = 16, .key_size = 8,
				  .val_size = 8, .max_probe = 17 }) == -EINVAL,
	   "invalid or oversized tables refused");
	ok(memfd_map_zero(&m, m.l.map_size - 8, 16) == -ERANGE &&
		   memfd_map_zero(&m, 4, 8) == -ERANGE &&
		   memfd_map_zero(&m, UINT64_MAX - 7, 8) == -ERANGE &&
		   !memfd_map_zero(&m, 0, 8),
	   "clearing per-thread values: offsets checked");
}

int main(void)
{
	struct memfd_layout l = {
		.map_size = 4096, .ring_size = 256, .nblocks = 4,
		.shared_size = 16384,
	};
	long (*rt_init)(struct rt_ctl *);
	void *h;

	h = tap_runtime();
	if (!h)
		return 99;
	rt_init = (long (*)(struct rt_ctl *))dlsym(h, "rt_init");
	ok(rt_init && !memfd_create_local(&m, &l),
	   "runtime loaded, memfd with a shared area");
	if (tap_nfail)
		return 1;
	ok(m.tmpl_off >= RT_SHARED_OFF + l.shared_size &&
		   m.ctl->shared_size == l.shared_size,
	   "the shared area lies between the code and the template");
	rt_init(m.ctl);
	sh_read = (void *)(uintptr_t)m.ctl->fn[RT_FN_SHTAB_READ];
	sh_update = (void *)(uintptr_t)m.ctl->fn[RT_FN_SHTAB_UPDATE];
	sh_delete = (void *)(uintptr_t)m.ctl->fn[RT_FN_SHTAB_DELETE];
	sh_next = (void *)(uintptr_t)m.ctl->fn[RT_FN_SHTAB_NEXT];
	ok(sh_read == dlsym(h, "rt_shtab_read") &&
		   sh_update == dlsym(h, "rt_shtab_update") &&
		   sh_delete == dlsym(h, "rt_shtab_delete") &&
		   sh_next == dlsym(h, "rt_shtab_next"),
	   "rt_init publishes the shared-table helpers");
	test_concurrent();
	test_full_and_tombstones();
	test_next_churn();
	test_stuck_lock();
	test_preempted_holder();
	test_untrusted();
	memfd_release(&m);
	return tap_done();
}
